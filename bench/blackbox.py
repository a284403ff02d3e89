"""Every black-box strategy of EvoKit side by side with the peers a user would
pick instead, in one run: pycma, CyberAgent's cmaes, evosax (JAX on the CPU)
and ModularCMAES's C++ core (modcma.c_maes).

1. Evaluations to f < 1e-8 (the median over seeds, and how many seeds got
   there) on sphere, ellipsoid (condition 1e6), Rosenbrock, Rastrigin and two
   functions no test uses, discus (1e6 x_1^2 + sum x_i^2) and different
   powers (sum |x_i|^(2 + 4 (i - 1) / (n - 1))), at n = 2, 10, 100 (and
   1,000 for the sphere). ARS and PGPE explore with a fixed width, so for
   them the target is reached when f of the mean is (CENTRE_JUDGED). Same start (x0, sigma0) and the same population
   size for every implementation of a strategy (EvoKit's default, which is
   the paper's); each library's other defaults. Ratio: EvoKit's median over
   the best peer's (< 1 is fewer evaluations).
2. Overhead per generation: the mean time of one ask + tell with a
   vectorised sphere, at n = 2, 10, 100, 1,000 (and 100,000 for the
   large-scale methods). Ratio: the fastest peer's time over EvoKit's (> 1:
   EvoKit is faster). evosax runs as its users run it, compiled: a
   generation (ask, f, tell) is one jit-compiled call, and a run to the
   target one compiled lax.while_loop (compile time outside the clock);
   ModularCMAES's step() calls f once per member (a Python call each).

Peers are not project dependencies: install them in a virtual environment
that sees the installed evokit, e.g.

    python -m venv --system-site-packages /work/venvs/peers
    /work/venvs/peers/bin/pip install cma cmaes evosax "jax[cpu]" modcma
    /work/venvs/peers/bin/python bench/blackbox.py            # all (about an hour on 2 cores)
    /work/venvs/peers/bin/python bench/blackbox.py --quick    # n = 10, one seed, sphere and ellipsoid

A peer that is not installed shows as "-".
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from importlib import metadata
from typing import Dict, List, Optional

import numpy as np

import evokit

TARGET = 1e-8


# ---- functions (vectorised: [k, n] -> [k]) --------------------------------------------

def sphere(X):
    return np.sum(X * X, axis=-1)


def ellipsoid(X):
    n = X.shape[-1]
    return np.sum(1e6 ** (np.arange(n) / max(n - 1, 1)) * X * X, axis=-1)


def rosenbrock(X):
    a, b = X[..., :-1], X[..., 1:]
    return np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2, axis=-1)


def rastrigin(X):
    return 10.0 * X.shape[-1] + np.sum(X * X - 10.0 * np.cos(2 * np.pi * X), axis=-1)


def discus(X):
    return 1e6 * X[..., 0] ** 2 + np.sum(X[..., 1:] ** 2, axis=-1)


def different_powers(X):
    n = X.shape[-1]
    return np.sum(np.abs(X) ** (2 + 4 * np.arange(n) / max(n - 1, 1)), axis=-1)


_ROTATIONS: Dict[int, np.ndarray] = {}


def rotation(n: int) -> np.ndarray:
    """A fixed random rotation of R^n (QR of a Gaussian matrix drawn with seed
    n, signs fixed so that R has a positive diagonal), the same for every
    implementation and run."""
    if n not in _ROTATIONS:
        q, r = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))
        _ROTATIONS[n] = q * np.sign(np.diag(r))
    return _ROTATIONS[n]


def rotated_ellipsoid(X):
    """The ellipsoid of condition 1e6 in the rotated coordinates x R^T (BBOB
    f10's shape): not separable, so a strategy must learn correlations."""
    return ellipsoid(X @ rotation(X.shape[-1]).T)


def jax_function(name: str):
    """The function `name` in jax.numpy (for evosax's compiled loop)."""
    import jax.numpy as jnp

    def scaled(X, power):
        n = X.shape[-1]
        return jnp.arange(n) / max(n - 1, 1) * power

    table = {
        "sphere": lambda X: jnp.sum(X * X, axis=-1),
        "ellipsoid": lambda X: jnp.sum(10.0 ** scaled(X, 6) * X * X, axis=-1),
        "rosenbrock": lambda X: jnp.sum(100.0 * (X[..., 1:] - X[..., :-1] ** 2) ** 2
                                        + (1.0 - X[..., :-1]) ** 2, axis=-1),
        "rastrigin": lambda X: 10.0 * X.shape[-1] + jnp.sum(X * X - 10.0 * jnp.cos(2 * jnp.pi * X), axis=-1),
        "discus": lambda X: 1e6 * X[..., 0] ** 2 + jnp.sum(X[..., 1:] ** 2, axis=-1),
        "different_powers": lambda X: jnp.sum(jnp.abs(X) ** (2 + scaled(X, 4)), axis=-1),
        "rotated_ellipsoid": lambda X: (lambda Y: jnp.sum(10.0 ** scaled(Y, 6) * Y * Y, axis=-1))(
            X @ jnp.asarray(rotation(X.shape[-1]).T)),
    }
    return table[name]


# name -> (f, x0 value, sigma0)
FUNCTIONS = {
    "sphere": (sphere, 1.0, 0.5),
    "ellipsoid": (ellipsoid, 1.0, 0.5),
    "rosenbrock": (rosenbrock, 0.0, 0.5),
    "rastrigin": (rastrigin, 3.0, 2.0),
    "discus": (discus, 1.0, 0.5),
    "different_powers": (different_powers, 1.0, 0.5),
    "rotated_ellipsoid": (rotated_ellipsoid, 1.0, 0.5),
}


# ---- implementations: a uniform ask/tell --------------------------------------------

class Impl:
    """One implementation of a strategy: ask() -> X [k, n]; tell(X, F)."""

    def ask(self) -> np.ndarray:
        raise NotImplementedError

    def tell(self, X: np.ndarray, F: np.ndarray) -> None:
        raise NotImplementedError

    def stopped(self) -> bool:
        return False


class EvoKitImpl(Impl):
    def __init__(self, cls_name, n, x0, sigma0, seed, lam, num_threads=1):
        kw = {} if lam is None else {"population_size": lam}
        if num_threads != 1:
            kw["num_threads"] = num_threads
        self.es = getattr(evokit, cls_name)(np.full(n, x0), sigma0, seed=seed, **kw)

    def ask(self):
        return self.es.ask()

    def tell(self, X, F):
        self.es.tell(X, F)

    def stopped(self):
        return bool(self.es.stop())


class PycmaImpl(Impl):
    def __init__(self, separable, n, x0, sigma0, seed, lam):
        import cma
        opts = {"seed": seed + 1, "verbose": -9, "CMA_diagonal": separable, "popsize": lam}
        self.es = cma.CMAEvolutionStrategy(np.full(n, x0), sigma0, opts)

    def ask(self):
        return np.asarray(self.es.ask())

    def tell(self, X, F):
        self.es.tell(list(X), list(F))

    def stopped(self):
        return bool(self.es.stop())


class CyberAgentImpl(Impl):
    def __init__(self, separable, n, x0, sigma0, seed, lam):
        import cmaes
        cls = cmaes.SepCMA if separable else cmaes.CMA
        self.es = cls(mean=np.full(n, float(x0)), sigma=sigma0, seed=seed, population_size=lam)

    def ask(self):
        return np.stack([self.es.ask() for _ in range(self.es.population_size)])

    def tell(self, X, F):
        self.es.tell(list(zip(X, F)))

    def stopped(self):
        return self.es.should_stop()


class EvosaxImpl(Impl):
    """evosax as its users run it: a generation (ask, f in JAX, tell) is one
    jit-compiled step; to a target, the whole loop is one compiled
    lax.while_loop (compile time outside the clock)."""

    def __init__(self, name, n, x0, sigma0, seed, lam):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from evosax import algorithms
        self.jax, self.jnp, self.lam = jax, jnp, lam
        self.es = getattr(algorithms, name)(population_size=lam, solution=jnp.zeros(n))
        self.params = self.es.default_params.replace(std_init=sigma0)
        key, sub = jax.random.split(jax.random.key(seed))
        self.key, self.state = key, self.es.init(sub, jnp.full(n, float(x0)), self.params)

    def _generation(self, jf, centre=False):
        es, params, jax, jnp = self.es, self.params, self.jax, self.jnp

        def body(carry):
            g, best, key, state = carry
            key, k1, k2 = jax.random.split(key, 3)
            x, state = es.ask(k1, state, params)
            fx = jf(x)
            state = es.tell(k2, x, fx, state, params)[0]
            new = jf(state.mean[None, :])[0] if centre else jnp.min(fx)
            return g + 1, jnp.minimum(best, new), key, state
        return body

    # Compiled loops by (strategy, n, lambda, function, generations, centre):
    # the seeds of a row differ only in the loop's starting carry, so a row
    # compiles once.
    _loops: Dict[tuple, object] = {}

    def run_to_target(self, jf, budget, centre=False, fname=None):
        """(evaluations, reached) of a run to TARGET within budget (centre:
        judged by f of the mean after each generation, not counted)."""
        jax, jnp = self.jax, self.jnp
        max_generations = max(1, budget // self.lam)
        cache_key = (type(self.es).__name__, self.state.mean.shape[0], self.lam, fname, max_generations,
                     centre) if fname is not None else None
        loop = EvosaxImpl._loops.get(cache_key)
        if loop is None:
            body = self._generation(jf, centre)
            loop = jax.jit(lambda c: jax.lax.while_loop(
                lambda c: (c[0] < max_generations) & (c[1] >= TARGET), body, c))
            if cache_key is not None:
                EvosaxImpl._loops[cache_key] = loop
        start = (jnp.asarray(0), jnp.asarray(jnp.inf), self.key, self.state)
        g, best, _, _ = loop(start)
        return int(g) * self.lam, float(best) < TARGET

    def time_generations(self, generations):
        """The mean time of one compiled step with a sphere (ask + f + tell)."""
        step = self.jax.jit(self._generation(lambda x: self.jnp.sum(x * x, axis=-1)))
        carry = (self.jnp.asarray(0), self.jnp.asarray(self.jnp.inf), self.key, self.state)
        carry = self.jax.block_until_ready(step(carry))
        t0 = time.perf_counter()
        for _ in range(generations):
            carry = step(carry)
        self.jax.block_until_ready(carry)
        return (time.perf_counter() - t0) / generations


class ModcmaImpl(Impl):
    """ModularCMAES (C++): step(f) runs a whole generation, calling f per member."""

    def __init__(self, n, x0, sigma0, seed, lam, budget):
        from modcma import c_maes
        c_maes.utils.set_seed(seed)
        settings = c_maes.parameters.Settings(n, None, budget=budget, sigma0=sigma0, lambda0=lam,
                                              x0=np.full(n, float(x0)))
        self.es = c_maes.ModularCMAES(settings)


def make_impl(strategy: str, library: str, n, x0, sigma0, seed, lam, budget, num_threads=1) -> Optional[Impl]:
    spec = STRATEGIES[strategy].get(library)
    if spec is None:
        return None
    try:
        if library == "evokit":
            return EvoKitImpl(spec, n, x0, sigma0, seed, lam, num_threads)
        if library == "pycma":
            return PycmaImpl(spec, n, x0, sigma0, seed, lam)
        if library == "cmaes":
            return CyberAgentImpl(spec, n, x0, sigma0, seed, lam)
        if library == "evosax":
            return EvosaxImpl(spec, n, x0, sigma0, seed, lam)
        if library == "modcma":
            return ModcmaImpl(n, x0, sigma0, seed, lam, budget)
    except (ImportError, AttributeError):
        return None
    raise ValueError(library)


# strategy -> library -> its name there
STRATEGIES: Dict[str, Dict[str, object]] = {
    "CMA-ES": {"evokit": "CMAES", "pycma": False, "cmaes": False, "evosax": "CMA_ES", "modcma": True},
    "sep-CMA-ES": {"evokit": "SepCMAES", "pycma": True, "cmaes": True, "evosax": "Sep_CMA_ES"},
    "SNES": {"evokit": "SNES", "evosax": "SNES"},
    "xNES": {"evokit": "XNES", "evosax": "xNES"},
    "CR-FM-NES": {"evokit": "CRFMNES", "evosax": "CR_FM_NES"},
    "LM-MA-ES": {"evokit": "LMMAES", "evosax": "LM_MA_ES"},
    "PGPE": {"evokit": "PGPE", "evosax": "PGPE"},
    "ARS": {"evokit": "ARS", "evosax": "ARS"},
    "CEM": {"evokit": "CEM"},
}
LIBRARIES = ("evokit", "pycma", "cmaes", "modcma", "evosax")
# Fixed-exploration methods: their samples stay a noise's width from the
# optimum while the mean converges, so a run reaches the target when f of
# the mean (evaluated after each generation, not counted) does.
CENTRE_JUDGED = ("ARS", "PGPE")
LARGE_SCALE = ("sep-CMA-ES", "SNES", "CR-FM-NES", "LM-MA-ES")


def population(strategy: str, n: int) -> Optional[int]:
    """EvoKit's default population size of the strategy (None: not installed)."""
    name = STRATEGIES[strategy]["evokit"]
    if not hasattr(evokit, name):
        return None
    return getattr(evokit, name)(np.zeros(n), 1.0).population_size


# ---- 1. evaluations to the target ----------------------------------------------------

def evaluations(strategy, library, fname, n, x0, sigma0, seed, budget):
    """(evaluations, reached) of one run, or None if the library lacks it."""
    f = FUNCTIONS[fname][0]
    lam = population(strategy, n)
    impl = make_impl(strategy, library, n, x0, sigma0, seed, lam, budget)
    if impl is None:
        return None
    centre = strategy in CENTRE_JUDGED
    if isinstance(impl, EvosaxImpl):
        return impl.run_to_target(jax_function(fname), budget, centre, fname)
    if isinstance(impl, ModcmaImpl):
        best = math.inf

        def row(x):
            nonlocal best
            v = float(f(np.asarray(x)[None, :])[0])
            best = min(best, v)
            return v

        while impl.es.p.stats.evaluations < budget and best >= TARGET:
            if not impl.es.step(row):
                break
        return impl.es.p.stats.evaluations, best < TARGET
    count = 0
    while count < budget and not impl.stopped():
        try:
            X = impl.ask()
        except RuntimeError:  # EvoKit refuses to sample from a distribution gone non-finite: a miss
            return count, False
        F = f(X)
        impl.tell(X, F)
        count += len(X)
        if (f(impl.es.mean[None, :])[0] if centre else F.min()) < TARGET:
            return count, True
    return count, False


def budget_for(n: int) -> int:
    return {2: 20_000, 10: 100_000, 100: 1_000_000}.get(n, 3_000_000)


def seeds_for(n: int, seeds: List[int]) -> List[int]:
    """More seeds where runs are short and their counts vary most: 20x at
    n = 2, 4x at n = 10 (a median of 15 runs at n = 2 moves by 5 % to 10 %
    from one set of seeds to the next)."""
    factor = 20 if n <= 2 else 4 if n <= 10 else 1
    return list(range(len(seeds) * factor))


def convergence_table(strategies, functions, dims, seeds, libraries):
    """Budgets: budget_for(n), and once an implementation reached the target
    in a row, 3x its median for those after it (a miss then means more than
    3x the evaluations of one that got there). Rastrigin runs at n <= 10, and
    n = 1,000 is the sphere for the large-scale methods."""
    print("\n### Evaluations to f < 1e-8 (median over the seeds that reached it; reached/seeds; "
          "ERT where seeds missed)\n")
    print("| strategy | function | n | " + " | ".join(libraries) + " | EvoKit / best peer |")
    print("|---|---|---:|" + "---:|" * (len(libraries) + 1))
    for strategy in strategies:
        for fname in functions:
            f, x0, sigma0 = FUNCTIONS[fname]
            for n in dims:
                if (n > 100 and (fname != "sphere" or strategy not in LARGE_SCALE)) or \
                        (n > 10 and fname == "rastrigin"):
                    continue
                cells, medians, erts, budget = [], {}, {}, budget_for(n)
                every_seed = True  # every implementation reached the target on every seed
                row_seeds = seeds_for(n, seeds)
                for lib in libraries:
                    runs = [evaluations(strategy, lib, fname, n, x0, sigma0, s, budget) for s in row_seeds]
                    if runs[0] is None:
                        cells.append("-")
                        continue
                    hit = [e for e, ok in runs if ok]
                    every_seed = every_seed and len(hit) == len(runs)
                    if hit:
                        medians[lib] = float(np.median(hit))
                        # BBOB's expected running time: every evaluation spent
                        # (the misses' too) over the runs that reached the target.
                        erts[lib] = sum(e for e, _ in runs) / len(hit)
                        budget = min(budget, int(3 * medians[lib]))
                        cell = f"{medians[lib]:,.0f} ({len(hit)}/{len(runs)})"
                        if len(hit) < len(runs):
                            cell = f"{medians[lib]:,.0f} ({len(hit)}/{len(runs)}, ERT {erts[lib]:,.0f})"
                        cells.append(cell)
                    else:
                        cells.append(f"missed (0/{len(runs)})")
                # Where some seeds missed, the median of the runs that got there
                # favours the luckiest few: the ratio is then of ERTs.
                by = medians if every_seed else erts
                peers = [v for k, v in by.items() if k != "evokit"]
                ratio = "-"
                if "evokit" in by and peers:
                    r = by["evokit"] / min(peers)
                    ratio = (f"{r:.2f}" if r >= 0.1 else f"{r:.2g}") + ("" if every_seed else " (ERT)")
                print(f"| {strategy} | {fname} | {n} | " + " | ".join(cells) + f" | {ratio} |", flush=True)


# ---- 2. overhead per generation --------------------------------------------------------

def per_generation(strategy, library, n, generations, num_threads=1):
    lam = population(strategy, n)
    impl = make_impl(strategy, library, n, 1.0, 0.5, 1, lam, 10 ** 9, num_threads)
    if impl is None:
        return None
    if isinstance(impl, EvosaxImpl):
        return impl.time_generations(generations)
    if isinstance(impl, ModcmaImpl):
        def row(x):
            x = np.asarray(x)
            return float(x @ x)
        impl.es.step(row)
        t0 = time.perf_counter()
        for _ in range(generations):
            impl.es.step(row)
        return (time.perf_counter() - t0) / generations
    X = impl.ask()
    impl.tell(X, sphere(X))
    t0 = time.perf_counter()
    for _ in range(generations):
        X = impl.ask()
        impl.tell(X, sphere(X))
    return (time.perf_counter() - t0) / generations


def fmt_seconds(t):
    if t is None:
        return "-"
    return f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def overhead_table(strategies, dims, libraries, large):
    print("\n### Overhead per generation (ask + tell, vectorised sphere; mean over the generations)\n")
    print("| strategy | n | lambda | " + " | ".join(libraries) + " | best peer / EvoKit |")
    print("|---|---:|---:|" + "---:|" * (len(libraries) + 1))
    for strategy in strategies:
        for n in list(dims) + ([large] if large and strategy in LARGE_SCALE else []):
            if n >= 1000 and strategy == "xNES":
                continue  # O(n^3) per generation: not a method for this size
            generations = 2000 if n <= 10 else 300 if n <= 100 else 30 if n <= 1000 else 5
            times = {lib: per_generation(strategy, lib, n, generations) for lib in libraries}
            cells = {lib: fmt_seconds(t) for lib, t in times.items()}
            peers = [t for lib, t in times.items() if lib != "evokit" and t is not None]
            ratio = (f"{min(peers) / times['evokit']:.1f}x"
                     if peers and times.get("evokit") is not None else "-")
            threads = os.cpu_count() or 1
            if strategy == "CMA-ES" and n >= 100 and threads > 1 and times.get("evokit") is not None:
                # pycma's eigendecomposition runs on every BLAS thread: EvoKit
                # on as many threads too, beside its one-thread figure.
                many = per_generation(strategy, "evokit", n, generations, threads)
                cells["evokit"] += f" ({threads} threads: {fmt_seconds(many)})"
                if peers:
                    ratio += f" ({min(peers) / many:.1f}x)"
            print(f"| {strategy} | {n:,} | {population(strategy, n)} | "
                  + " | ".join(cells[lib] for lib in libraries) + f" | {ratio} |", flush=True)


def versions() -> str:
    out = []
    for package in ("cma", "cmaes", "evosax", "jax", "modcma"):
        try:
            out.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            out.append(f"{package} (absent)")
    return ", ".join(out)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10, one seed, sphere and ellipsoid")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    parser.add_argument("--dims", type=int, nargs="+", default=None)
    parser.add_argument("--seeds", type=int, default=3,
                        help="seeds per row at n >= 100 (20x at n = 2, 4x at n = 10)")
    parser.add_argument("--large", type=int, default=100_000,
                        help="the extra dimension of the large-scale methods' overhead (0: none)")
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=list(LIBRARIES),
                        help="EvoKit and the peers to run (default: all)")
    parser.add_argument("--no-convergence", action="store_true")
    parser.add_argument("--no-overhead", action="store_true")
    args = parser.parse_args(argv)
    dims = args.dims or ([10] if args.quick else [2, 10, 100, 1000])
    functions = ["sphere", "ellipsoid"] if args.quick else args.functions
    seeds = list(range(1 if args.quick else args.seeds))
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at "
          f"start; Python {platform.python_version()}, NumPy {np.__version__}; EvoKit {evokit.__version__} "
          f"(num_threads=1); {versions()}.")
    if not args.no_convergence:
        convergence_table(args.strategies, functions, dims, seeds, args.libraries)
    if not args.no_overhead:
        overhead_table(args.strategies, dims, args.libraries, 0 if args.quick else args.large)


if __name__ == "__main__":
    main()
