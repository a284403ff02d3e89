"""EvoKit's NSGA2 against pymoo's NSGA2 on ZDT1, ZDT2, ZDT3 (n = 30, two
objectives), at equal population and evaluation budget, over several seeds.

    python bench/multiobjective.py                  # 5 seeds, 25,000 evaluations, population 100
    python bench/multiobjective.py --seeds 2 --evaluations 5000 --out /tmp/bench

Both run their defaults with the same variation settings (SBX p_c = 0.9,
eta_c = 15; polynomial mutation p_m = 1/n, eta_m = 20; pymoo's NSGA2 also
drops duplicate offspring, EvoKit's does not). The figure compared is the
hypervolume of each run's final non-dominated set with reference point
(1.1, 1.1) (the ZDT fronts lie in [0, 1] x [-0.8, 1]), computed for both by
pymoo's HV indicator (and checked against evokit's exact 2-D sweep);
"front" is the hypervolume of the true Pareto front (a dense sample of it),
the best any finite set can approach. Wall time is per run, f included (the
ZDT functions are vectorised NumPy for both). pymoo is not an EvoKit
dependency: ``pip install pymoo`` first. Writes bench/results/multiobjective.json
and .md (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import evokit
from evokit.blackbox.pareto import hypervolume, nondominated_ranks

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

REFERENCE = np.array([1.1, 1.1])


def zdt(name: str):
    """The ZDT function (Zitzler, Deb, Thiele 2000), vectorised: X [k, n] in [0, 1]^n -> F [k, 2]."""
    def f(X):
        X = np.asarray(X)
        f1 = X[:, 0]
        g = 1.0 + 9.0 * X[:, 1:].sum(axis=1) / (X.shape[1] - 1)
        r = f1 / g
        h = {"zdt1": lambda: 1.0 - np.sqrt(r), "zdt2": lambda: 1.0 - r ** 2,
             "zdt3": lambda: 1.0 - np.sqrt(r) - r * np.sin(10.0 * np.pi * f1)}[name]()
        return np.stack([f1, g * h], axis=1)
    return f


def true_front_hypervolume(name: str, points: int = 20001) -> float:
    f1 = np.linspace(0.0, 1.0, points)
    X = np.zeros((points, 30))
    X[:, 0] = f1  # g = 1 on the front
    F = zdt(name)(X)
    F = F[nondominated_ranks(F) == 0]
    return hypervolume(F, REFERENCE)


def run_evokit(name: str, seed: int, population: int, evaluations: int):
    start = time.perf_counter()
    es = evokit.NSGA2(bounds=(np.zeros(30), np.ones(30)), population_size=population, seed=seed,
                      reference_point=REFERENCE, max_evaluations=evaluations)
    result = es.optimize(zdt(name), vectorized=True)
    return result.pareto_f, time.perf_counter() - start


def run_pymoo(name: str, seed: int, population: int, evaluations: int):
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem

    start = time.perf_counter()
    res = minimize(get_problem(name, n_var=30), NSGA2(pop_size=population), ("n_eval", evaluations),
                   seed=seed, verbose=False)
    return res.F, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--population", type=int, default=100)
    parser.add_argument("--evaluations", type=int, default=25_000)
    parser.add_argument("--problems", nargs="+", default=["zdt1", "zdt2", "zdt3"])
    add_out_argument(parser, "multiobjective")
    args = parser.parse_args(argv)

    import pymoo
    from pymoo.indicators.hv import HV

    indicator = HV(ref_point=REFERENCE)
    md = Report("multiobjective", "NSGA-II on ZDT: EvoKit against pymoo (bench/multiobjective.py)")
    md.print(f"n = 30: population {args.population}, {args.evaluations} evaluations, "
             f"seeds 0..{args.seeds - 1}, reference point (1.1, 1.1)\n")
    md.print("| problem | front HV | EvoKit HV (mean +- std) | pymoo HV (mean +- std) | ratio | "
             "EvoKit s/run | pymoo s/run |")
    md.print("|---|---|---|---|---|---|---|")
    report = {"population": args.population, "evaluations": args.evaluations, "seeds": args.seeds,
              "problems": {}}
    for name in args.problems:
        figures = {"evokit": ([], []), "pymoo": ([], [])}
        for seed in range(args.seeds):
            for runner, run in (("evokit", run_evokit), ("pymoo", run_pymoo)):
                F, seconds = run(name, seed, args.population, args.evaluations)
                hv = float(indicator(F))
                ours = hypervolume(F[nondominated_ranks(F) == 0], REFERENCE)
                assert abs(hv - ours) <= 1e-12 * max(1.0, hv), (hv, ours)
                figures[runner][0].append(hv)
                figures[runner][1].append(seconds)
        front = true_front_hypervolume(name)
        ek, pm = figures["evokit"], figures["pymoo"]
        ratio = statistics.mean(ek[0]) / statistics.mean(pm[0]) if statistics.mean(pm[0]) > 0 else float("nan")
        std = (lambda v: statistics.stdev(v) if len(v) > 1 else 0.0)
        md.print(f"| {name.upper()} | {front:.4f} | {statistics.mean(ek[0]):.4f} +- {std(ek[0]):.4f} | "
                 f"{statistics.mean(pm[0]):.4f} +- {std(pm[0]):.4f} | {ratio:.4f} | "
                 f"{statistics.mean(ek[1]):.2f} | {statistics.mean(pm[1]):.2f} |")
        report["problems"][name] = {"front_hv": front, "evokit_hv": ek[0], "pymoo_hv": pm[0],
                                    "evokit_seconds": ek[1], "pymoo_seconds": pm[1], "ratio": ratio}
    md.write(args.out, report)
    return report


if __name__ == "__main__":
    main()
