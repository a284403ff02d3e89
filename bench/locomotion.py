"""Locomotion (and CartPole) as a user judges it: `evokit train CONFIG --seed S`
in a fresh process per seed, then the saved ``model.onnx`` run by plain
onnxruntime on fresh episodes (bench/judge.py), against the published anchors.

    python bench/locomotion.py hopper --seeds 5            # configs/hopper.prototxt, seeds 0-4
    python bench/locomotion.py cartpole --seeds 10 --first-seed 100
    python bench/locomotion.py hopper halfcheetah swimmer --out /tmp/loco

Protocol, per task and seed:
- training: ``evokit train <config> --seed S --out RUNS/<task>/seed<S> -q`` (the
  config's budget: ``train.max_generations``; it stops earlier once a centre
  evaluation of ``train.eval_episodes`` fresh episodes reaches
  ``train.target_return``); its wall time is the process's, start to exit;
  its env steps are what its metrics report (sampled episodes and centre
  evaluations alike);
- judgement: the saved ``model.onnx`` in onnxruntime on ``judge_episodes``
  fresh episodes (seeds from 2**31 up, which training never draws), the
  environment's own reward; the task counts as reached when their mean is
  >= the anchor;
- the machine's load average before and after each run is recorded.

Output (``--out DIR``, default bench/results): ``locomotion_<tasks>.md`` and
``.json``, and ``locomotion_<tasks>[_<task>].png``: the training centre
evaluations of every seed against env steps and against seconds, the anchor
as a line. The training runs go to ``--runs`` (default runs/locomotion).

Anchors: ARS's thresholds (Mania, Guy, Recht 2018, Table 1): Swimmer 325,
Hopper 3,120, HalfCheetah 3,430, Walker2d 4,390, Ant 3,580; this project's
Hopper target is 3,000 in <= 3 M env steps and <= 4 minutes on 2 cores.
CartPole-v1: gymnasium's "solved", a mean >= 475 over 100 consecutive episodes.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from judge import judge  # noqa: E402
from results import Report, add_out_argument  # noqa: E402


@dataclass(frozen=True)
class Task:
    config: str
    env_id: str
    anchor: float          # the judged mean return that counts as reached
    judge_episodes: int
    budget: str            # the budget as stated (for the table)


TASKS = {
    "cartpole": Task("cartpole.prototxt", "CartPole-v1", 475.0, 100, "the default config"),
    "hopper": Task("hopper.prototxt", "Hopper-v5", 3000.0, 10, "<= 3 M env steps, <= 4 min"),
    "halfcheetah": Task("halfcheetah.prototxt", "HalfCheetah-v5", 3430.0, 10, "the config's"),
    "swimmer": Task("swimmer.prototxt", "Swimmer-v5", 325.0, 10, "the config's"),
    "walker2d": Task("walker2d.prototxt", "Walker2d-v5", 4390.0, 10, "the config's"),
    "ant": Task("ant.prototxt", "Ant-v5", 3580.0, 10, "the config's"),
    "humanoid": Task("humanoid.prototxt", "Humanoid-v5", 6000.0, 10, "25 M env steps"),
}


def _load() -> float:
    return os.getloadavg()[0]


def _metrics(run_dir: str):
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        return [{k: (float(v) if v not in ("", None) else None) for k, v in row.items()}
                for row in csv.DictReader(f)]


def run_seed(name: str, task: Task, seed: int, out: str, extra=()) -> dict:
    run_dir = os.path.abspath(os.path.join(out, name, f"seed{seed}"))
    cmd = [sys.executable, "-m", "evokit.cli", "train", os.path.join(ROOT, "configs", task.config),
           "--seed", str(seed), "--out", run_dir, "-q", *extra]
    shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run, not a continuation
    load_before = _load()
    t0 = time.perf_counter()
    # From outside the source tree, so that the installed evokit is the one imported.
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.abspath(out))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    rows = _metrics(run_dir)
    returns = judge(os.path.join(run_dir, "model.onnx"), task.env_id, task.judge_episodes)
    mean = statistics.fmean(returns)
    evals = [r for r in rows if r["eval_mean"] is not None]
    return {
        "task": name, "seed": seed, "wall_time": wall, "train_time": rows[-1]["wall_time"],
        "env_steps": int(rows[-1]["env_steps"]), "generations": int(rows[-1]["generation"]),
        "train_eval": evals[-1]["eval_mean"] if evals else None,
        "judged_mean": mean, "judged_min": min(returns), "judged_max": max(returns),
        "judged_episodes": len(returns), "reached": mean >= task.anchor,
        "load_before": load_before, "load_after": _load(),
        "curve": [(r["env_steps"], r["wall_time"], r["eval_mean"]) for r in evals],
    }


def plot(name: str, task: Task, results, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for r in results:
        steps, secs, ret = zip(*r["curve"]) if r["curve"] else ((), (), ())
        for ax, x in zip(axes, (steps, secs)):
            ax.plot(x, ret, label=f"seed {r['seed']} (judged {r['judged_mean']:.0f})", lw=1.2)
    for ax, label in zip(axes, ("env steps", "seconds of training")):
        ax.axhline(task.anchor, color="k", ls="--", lw=1, label=f"anchor {task.anchor:g}")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("centre return (training evaluation)")
    axes[1].legend(loc="lower right", fontsize=7, framealpha=0.6)
    fig.suptitle(f"{task.env_id}: configs/{task.config}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(name: str, task: Task, results) -> str:
    lines = [f"### {task.env_id} (configs/{task.config}; anchor {task.anchor:g}, budget: "
             f"{task.budget}; judged over {task.judge_episodes} fresh episodes in onnxruntime)", "",
             "| seed | generations | env steps | train s | wall s | training eval | judged mean "
             "| judged min | reached | load before/after |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|:--:|---|"]
    for r in results:
        te = "-" if r["train_eval"] is None else f"{r['train_eval']:.1f}"
        lines.append(f"| {r['seed']} | {r['generations']} | {r['env_steps']:,} | "
                     f"{r['train_time']:.1f} | {r['wall_time']:.1f} | {te} | "
                     f"{r['judged_mean']:.1f} | {r['judged_min']:.1f} | "
                     f"{'yes' if r['reached'] else 'no'} | "
                     f"{r['load_before']:.2f}/{r['load_after']:.2f} |")
    judged = [r["judged_mean"] for r in results]
    lines += ["", f"Median judged return {statistics.median(judged):.1f}; reached on "
              f"{sum(r['reached'] for r in results)} of {len(results)} seeds; median "
              f"{statistics.median(r['env_steps'] for r in results):,.0f} env steps and "
              f"{statistics.median(r['train_time'] for r in results):.1f} s of training.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="+", choices=sorted(TASKS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--runs", default=os.path.join(ROOT, "runs", "locomotion"),
                   help="the training runs' directories (default: runs/locomotion, git-ignored)")
    add_out_argument(p, "locomotion_<tasks>")
    args = p.parse_args(argv)
    name = "locomotion_" + "_".join(args.tasks)
    os.makedirs(args.runs, exist_ok=True)
    report = Report(name, "Locomotion: trained, then judged in onnxruntime (bench/locomotion.py)")
    everything = {}
    for task_name in args.tasks:
        task = TASKS[task_name]
        results = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = run_seed(task_name, task, seed, args.runs)
            results.append(r)
            report.say(f"{task_name} seed {seed}: judged {r['judged_mean']:.1f} after {r['env_steps']:,} "
                       f"steps, {r['train_time']:.1f} s")
        figure = f"{name}_{task_name}.png" if len(args.tasks) > 1 else f"{name}.png"
        plot(task_name, task, results, os.path.join(args.out, figure))
        report.print(table(task_name, task, results))
        report.print(f"![{task.env_id}]({figure})\n")
        everything[task_name] = results
    report.write(args.out, everything)
    return 0


if __name__ == "__main__":
    sys.exit(main())
