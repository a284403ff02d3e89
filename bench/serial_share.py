"""The serial share of a training generation: how much of `evokit train`'s
wall time is not spent in the native rollouts, the part more cores cannot
shorten.

For each task, a run of `evokit.train` (its config, `--generations` of them
after a first one left out, no centre evaluations) on 1 thread and on
`--threads`: the generations' wall time (the loop's own figure, train's
metrics), the wall time inside
`evokit._core.env_rollouts` (timed around every call), and

    s = (generation wall time - rollout wall time) / generation wall time

on one thread. By Amdahl's law N cores can give at most 1 / (s + (1 - s) / N)
of one core's speed: s <= 3 % is what lets 16 cores give >= 10x.

Tasks: Hopper-v5 (configs/hopper.prototxt) and Humanoid-v5 with ARS's
Humanoid settings (Mania, Guy, Recht 2018: 230 directions, all used, step
0.02, noise 0.0075, a linear policy, states normalised); both from their
initial policy, so early, short episodes: the figures are for that stage.

    pip install '.[mujoco]' && python bench/serial_share.py [--generations 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402


def humanoid_config():
    import evokit

    cfg = evokit.load_config(os.path.join(ROOT, "configs", "hopper.prototxt"))
    cfg.train.env_id = "Humanoid-v5"
    ars = cfg.solver.sampling.ars_sampling
    ars.step_size, ars.std, ars.top_directions = 0.02, 0.0075, 230
    cfg.solver.population_size = 460
    cfg.train.alive_bonus_offset = 5  # Humanoid's healthy reward, removed as ARS removes it
    return cfg


def task_configs():
    import evokit

    return {"Hopper-v5": evokit.load_config(os.path.join(ROOT, "configs", "hopper.prototxt")),
            "Humanoid-v5": humanoid_config()}


def measure(cfg, generations: int, threads: int) -> dict:
    """One run of generations + 1 generations, the first one (loading the
    simulator, first calls) left out: the other generations' wall time, the
    rollouts' wall time in them, their env steps."""
    import csv

    import evokit
    from evokit import _core
    from evokit.evaluation import vector

    calls = []  # the wall time of each env_rollouts call: one per generation, then the final centre's
    real = _core.env_rollouts

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            calls.append(time.perf_counter() - t0)

    cfg.train.eval_every = generations + 2  # no centre evaluation inside the run
    cfg.train.max_env_steps = 0
    vector._core.env_rollouts = timed
    try:
        with tempfile.TemporaryDirectory() as out:
            evokit.train(cfg, out_dir=out, num_workers=threads, max_generations=generations + 1,
                         evaluator_kind="vector", log=lambda s: None)
            with open(os.path.join(out, "metrics.csv")) as f:
                rows = list(csv.DictReader(f))
    finally:
        vector._core.env_rollouts = real
    if len(calls) != len(rows) + 1:
        raise RuntimeError(f"expected one env_rollouts call per generation and the final centre evaluation, "
                           f"got {len(calls)} for {len(rows)} generations")
    wall = float(rows[-1]["wall_time"]) - float(rows[0]["wall_time"])
    rollouts = sum(calls[1:len(rows)])
    return {"generations": generations, "threads": threads, "wall_s": wall, "rollout_s": rollouts,
            "env_steps": int(rows[-1]["env_steps"]) - int(rows[0]["env_steps"]),
            "serial_share": (wall - rollouts) / wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generations", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tasks", nargs="+", default=["Hopper-v5", "Humanoid-v5"])
    add_out_argument(ap, "serial_share")
    args = ap.parse_args(argv)
    report = Report("serial_share", "The serial share of a training generation (bench/serial_share.py)")
    configs = task_configs()
    rows = []
    report.print("| task | threads | generations | env steps | wall s | in rollouts s | serial share s | "
                 "Amdahl bound at 16 cores |")
    report.print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for task in args.tasks:
        for threads in sorted({1, args.threads}):
            cfg = type(configs[task])()
            cfg.CopyFrom(configs[task])
            row = dict(measure(cfg, args.generations, threads), task=task)
            s = row["serial_share"]
            bound = 1 / (s + (1 - s) / 16)
            rows.append(row)
            report.print(f"| {task} | {threads} | {row['generations']} | {row['env_steps']:,} | {row['wall_s']:.2f} | "
                         f"{row['rollout_s']:.2f} | {100 * s:.1f} % | {bound:.1f}x |")
    report.print("\nThe serial share is the one-thread row's; with more threads the rollouts shrink and the "
                 "share of the rest grows.")
    report.write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
