"""CartPole-v1 time to solve: `evokit train` against a plain NumPy OpenAI-ES.

Both run the same loop with the same settings, read from configs/cartpole.prototxt:
population, sigma, Adam learning rate, antithetic pairs, centered ranks, the
same initial 4-16-2 tanh MLP, the centre policy evaluated every
`train.eval_every` generations over `train.eval_episodes` episodes, stopping at
`train.target_return`. Evaluation: `evokit train`'s default (the native policy
on a CartPoleVectorEnv in lockstep, `train.num_workers` threads) against
`train.num_workers` processes for the NumPy side. Each run is a fresh process,
and its wall time counts from process start to exit.

    python bench/cartpole_solve.py              # 5 seeds each
    python bench/cartpole_solve.py --seeds 2    # fewer

Writes bench/results/cartpole_solve.json and .md (``--out DIR`` elsewhere).

The NumPy side is the reference a user would write without EvoKit: NumPy
noise from a seeded Generator, a NumPy MLP forward pass, the OpenAI-ES step of
tests/es_oracle.py, and a multiprocessing pool.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(ROOT, "configs", "cartpole.prototxt")
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402
from run import _solve_process as solve_process  # noqa: E402


# --------------------------------------------------------------------------
# the NumPy OpenAI-ES (runs in its own process: `--runner numpy --seed S`)
# --------------------------------------------------------------------------

def _numpy_episode(args):
    import gymnasium as gym
    import numpy as np

    layers, theta, seed = args
    env = _numpy_episode.env = getattr(_numpy_episode, "env", None) or gym.make("CartPole-v1")
    params, off = [], 0
    for shape in layers:
        size = int(np.prod(shape))
        params.append(theta[off:off + size].reshape(shape))
        off += size
    obs, _ = env.reset(seed=int(seed))
    total, steps = 0.0, 0
    while True:
        x = obs.astype(np.float32)
        for i in range(0, len(params), 2):
            x = x @ params[i] + params[i + 1]
            if i + 2 < len(params):
                x = np.tanh(x)
        obs, r, term, trunc, _ = env.step(int(np.argmax(x)))
        total += r
        steps += 1
        if term or trunc:
            return total, steps


def run_numpy(seed: int) -> dict:
    import multiprocessing

    import numpy as np
    from onnx import numpy_helper

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import es_oracle

    import evokit
    from evokit.policy.mlp import init_mlp

    t0 = time.perf_counter()
    cfg = evokit.load_config(CONFIG)
    s, t = cfg.solver, cfg.train
    sigma = s.sampling.gaussian_sampling.std
    model = init_mlp(4, 2, hidden_sizes=tuple(t.hidden_sizes), activation=t.activation, seed=seed)
    inits = [numpy_helper.to_array(i) for i in model.graph.initializer]
    layers = [a.shape for a in inits]
    theta = np.concatenate([a.ravel() for a in inits]).astype(np.float64)
    rng = np.random.default_rng(seed)
    state, steps, generation, centre = {}, 0, 0, float("nan")
    pairs = s.population_size // 2
    with multiprocessing.get_context("fork").Pool(t.num_workers) as pool:
        for generation in range(1, t.max_generations + 1):
            eps = rng.standard_normal((pairs, theta.size))
            eps = np.concatenate([eps, -eps])  # antithetic
            seeds = rng.integers(0, 2**31, pairs)
            seeds = np.concatenate([seeds, seeds])
            jobs = [(layers, (theta + sigma * e).astype(np.float32), sd) for e, sd in zip(eps, seeds)]
            out = pool.map(_numpy_episode, jobs, chunksize=max(1, len(jobs) // (4 * t.num_workers)))
            rewards = np.array([r for r, _ in out])
            steps += sum(n for _, n in out)
            d = es_oracle.es_direction(theta, eps, np.ones(len(eps)), es_oracle.centered_ranks(rewards),
                                       sigma, s.weight_decay)
            theta, state = es_oracle.optimizer_step(theta, d, state, "ADAM", s.optimizer.base_lr)
            if generation % t.eval_every == 0:
                evals = pool.map(_numpy_episode, [(layers, theta.astype(np.float32), int(sd))
                                                  for sd in rng.integers(0, 2**31, t.eval_episodes)])
                steps += sum(n for _, n in evals)
                centre = float(np.mean([r for r, _ in evals]))
                if centre >= t.target_return:
                    break
    return {"solved": bool(centre >= t.target_return), "generations": generation, "env_steps": int(steps),
            "centre": centre, "loop_time": time.perf_counter() - t0}


# --------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------

def _timed(cmd) -> tuple:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return wall, out


def run_evokit(seed: int) -> dict:
    """`evokit train` in a fresh process, as bench/run.py's solve section runs it."""
    result = solve_process("evokit", seed, timeout=600)
    if "error" in result:
        raise RuntimeError(f"evokit train, seed {seed}: {result['error']}")
    return result


def run_numpy_process(seed: int) -> dict:
    wall, out = _timed([sys.executable, __file__, "--runner", "numpy", "--seed", str(seed)])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_time"] = wall
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    add_out_argument(p, "cartpole_solve")
    p.add_argument("--runner", choices=["numpy"], help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.runner == "numpy":
        print(json.dumps(run_numpy(args.seed)))
        return 0

    report = Report("cartpole_solve", "CartPole-v1 time to solve: evokit train against NumPy OpenAI-ES "
                                      "(bench/cartpole_solve.py)")
    results = {"evokit": [], "numpy_openai_es": []}
    for seed in range(args.seeds):  # interleaved, so drift in machine load hits both
        results["evokit"].append(run_evokit(seed))
        results["numpy_openai_es"].append(run_numpy_process(seed))
    report.print(f"CartPole-v1, {args.seeds} seeds, config {os.path.relpath(CONFIG, ROOT)}\n")
    report.print("| runner | solved | wall time median (s) | wall time max (s) | env steps median | env steps max |")
    report.print("| --- | --- | --- | --- | --- | --- |")
    for name, rs in results.items():
        w = [r["wall_time"] for r in rs]
        s = [r["env_steps"] for r in rs]
        report.print(f"| {name} | {sum(r['solved'] for r in rs)}/{len(rs)} | {statistics.median(w):.2f} | "
                     f"{max(w):.2f} | {statistics.median(s):,.0f} | {max(s):,} |")
    ratio = (statistics.median([r["wall_time"] for r in results["numpy_openai_es"]])
             / statistics.median([r["wall_time"] for r in results["evokit"]]))
    report.print(f"\nMedian wall time, NumPy / EvoKit: {ratio:.2f}x")
    report.write(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
