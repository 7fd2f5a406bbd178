#!/usr/bin/env bash
# `make mutate [MUTATE=name]`: mutmut 2 over the oracle and the math, one module at a time, each run with
# only the fast tests aimed at it (docs/testing.md lists the scores). mutmut mutates each file IN PLACE
# and restores it afterwards: run it on a clean tree, with nothing else importing the package meanwhile.
# Scores: out/mutate/scores.txt; survivors of module NAME: out/mutate/NAME.survivors
# (`mutmut show ID` prints one, while that module's .mutmut-cache is the last one written).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
MUTMUT=${MUTMUT:-.venv/bin/mutmut}
ONLY=${1:-all}
mkdir -p out/mutate
# Each mutant's tests run in a child forked from one server that has imported numpy, scipy, amaranth
# and pytest already (tests/mutation/forkserver.py): several times faster than a fresh pytest.
SOCK=$(mktemp -u /tmp/equimesh-mutate.XXXXXX)
"$PY" -P tests/mutation/forkserver.py serve "$SOCK" > out/mutate/forkserver.log 2>&1 &
SERVER=$!
trap 'kill $SERVER; rm -f "$SOCK"' EXIT
until [ -S "$SOCK" ]; do kill -0 $SERVER || exit 1; sleep 0.2; done
PYTEST="$PY -P -S tests/mutation/forkserver.py run $SOCK -x -q -p no:cacheprovider"
[ "$ONLY" = all ] && rm -f out/mutate/scores.txt

run() {  # NAME FILE "TESTS" [FUNCTION ...]: mutate FILE (only those functions, if named)
  local name=$1 file=$2 tests=$3
  shift 3
  [ "$ONLY" = all ] || [ "$ONLY" = "$name" ] || return 0
  rm -f .mutmut-cache
  find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +   # see forkserver.py
  local patch=()
  if [ $# -gt 0 ]; then
    "$PY" tests/mutation/lines.py "$file" "$@" > "out/mutate/$name.patch" || return 1
    patch=(--use-patch-file "out/mutate/$name.patch")
  fi
  echo "mutmut: $name ($file${*:+: $*}) against $tests"
  "$MUTMUT" run --paths-to-mutate "$file" "${patch[@]}" --runner "$PYTEST $tests" --no-progress > "out/mutate/$name.log" 2>&1
  "$PY" tests/mutation/score.py "$name" | tee -a out/mutate/scores.txt
  "$MUTMUT" results > "out/mutate/$name.survivors" 2>&1
  "$MUTMUT" show all >> "out/mutate/$name.survivors" 2>&1
}

run verify schedules/verify.py "tests/test_oracle_boundaries.py tests/test_schedule_checks.py --deselect tests/test_schedule_checks.py::test_cli_verify_reports_a_load_check_in_one_line"
run storage schedules/storage.py tests/test_oracle_boundaries.py
run bound schedules/schedule.py tests/test_oracle_boundaries.py lower_bound schedule_bound
run topology schedules/topology.py "tests/test_schedule_topology_check.py tests/test_topology.py" edge_ring edge_nodes ring_links _mesh_links build
run optree schedules/optree.py "tests/test_optree_formulas.py tests/test_optree.py" _check theorem1_steps k_star ring_steps ne_steps osm_steps wrht_steps proof_stage_steps
run supermesh schedules/supermesh.py "tests/test_supermesh_formulas.py tests/test_supermesh.py" _w check_sizes short_reach_links links_3d bisection_width gbw exchange_cost
run rom rtl/rom.py "tests/test_rtl_rom_tables.py tests/test_rtl_rom.py"
