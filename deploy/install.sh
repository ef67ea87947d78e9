#!/usr/bin/env bash
# Install, upgrade or remove react-discord-bot as a systemd service.
#
#   sudo deploy/install.sh                 install or upgrade (run it again to upgrade)
#   sudo deploy/install.sh --with-chroma   also the loopback Chroma server unit
#   sudo deploy/install.sh --uninstall     remove program and units; keep data and bot.env
#   sudo deploy/install.sh --purge         remove everything, data, bot.env and user included
#
# --prefix DIR installs into a throwaway root instead of the real system: every path is
# under DIR, no user is created and no service manager is asked anything; the commands that
# would have changed the system are written, one a line, to DIR/install-actions.log.
# Unit enabling is real even then (`systemctl --root=DIR`, which only makes symlinks).
# See deploy/README.md.
set -euo pipefail

readonly NAME=react-discord-bot
readonly CHROMA_UNIT=$NAME-chroma.service
readonly GATE_UNIT=$NAME-chroma-gate.service
readonly GATE_SOCKET=$NAME-chroma-gate.socket

usage() {
    cat <<EOF
Usage: install.sh [options]

Install or upgrade $NAME as a systemd service (run as root).

Options:
  --prefix DIR     install into DIR as if it were / (tests, packaging); records the
                   user and service-manager commands in DIR/install-actions.log instead
  --source DIR     the repository to install from (default: the one holding this script)
  --python EXE     the Python (>= 3.11) that creates the venv (default: python3)
  --with-chroma    also install the loopback Chroma server unit ($CHROMA_UNIT)
                   and make the bot use it
  --no-pip         create the venv but do not pip-install the bot into it
  --uninstall      remove the program and its units; keep data, bot.env and the user
  --purge          --uninstall, and also remove data, bot.env, the cache and the user
  -h, --help       show this help
EOF
}

die_usage() {
    echo "install.sh: $*" >&2
    usage >&2
    exit 2
}

die() {
    echo "install.sh: error: $*" >&2
    exit 1
}

say() {
    echo "install.sh: $*"
}

PREFIX=""
SOURCE=""
PYTHON=python3
WITH_CHROMA=0
NO_PIP=0
UNINSTALL=0
PURGE=0

while [[ $# -gt 0 ]]; do
    case $1 in
        --prefix)
            [[ $# -ge 2 && -n $2 ]] || die_usage "--prefix needs a directory"
            PREFIX=$2
            shift 2
            ;;
        --source)
            [[ $# -ge 2 && -n $2 ]] || die_usage "--source needs a directory"
            SOURCE=$2
            shift 2
            ;;
        --python)
            [[ $# -ge 2 && -n $2 ]] || die_usage "--python needs an executable"
            PYTHON=$2
            shift 2
            ;;
        --with-chroma) WITH_CHROMA=1; shift ;;
        --no-pip) NO_PIP=1; shift ;;
        --uninstall) UNINSTALL=1; shift ;;
        --purge) UNINSTALL=1; PURGE=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die_usage "unknown option: $1" ;;
    esac
done

if [[ -n $PREFIX ]]; then
    mkdir -p -- "$PREFIX"
    PREFIX=$(cd -- "$PREFIX" && pwd)
    [[ $PREFIX != / ]] || die_usage "--prefix / is the real system: leave --prefix out"
elif [[ $EUID -ne 0 ]]; then
    die "run as root (sudo), or use --prefix DIR for a throwaway root"
fi

if [[ -z $SOURCE ]]; then
    SOURCE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
else
    [[ -d $SOURCE ]] || die "--source $SOURCE is not a directory"
    SOURCE=$(cd -- "$SOURCE" && pwd)
fi

readonly VENV=$PREFIX/opt/$NAME
readonly ETC_DIR=$PREFIX/etc/$NAME
readonly ENV_FILE=$ETC_DIR/bot.env
readonly CRED_DIR=$ETC_DIR/credentials
readonly CHROMA_TOKEN_FILE=$ETC_DIR/chroma-token.env
# The secrets the unit loads as systemd credentials (LoadCredential= in the unit).
readonly CREDENTIALS=(DISCORD_TOKEN OPENAI_API_KEY EMBEDDING_API_KEY)
readonly UNIT_DIR=$PREFIX/etc/systemd/system
readonly DROPIN_DIR=$UNIT_DIR/$NAME.service.d
readonly STATE_DIR=$PREFIX/var/lib/$NAME
readonly CHROMA_STATE_DIR=$PREFIX/var/lib/$NAME-chroma
readonly CACHE_DIR=$PREFIX/var/cache/$NAME
readonly DOC_DIR=$VENV/share/doc/$NAME
readonly ACTIONS_LOG=$PREFIX/install-actions.log

# Run a command that changes the real system, or, under --prefix, record it instead.
system() {
    if [[ -n $PREFIX ]]; then
        local line
        printf -v line '%q ' "$@"
        printf '%s\n' "${line% }" >>"$ACTIONS_LOG"
    else
        "$@"
    fi
}

# systemctl for unit enabling: real under --prefix too, pointed at the prefix.
unit_ctl() {
    if [[ -n $PREFIX ]]; then
        systemctl --root="$PREFIX" --quiet "$@"
    else
        systemctl --quiet "$@"
    fi
}

systemd_running() {
    [[ -z $PREFIX && -d /run/systemd/system ]]
}

# Ask the running service manager; record under --prefix; skip where none runs (a container).
manager() {
    if [[ -n $PREFIX ]]; then
        system systemctl "$@"
    elif systemd_running; then
        systemctl "$@"
    else
        say "systemd is not running here: skipped 'systemctl $*'"
    fi
}

user_exists() {
    if [[ -n $PREFIX ]]; then
        [[ -f $ACTIONS_LOG ]] &&
            grep -E "^(useradd|userdel) " "$ACTIONS_LOG" | tail -n 1 | grep -q "^useradd "
    else
        getent passwd "$NAME" >/dev/null
    fi
}

CHANGED_UNITS=0

# Copy SRC to DST with MODE unless DST already has that content and mode.
put_file() {
    local src=$1 dst=$2 mode=$3
    if [[ -f $dst ]] && cmp -s -- "$src" "$dst" && [[ $(stat -c %a -- "$dst") == "${mode#0}" ]]; then
        say "unchanged: $dst"
        return 1
    fi
    install -D -m "$mode" -- "$src" "$dst"
    say "wrote: $dst"
}

put_unit() {
    if put_file "$1" "$2" 0644; then
        CHANGED_UNITS=1
    fi
}

check_source() {
    local f
    for f in pyproject.toml constraints.txt deploy/$NAME.service deploy/chroma.service \
        deploy/chroma-gate.service deploy/chroma-gate.socket \
        deploy/$NAME.service.d/chroma.conf deploy/bot.env.example deploy/README.md; do
        [[ -f $SOURCE/$f ]] || die "$SOURCE is not the bot's repository: $f is missing"
    done
}

create_user() {
    if user_exists; then
        say "user $NAME exists"
        return
    fi
    system useradd --system --user-group --no-create-home \
        --home-dir "/var/lib/$NAME" --shell /usr/sbin/nologin \
        --comment "react-discord-bot service" "$NAME"
    say "created system user $NAME"
}

check_python() {
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
        die "$PYTHON is not Python 3.11 or newer (choose one with --python)"
}

create_venv() {
    if [[ -x $VENV/bin/python ]]; then
        say "venv exists: $VENV"
    elif [[ $NO_PIP -eq 1 ]]; then
        "$PYTHON" -m venv --without-pip -- "$VENV"
        say "created venv (without pip): $VENV"
    else
        "$PYTHON" -m venv -- "$VENV"
        say "created venv: $VENV"
    fi
    if [[ $NO_PIP -eq 1 ]]; then
        say "--no-pip: the bot is not installed into $VENV"
        return
    fi
    "$VENV/bin/python" -m pip --version >/dev/null 2>&1 || "$VENV/bin/python" -m ensurepip --upgrade
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # constraints.txt pins the CPU build of torch; a bare torch is a multi-GB CUDA build.
    "$VENV/bin/python" -m pip install --quiet -c "$SOURCE/constraints.txt" "$SOURCE"
    say "installed the bot from $SOURCE into $VENV"
}

create_env_file() {
    if [[ -e $ENV_FILE ]]; then
        say "kept existing $ENV_FILE"
        if [[ $(stat -c %a -- "$ENV_FILE") != 600 ]]; then
            say "warning: $ENV_FILE is mode $(stat -c %a -- "$ENV_FILE"); it holds secrets: chmod 600"
        fi
        return
    fi
    mkdir -p -- "$ETC_DIR"
    (umask 077 && cp -- "$SOURCE/deploy/bot.env.example" "$ENV_FILE")
    chmod 0600 -- "$ENV_FILE"
    system chown "root:$NAME" "/etc/$NAME/bot.env"
    say "wrote $ENV_FILE (mode 0600) from deploy/bot.env.example"
}

# The unit's credential files: created empty (an empty credential counts as unset: the value
# in bot.env is used), never overwritten, readable by root only (systemd reads them as root).
create_credentials() {
    local name
    (umask 077 && mkdir -p -- "$CRED_DIR")
    chmod 0700 -- "$CRED_DIR"
    for name in "${CREDENTIALS[@]}"; do
        if [[ -e $CRED_DIR/$name ]]; then
            continue
        fi
        (umask 077 && : >"$CRED_DIR/$name")
        say "created the empty credential $CRED_DIR/$name (mode 0600)"
    done
}

# The token the Chroma gate checks and the bot sends (CHROMA_AUTH_TOKEN): made once, random,
# kept across runs; root's only (systemd reads it for both units as root).
create_chroma_token() {
    if [[ -e $CHROMA_TOKEN_FILE ]]; then
        say "kept existing $CHROMA_TOKEN_FILE"
        return
    fi
    mkdir -p -- "$ETC_DIR"
    local token
    token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    (umask 077 && printf 'CHROMA_AUTH_TOKEN=%s\n' "$token" >"$CHROMA_TOKEN_FILE")
    chmod 0600 -- "$CHROMA_TOKEN_FILE"
    say "wrote $CHROMA_TOKEN_FILE (mode 0600): the Chroma gate's token"
}

install_units() {
    put_unit "$SOURCE/deploy/$NAME.service" "$UNIT_DIR/$NAME.service"
    if [[ $WITH_CHROMA -eq 1 ]]; then
        put_unit "$SOURCE/deploy/chroma.service" "$UNIT_DIR/$CHROMA_UNIT"
        put_unit "$SOURCE/deploy/chroma-gate.service" "$UNIT_DIR/$GATE_UNIT"
        put_unit "$SOURCE/deploy/chroma-gate.socket" "$UNIT_DIR/$GATE_SOCKET"
        put_unit "$SOURCE/deploy/$NAME.service.d/chroma.conf" "$DROPIN_DIR/chroma.conf"
    fi
    if [[ $CHANGED_UNITS -eq 1 ]]; then
        manager daemon-reload
    fi
    unit_ctl enable "$NAME.service"
    if [[ $WITH_CHROMA -eq 1 ]]; then
        unit_ctl enable "$CHROMA_UNIT"
        unit_ctl enable "$GATE_SOCKET"
    fi
}

install_docs() {
    put_file "$SOURCE/deploy/README.md" "$DOC_DIR/README.md" 0644 || true
}

next_steps() {
    cat <<EOF

Installed and enabled; this script does not start it. Next, on a first install:
  1. Fill in /etc/$NAME/bot.env (LLM_MODEL, ...) and the token and keys, either there or,
     better, in /etc/$NAME/credentials/ (DISCORD_TOKEN, OPENAI_API_KEY: one file each).
  2. Check it:   sudo systemd-run --pipe --wait --quiet -p User=$NAME \\
                   -p EnvironmentFile=/etc/$NAME/bot.env -p StateDirectory=$NAME \\
                   -p Environment="DATA_DIR=/var/lib/$NAME HF_HUB_OFFLINE=1" \\
                   /opt/$NAME/bin/python -m bot check
  3. Start it:   sudo systemctl start $NAME
  4. Watch it:   journalctl -u $NAME -f
After an upgrade: sudo systemctl restart $NAME
EOF
    if [[ $WITH_CHROMA -eq 1 ]]; then
        echo "  The Chroma server starts with the bot ($CHROMA_UNIT)."
    fi
}

do_install() {
    check_source
    check_python
    if [[ $WITH_CHROMA -eq 0 && -f $DROPIN_DIR/chroma.conf ]]; then
        WITH_CHROMA=1
        say "the Chroma unit was installed before: keeping and upgrading it"
    fi
    create_user
    create_venv
    create_env_file
    create_credentials
    if [[ $WITH_CHROMA -eq 1 ]]; then
        create_chroma_token
    fi
    install_docs
    install_units
    next_steps
}

remove_path() {
    if [[ -e $1 || -L $1 ]]; then
        rm -rf -- "$1"
        say "removed $1"
    fi
}

do_uninstall() {
    local unit
    for unit in "$NAME.service" "$GATE_SOCKET" "$GATE_UNIT" "$CHROMA_UNIT"; do
        if [[ -f $UNIT_DIR/$unit ]]; then
            manager stop "$unit" || say "could not stop $unit; removing it anyway"
            unit_ctl disable "$unit"
        fi
    done
    remove_path "$DROPIN_DIR"
    remove_path "$UNIT_DIR/$NAME.service"
    remove_path "$UNIT_DIR/$CHROMA_UNIT"
    remove_path "$UNIT_DIR/$GATE_UNIT"
    remove_path "$UNIT_DIR/$GATE_SOCKET"
    manager daemon-reload
    remove_path "$VENV"
    if [[ $PURGE -eq 0 ]]; then
        say "kept $ENV_FILE, $STATE_DIR, $CHROMA_STATE_DIR and user $NAME (--purge removes them)"
        return
    fi
    remove_path "$ETC_DIR"
    remove_path "$STATE_DIR"
    remove_path "$CHROMA_STATE_DIR"
    remove_path "$PREFIX/var/lib/private/$NAME-chroma"  # its data under DynamicUser=yes
    remove_path "$CACHE_DIR"
    if user_exists; then
        system userdel "$NAME"
        say "removed user $NAME"
    fi
}

if [[ $UNINSTALL -eq 1 ]]; then
    do_uninstall
else
    do_install
fi
