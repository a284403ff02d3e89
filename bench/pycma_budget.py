"""pycma's evaluations to f < 1e-8, the budget of tests/blackbox/test_cmaes.py.

Runs pycma (`pip install cma`) with its default population size on the
problems of tests/cma_problems.py in dimensions 10 and 30, for several seeds,
and writes the evaluations of each run, their median over the runs that
reached the target, and the pycma version to tests/data/pycma_budget.json.
The test allows EvoKit 1.15 times that median.

    pip install cma && python bench/pycma_budget.py [--seeds 7]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import cma
from cma_problems import PROBLEMS, TARGET

OUT = os.path.join(ROOT, "tests", "data", "pycma_budget.json")


def run(f, n, x0, sigma0, seed):
    es = cma.CMAEvolutionStrategy(np.full(n, x0), sigma0,
                                  {"ftarget": TARGET, "seed": seed, "verbose": -9, "maxfevals": 2e6})
    while not es.stop():
        X = es.ask()
        es.tell(X, [float(f(x)) for x in X])
    return es.countevals, es.result.fbest, es.popsize


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=7, help="runs per problem (seeds 1..N)")
    parser.add_argument("--dims", type=int, nargs="+", default=[10, 30])
    args = parser.parse_args()
    results = []
    for name, (f, x0, sigma0) in PROBLEMS.items():
        for n in args.dims:
            t0 = time.time()
            runs = [run(f, n, x0, sigma0, seed) for seed in range(1, args.seeds + 1)]
            hits = [evals for evals, fbest, _ in runs if fbest < TARGET]
            entry = {
                "function": name, "dim": n, "x0": x0, "sigma0": sigma0,
                "population_size": runs[0][2],
                "evaluations": [evals for evals, _, _ in runs],
                "reached_target": [bool(fbest < TARGET) for _, fbest, _ in runs],
                "median_evaluations": float(np.median(hits)) if hits else None,
            }
            results.append(entry)
            print(f"{name:10s} n={n:3d} lambda={entry['population_size']:3d} median={entry['median_evaluations']} "
                  f"runs={entry['evaluations']} ({time.time() - t0:.0f} s)", flush=True)
    data = {
        "pycma_version": cma.__version__,
        "target": TARGET,
        "seeds": list(range(1, args.seeds + 1)),
        "options": "defaults (active CMA, default population size) with ftarget=1e-8",
        "script": "bench/pycma_budget.py",
        "problems": results,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
