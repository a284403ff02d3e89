#!/usr/bin/env bash
# End-to-end test of the C++ package and the C++ <-> Python pipeline (run by
# ctest as demo_cpp_round_trip):
#
#   1. `cmake --install` the EvoKit build into a temporary prefix, then
#      configure and build demo/cpp against it with find_package(evokit
#      COMPONENTS core io), and compile every installed header on its own:
#      this tests the installed package;
#   2. check the C++ CartPole's physics against gymnasium's;
#   3. `evokit init-model` + `evokit init-solver` make a warehouse (Python);
#   4. the C++ sampler writes a log, `evokit update` (Python) consumes it and
#      must use every sample; the C++ evaluator loads iteration 1 (verifying
#      the model fingerprint Python wrote);
#   5. C++ saves iteration 1's solver.pb: its fingerprints equal Python's and
#      Python's load_solver accepts it; it replaces the warehouse's copy;
#   6. a few more iterations: the mean return on the C++ CartPole improves;
#   7. a policy `evokit train` trained with observation normalisation
#      (Constant nodes in front of the MLP) is served by the C++ evaluator
#      and sampled by the C++ sampler;
#   8. a CMA-ES warehouse (configs/cartpole_cma.prototxt): the C++ sampler
#      draws the members of each generation, `evokit update` uses every
#      record (checked against consumed.pb) for three iterations;
#   9. the service loop: two threads serve requests from 8 clones, the logs
#      rotate every 40 records, every record is read back and `evokit
#      update` uses the 40 samples of the first log.
#
#   bash demo/cpp/round_trip.sh BUILD_DIR [CMAKE] [PYTHON]
#
# Every Python step (the `evokit` commands too, as `PYTHON -m evokit.cli`)
# runs with PYTHON: by default the interpreter the build found
# (EVOKIT_TEST_PYTHON in BUILD_DIR/CMakeCache.txt, set by cpp/io's
# find_package(Python3)), never whatever `python3` or `evokit` is first on
# PATH. It needs the evokit package (pip install .).
set -euo pipefail

if (($# < 1)); then
  echo "usage: $0 BUILD_DIR [CMAKE] [PYTHON]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
cmake_cmd=${2:-cmake}
# The CMake that configured BUILD_DIR may be gone: `pip install` builds with
# one from its temporary build environment. Then the one on PATH.
if [[ $cmake_cmd == */* && ! -x $cmake_cmd ]]; then
  cmake_cmd=cmake
fi
src=$(cd "$(dirname "$0")/../.." && pwd)

fail() {
  echo "round_trip.sh: FAILED: $*" >&2
  exit 1
}

python=${3:-$(sed -n 's/^EVOKIT_TEST_PYTHON:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)}
if [[ -z "$python" ]]; then
  fail "no Python: pass PYTHON, or configure $build with the C++ tests and a Python 3 CMake can find"
fi

work=$(mktemp -d -t evokit-cpp-round-trip-XXXXXX)
trap 'rm -rf "$work"' EXIT
# Python runs from here, so that a source tree in the working directory
# (an evokit/ folder without its compiled _core) never shadows the package.
cd "$work"
evokit() { "$python" -m evokit.cli "$@"; }
"$python" -c "import evokit" 2>/dev/null ||
  fail "$python cannot import evokit: install the Python package first (pip install .)"
echo "== Python: $python"

echo "== install EvoKit into $work/prefix and build demo/cpp against it"
"$cmake_cmd" --install "$build" --prefix "$work/prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install $build"; }
"$cmake_cmd" -S "$src/demo/cpp" -B "$work/demo-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configuring demo/cpp with find_package(evokit)"; }
"$cmake_cmd" --build "$work/demo-build" -j2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "building demo/cpp"; }
if grep -q "warning:" "$work/build.log"; then
  grep -A3 "warning:" "$work/build.log"
  fail "demo/cpp builds with warnings"
fi
# Every installed header compiles on its own: a service includes only what
# it uses.
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
(cd "$work/prefix/include" && find evokit -name '*.h' | sort) >"$work/headers.txt"
while read -r header; do
  echo "#include <$header>" | "${cxx:-c++}" -std=c++17 -fsyntax-only -Wall -Wextra -x c++ \
    -I"$work/prefix/include" - 2>"$work/header.log" ||
    { cat "$work/header.log"; fail "the installed header <$header> does not compile on its own"; }
done <"$work/headers.txt"
echo "$(wc -l <"$work/headers.txt") installed headers compile on their own"
sampler=$work/demo-build/evokit_online_sampling
evaluator=$work/demo-build/evokit_evaluate_model

echo "== the C++ CartPole against gymnasium's"
start="0.03 -0.2 0.04 0.3"
actions=1101001110010111010011010101
"$work/demo-build/evokit_cartpole_trace" $start $actions >"$work/trace_cpp.txt"
"$python" - "$start" "$actions" >"$work/trace_py.txt" <<'PY'
import sys
import gymnasium as gym
import numpy as np
env = gym.make("CartPole-v1").unwrapped
env.reset(seed=0)
env.state = np.array([float(v) for v in sys.argv[1].split()], dtype=np.float64)
for a in sys.argv[2]:
    obs, reward, terminated, truncated, _ = env.step(int(a))
    print(" ".join(f"{float(v):.9g}" for v in obs), int(terminated))
PY
diff "$work/trace_py.txt" "$work/trace_cpp.txt" >/dev/null ||
  { diff "$work/trace_py.txt" "$work/trace_cpp.txt" | head; fail "C++ CartPole differs from gymnasium's"; }
echo "same $(wc -l <"$work/trace_cpp.txt") steps as gymnasium"

echo "== a warehouse from Python"
W=$work/warehouse
evokit init-model --env CartPole-v1 --hidden 8 --seed 0 -o "$work/init_model.onnx"
evokit init-solver --config "$src/configs/cartpole.prototxt" --model "$work/init_model.onnx" \
  --warehouse "$W"

N=40  # the config's population_size
echo "== C++ online sampling -> Python offline update"
"$sampler" --warehouse "$W" --log "$work/logs/log_0" --num-samples $N --seed 1 --threads 2
update=$(evokit update --warehouse "$W" --log "$work/logs/log_0")
echo "$update"
grep -q "update 0 -> 1: used $N samples" <<<"$update" ||
  fail "evokit update did not use all $N samples of the C++ log"
if grep -q "dropped" <<<"$update"; then fail "evokit update dropped samples of the C++ log"; fi

echo "== C++ evaluation of iteration 1"
evaluation=$("$evaluator" --warehouse "$W" --episodes 20)
echo "$evaluation"
grep -q "model_iter_id 1$" <<<"$evaluation" || fail "the evaluator did not load iteration 1"

echo "== a solver.pb written by C++ loads in Python"
"$evaluator" --warehouse "$W" --episodes 1 --save "$work/cpp_saved" | grep "^wrote" ||
  fail "the evaluator did not save the solver"
"$python" - "$src/configs/cartpole.prototxt" "$work/cpp_saved" "$W/model_iter_id-1" <<'PY' ||
import sys
import evokit
from evokit import evokit_pb2 as pb
config, cpp_dir, py_dir = sys.argv[1:]
states = []
for d in (cpp_dir, py_dir):
    s = pb.SolverState()
    with open(f"{d}/solver.pb", "rb") as f:
        s.ParseFromString(f.read())
    states.append(s)
cpp, py = states
assert cpp.fingerprint_version == py.fingerprint_version == 2, (cpp.fingerprint_version, py.fingerprint_version)
assert (cpp.model_fingerprint, cpp.params_fingerprint) == (py.model_fingerprint, py.params_fingerprint), \
    "C++ and Python fingerprints differ"
agent = evokit.ESAgent()
agent.load_config(config)
agent.load_inference_model(cpp_dir)
agent.init_solver()
agent.load_solver(cpp_dir)
assert agent.model_iter_id == 1, agent.model_iter_id
print(f"Python loaded the C++ solver.pb: fingerprint {cpp.model_fingerprint[:12]}, "
      f"params {cpp.params_fingerprint[:12]}")
PY
  fail "Python refused the solver.pb written by C++"
# From here on the warehouse continues from the C++-written iteration 1.
cp "$work/cpp_saved/solver.pb" "$W/model_iter_id-1/solver.pb"

echo "== more iterations: the return improves"
first=$("$evaluator" --model "$work/init_model.onnx" --episodes 20 |
  sed -n 's/^mean return \([0-9.]*\) .*/\1/p')
for k in 1 2 3 4 5; do
  "$sampler" --warehouse "$W" --log "$work/logs/log_$k" --num-samples $N --seed 1 --threads 2
  evokit update --warehouse "$W" --log "$work/logs/log_$k" | grep "^update"
done
evaluation=$("$evaluator" --warehouse "$W" --episodes 20)
echo "$evaluation"
grep -q "model_iter_id 6$" <<<"$evaluation" || fail "the evaluator did not load iteration 6"
last=$(sed -n 's/^mean return \([0-9.]*\) .*/\1/p' <<<"$evaluation")
echo "mean return: initial model $first, iteration 6 $last"
"$python" -c "import sys; sys.exit(0 if float('$last') > float('$first') else 1)" ||
  fail "the return did not improve ($first -> $last)"

echo "== a policy trained with observation normalisation, served by C++"
sed 's/^train {$/train {\n  observation_normalization: true/' "$src/configs/cartpole.prototxt" \
  >"$work/obs_norm.prototxt"
evokit train "$work/obs_norm.prototxt" --max-generations 3 --workers 1 --out "$work/obs_norm_run" -q
"$python" - "$work/obs_norm_run/model.onnx" <<'PY' || fail "the trained model does not normalise its observations"
import sys
import onnx
ops = [(n.op_type, n.name) for n in onnx.load(sys.argv[1]).graph.node[:5]]
assert ops[0] == ("Constant", "obs_norm/mean") and ops[4][0] == "Sub", ops
PY
"$evaluator" --model "$work/obs_norm_run/model.onnx" --episodes 5 ||
  fail "the C++ evaluator cannot serve a policy trained with observation normalisation"
# ... and sampled by the C++ service from a warehouse made of it.
W2=$work/warehouse_obs_norm
evokit init-solver --config "$src/configs/cartpole.prototxt" --model "$work/obs_norm_run/model.onnx" \
  --warehouse "$W2"
"$sampler" --warehouse "$W2" --log "$work/logs/obs_norm_0" --num-samples $N --seed 1 --threads 2
evokit update --warehouse "$W2" --log "$work/logs/obs_norm_0" | grep "update 0 -> 1: used $N samples" ||
  fail "evokit update did not use all $N samples of the C++ sampler's obs-norm log"

echo "== a CMA-ES warehouse, sampled by C++, updated by Python"
# A linear policy, as configs/cartpole_cma.prototxt trains (10 parameters).
evokit init-model --env CartPole-v1 --hidden --seed 0 -o "$work/cma_init.onnx"
W3=$work/warehouse_cma
evokit init-solver --config "$src/configs/cartpole_cma.prototxt" --model "$work/cma_init.onnx" \
  --warehouse "$W3"
# One sample per member of the generation (solver.population_size): CMA
# needs a reward for every member, and distinct members make distinct records.
NC=$("$python" -c "import sys, evokit; print(evokit.load_config(sys.argv[1]).solver.population_size)" \
  "$src/configs/cartpole_cma.prototxt")
for k in 0 1 2; do
  log=$work/logs/cma_$k
  "$sampler" --warehouse "$W3" --log "$log" --num-samples "$NC" --seed 3 --threads 2
  update=$(evokit update --warehouse "$W3" --log "$log")
  echo "$update"
  grep -q "^update $k -> $((k + 1)): used $NC samples" <<<"$update" ||
    fail "evokit update did not advance the CMA warehouse from $k to $((k + 1)) with all $NC samples"
  if grep -q "dropped\|not enough\|skipped" <<<"$update"; then
    fail "evokit update dropped or skipped records of the C++ sampler's CMA log"
  fi
  # Every record of the log is one the update used: consumed.pb of the new
  # iteration holds exactly the log's records (the C++ sampler numbers its
  # samples 0 .. n-1: one run of sampler 3 at iteration k), all drawn at k.
  "$python" - "$W3" "$log" "$k" "$NC" <<'PY' || fail "iteration $((k + 1)) of the CMA warehouse did not use every record"
import sys
from evokit import evokit_pb2 as pb
from evokit.online.samplelog import read_log
warehouse, log, k, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
result = read_log(log)
assert not result.skipped, [str(s) for s in result.skipped]
ids = {r.record_id for r in result.records}
assert len(result.records) == len(ids) == n, (len(result.records), len(ids), n)
assert {r.record.info.model_iter_id for r in result.records} == {k}
assert sorted(r.identity for r in result.records) == [(3, k, i) for i in range(n)]
consumed = pb.ConsumedSamples()
with open(f"{warehouse}/model_iter_id-{k + 1}/consumed.pb", "rb") as f:
    consumed.ParseFromString(f.read())
assert list(consumed.record_ids) == [], len(consumed.record_ids)
runs = [(r.sampler_id, r.model_iter_id, r.first, r.end) for r in consumed.ranges]
assert runs == [(3, k, 0, n)], runs
state = pb.SolverState()
with open(f"{warehouse}/model_iter_id-{k + 1}/solver.pb", "rb") as f:
    state.ParseFromString(f.read())
assert (state.family, state.steps) == ("CMA_SAMPLING", k + 1), (state.family, state.steps)
print(f"iteration {k + 1}: consumed.pb holds the {n} records of {log.rsplit('/', 1)[1]} (one run)")
PY
done
evaluation=$("$evaluator" --warehouse "$W3" --episodes 5)
echo "$evaluation"
grep -q "model_iter_id 3$" <<<"$evaluation" || fail "the C++ evaluator did not load iteration 3 of the CMA warehouse"
echo "== the service loop: clones served by threads, rotating logs"
W4=$work/warehouse_service
evokit init-solver --config "$src/configs/cartpole.prototxt" --model "$work/init_model.onnx" --warehouse "$W4"
# 2 threads x 2,000 requests over 4 clones each, a sample every 50: 80 records, 2 logs of 40.
"$work/demo-build/evokit_service_loop" --warehouse "$W4" --log-dir "$work/service_logs" --clones 8 \
  --threads 2 --requests 4000 --episode-steps 50 --records-per-log 40 --append-every 3 --seed 5
"$python" - "$work/service_logs" <<'PY' || fail "the service loop's logs are not 2 files of 40 whole records"
import os, sys
from evokit.online.samplelog import read_log
d = sys.argv[1]
names = sorted(os.listdir(d))
assert names == ["service_log_00000", "service_log_00001"], names
indices = []
for name in names:
    result = read_log(os.path.join(d, name))
    assert not result.skipped, [str(s) for s in result.skipped]
    assert len(result.records) == 40, (name, len(result.records))
    assert {r.record.sampler_id for r in result.records} == {5}
    assert {r.record.env_steps for r in result.records} == {50}
    indices += [r.record.sample_index for r in result.records]
assert sorted(indices) == list(range(80)), sorted(indices)
print(f"the service loop wrote {len(names)} logs of 40 records, sample indices 0..79 once each")
PY
evokit update --warehouse "$W4" --log "$work/service_logs/service_log_00000" |
  grep "update 0 -> 1: used 40 samples" || fail "evokit update did not use the 40 samples of the service loop's first log"
echo "round trip OK"
