"""CartPole-v1 with each sampler: Gaussian (OpenAI-ES), CMA-ES and the GA.

`evokit.train` on configs/cartpole.prototxt, configs/cartpole_cma.prototxt and
configs/cartpole_ga.prototxt for a few `train.seed`s in this process; reports,
per sampler, how many runs reached a centre mean return >= 475 over 20
episodes, and the generations, env steps and wall time of the training loop
(process start and imports excluded). The Gaussian config trains a 4-16-2 MLP
on the batched native evaluator; the CMA and GA configs a linear policy (10
parameters), evaluated in the training process one episode at a time (their
samples are rebuilt from the strategy's state).

    python bench/cartpole_samplers.py              # seeds 0..4
    python bench/cartpole_samplers.py --seeds 2

Writes bench/results/cartpole_samplers.json and .md (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import evokit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {"gaussian": "cartpole.prototxt", "cma": "cartpole_cma.prototxt", "ga": "cartpole_ga.prototxt"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    add_out_argument(parser, "cartpole_samplers")
    args = parser.parse_args()
    report = Report("cartpole_samplers", "CartPole-v1 with each sampler (bench/cartpole_samplers.py)")
    report.print("| sampler | solved | generations (per seed) | env steps median | loop time median (s) | max (s) |")
    report.print("| --- | --- | --- | --- | --- | --- |")
    figures = {}
    for name, config in CONFIGS.items():
        runs = []
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(args.seeds):
                runs.append(evokit.train(os.path.join(ROOT, "configs", config), seed=seed,
                                         out_dir=os.path.join(tmp, str(seed)), log=lambda s: None))
        times = [r.wall_time for r in runs]
        figures[name] = [{"seed": seed, "solved": bool(r.solved), "generations": r.generations,
                          "env_steps": r.env_steps, "loop_time_s": r.wall_time} for seed, r in enumerate(runs)]
        report.print(f"| {name} | {sum(r.solved for r in runs)}/{len(runs)} | "
                     f"{', '.join(str(r.generations) for r in runs)} | "
                     f"{statistics.median(r.env_steps for r in runs):,.0f} | {statistics.median(times):.2f} | "
                     f"{max(times):.2f} |")
    report.write(args.out, figures)

if __name__ == "__main__":
    main()
