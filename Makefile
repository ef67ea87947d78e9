# Two commands on a fresh machine: `make run` (the bot, or the console chat without
# DISCORD_TOKEN) and `make test` (creates .venv, installs, runs the tests: every one as root,
# which installs the system tools first; as anyone else those needing root or a missing
# tool are skipped, each saying why).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# What `make run` needs (the bot and its dependencies), and what `make test` and `make bench`
# add to it (pytest and its plugins, ruff, LangChain for the parser comparison).
RUN_STAMP  := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# The tests run on two workers more than the cores (pytest-xdist): many of them wait on the bot
# processes and servers they start, and the extra workers use that time (docs/decisions/0037).
# A module's tests run on one worker, so that module fixtures (a fresh venv, a Chroma server)
# are built once, in tests/conftest.py's order (slow ones first; pyproject's addopts keeps it).
PYTEST_WORKERS ?= -n $(shell expr $$(nproc) + 2) --dist loadfile

.PHONY: run test bench venv system-deps clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -c constraints.txt -e .
	touch $(RUN_STAMP)

$(TEST_STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,bench]'
	touch $(RUN_STAMP) $(TEST_STAMP)

venv: $(TEST_STAMP)

run: $(RUN_STAMP)
	$(PY) -m bot

# Tools the deploy tests run (systemd-analyze and systemctl, shellcheck, sqlite3, a C compiler with
# libseccomp for the sandbox check, setpriv and unshare); installed with apt only when one is
# missing. Needs root.
TOOLS   := shellcheck sqlite3 systemd-analyze systemctl gcc setpriv unshare
MISSING  = $(strip $(foreach tool,$(TOOLS),$(if $(shell command -v $(tool)),,$(tool))) \
                   $(if $(wildcard /usr/include/seccomp.h),,libseccomp-dev))

system-deps:
	@missing="$(MISSING)"; \
	if [ -n "$$missing" ]; then \
		echo "installing test tools: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			shellcheck libseccomp-dev sqlite3 systemd gcc util-linux >/dev/null; \
	fi

# As root (CI) the missing tools are installed first and every test runs; as anyone else apt-get
# is never called, and the tests needing root or a missing tool are skipped, each saying why.
ifeq ($(shell id -u),0)
test: $(TEST_STAMP) system-deps
	$(PY) -m pytest -q $(PYTEST_WORKERS)
else
test: $(TEST_STAMP)
	@echo "not root: the tests that need root$(if $(MISSING), or $(MISSING),) are skipped;" \
		"sudo make system-deps installs the tools, sudo make test runs every test"
	$(PY) -m pytest -q $(PYTEST_WORKERS)
endif

bench: $(TEST_STAMP)
	$(PY) bench/agent_bench.py
	$(PY) bench/parser_eval.py
	$(PY) bench/memory_bench.py
	$(PY) bench/retrieval_eval.py
	$(PY) bench/bot_bench.py
	$(PY) bench/mcp_bench.py
	$(PY) bench/chaos.py all

clean:
	rm -rf $(VENV)
