"""Every black-box strategy of EvoKit side by side with the peers a user would
pick instead, in one run: pycma, CyberAgent's cmaes, evosax (JAX on the CPU),
EvoTorch (PyTorch on the CPU) and ModularCMAES's C++ core (modcma.c_maes).

1. Evaluations to f < 1e-8 (the median over seeds, and how many seeds got
   there) on sphere, ellipsoid (condition 1e6), Rosenbrock, Rastrigin and two
   functions no test uses, discus (1e6 x_1^2 + sum x_i^2) and different
   powers (sum |x_i|^(2 + 4 (i - 1) / (n - 1))), and the ellipsoid in a
   fixed rotation, at n = 2, 10, 100 (and
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
that sees the installed evokit, e.g. (EvoTorch: torch first, pinned, so that
`pip install evotorch`, which asks for any torch, keeps it)

    python -m venv --system-site-packages peers
    peers/bin/pip install cma cmaes evosax "jax[cpu]" modcma
    peers/bin/pip install torch==2.13.0 && peers/bin/pip install evotorch
    peers/bin/python bench/blackbox.py            # all (about an hour on 2 cores)
    peers/bin/python bench/blackbox.py --quick    # n = 10, one seed, sphere and ellipsoid

A peer that is not installed shows as "-". Writes bench/results/blackbox.json
and .md (`--out DIR` elsewhere).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Dict, List, Optional

import numpy as np

import evokit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

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

    def time_generations(self, generations, warmup=1):
        """The mean time of one compiled step with a sphere (ask + f + tell)."""
        step = self.jax.jit(self._generation(lambda x: self.jnp.sum(x * x, axis=-1)))
        carry = (self.jnp.asarray(0), self.jnp.asarray(self.jnp.inf), self.key, self.state)
        for _ in range(warmup):
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


class _EvotorchStop(Exception):
    """Ends an EvoTorch step() from inside its objective."""


class EvotorchImpl(Impl):
    """EvoTorch (PyTorch, float64 on the CPU, torch on one thread). Its
    searchers have no ask/tell: step() samples a population, evaluates it
    through the Problem (vectorized=True: f is called once on the [popsize, n]
    tensor) and updates the distribution, so the bench drives step() and
    counts in the objective, as for ModularCMAES. Seeded by Problem(seed=...)
    (the problem's own generator draws the samples) and torch.manual_seed.

    EvoTorch's defaults, read in evotorch 0.6.1 (algorithms/distributed/
    gaussian.py, distributions.py, tools/ranking.py, optimizers.py,
    algorithms/cmaes.py); the bench sets only center_init = x0,
    stdev_init = sigma0 and popsize = EvoKit's lambda:
    - XNES: the paper's xNES (Wierstra et al. 2014, Algorithm 5): center
      learning rate 1 (gaussian.py:1372-1373), one learning rate for the whole
      shape A = sigma B, 0.6 (3 + ln d) / (d sqrt d) = 3 (3 + ln d) / (5 d
      sqrt d) (gaussian.py:1375-1380), which with the paper's eta_sigma =
      eta_B is the paper's update, since A <- A expm(eta / 2 G_M)
      (distributions.py:1011) = sigma exp(eta / 2 G_sigma) B expm(eta / 2 G_B)
      (G_sigma I and G_B commute); a full matrix exponential, so B is not kept
      diagonal; ranking "nes" (gaussian.py:1215): u_k = max(0, ln(lambda / 2
      + 1) - ln k) / sum - 1 / lambda (ranking.py:84-123), the paper's
      utilities.
    - SNES: the paper's SNES (Algorithm 6): center learning rate 1
      (gaussian.py:951), eta_sigma = 0.2 (3 + ln d) / sqrt(d) = (3 + ln d) /
      (5 sqrt d) (gaussian.py:953-956), sigma <- sigma exp(eta_sigma / 2
      sum u_k (s_k^2 - 1)) (distributions.py:795-810), "nes" utilities.
    - PGPE: EvoTorch has no default for the center and stdev learning
      rates (required arguments, gaussian.py:543-549); it gets EvoKit's
      evokit.PGPE defaults, center_learning_rate 0.15 and
      stdev_learning_rate 0.1. Its own defaults for the rest, which are
      EvoKit's too: ClipUp (gaussian.py:554) with momentum 0.9 and max_speed
      2 * center_learning_rate = 0.3 (optimizers.py:253, 274-275), ranking
      "centered" (-0.5..0.5, gaussian.py:556), stdev_max_change 0.2
      (gaussian.py:560), symmetric (mirrored) sampling (gaussian.py:561).
      (evosax's PGPE row runs evosax's defaults: clipup(learning_rate=0.01,
      max_velocity=0.02), not EvoKit's.)
    - CEM: EvoTorch has no default parenthood_ratio (gaussian.py:1028); it
      gets EvoKit's elite_ratio 0.1. EvoTorch's CEM then sets the mean and
      the per-coordinate stdev to the elite's mean and torch.std (Bessel's
      correction), the elite being the floor(0.1 popsize) best
      (distributions.py:538-546, learning rates 1.0 at gaussian.py:1164-1165):
      no smoothing (EvoKit's default smoothing is 0.5), no stdev bounds.
    - CMAES: the tutorial's CMA-ES (Hansen 2016), active by default
      (cmaes.py:130), C factored by Cholesky every max(1, floor(1 / (10 d
      (c_1 + c_mu)))) generations (cmaes.py:382-385); the Problem gets
      initial_bounds only because CMAES fills a first batch from them
      (cmaes.py:236), which it overwrites."""

    EXTRA = {"PGPE": {"center_learning_rate": 0.15, "stdev_learning_rate": 0.1},
             "CEM": {"parenthood_ratio": 0.1}}

    def __init__(self, name, n, x0, sigma0, seed, lam):
        import logging

        import torch
        from evotorch import Problem, algorithms
        logging.getLogger("evotorch").setLevel(logging.WARNING)  # its INFO lines go to stdout
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.torch = torch
        self.f, self.centre, self.budget = sphere, False, math.inf
        self.evaluations, self.reached = 0, False
        problem = Problem("min", self._objective, solution_length=n, dtype=torch.float64, vectorized=True,
                          seed=seed, initial_bounds=(x0 - sigma0, x0 + sigma0))
        self.es = getattr(algorithms, name)(problem, center_init=np.full(n, float(x0)), stdev_init=sigma0,
                                            popsize=lam, **self.EXTRA.get(name, {}))

    def _objective(self, X):
        if self.centre and self.evaluations > 0:
            # step() has just updated the distribution with the last
            # population (the others' tell) and sampled this one: judge f of
            # the updated centre, not counted, and stop before evaluating.
            c = self.es.status["center"].numpy()
            if self.f(c[None, :])[0] < TARGET:
                self.reached = True
                raise _EvotorchStop
            if self.evaluations >= self.budget:
                raise _EvotorchStop
        x = X.numpy()
        if not np.isfinite(x).all():  # as EvoKit's refusal to sample non-finite solutions: a miss
            raise _EvotorchStop
        F = self.f(x)
        self.evaluations += len(F)
        if not self.centre and F.min() < TARGET:
            self.reached = True
        return self.torch.from_numpy(F)

    def run_to_target(self, f, budget, centre=False):
        """(evaluations, reached) of a run to TARGET within budget (centre:
        judged by f of the mean after each generation's update, not counted)."""
        self.f, self.centre, self.budget = f, centre, budget
        try:
            while not self.reached and (centre or self.evaluations < budget):
                self.es.step()
        except _EvotorchStop:
            pass
        except RuntimeError:  # e.g. torch.linalg.cholesky of a C gone indefinite: a miss
            return self.evaluations, False
        return self.evaluations, self.reached

    def time_generations(self, generations, warmup=1):
        """The mean time of one step() with the vectorised sphere."""
        self.es.step()  # a Gaussian searcher's first step only samples and evaluates
        for _ in range(warmup):
            self.es.step()
        t0 = time.perf_counter()
        for _ in range(generations):
            self.es.step()
        return (time.perf_counter() - t0) / generations


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
        if library == "evotorch":
            return EvotorchImpl(spec, n, x0, sigma0, seed, lam)
    except (ImportError, AttributeError):
        return None
    raise ValueError(library)


# strategy -> library -> its name there
STRATEGIES: Dict[str, Dict[str, object]] = {
    "CMA-ES": {"evokit": "CMAES", "pycma": False, "cmaes": False, "evosax": "CMA_ES", "modcma": True,
               "evotorch": "CMAES"},
    "sep-CMA-ES": {"evokit": "SepCMAES", "pycma": True, "cmaes": True, "evosax": "Sep_CMA_ES"},
    "SNES": {"evokit": "SNES", "evosax": "SNES", "evotorch": "SNES"},
    "xNES": {"evokit": "XNES", "evosax": "xNES", "evotorch": "XNES"},
    "CR-FM-NES": {"evokit": "CRFMNES", "evosax": "CR_FM_NES"},
    "LM-MA-ES": {"evokit": "LMMAES", "evosax": "LM_MA_ES"},
    "PGPE": {"evokit": "PGPE", "evosax": "PGPE", "evotorch": "PGPE"},
    "ARS": {"evokit": "ARS", "evosax": "ARS"},
    "CEM": {"evokit": "CEM", "evotorch": "CEM"},
}
LIBRARIES = ("evokit", "pycma", "cmaes", "modcma", "evosax", "evotorch")
# (strategy, library) -> why that library's implementation is another
# algorithm than the strategy's name says: its cells carry NOT_THE_ALGORITHM_MARK,
# it sets no budget and is left out of the best-peer ratio, and the table
# lists it in a footnote. Read in the code:
# - evosax 0.3.2's xNES (algorithms/distribution_based/xnes.py:128):
#   B = state.B * jnp.exp(0.5 * params.lr_B * grad_B), an elementwise
#   exponential; B starts as std_init * I (line 79), so its off-diagonal
#   entries stay 0 * exp(.) = 0: a separable method, not xNES's
#   B <- B expm(eta_B / 2 G_B).
# EvoTorch 0.6.1's peers are their algorithms (EvotorchImpl's docstring): its
# XNES takes the full matrix exponential (distributions.py:1011).
NOT_THE_ALGORITHM: Dict[tuple, str] = {
    ("xNES", "evosax"): "separable: B is updated by an elementwise exponential and stays diagonal",
}
NOT_THE_ALGORITHM_MARK = "†"
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
    if isinstance(impl, EvotorchImpl):
        return impl.run_to_target(f, budget, centre)
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


def convergence_table(report, strategies, functions, dims, seeds, libraries):
    """Budgets: budget_for(n), and once an implementation reached the target
    in a row, 3x its median for those after it (a miss then means more than
    3x the evaluations of one that got there); every implementation of the
    row is then judged within the row's final budget. Rastrigin runs at
    n <= 10, and n = 1,000 is the sphere for the large-scale methods and
    full CMA-ES (whose peers cmaes and evosax take about 0.7 s and 0.1 s per
    generation there: pick --libraries)."""
    report.print("\n### Evaluations to f < 1e-8 (median over the seeds that reached it; reached/seeds; "
          "ERT where seeds missed)\n")
    report.print("| strategy | function | n | " + " | ".join(libraries) + " | EvoKit / best peer |")
    report.print("|---|---|---:|" + "---:|" * (len(libraries) + 1))
    marked = []  # NOT_THE_ALGORITHM pairs with a cell in the table
    rows = []
    for strategy in strategies:
        for fname in functions:
            f, x0, sigma0 = FUNCTIONS[fname]
            for n in dims:
                if (n > 100 and (fname != "sphere" or strategy not in LARGE_SCALE + ("CMA-ES",))) or \
                        (n > 10 and fname == "rastrigin"):
                    continue
                cells, medians, erts, budget = [], {}, {}, budget_for(n)
                every_seed = True  # every implementation reached the target on every seed
                row_seeds = seeds_for(n, seeds)
                ran = {}
                for lib in libraries:
                    runs = [evaluations(strategy, lib, fname, n, x0, sigma0, s, budget) for s in row_seeds]
                    if runs[0] is None:
                        continue
                    ran[lib] = runs
                    hit = [e for e, ok in runs if ok]
                    # Another algorithm (NOT_THE_ALGORITHM) sets no budget.
                    if hit and (strategy, lib) not in NOT_THE_ALGORITHM:
                        budget = min(budget, int(3 * float(np.median(hit))))
                for lib in libraries:
                    if lib not in ran:
                        cells.append("-")
                        continue
                    # Every implementation judged within the row's final
                    # budget: a run that needed more is a miss that spent
                    # the budget (the first ones ran with larger budgets, and
                    # an ERT over unequal budgets would charge their misses more).
                    runs = [(min(e, budget), ok and e <= budget) for e, ok in ran[lib]]
                    # Another algorithm (NOT_THE_ALGORITHM): shown, but it
                    # does not decide median or ERT.
                    other = (strategy, lib) in NOT_THE_ALGORITHM
                    mark = f" {NOT_THE_ALGORITHM_MARK}" if other else ""
                    if other and (strategy, lib) not in marked:
                        marked.append((strategy, lib))
                    hit = [e for e, ok in runs if ok]
                    every_seed = every_seed and (other or len(hit) == len(runs))
                    if hit:
                        medians[lib] = float(np.median(hit))
                        # BBOB's expected running time: every evaluation spent
                        # (the misses' too) over the runs that reached the target.
                        erts[lib] = sum(e for e, _ in runs) / len(hit)
                        cell = f"{medians[lib]:,.0f} ({len(hit)}/{len(runs)})"
                        if len(hit) < len(runs):
                            cell = f"{medians[lib]:,.0f} ({len(hit)}/{len(runs)}, ERT {erts[lib]:,.0f})"
                        cells.append(cell + mark)
                    else:
                        cells.append(f"missed (0/{len(runs)})" + mark)
                # Where some seeds missed, the median of the runs that got there
                # favours the luckiest few: the ratio is then of ERTs.
                by = medians if every_seed else erts
                peers = [v for k, v in by.items() if k != "evokit" and (strategy, k) not in NOT_THE_ALGORITHM]
                ratio = "-"
                if "evokit" in by and peers:
                    r = by["evokit"] / min(peers)
                    ratio = (f"{r:.2f}" if r >= 0.1 else f"{r:.2g}") + ("" if every_seed else " (ERT)")
                report.print(f"| {strategy} | {fname} | {n} | " + " | ".join(cells) + f" | {ratio} |")
                rows.append({"strategy": strategy, "function": fname, "n": n, "cells": dict(zip(libraries, cells)),
                             "medians": medians, "erts": erts, "every_seed": every_seed, "ratio": ratio})
    not_the_algorithm_footnote(report, marked)
    return rows


def not_the_algorithm_footnote(report, pairs):
    """The NOT_THE_ALGORITHM pairs that have cells in a table, each with its reason."""
    if pairs:
        report.print(f"\n{NOT_THE_ALGORITHM_MARK} Not the algorithm the strategy names, left out of the "
                     "best-peer ratio: " + "; ".join(f"{s} in {lib} ({NOT_THE_ALGORITHM[(s, lib)]})" for s, lib in pairs) + ".")


# ---- 2. overhead per generation --------------------------------------------------------

def per_generation(strategy, library, n, generations, num_threads=1, warmup=1):
    """Mean seconds per generation over `generations`, after `warmup` untimed
    ones (the same for every library)."""
    lam = population(strategy, n)
    impl = make_impl(strategy, library, n, 1.0, 0.5, 1, lam, 10 ** 9, num_threads)
    if impl is None:
        return None
    if isinstance(impl, (EvosaxImpl, EvotorchImpl)):
        return impl.time_generations(generations, warmup)
    if isinstance(impl, ModcmaImpl):
        def row(x):
            x = np.asarray(x)
            return float(x @ x)
        for _ in range(warmup):
            impl.es.step(row)
        t0 = time.perf_counter()
        for _ in range(generations):
            impl.es.step(row)
        return (time.perf_counter() - t0) / generations
    for _ in range(warmup):
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


def overhead_table(report, strategies, dims, libraries, large):
    report.print("\n### Overhead per generation (ask + tell, vectorised sphere; mean over the generations)\n")
    report.print("| strategy | n | lambda | " + " | ".join(libraries) + " | best peer / EvoKit |")
    report.print("|---|---:|---:|" + "---:|" * (len(libraries) + 1))
    marked = []  # NOT_THE_ALGORITHM pairs with a cell in the table
    rows = []
    for strategy in strategies:
        for n in list(dims) + ([large] if large and strategy in LARGE_SCALE else []):
            if n >= 1000 and strategy == "xNES":
                continue  # O(n^3) per generation: not a method for this size
            # n = 1,000: the steady state, past the first decompositions'
            # page faults (10 untimed generations), over 80 generations (ten
            # of CMA-ES's eigendecomposition intervals of 8, so the window
            # holds a whole number of them).
            generations = 2000 if n <= 10 else 300 if n <= 100 else 80 if n <= 1000 else 5
            warmup = 10 if n >= 1000 else 1
            times = {lib: per_generation(strategy, lib, n, generations, warmup=warmup) for lib in libraries}
            cells = {lib: fmt_seconds(t) for lib, t in times.items()}
            for lib, t in times.items():
                if t is not None and (strategy, lib) in NOT_THE_ALGORITHM:
                    cells[lib] += f" {NOT_THE_ALGORITHM_MARK}"
                    if (strategy, lib) not in marked:
                        marked.append((strategy, lib))
            peers = [t for lib, t in times.items()
                     if lib != "evokit" and t is not None and (strategy, lib) not in NOT_THE_ALGORITHM]
            ratio = (f"{min(peers) / times['evokit']:.1f}x"
                     if peers and times.get("evokit") is not None else "-")
            threads = os.cpu_count() or 1
            if strategy == "CMA-ES" and n >= 100 and threads > 1 and times.get("evokit") is not None:
                # pycma's eigendecomposition runs on every BLAS thread: EvoKit
                # on as many threads too, beside its one-thread figure.
                many = per_generation(strategy, "evokit", n, generations, threads, warmup)
                cells["evokit"] += f" ({threads} threads: {fmt_seconds(many)})"
                if peers:
                    ratio += f" ({min(peers) / many:.1f}x)"
            report.print(f"| {strategy} | {n:,} | {population(strategy, n)} | "
                         + " | ".join(cells[lib] for lib in libraries) + f" | {ratio} |")
            rows.append({"strategy": strategy, "n": n, "population_size": population(strategy, n),
                         "seconds": times, "cells": cells, "ratio": ratio})
    not_the_algorithm_footnote(report, marked)
    return rows


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
    add_out_argument(parser, "blackbox")
    args = parser.parse_args(argv)
    dims = args.dims or ([10] if args.quick else [2, 10, 100, 1000])
    functions = ["sphere", "ellipsoid"] if args.quick else args.functions
    seeds = list(range(1 if args.quick else args.seeds))
    report = Report("blackbox", "Every black-box strategy beside the peers (bench/blackbox.py)")
    report.print(f"EvoKit num_threads=1 unless a cell says otherwise; libraries: {', '.join(args.libraries)} "
                 "(\"-\": not installed, or no such strategy there).")
    figures = {}
    if not args.no_convergence:
        figures["convergence"] = convergence_table(report, args.strategies, functions, dims, seeds, args.libraries)
    if not args.no_overhead:
        figures["overhead"] = overhead_table(report, args.strategies, dims, args.libraries,
                                             0 if args.quick else args.large)
    report.write(args.out, figures)

if __name__ == "__main__":
    main()
