"""The online pipeline at scale: `evokit sample` and `evokit update` on many
records, beside `evokit train` on the same config and cores, in one run.

Every figure is a fresh process, as a user runs it, timed from start to exit
with its peak resident memory (the children's rusage):

- train: `evokit train CONFIG` to its target; its env steps per second as its
  own metrics give them (env steps over the loop's wall time) and per second
  of process wall time;
- sample, iteration 0: `evokit sample --num-samples N` from a warehouse of a
  fresh MLP (short episodes: the per-sample cost dominates);
- sample, trained: the same from a warehouse whose model is train's (long
  episodes: the rollouts dominate);
- update: `evokit update` over the iteration-0 log: wall time, peak memory,
  and the records it dropped as duplicates (two evaluations of one member
  are two records; only a record appended twice is a duplicate).

    python bench/online_pipeline.py [--num-samples 200000] [--config configs/cartpole.prototxt]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402


# The evokit command in a fresh process that reports its own peak resident memory.
_RUN = ("import resource, sys\nfrom evokit.cli import main\nrc = main(sys.argv[1:])\n"
        "print(f'PEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\n"
        "sys.exit(rc)")


def timed(*args: str) -> dict:
    """Runs `evokit ARGS` in a fresh process: its output, wall s and peak MiB."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"evokit {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    peak = re.search(r"PEAK_KB (\d+)", proc.stderr)
    return {"out": proc.stdout, "wall_s": wall, "peak_mib": int(peak.group(1)) / 1024}


def env_steps(text: str) -> int:
    return int(re.search(r"([\d,]+) env steps", text).group(1).replace(",", ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole.prototxt"))
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--num-samples", type=int, default=200_000)
    ap.add_argument("--hidden", type=int, nargs="*", default=[16])
    add_out_argument(ap, "online_pipeline")
    args = ap.parse_args(argv)
    report = Report("online_pipeline", "The online pipeline at scale (bench/online_pipeline.py)")
    hidden = [str(h) for h in args.hidden]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        def path(name: str) -> str:
            return os.path.join(tmp, name)

        train = timed("train", args.config, "--env", args.env, "--out", path("run"))
        with open(path("run/metrics.csv")) as f:
            last = list(csv.DictReader(f))[-1]
        rows["train"] = {"env_steps": int(last["env_steps"]), "loop_s": float(last["wall_time"]),
                         "wall_s": train["wall_s"], "peak_mib": train["peak_mib"]}
        timed("init-model", "--env", args.env, "--hidden", *hidden, "-o", path("init.onnx"))
        for name, model in (("sample, iteration 0", path("init.onnx")), ("sample, trained", path("run/model.onnx"))):
            wh = path(name.split(",")[1].strip().replace(" ", "_"))
            timed("init-solver", "--config", args.config, "--model", model, "--warehouse", wh)
            run = timed("sample", "--warehouse", wh, "--env", args.env, "--num-samples", str(args.num_samples),
                        "--log", wh + ".log")
            rows[name] = {"env_steps": env_steps(run["out"]), "wall_s": run["wall_s"], "peak_mib": run["peak_mib"],
                          "log_mib": os.path.getsize(wh + ".log") / 2**20}
        update = timed("update", "--warehouse", path("iteration_0"), "--log", path("iteration_0") + ".log")
        dropped = re.search(r"dropped (\d+): duplicate", update["out"])
        rows["update"] = {"records": args.num_samples, "wall_s": update["wall_s"], "peak_mib": update["peak_mib"],
                          "duplicates_dropped": int(dropped.group(1)) if dropped else 0,
                          "report": update["out"].strip()}

    t = rows["train"]
    train_rate = t["env_steps"] / t["loop_s"]
    report.print(f"Config {os.path.relpath(args.config, ROOT)}, {args.env}, {args.num_samples:,} samples; "
                 f"train.num_workers from the config for every command.\n")
    report.print("| command | env steps | wall s | env steps / s of wall | vs train's metric | peak MiB |")
    report.print("| --- | ---: | ---: | ---: | ---: | ---: |")
    report.print(f"| train (its metric: loop {t['loop_s']:.2f} s) | {t['env_steps']:,} | {t['wall_s']:.2f} | "
                 f"{t['env_steps'] / t['wall_s']:,.0f} (metric {train_rate:,.0f}) | 1.00 | {t['peak_mib']:.0f} |")
    for name in ("sample, iteration 0", "sample, trained"):
        r = rows[name]
        rate = r["env_steps"] / r["wall_s"]
        r["ratio_to_train_metric"] = rate / train_rate
        report.print(f"| {name} | {r['env_steps']:,} | {r['wall_s']:.2f} | {rate:,.0f} | {rate / train_rate:.2f} | "
                     f"{r['peak_mib']:.0f} |")
    u = rows["update"]
    report.print(f"\nupdate over the iteration-0 log ({args.num_samples:,} records, "
                 f"{rows['sample, iteration 0']['log_mib']:.1f} MiB): {u['wall_s']:.2f} s, peak {u['peak_mib']:.0f} MiB, "
                 f"{u['duplicates_dropped']} dropped as duplicates")
    report.write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
