"""CMA-ES side by side: EvoKit, pycma and evosax in one run.

1. Evaluations and wall time to f < 1e-8 on sphere, ellipsoid (condition
   1e6) and Rosenbrock (tests/cma_problems.py: same start point, step size and
   default population size for all) in dimensions 10, 30 and 100; f is
   vectorised NumPy for all three, so the times are the optimisers' own.
2. Time per generation (ask + tell of a trivial f) in dimension 1,000 with
   full covariance and 10,000 separable.

Setup (not a project dependency): pip install cma jax jaxlib evosax
(evosax runs with jax_enable_x64, so all three work in double precision).

    python bench/cma_vs_pycma.py            # everything
    python bench/cma_vs_pycma.py --quick    # EvoKit and pycma, dimension 10 only (seconds)

Writes bench/results/cma_vs_pycma.json and .md (``--out DIR`` elsewhere).
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from cma_problems import PROBLEMS, TARGET, sphere
from results import Report, add_out_argument

import evokit

MAX_EVALS = {10: 100_000, 30: 300_000, 100: 2_000_000}


# ---- the runners: (evaluations, seconds, reached) -------------------------------------

def run_evokit(f, n, x0, sigma0, seed, threads):
    t0 = time.perf_counter()
    es = evokit.CMAES(np.full(n, x0), sigma0, seed=seed, ftarget=TARGET, max_evaluations=MAX_EVALS[n],
                      num_threads=threads)
    r = es.optimize(f, vectorized=True)
    return r.evaluations, time.perf_counter() - t0, r.fbest < TARGET


def run_pycma(f, n, x0, sigma0, seed):
    import cma
    t0 = time.perf_counter()
    es = cma.CMAEvolutionStrategy(np.full(n, x0), sigma0, {"ftarget": TARGET, "seed": seed, "verbose": -9,
                                                           "maxfevals": MAX_EVALS[n]})
    while not es.stop():
        X = es.ask()
        es.tell(X, list(f(np.asarray(X))))
    return es.countevals, time.perf_counter() - t0, es.result.fbest < TARGET


def evosax_strategy(name, n):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from evosax.algorithms import CMA_ES, Sep_CMA_ES
    cls = {"full": CMA_ES, "sep": Sep_CMA_ES}[name]
    lam = 4 + int(np.floor(3 * np.log(n)))
    es = cls(population_size=lam, solution=jnp.zeros(n))
    return jax, jnp, es, lam


def run_evosax(f, n, x0, sigma0, seed, jf, budget):
    jax, jnp, es, lam = evosax_strategy("full", n)
    params = es.default_params.replace(std_init=sigma0)
    key = jax.random.key(seed)
    key, sub = jax.random.split(key)
    state = es.init(sub, jnp.full(n, x0), params)

    @jax.jit
    def step(key, state):
        k1, k2 = jax.random.split(key)
        x, state = es.ask(k1, state, params)
        fx = jf(x)
        state, _ = es.tell(k2, x, fx, state, params)
        return state, jnp.min(fx)

    step(key, state)[1].block_until_ready()  # compile outside the clock
    t0 = time.perf_counter()
    evals, best = 0, np.inf
    while evals < budget:
        key, sub = jax.random.split(key)
        state, fmin = step(sub, state)
        evals += lam
        best = min(best, float(fmin))
        if best < TARGET:
            break
    return evals, time.perf_counter() - t0, best < TARGET


def jax_functions():
    import jax.numpy as jnp

    def jsphere(x):
        return jnp.sum(x * x, axis=-1)

    def jellipsoid(x):
        n = x.shape[-1]
        return jnp.sum(1e6 ** (jnp.arange(n) / (n - 1)) * x * x, axis=-1)

    def jrosenbrock(x):
        a, b = x[..., :-1], x[..., 1:]
        return jnp.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2, axis=-1)

    return {"sphere": jsphere, "ellipsoid": jellipsoid, "rosenbrock": jrosenbrock}


# ---- time per generation ----------------------------------------------------------------

def per_generation_evokit(n, separable, generations, threads):
    cls = evokit.SepCMAES if separable else evokit.CMAES
    es = cls(np.ones(n), 0.5, seed=1, num_threads=threads)
    x = es.ask()
    es.tell(x, sphere(x))
    t0 = time.perf_counter()
    for _ in range(generations):
        x = es.ask()
        es.tell(x, sphere(x))
    return (time.perf_counter() - t0) / generations


def per_generation_pycma(n, separable, generations):
    import cma
    opts = {"seed": 1, "verbose": -9, "CMA_diagonal": bool(separable)}
    es = cma.CMAEvolutionStrategy(np.ones(n), 0.5, opts)
    X = es.ask()
    es.tell(X, list(sphere(np.asarray(X))))
    t0 = time.perf_counter()
    for _ in range(generations):
        X = es.ask()
        es.tell(X, list(sphere(np.asarray(X))))
    return (time.perf_counter() - t0) / generations


def per_generation_evosax(n, separable, generations):
    jax, jnp, es, _lam = evosax_strategy("sep" if separable else "full", n)
    params = es.default_params.replace(std_init=0.5)
    key = jax.random.key(1)
    state = es.init(key, jnp.ones(n), params)

    @jax.jit
    def step(key, state):
        k1, k2 = jax.random.split(key)
        x, state = es.ask(k1, state, params)
        state, _ = es.tell(k2, x, jnp.sum(x * x, axis=-1), state, params)
        return state

    state = step(key, state)
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    for _ in range(generations):
        key, sub = jax.random.split(key)
        state = step(sub, state)
    jax.block_until_ready(state)
    return (time.perf_counter() - t0) / generations


# ---- report -------------------------------------------------------------------------------

def fmt_evals(r):
    return "-" if r is None else (f"{r[0]:,}" if r[2] else f"{r[0]:,} (missed)")


def fmt_time(r):
    return "-" if r is None else f"{r[1]:.2f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="EvoKit and pycma in dimension 10 only")
    parser.add_argument("--dims", type=int, nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1,
                        help="EvoKit's num_threads in the convergence table (the per-generation table shows "
                             "1 and all cores)")
    parser.add_argument("--no-evosax", action="store_true")
    parser.add_argument("--no-per-generation", action="store_true")
    parser.add_argument("--per-generation-only", action="store_true")
    add_out_argument(parser, "cma_vs_pycma")
    args = parser.parse_args()
    dims = args.dims or ([10] if args.quick else [10, 30, 100])
    use_evosax = not (args.quick or args.no_evosax)
    import cma  # noqa: F401 (fails early when pycma is missing)

    report = Report("cma_vs_pycma", "CMA-ES: EvoKit, pycma, evosax (bench/cma_vs_pycma.py)")
    report.print(f"EvoKit num_threads={args.threads} in the convergence table"
                 + ("" if not use_evosax else "; evosax with JAX x64 on CPU (jit-compiled ask+f+tell)") + ".")
    report.print(f"Seed {args.seed}; default population size 4 + floor(3 ln n); target f < {TARGET:g}; "
                 "\"(missed)\": the target was not reached within the budget.\n")
    jf = jax_functions() if use_evosax else None
    figures = {"convergence": [], "per_generation": []}

    def as_dict(r):
        return None if r is None else {"evaluations": r[0], "seconds": r[1], "reached": bool(r[2])}

    if not args.per_generation_only:
        report.print("| function | n | EvoKit evals | pycma evals | evosax evals | EvoKit time | pycma time "
                     "| evosax time | evals EvoKit/pycma | time pycma/EvoKit |")
        report.print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (f, x0, sigma0) in PROBLEMS.items():
        for n in [] if args.per_generation_only else dims:
            ours = run_evokit(f, n, x0, sigma0, args.seed, args.threads)
            theirs = run_pycma(f, n, x0, sigma0, args.seed)
            # evosax gets three times pycma's evaluations before it counts as missed
            jaxr = (run_evosax(f, n, x0, sigma0, args.seed, jf[name], min(MAX_EVALS[n], 3 * theirs[0]))
                    if use_evosax else None)
            figures["convergence"].append({"function": name, "n": n, "evokit": as_dict(ours),
                                           "pycma": as_dict(theirs), "evosax": as_dict(jaxr)})
            report.print(f"| {name} | {n} | {fmt_evals(ours)} | {fmt_evals(theirs)} | {fmt_evals(jaxr)} | "
                         f"{fmt_time(ours)} | {fmt_time(theirs)} | {fmt_time(jaxr)} | {ours[0] / theirs[0]:.2f} | "
                         f"{theirs[1] / ours[1]:.1f}x |")

    if not (args.quick or args.no_per_generation):
        cores = os.cpu_count() or 1
        report.print("\nTime per generation (ask + tell, f = sphere, vectorised; the mean over 60 generations, "
                     "which for full covariance includes the lazy eigendecompositions):\n")
        report.print(f"| variant | n | lambda | EvoKit 1 thread | EvoKit {cores} threads | pycma | evosax | "
                     f"pycma/EvoKit | evosax/EvoKit |")
        report.print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n, separable, gens in [(1000, False, 60), (10000, True, 60)]:
            one = per_generation_evokit(n, separable, gens, 1)
            many = per_generation_evokit(n, separable, gens, cores)
            ours = min(one, many)
            theirs = per_generation_pycma(n, separable, gens)
            jaxr = per_generation_evosax(n, separable, gens) if use_evosax else None
            lam = 4 + int(np.floor(3 * np.log(n)))
            figures["per_generation"].append({"variant": "separable" if separable else "full", "n": n,
                                              "population_size": lam, "evokit_1_thread_s": one,
                                              f"evokit_{cores}_threads_s": many, "pycma_s": theirs,
                                              "evosax_s": jaxr})
            report.print(f"| {'separable' if separable else 'full'} | {n:,} | {lam} | {one * 1e3:.2f} ms | "
                         f"{many * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | "
                         + ("- | " if jaxr is None else f"{jaxr * 1e3:.2f} ms | ")
                         + f"{theirs / ours:.1f}x | " + ("- |" if jaxr is None else f"{jaxr / ours:.1f}x |"))
    report.write(args.out, figures)


if __name__ == "__main__":
    main()
