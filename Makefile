# Two commands on a fresh machine: `make run` (the bot, or the console chat
# without DISCORD_TOKEN) and `make test` (creates .venv, installs, runs every test).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench venv system-deps clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,bench]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(PY) -m bot

# Tools the deploy tests run (systemd-analyze, shellcheck, sqlite3, a C compiler with libseccomp
# for the sandbox check, setpriv); installed with apt only when one is missing.
system-deps:
	@missing=""; \
	for tool in shellcheck sqlite3 systemd-analyze gcc setpriv; do \
		command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; \
	done; \
	[ -f /usr/include/seccomp.h ] || missing="$$missing libseccomp-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing test tools:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			shellcheck libseccomp-dev sqlite3 systemd gcc util-linux >/dev/null; \
	fi

test: $(STAMP) system-deps
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/agent_bench.py
	$(PY) bench/memory_bench.py
	$(PY) bench/retrieval_eval.py
	$(PY) bench/bot_bench.py
	$(PY) bench/chaos.py all

clean:
	rm -rf $(VENV)
