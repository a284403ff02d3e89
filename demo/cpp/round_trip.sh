#!/usr/bin/env bash
# End-to-end test of the C++ package and the C++ <-> Python pipeline (run by
# ctest as demo_cpp_round_trip):
#
#   1. `cmake --install` the EvoKit build into a temporary prefix, then
#      configure and build demo/cpp against it with find_package(evokit
#      COMPONENTS core io): this tests the installed package;
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
#      and sampled by the C++ sampler.
#
#   bash demo/cpp/round_trip.sh BUILD_DIR [CMAKE]
#
# Needs the `evokit` command (pip install .) on PATH.
set -euo pipefail

if (($# < 1)); then
  echo "usage: $0 BUILD_DIR [CMAKE]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
cmake_cmd=${2:-cmake}
src=$(cd "$(dirname "$0")/../.." && pwd)

fail() {
  echo "round_trip.sh: FAILED: $*" >&2
  exit 1
}

if ! command -v evokit >/dev/null 2>&1; then
  fail "the 'evokit' command is not on PATH: install the Python package first (pip install .)"
fi

work=$(mktemp -d -t evokit-cpp-round-trip-XXXXXX)
trap 'rm -rf "$work"' EXIT

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
sampler=$work/demo-build/evokit_online_sampling
evaluator=$work/demo-build/evokit_evaluate_model

echo "== the C++ CartPole against gymnasium's"
start="0.03 -0.2 0.04 0.3"
actions=1101001110010111010011010101
"$work/demo-build/evokit_cartpole_trace" $start $actions >"$work/trace_cpp.txt"
python3 - "$start" "$actions" >"$work/trace_py.txt" <<'PY'
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
python3 - "$src/configs/cartpole.prototxt" "$work/cpp_saved" "$W/model_iter_id-1" <<'PY' ||
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
python3 -c "import sys; sys.exit(0 if float('$last') > float('$first') else 1)" ||
  fail "the return did not improve ($first -> $last)"

echo "== a policy trained with observation normalisation, served by C++"
sed 's/^train {$/train {\n  observation_normalization: true/' "$src/configs/cartpole.prototxt" \
  >"$work/obs_norm.prototxt"
evokit train "$work/obs_norm.prototxt" --max-generations 3 --workers 1 --out "$work/obs_norm_run" -q
python3 - "$work/obs_norm_run/model.onnx" <<'PY' || fail "the trained model does not normalise its observations"
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
echo "round trip OK"
