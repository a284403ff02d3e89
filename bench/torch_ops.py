"""PyTorch-exported policies: native backend against onnxruntime, side by side.

1. CartPole-v1 time to solve with a 4-16-2 MLP with nn.LayerNorm and nn.GELU
   (tests/fixtures/torch_ops/layernorm_gelu-opset20.onnx, torch 2.13's default
   export; LayerNormalization and Gelu nodes), configs/cartpole.prototxt,
   `solver.backend` "onnxruntime" (the fallback for ops the native backend
   lacks) against "native", seeds interleaved, each run a
   fresh process timed from start to exit.
2. Per-op throughput: one forward call (`OnnxPolicy.run`, the API both
   backends share) of a one-op graph over a (batch, 64) float input, batch 1
   and 256, and of whole exported policies, native against onnxruntime
   (one thread each).

    python bench/torch_ops.py                 # both parts, Markdown tables
    python bench/torch_ops.py --seeds 2 --skip-ops

Writes bench/results/torch_ops.json and .md (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(ROOT, "configs", "cartpole.prototxt")
TORCH_OPS = os.path.join(ROOT, "tests", "fixtures", "torch_ops")
MODEL = os.path.join(TORCH_OPS, "layernorm_gelu-opset20.onnx")
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402


# ---- 1. CartPole time to solve -----------------------------------------------------

def run_train(backend: str, seed: int) -> dict:
    """One training run in this process (the child of `solve`)."""
    import evokit

    cfg = evokit.load_config(CONFIG)
    cfg.solver.backend = backend
    with tempfile.TemporaryDirectory() as out:
        result = evokit.train(cfg, env_id="CartPole-v1", seed=seed, out_dir=out, model=MODEL,
                              log=lambda line: None)
    return {"solved": bool(result.solved), "generations": int(result.generations),
            "loop_time": float(result.wall_time)}


def solve(backend: str, seed: int) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--runner", backend, "--seed", str(seed)],
                         capture_output=True, text=True, cwd="/")
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"run failed:\n{out.stderr}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(backend=backend, seed=seed, wall_time=wall)
    return row


# ---- 2. per-op throughput ----------------------------------------------------------

def op_models():
    """name -> one-op ONNX model over obs (batch, 64) (a parameter p of 64
    floats multiplies the input first, so every model has one)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, inits=(), opset=20, out_dims=("b", 64)):
        p = numpy_helper.from_array(np.linspace(0.5, 1.5, 64, dtype=np.float32), "p")
        nodes = [helper.make_node("Mul", ["obs", "p"], ["x"])] + nodes
        graph = helper.make_graph(nodes, "op", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["b", 64])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_dims))],
                                  initializer=[p, *inits])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)

    n = helper.make_node
    i64 = lambda name, v: numpy_helper.from_array(np.asarray(v, np.int64), name)  # noqa: E731
    f32 = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)  # noqa: E731
    return {
        "LayerNormalization": model([n("LayerNormalization", ["x", "s", "bias"], ["y"])],
                                    [f32("s", np.ones(64)), f32("bias", np.zeros(64))]),
        "Gelu": model([n("Gelu", ["x"], ["y"])]),
        "Gelu (tanh)": model([n("Gelu", ["x"], ["y"], approximate="tanh")]),
        "Erf": model([n("Erf", ["x"], ["y"])]),
        "LeakyRelu": model([n("LeakyRelu", ["x"], ["y"], alpha=0.1)]),
        "Elu": model([n("Elu", ["x"], ["y"])]),
        "Selu": model([n("Selu", ["x"], ["y"])]),
        "Softplus": model([n("Softplus", ["x"], ["y"])]),
        "Mish": model([n("Mish", ["x"], ["y"])]),
        "ReduceMean": model([n("ReduceMean", ["x", "ax"], ["y"])], [i64("ax", [-1])], out_dims=("b", 1)),
        "Concat": model([n("Concat", ["x", "x"], ["y"], axis=1)], out_dims=("b", 128)),
        "Reshape": model([n("Reshape", ["x", "sh"], ["r"]), n("Reshape", ["r", "sh2"], ["y"])],
                         [i64("sh", [-1, 8, 8]), i64("sh2", [0, 64])]),
        "Squeeze/Unsqueeze": model([n("Unsqueeze", ["x", "a"], ["u"]), n("Squeeze", ["u", "a"], ["y"])],
                                   [i64("a", [1])]),
        "Gather": model([n("Gather", ["x", "ix"], ["y"], axis=1)], [i64("ix", list(range(0, 64, 2)))],
                        out_dims=("b", 32)),
        "Slice": model([n("Slice", ["x", "s0", "e0", "a0"], ["y"])],
                       [i64("s0", [1]), i64("e0", [33]), i64("a0", [1])], out_dims=("b", 32)),
    }


def time_call(fn, min_time=0.2) -> float:
    """Median seconds per call of fn over 5 rounds of about min_time / 5."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.02:
        fn()
        n += 1
    per = max(1, int(n * min_time / 5 / 0.02))
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per):
            fn()
        rounds.append((time.perf_counter() - t0) / per)
    return statistics.median(rounds)


def throughput(batches=(1, 256)) -> list:
    import numpy as np
    import onnx

    from evokit.policy.onnx_policy import OnnxPolicy

    models = dict(op_models())
    for name in ("layernorm_gelu-opset20", "layernorm_gelu-opset13", "layernorm_mish_dropout-opset20",
                 "reshape-opset17", "cat-opset20", "index-opset20"):
        models[f"policy {name}"] = onnx.load(os.path.join(TORCH_OPS, name + ".onnx"))
    rows = []
    rng = np.random.default_rng(0)
    for name, model in models.items():
        native = OnnxPolicy.from_model(model, backend="native")
        ort = OnnxPolicy.from_model(model, backend="onnxruntime")
        params = native.initial_params()
        for batch in batches:
            obs = rng.uniform(-2, 2, (batch,) + native.obs_shape).astype(np.float32)
            np.testing.assert_allclose(native.run(obs, params), ort.run(obs, params), rtol=1e-5, atol=1e-6)
            t_native = time_call(lambda: native.run(obs, params))
            t_ort = time_call(lambda: ort.run(obs, params))
            rows.append({"op": name, "batch": batch, "native_us": t_native * 1e6, "onnxruntime_us": t_ort * 1e6,
                         "speedup": t_ort / t_native})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--skip-solve", action="store_true")
    ap.add_argument("--skip-ops", action="store_true")
    add_out_argument(ap, "torch_ops")
    ap.add_argument("--runner", choices=["native", "onnxruntime"], help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.runner:
        os.environ.setdefault("OMP_NUM_THREADS", "2")
        print(json.dumps(run_train(args.runner, args.seed)))
        return 0

    md = Report("torch_ops", "PyTorch-exported policies: native backend against onnxruntime "
                             "(bench/torch_ops.py)")
    report = {}
    if not args.skip_solve:
        runs = []
        for seed in range(args.seeds):
            for backend in ("onnxruntime", "native"):
                runs.append(solve(backend, seed))
        report["solve"] = runs
        md.print("| backend | solved | wall time per seed (s) | median (s) | loop time median (s) | generations |")
        md.print("| --- | --- | --- | --- | --- | --- |")
        for backend in ("onnxruntime", "native"):
            rs = [r for r in runs if r["backend"] == backend]
            walls = ", ".join("%.2f" % r["wall_time"] for r in rs)
            generations = ", ".join(str(r["generations"]) for r in rs)
            md.print(f"| {backend} | {sum(r['solved'] for r in rs)}/{len(rs)} | {walls} | "
                     f"{statistics.median(r['wall_time'] for r in rs):.2f} | "
                     f"{statistics.median(r['loop_time'] for r in rs):.2f} | {generations} |")
        md.print()
    if not args.skip_ops:
        rows = throughput()
        report["ops"] = rows
        md.print("| op | batch | native (us/call) | onnxruntime (us/call) | onnxruntime / native |")
        md.print("| --- | --- | --- | --- | --- |")
        for r in rows:
            md.print(f"| {r['op']} | {r['batch']} | {r['native_us']:.1f} | {r['onnxruntime_us']:.1f} | "
                     f"{r['speedup']:.1f}x |")
    md.write(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
