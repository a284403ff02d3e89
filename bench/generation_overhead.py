"""A training generation's overhead, everything but the evaluation: drawing
the members, materialising their parameters for the batched forward pass,
and the update, for a policy of about 1,000 parameters (a 4-32-24-2 tanh
MLP, 1,002 parameters), population 50, one thread.

Per family (SNES_SAMPLING and CMA_SAMPLING by default) and per generation,
as `evokit train` runs it:

    infos = agent.draw_members(50)          # one call: the members' keys
    population = agent.population(infos)    # one call: their parameters
    agent.update(infos, rewards)            # one call: the update

timed over --generations generations after 5 left out, median. With
``--baseline DIR`` the same measurement also runs on another build of
evokit (a copy of an installed ``evokit`` package in DIR, put first on
PYTHONPATH), alternating with this one in one run, and the table gives
the ratio this / baseline:

    cp -a "$(python -c 'import evokit, os; print(os.path.dirname(evokit.__file__))')" /tmp/before/
    # ... rebuild and reinstall, then
    python bench/generation_overhead.py --baseline /tmp/before

Writes bench/results/generation_overhead.json and .md (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402

FAMILIES = {"SNES_SAMPLING": "snes_sampling", "CMA_SAMPLING": "cma_sampling", "MAES_SAMPLING": "maes_sampling",
            "XNES_SAMPLING": "xnes_sampling", "CEM_SAMPLING": "cem_sampling"}

MEASURE = r"""
import json, os, sys, tempfile, time
import numpy as np
import evokit
from evokit.policy.mlp import init_mlp

family, field, generations = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = tempfile.mkdtemp()
model = os.path.join(d, "m.onnx")
with open(model, "wb") as f:
    f.write(init_mlp(4, 2, hidden_sizes=(32, 24), seed=0).SerializeToString())
cfg = evokit.parse_config(f"solver {{ sampling {{ type: {family} {field} {{ sigma0: 0.1 }} }} "
                          f"population_size: 50 antithetic: false num_threads: 1 }}")
agent = evokit.ESAgent(cfg, model)
rng = np.random.default_rng(0)
parts = {"draw": [], "population": [], "update": [], "total": []}
for g in range(generations + 5):
    t0 = time.perf_counter(); infos = agent.draw_members(50)
    t1 = time.perf_counter(); population = agent.population(infos)
    t2 = time.perf_counter(); agent.update(infos, rng.normal(size=50).tolist())
    t3 = time.perf_counter()
    if g >= 5:
        for name, t in (("draw", t1 - t0), ("population", t2 - t1), ("update", t3 - t2), ("total", t3 - t0)):
            parts[name].append(t)
print(json.dumps({"num_params": int(agent.params.size), "evokit": evokit.__file__,
                  **{k: sorted(v)[len(v) // 2] for k, v in parts.items()}}))
"""


def measure(family: str, generations: int, pythonpath: str = "") -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", MEASURE, family, FAMILIES[family], str(generations)],
                         capture_output=True, text=True, env=env, cwd="/", check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=["SNES_SAMPLING", "CMA_SAMPLING"], choices=sorted(FAMILIES))
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5, help="processes per build and family (alternating)")
    parser.add_argument("--baseline", metavar="DIR", help="a directory holding another build's evokit package")
    add_out_argument(parser, "generation_overhead")
    args = parser.parse_args()
    report = Report("generation_overhead", "A training generation's overhead (bench/generation_overhead.py)")
    builds = {"this": ""}
    if args.baseline:
        builds["baseline"] = os.path.abspath(args.baseline)
    results = {}
    for family in args.families:
        runs = {name: [] for name in builds}
        for _ in range(args.repeats):
            for name, path in builds.items():
                runs[name].append(measure(family, args.generations, path))
        results[family] = {
            name: {"num_params": r[0]["num_params"], "evokit": r[0]["evokit"],
                   **{part: statistics.median(x[part] for x in r) * 1e3
                      for part in ("draw", "population", "update", "total")}}
            for name, r in runs.items()}
    report.print("Milliseconds per generation (median over the generations of a process, then over "
                 f"{args.repeats} processes), population 50, 1 thread:\n")
    report.print("| family | build | params | draw | population | update | total | total / baseline |")
    report.print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for family, by_build in results.items():
        for name, r in by_build.items():
            ratio = (f"{r['total'] / by_build['baseline']['total']:.2f}" if "baseline" in by_build and name == "this"
                     else "")
            report.print(f"| {family} | {name} | {r['num_params']:,} | {r['draw']:.3f} | {r['population']:.3f} | "
                         f"{r['update']:.3f} | {r['total']:.3f} | {ratio} |")
    report.write(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
