# Two commands on a fresh machine: `make run` (the bot, or the console chat
# without DISCORD_TOKEN) and `make test` (creates .venv, installs, runs every test).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test bench venv clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,bench]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(PY) -m bot

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/agent_bench.py
	$(PY) bench/memory_bench.py
	$(PY) bench/retrieval_eval.py
	$(PY) bench/bot_bench.py

clean:
	rm -rf $(VENV)
