"""Constrained problems: EvoKit's CMAES(...).optimize(f, constraints=g) with
its defaults against pycma's cma.fmin_con2 with its defaults, in one run.

A run counts as solved when its best feasible solution (EvoKit:
result.xbest; pycma: es.best_feasible, the best evaluated solution with
every g_i <= 0) is within 1e-3 of f*. For EvoKit it also prints how often
result.success agrees with that. The first problem:
minimise |x|^2 s.t. x_0 >= 1, x_1 + x_2 >= 1, n = 5, x0 = (2, .., 2),
sigma0 = 0.5 (f* = 1.5 at (1, .5, .5, 0, 0)).

    pip install cma && python bench/constrained_vs_pycma.py [--seeds 20] [--problems sphere5,...]
"""

import argparse
import contextlib
import io
import warnings

import numpy as np

import cma
import evokit

TOL_F = 1e-3


def sphere(x):
    return float(x @ x)


C6 = np.arange(1, 7.0)

# name: (f, g, x0, sigma0, f*)
PROBLEMS = {
    # two active constraints
    "sphere5": (sphere, lambda x: [1 - x[0], 1 - x[1] - x[2]], np.full(5, 2.0), 0.5, 1.5),
    "sphere10": (sphere, lambda x: [1 - x[0], 1 - x[1] - x[2]], np.full(10, 2.0), 0.5, 1.5),
    "sphere20": (sphere, lambda x: [1 - x[0], 1 - x[1] - x[2]], np.full(20, 2.0), 0.5, 1.5),
    # another x0 (infeasible for both) and sigma0
    "sphere5_far": (sphere, lambda x: [1 - x[0], 1 - x[1] - x[2]], np.array([-3.0, 4, -2, 1, 0]), 1.0, 1.5),
    # one active constraint, one violated at x0 but inactive at x*, one never violated
    "sphere5_inactive": (sphere, lambda x: [1 - x[0], x[4] - 1, x[3] - 5], np.full(5, 2.0), 0.5, 1.0),
    # an equality x0 + x1 = 1 as the pair |x0 + x1 - 1| <= 1e-4, and x2 >= 1
    "sphere4_equality": (sphere, lambda x: [x[0] + x[1] - 1 - 1e-4, 1 - x[0] - x[1] - 1e-4, 1 - x[2]],
                         np.full(4, -1.0), 1.0, (1 - 1e-4) ** 2 / 2 + 1),
    # an ill-conditioned f, shifted optimum cut off by sum(x) <= 0
    "ellipsoid6_sum": (lambda x: float(C6 @ (x - 1) ** 2), lambda x: [x.sum()], np.full(6, -1.0), 1.0,
                       36 / (1 / C6).sum()),
}


def solved(x, fx, g, fstar):
    return x is not None and abs(fx - fstar) <= TOL_F and max(g(x)) <= 0


def evokit_run(f, g, x0, sigma0, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unconverged-run warning: counted below instead
        return evokit.CMAES(x0, sigma0, seed=seed).optimize(f, constraints=g)


def pycma_run(f, g, x0, sigma0, seed):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        _, es = cma.fmin_con2(f, x0, sigma0, constraints=g, options={"seed": seed + 1, "verbose": -9})
    return es


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs per problem (EvoKit seeds 0..N-1, "
                                                              "pycma seeds 1..N)")
    parser.add_argument("--problems", default="sphere5", help="comma-separated names, or 'all': "
                        + ", ".join(PROBLEMS))
    parser.add_argument("--verbose", action="store_true", help="one line per run")
    args = parser.parse_args()
    names = list(PROBLEMS) if args.problems == "all" else args.problems.split(",")
    print(f"evokit {evokit.__version__}, cma {cma.__version__}, {args.seeds} seeds, solved: best feasible "
          f"f within {TOL_F} of f*")
    for name in names:
        f, g, x0, sigma0, fstar = PROBLEMS[name]
        ok_e = ok_c = agree = 0
        evals_e, evals_c = [], []
        for seed in range(args.seeds):
            r = evokit_run(f, g, x0, sigma0, seed)
            e = solved(r.xbest, r.fbest, g, fstar)
            success = getattr(r, "success", None)  # absent from older results
            ok_e += e
            agree += success is not None and bool(success) == e
            evals_e.append(r.evaluations)
            es = pycma_run(f, g, x0, sigma0, seed)
            bf = es.best_feasible
            c = solved(bf.x, bf.f, g, fstar)
            ok_c += c
            evals_c.append(es.result.evaluations)
            if args.verbose:
                print(f"  {name} seed {seed}: evokit {'ok ' if e else 'BAD'} fbest={r.fbest:.10g} "
                      f"evals={r.evaluations} stop={r.stop} success={success} | fmin_con2 "
                      f"{'ok ' if c else 'BAD'} best feasible f={bf.f:.10g} evals={es.result.evaluations}",
                      flush=True)
        n = args.seeds
        print(f"{name}: evokit {ok_e}/{n} solved (median evaluations {np.median(evals_e):.0f}; success "
              f"agrees {agree}/{n}) | fmin_con2 {ok_c}/{n} solved (median evaluations {np.median(evals_c):.0f})",
              flush=True)


if __name__ == "__main__":
    main()
