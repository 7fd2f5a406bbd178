# Both targets create the virtual environment and install everything themselves.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test bench setup clean

$(STAMP): pyproject.toml
	@command -v iverilog >/dev/null 2>&1 || { \
	  echo "installing Icarus Verilog (Debian package iverilog)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iverilog; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq iverilog; fi; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/equimesh demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/equimesh bench schedules

clean:
	rm -rf $(VENV) build *.egg-info
