"""COCO's suites (bbob, bbob-largescale, bbob-mixint, bbob-constrained, bbob-biobj): EvoKit's
ask/tell strategies and the peers a user would pick instead, run by COCO's protocol,
side by side.

The protocol (COCO's example experiment, the same for every library): the
first run starts at x0 = problem.initial_solution with sigma0 = 2 (the
search domain is [-5, 5]^D); the library's own restart scheme runs (EvoKit
CMA-ES: BIPOP with 9 large restarts, pycma's ``fmin2(..., restarts=9,
bipop=True)``, CyberAgent cmaes: its IPOP loop, ModularCMAES: BIPOP); when
it ends before the final target (f - f_opt < 1e-8,
``problem.final_target_hit``) and the budget (``--budget`` x D evaluations),
an independent restart follows from a uniform x0 in [-4, 4]^D. Every
library stops as soon as the target is hit (checked after each generation).
COCO's observer writes the standard data folders, which ``cocopp`` reads:

    DATA/<suite>/<library>/coco/<cell>/   COCO's observer output of one cell
    DATA/<suite>/<library>/cells/<cell>.json   this script's record of it

A cell is (suite, function, dimension, instance, library); its record
holds the evaluations used, whether the target was hit, the evaluation at
which each of COCO's 51 targets 10^2 .. 10^-8 was first reached, restarts,
and CPU and wall seconds. Cells with a record are skipped, so an
interrupted run resumes, and ``--shard i/k`` runs every k-th cell from the
i-th (libraries innermost, so that shards interleave them):

    python bench/bbob.py run --dims 2,3,5 --instances 1-15 --libraries evokit-bipop,pycma-bipop --shard 0/2
    python bench/bbob.py run --functions 15 --dims 5 --instances 3 --libraries evokit-bipop   # one cell
    python bench/bbob.py summary --libraries evokit-bipop,pycma-bipop,cmaes-ipop,modcma-bipop
    python bench/bbob.py timing --dims 2,5,10,20,40
    python -m cocopp DATA/bbob/evokit-bipop DATA/bbob/pycma-bipop   # COCO's own figures

``summary`` writes bench/results/<suite>.json and .md (bbob.md,
bbob_largescale.md, ...; per dimension and
function group: runs solved, the ERT ratio against each peer; per
dimension: a one-sided Fisher test of EvoKit's solved runs against each
peer's) and bench/results/<suite>_ecdf_d<D>.png (the fraction of (run,
target) pairs reached against evaluations / D). ``timing`` is COCO's timing
experiment: CPU seconds per evaluation against the dimension, per library.

Libraries: ``evokit-bipop`` (CMAES, BIPOP), ``evokit-ipop``, and
``evokit-<strategy>`` for any other EvoKit ask/tell strategy (sep-cma,
snes, xnes, crfmnes, lmmaes, maes, pgpe, cem, openes, ars, ga: independent
restarts only); peers: ``pycma-bipop``, ``pycma-sep`` (pycma's separable
model, CMA_diagonal=True), ``cmaes-ipop``, ``modcma-bipop``, ``nevergrad`` (NGOpt).
On bbob-mixint, evokit-bipop / evokit-ipop (CMA-ES with margin), pycma
(``integer_variables``) and cmaes (``CMAwM``, its IPOP loop) are told the
integer coordinates and the box. On bbob-constrained: ``evokit-cma`` (or any
evokit-<strategy>: tell(..., constraints=G), then tell_center with the
centre's values, as optimize(f, constraints=g) does) and ``pycma-con2``
(``fmin_con2`` with its defaults), each with independent restarts; a
constrained problem's evaluations count f's and g's, as COCO's do.

bbob-biobj (55 bi-objective functions, COCO's biobj observer): ``evokit-nsga2``
(EvoKit's NSGA2 with its defaults, population 100, in the problem's box
[-100, 100]^D, x0 = problem.initial_solution as the first member of P_0),
``pymoo-nsga2`` (pymoo's NSGA2 with its defaults and the same population
size and P_0, ask/tell) and ``comocma`` (COMO-CMA-ES: 11 CMA-ES kernels from
x0 with sigma0 = 2, reference point COCO's nadir); every evaluation goes
through the COCO problem, each stops at the budget (the last generation cut
there) and restarts independently if it stops before. A cell's record holds
COCO's indicator (I_ref - I_HV of all non-dominated solutions evaluated,
normalised by the ideal and nadir points) at the end and at each evaluation
the observer logged, the evaluation at which each of cocopp's 58 targets
(10^0 .. 10^-5, 0, -10^-5 .. -10^-4) was first reached, and the same indicator
recomputed from the evaluated objective vectors. ``summary --suite
bbob-biobj`` compares the final indicators cell by cell (median per group,
cells better / worse, a sign test, runs reaching ``--target``, ERT ratios)
and with ``--cocopp`` runs cocopp on the observer folders (offline):

    python bench/bbob.py run --suite bbob-biobj --functions 1-55 --dims 2,3,5 --instances 1-10 --budget 1e3 --libraries evokit-nsga2,pymoo-nsga2,comocma --shard 0/2
    python bench/bbob.py summary --suite bbob-biobj --libraries evokit-nsga2,pymoo-nsga2,comocma --cocopp

Peers are imported only when run:
``pip install coco-experiment cocopp cma cmaes modcma pymoo comocma``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results  # noqa: E402  (bench/results.py)

DEFAULT_DATA = os.path.join(os.path.dirname(HERE), "exdata")
SIGMA0 = 2.0
#: COCO's 51 targets f - f_opt: 10^2 .. 10^-8 in steps of 10^0.2.
TARGETS = tuple(10.0 ** (2 - 0.2 * k) for k in range(51))
#: The bbob function groups.
GROUPS = {"separable": range(1, 6), "moderate": range(6, 10), "ill-conditioned": range(10, 15),
          "multimodal": range(15, 20), "weakly structured": range(20, 25)}
#: bbob-constrained's groups: each raw function with its six numbers of constraints.
CONSTRAINED_GROUPS = {f"f{k}-f{k + 5}": range(k, k + 6) for k in range(1, 55, 6)}
#: The suites whose problems the libraries here can run (one objective;
#: bbob-mixint's integer variables and box are declared to evokit-bipop/ipop (CMA-ES with
#: margin), pycma (integer_variables) and cmaes (CMAwM); the other libraries treat them as real;
#: bbob-constrained's inequality constraints g(x) <= 0 are told with f; bbob-biobj's two
#: objectives go to the multi-objective libraries, BIOBJ_LIBRARIES).
SUITES = ("bbob", "bbob-largescale", "bbob-mixint", "bbob-constrained", "bbob-biobj")
#: The libraries that take two objectives (bbob-biobj only).
BIOBJ_LIBRARIES = ("evokit-nsga2", "pymoo-nsga2", "comocma")


def is_biobj_library(library: str) -> bool:
    """One of BIOBJ_LIBRARIES, or an NSGA-II variant of the diagnostics
    (evokit-nsga2-p20-b5: population 20 in the box [-5, 5]^D; see nsga2_variant)."""
    return library in BIOBJ_LIBRARIES or nsga2_variant(library) is not None


#: pymoo NSGA2 settings the diagnostics can set to EvoKit's: "rank": the binary tournament
#: compares fronts (Deb's crowded comparison, EvoKit's) instead of Pareto dominance (pymoo's
#: comp_by_dom_and_crowding); "pm1": polynomial mutation considers every child (EvoKit's)
#: instead of 90 % of them (pymoo's PM(prob=0.9)); "dup": duplicates are kept (EvoKit's)
#: instead of eliminated (pymoo's eliminate_duplicates=True).
PYMOO_AS_EVOKIT = ("rank", "pm1", "dup")


def nsga2_variant(library: str) -> Optional[tuple]:
    """(implementation, population size, box half-width or None, pymoo settings)
    of an NSGA-II library name: evokit-nsga2 / pymoo-nsga2, optionally
    -p<population size> (even), -b<half-width> (the box [-b, b]^D within the
    problem's) and, for pymoo, any of -rank, -pm1, -dup (PYMOO_AS_EVOKIT); for
    the diagnostics: the campaign's libraries are the plain names. None for
    other names."""
    import re

    m = re.fullmatch(r"(evokit|pymoo)-nsga2(?:-p(\d+))?(?:-b(\d+(?:\.\d+)?))?((?:-(?:rank|pm1|dup))*)", library)
    if m is None:
        return None
    population = int(m.group(2)) if m.group(2) else NSGA2_POPULATION
    if population < 4 or population % 2:
        raise SystemExit(f"{library}: the population size must be even and >= 4")
    settings = tuple(x for x in m.group(4).split("-") if x)
    if settings and m.group(1) != "pymoo":
        raise SystemExit(f"{library}: -rank, -pm1 and -dup set pymoo's NSGA2 to EvoKit's choices")
    return m.group(1), population, float(m.group(3)) if m.group(3) else None, settings
#: bbob-biobj's 55 functions pair the bbob functions f1, f2, f6, f8, f13, f14, f15, f17,
#: f20, f21 (two of each bbob group), every pair once, in this order (f1: f1/f1, f2: f1/f2,
#: ..., f55: f21/f21).
BIOBJ_BBOB_FUNCTIONS = (1, 2, 6, 8, 13, 14, 15, 17, 20, 21)
BIOBJ_PAIRS = tuple((a, b) for i, a in enumerate(BIOBJ_BBOB_FUNCTIONS) for b in BIOBJ_BBOB_FUNCTIONS[i:])


def _bbob_group(f: int) -> str:
    return next(g for g, members in GROUPS.items() if f in members)


#: bbob-biobj's 15 function groups (COCO's data folders): the pair of the bbob groups.
BIOBJ_GROUPS: Dict[str, List[int]] = {}
for _k, (_a, _b) in enumerate(BIOBJ_PAIRS, 1):
    BIOBJ_GROUPS.setdefault(f"{_bbob_group(_a)}/{_bbob_group(_b)}", []).append(_k)
#: cocopp's bbob-biobj targets of the indicator (I_ref - I_HV): 10^0 .. 10^-5 in steps of
#: 10^0.1, 0, and -10^-5 .. -10^-4 (58 in all).
BIOBJ_TARGETS = tuple([10.0 ** (-0.1 * k) for k in range(51)] + [0.0] +
                      [-(10.0 ** (-5 + 0.2 * k)) for k in range(6)])


def groups_of(suite: str) -> Dict[str, Sequence[int]]:
    if suite == "bbob-biobj":
        return BIOBJ_GROUPS
    return CONSTRAINED_GROUPS if suite == "bbob-constrained" else GROUPS
FIRST = "evokit-bipop"  # the library the ratios are of


# ---- the objective as the libraries see it ------------------------------------------
class Objective:
    """problem(x) for one cell, counting evaluations and, for single-objective
    suites, when each target of TARGETS was first reached."""

    def __init__(self, problem, budget: int, fopt: float = math.nan):
        self.problem, self.budget = problem, budget
        self.dimension = problem.dimension
        self.single = problem.number_of_objectives == 1 and math.isfinite(fopt)
        self.constrained = problem.number_of_constraints > 0
        # bbob-mixint: the first `integers` coordinates are integers within the box
        self.integers = int(getattr(problem, "number_of_integer_variables", 0) or 0)
        self.fopt = fopt
        self.objectives = problem.number_of_objectives
        #: a multi-objective problem's objective vectors, one per evaluation (for the indicator)
        self.values: List[np.ndarray] = []
        self.evaluations = 0  # of f, plus those of g on a constrained problem (COCO's count)
        self.best = math.inf
        self.hits: List[Optional[int]] = [None] * len(TARGETS)
        self._next = 0  # index of the first target not reached yet
        # A constrained problem's recent f and g values by x: a solution counts
        # towards the targets once both are known and it is feasible.
        self._f: Dict[bytes, float] = {}
        self._g: Dict[bytes, bool] = {}

    def __call__(self, x) -> float:
        x = np.asarray(x, dtype=np.float64)
        f = self.problem(x)
        self.evaluations += 1
        if self.objectives > 1:
            f = np.array(f, dtype=np.float64)
            self.values.append(f)
        elif not self.constrained:
            self._reached(f)
        else:
            key = x.tobytes()
            if key in self._g:
                if self._g.pop(key):
                    self._reached(f)
            else:
                self._remember(self._f, key, f)
        return f

    def constraint(self, x) -> np.ndarray:
        """g(x) of a constrained problem (feasible: every value <= 0)."""
        x = np.asarray(x, dtype=np.float64)
        g = np.asarray(self.problem.constraint(x), dtype=np.float64)
        self.evaluations += 1
        key = x.tobytes()
        feasible = bool(np.all(g <= 0))
        if key in self._f:
            f = self._f.pop(key)
            if feasible:
                self._reached(f)
        else:
            self._remember(self._g, key, feasible)
        return g

    @staticmethod
    def _remember(table: dict, key: bytes, value) -> None:
        if len(table) >= 4096:
            table.pop(next(iter(table)))
        table[key] = value

    def _reached(self, f: float) -> None:
        if not self.single:
            return
        delta = f - self.fopt
        if delta < self.best:
            self.best = delta
            while self._next < len(TARGETS) and delta < TARGETS[self._next]:
                self.hits[self._next] = self.evaluations
                self._next += 1

    def batch(self, X) -> List[float]:
        return [self(x) for x in X]

    @property
    def done(self) -> bool:
        return self.problem.final_target_hit or self.evaluations >= self.budget

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.evaluations)

    @property
    def remaining_f(self) -> int:
        """The f-evaluations left: on a constrained problem each comes with one of g."""
        return self.remaining // 2 if self.constrained else self.remaining

    def restart_x0(self, rng: np.random.Generator) -> np.ndarray:
        """x0 of an independent restart: uniform in [-4, 4]^D, within the problem's box."""
        lo = np.maximum(self.problem.lower_bounds, -4.0)
        hi = np.minimum(self.problem.upper_bounds, 4.0)
        return lo + rng.random(self.dimension) * (hi - lo)


def _seed(seed: int, run: int) -> int:
    """The seed of a cell's run-th independent run (in [1, 2^31), which every library takes)."""
    return (seed + 7919 * run) % (2 ** 31 - 1) + 1


# ---- the libraries --------------------------------------------------------------------
def _evokit_strategy(name: str):
    import evokit

    table = {"cma": evokit.CMAES, "sep-cma": evokit.SepCMAES, "snes": evokit.SNES, "xnes": evokit.XNES, "crfmnes": evokit.CRFMNES,
             "lmmaes": evokit.LMMAES, "maes": evokit.MAES, "pgpe": evokit.PGPE, "cem": evokit.CEM, "openes": evokit.OpenES,
             "ars": evokit.ARS, "ga": evokit.GA}
    if name not in table:
        raise SystemExit(f"unknown EvoKit strategy {name!r}: one of bipop, ipop, {', '.join(table)}")
    return table[name]


def run_evokit(obj: Objective, seed: int, variant: str) -> int:
    """EvoKit: CMAES with BIPOP or IPOP (9 counted restarts, as pycma's
    fmin2), or any other ask/tell strategy with its defaults; then
    independent restarts. Returns the restarts done."""
    import evokit

    rng = np.random.default_rng(seed)
    x0 = np.array(obj.problem.initial_solution, dtype=np.float64)
    run = 0
    while not obj.done:
        s = _seed(seed, run)
        if variant in ("bipop", "ipop"):
            mixed = {}
            if obj.integers:  # CMA-ES with margin over the integer coordinates, in the box
                mixed = {"integer_variables": list(range(obj.integers)),
                         "bounds": (np.array(obj.problem.lower_bounds), np.array(obj.problem.upper_bounds))}
            es = evokit.CMAES(x0, SIGMA0, seed=s, restarts=9, restart_strategy=variant,
                              max_evaluations=obj.remaining, **mixed)
        else:
            cls = _evokit_strategy(variant)
            es = cls(x0, SIGMA0, seed=s, max_evaluations=obj.remaining_f)
        while not es.stop():
            X = es.ask()
            if obj.constrained:  # as optimize(f, constraints=g): the centre's values after each tell
                F = obj.batch(X)
                es.tell(X, F, constraints=[obj.constraint(x) for x in X])
                if not obj.done:
                    centre = np.array(es.result.xfavorite, dtype=np.float64)
                    es.tell_center(obj(centre), obj.constraint(centre))
            else:
                es.tell(X, obj.batch(X))
            if obj.done:
                break
        run += 1
        x0 = obj.restart_x0(rng)
    return run


def run_pycma(obj: Objective, seed: int, restricted: Optional[str] = None) -> int:
    """pycma: fmin2(..., restarts=9, bipop=True), then independent restarts;
    restricted="diagonal": pycma's separable model (CMA_diagonal=True, the
    counterpart of EvoKit's SepCMAES), independent restarts only."""
    import cma

    rng = np.random.default_rng(seed)
    x0 = np.array(obj.problem.initial_solution, dtype=np.float64)
    run = 0
    while not obj.done:
        opts = {"maxfevals": obj.remaining_f, "verbose": -9,
                "seed": _seed(seed, run), "termination_callback": lambda es: obj.done}
        if obj.integers:  # pycma's integer handling, in the box
            opts.update(integer_variables=list(range(obj.integers)),
                        bounds=[list(obj.problem.lower_bounds), list(obj.problem.upper_bounds)])
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            if obj.constrained:  # fmin_con2 with its defaults (pycma's augmented Lagrangian)
                cma.fmin_con2(obj, x0, SIGMA0, constraints=obj.constraint, options=opts)
            elif restricted == "diagonal":
                cma.fmin2(obj, x0, SIGMA0, {**opts, "CMA_diagonal": True})
            else:
                cma.fmin2(obj, x0, SIGMA0, opts, restarts=9, bipop=True)
        run += 1
        x0 = obj.restart_x0(rng)
    return run


def run_cmaes(obj: Objective, seed: int) -> int:
    """CyberAgent cmaes: CMA with its IPOP loop (population doubled at each
    restart, a uniform restart mean), the first run from x0."""
    from cmaes import CMA

    from cmaes import CMAwM

    rng = np.random.default_rng(seed)
    mean = np.array(obj.problem.initial_solution, dtype=np.float64)
    popsize, run = None, 0
    n = obj.dimension
    while not obj.done:
        if obj.integers:  # CMA-ES with margin (CMAwM) over the integer coordinates, in the box
            bounds = np.stack([obj.problem.lower_bounds, obj.problem.upper_bounds], axis=1)
            steps = np.array([1.0] * obj.integers + [0.0] * (n - obj.integers))
            opt = CMAwM(mean=mean, sigma=SIGMA0, bounds=bounds, steps=steps, seed=_seed(seed, run),
                        population_size=popsize)
        else:
            opt = CMA(mean=mean, sigma=SIGMA0, seed=_seed(seed, run), population_size=popsize)
        popsize = opt.population_size
        run += 1
        while not obj.done:
            sols = []
            for _ in range(opt.population_size):
                if obj.integers:
                    x_eval, x_tell = opt.ask()
                    sols.append((x_tell, obj(x_eval)))
                else:
                    x = opt.ask()
                    sols.append((x, obj(x)))
            opt.tell(sols)
            if opt.should_stop():
                break
        popsize *= 2
        mean = obj.restart_x0(rng)
    return run


def run_modcma(obj: Objective, seed: int) -> int:
    """ModularCMAES with local_restart='BIPOP' until the budget, then
    independent restarts."""
    from modcma import ModularCMAES

    rng = np.random.default_rng(seed)
    x0 = np.array(obj.problem.initial_solution, dtype=np.float64)
    run = 0
    np.random.seed(seed % 2 ** 32)  # modcma draws from NumPy's global generator
    while not obj.done:
        c = ModularCMAES(obj, d=obj.dimension, budget=obj.remaining, x0=x0.reshape(-1, 1),
                         sigma0=SIGMA0, local_restart="BIPOP")
        run += 1
        while not obj.done and c.step():
            pass
        x0 = obj.restart_x0(rng)
    return run


def run_nevergrad(obj: Objective, seed: int) -> int:
    """nevergrad's default optimiser (NGOpt) with the whole budget."""
    import nevergrad as ng

    param = ng.p.Array(init=np.array(obj.problem.initial_solution, dtype=np.float64))
    param.random_state = np.random.RandomState(seed % 2 ** 32)
    opt = ng.optimizers.NGOpt(parametrization=param, budget=obj.budget)
    while not obj.done:
        cand = opt.ask()
        opt.tell(cand, obj(cand.value))
    return 1


# ---- bbob-biobj: two objectives ----------------------------------------------------
#: NSGA-II's population size: EvoKit's default (NSGA2(population_size=100)), given to pymoo's
#: NSGA2 too (whose default is also 100).
NSGA2_POPULATION = 100
#: COMO-CMA-ES: the number of kernels of comocma's documentation (get_cmas(11 * [x0], ...)).
COMO_KERNELS = 11


def _box(obj: Objective, half_width: Optional[float] = None):
    """The problem's box (bbob-biobj: [-100, 100]^D), or its intersection with [-half_width, half_width]^D."""
    lo = np.array(obj.problem.lower_bounds, dtype=np.float64)
    hi = np.array(obj.problem.upper_bounds, dtype=np.float64)
    if half_width is not None:
        lo, hi = np.maximum(lo, -half_width), np.minimum(hi, half_width)
    return lo, hi


def run_evokit_nsga2(obj: Objective, seed: int, population: int = NSGA2_POPULATION,
                     box: Optional[float] = None) -> int:
    """EvoKit's NSGA2 with its defaults (population 100, SBX p_c 0.9 eta 15,
    polynomial mutation 1/n eta 20) in the problem's box; x0 =
    problem.initial_solution is the first member of P_0 of the first run.
    NSGA-II has no stop of its own: one run takes the budget (the last
    generation is cut at the budget); a run that stopped early would be
    followed by an independent one (P_0 uniform in the box)."""
    import evokit

    lo, hi = _box(obj, box)
    x0 = np.array(obj.problem.initial_solution, dtype=np.float64)
    run = 0
    while not obj.done:
        es = evokit.NSGA2(x0 if run == 0 else None, bounds=(lo, hi), seed=_seed(seed, run),
                          max_evaluations=obj.remaining,
                          **({} if population == NSGA2_POPULATION else {"population_size": population}))
        run += 1
        while not es.stop() and not obj.done:
            X = es.ask()
            if len(X) > obj.remaining:  # the budget ends inside the generation
                obj.batch(X[:obj.remaining])
                break
            es.tell(X, obj.batch(X))
    return run


def run_pymoo_nsga2(obj: Objective, seed: int, population: int = NSGA2_POPULATION,
                    box: Optional[float] = None, settings: Sequence[str] = ()) -> int:
    """pymoo's NSGA2 with its defaults (RankAndCrowding survival, SBX eta 15,
    PM eta 20, duplicates eliminated) and pop_size = EvoKit's default, 100,
    ask/tell with every evaluation through the COCO problem; P_0 as EvoKit's:
    x0 = problem.initial_solution first, the rest uniform in the box (the
    first run; later ones pymoo's own uniform sampling)."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.evaluator import Evaluator
    from pymoo.core.problem import Problem
    from pymoo.core.termination import NoTermination
    from pymoo.problems.static import StaticProblem

    lo, hi = _box(obj, box)
    n = obj.dimension
    rng = np.random.default_rng(seed)
    run = 0
    while not obj.done:
        problem = Problem(n_var=n, n_obj=2, xl=lo, xu=hi)
        kwargs = {}
        if run == 0:
            P0 = lo + (hi - lo) * rng.random((population, n))
            P0[0] = np.array(obj.problem.initial_solution, dtype=np.float64)
            kwargs["sampling"] = P0
        if "pm1" in settings:
            from pymoo.operators.mutation.pm import PM

            kwargs["mutation"] = PM(eta=20, prob=1.0)
        if "dup" in settings:
            kwargs["eliminate_duplicates"] = False
        algorithm = NSGA2(pop_size=population, **kwargs)
        if "rank" in settings:
            algorithm.tournament_type = "comp_by_rank_and_crowding"
        algorithm.setup(problem, termination=NoTermination(), seed=_seed(seed, run), verbose=False)
        run += 1
        while algorithm.has_next() and not obj.done:
            pop = algorithm.ask()
            X = pop.get("X")
            if len(X) > obj.remaining:
                obj.batch(X[:obj.remaining])
                break
            F = np.array(obj.batch(X))
            Evaluator().eval(StaticProblem(problem, F=F), pop)
            algorithm.tell(infills=pop)
    return run


def run_comocma(obj: Objective, seed: int) -> int:
    """COMO-CMA-ES (comocma's Sofomore with CMA-ES kernels) with its
    documented defaults: 11 kernels from get_cmas (its kernel options,
    quiet), ask() of one kernel at a time; the kernels start at x0 =
    problem.initial_solution with sigma0 = 2 (the bench's, the domain of
    interest being [-5, 5]^D), the reference point is COCO's nadir
    (problem.largest_fvalues_of_interest); when every kernel has stopped, an
    independent restart from a uniform x0 in [-4, 4]^D. Sofomore's archive
    option is off (see below): it only records, the run is the same."""
    import comocma

    rng = np.random.default_rng(seed)
    x0 = np.array(obj.problem.initial_solution, dtype=np.float64)
    reference = [float(v) for v in obj.problem.largest_fvalues_of_interest]
    run = 0
    np.random.seed(seed % 2 ** 32)  # Sofomore's update order draws from NumPy's global generator
    while not obj.done:
        s = _seed(seed, run)
        opts = [{"verbose": -9, "verb_log": 0, "seed": s + k} for k in range(COMO_KERNELS)]
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            kernels = comocma.get_cmas(COMO_KERNELS * [x0.tolist()], SIGMA0, opts)
            # archive=False: Sofomore's own record of the non-dominated points, which the algorithm
            # does not use (COCO's observer keeps that archive); moarchiving 1.1.0's add_list,
            # which keeps it, re-appends its previous `_removed` list at every insertion that
            # removes nothing, so that list grows geometrically from tell to tell (14 GB resident within
            # a minute on f11 at D = 2, when the kernel killed the process for memory)
            moes = comocma.Sofomore(kernels, reference, {"verb_log": 0, "verb_disp": 0, "archive": False})
            run += 1
            while not moes.stop() and not obj.done:
                X = moes.ask()
                if len(X) > obj.remaining:
                    obj.batch(X[:obj.remaining])
                    break
                moes.tell(X, [list(f) for f in obj.batch(X)])
        x0 = obj.restart_x0(rng)
    return run


def runner(library: str) -> Callable[[Objective, int], int]:
    if library == "comocma":
        return run_comocma
    variant = nsga2_variant(library)
    if variant is not None:
        impl, population, box, settings = variant
        if impl == "evokit":
            return lambda obj, seed: run_evokit_nsga2(obj, seed, population, box)
        return lambda obj, seed: run_pymoo_nsga2(obj, seed, population, box, settings)
    if library.startswith("evokit-"):
        variant = library[len("evokit-"):]
        if variant not in ("bipop", "ipop"):
            _evokit_strategy(variant)  # the name is checked before any run
        return lambda obj, seed: run_evokit(obj, seed, variant)
    table = {"pycma-bipop": run_pycma, "pycma-sep": lambda obj, seed: run_pycma(obj, seed, "diagonal"),
             "pycma-con2": run_pycma,
             "cmaes-ipop": run_cmaes, "modcma-bipop": run_modcma, "nevergrad": run_nevergrad}
    if library not in table:
        raise SystemExit(f"unknown library {library!r}: evokit-<strategy> or one of {', '.join(table)}")
    return table[library]


# ---- cells ----------------------------------------------------------------------------
def parse_ints(text: str) -> List[int]:
    """'1-5,7' -> [1, 2, 3, 4, 5, 7]."""
    out: List[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def cell_id(suite: str, function: int, dimension: int, instance: int) -> str:
    """A cell's name: the suite, function, dimension and instance INDEX (1-based
    position in the suite's instance list; the record holds COCO's problem id)."""
    return f"{suite}_f{function:03d}_d{dimension:02d}_x{instance:02d}"


def cells(suite: str, functions: Sequence[int], dims: Sequence[int], instances: Sequence[int],
          libraries: Sequence[str]) -> List[tuple]:
    """Every (suite, function, dimension, instance, library): dimension by
    dimension, instance by instance (a run cut short has every function of
    its first instances), libraries innermost."""
    return [(suite, f, d, i, lib) for d in dims for i in instances for f in functions for lib in libraries]


def shard_of(all_cells: List[tuple], shard: str) -> List[tuple]:
    """Shard i of k: the i-th, (i+k)-th, ... problem (suite, function,
    dimension, instance) with every library on it, so that each shard runs
    the libraries side by side."""
    i, k = (int(v) for v in shard.split("/"))
    if not 0 <= i < k:
        raise SystemExit(f"--shard must be i/k with 0 <= i < k, got {shard!r}")
    problems = list(dict.fromkeys(c[:4] for c in all_cells))
    mine = set(problems[i::k])
    return [c for c in all_cells if c[:4] in mine]


def record_path(data: str, suite: str, library: str, cid: str) -> str:
    return os.path.join(data, suite, library, "cells", cid + ".json")


def _write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _problem(suite: str, function: int, dimension: int, instance: int):
    """(the suite, its one problem) of a cell; the suite must outlive the problem."""
    import cocoex

    opts = f"function_indices: {function} dimensions: {dimension} instance_indices: {instance}"
    s = cocoex.Suite(suite, "", opts)
    if len(s.ids()) != 1:
        raise SystemExit(f"{suite} has no problem f{function} D={dimension} instance index {instance}")
    return s, next(iter(s))


def fopt_of(suite: str, function: int, dimension: int, instance: int) -> float:
    """f_opt of a single-objective bbob-type problem: f at its optimum, which
    COCO writes to a file (nan where it does not)."""
    s, p = _problem(suite, function, dimension, instance)
    try:
        return _fopt(p, dimension)
    finally:
        p.free()
        s.free()


def _fopt(p, dimension: int) -> float:
    if p.number_of_objectives != 1:
        return math.nan
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        with contextlib.redirect_stdout(io.StringIO()):
            p._best_parameter("print")
        name = "._bbob_problem_best_parameter.txt"
        if not os.path.exists(name):
            return math.nan
        xopt = np.loadtxt(name, ndmin=1)
    return float(p(xopt)) if xopt.size == dimension else math.nan


# ---- bbob-biobj's indicator ----------------------------------------------------------------
def biobj_ideal(name: str) -> np.ndarray:
    """The ideal point of a bbob-biobj problem named
    'bbob_fAAA_iBB_dDD__bbob_fCCC_iEE_dDD' (problem.name): f_opt of each of
    its two bbob problems (COCO's ideal; the nadir is
    problem.largest_fvalues_of_interest)."""
    import re

    import cocoex

    parts = re.findall(r"bbob_f(\d+)_i(\d+)_d(\d+)", name)
    if len(parts) != 2:
        raise ValueError(f"not a bbob-biobj problem name: {name!r}")
    ideal = []
    for f, i, d in parts:
        s = cocoex.Suite("bbob", f"instances: {int(i)}", f"function_indices: {int(f)} dimensions: {int(d)}")
        p = next(iter(s))
        try:
            ideal.append(_fopt(p, int(d)))
        finally:
            p.free()
            s.free()
    return np.array(ideal)


def biobj_hypervolume(F, ideal, nadir) -> tuple:
    """COCO's bbob-biobj hypervolume of the points F [k, 2], normalised so
    that the ideal is (0, 0) and the nadir (1, 1): the area they dominate in
    [0, 1]^2 with reference point (1, 1) when a point lies there, else minus
    the smallest Euclidean distance of a point to that box (COCO's
    logger_biobj). Returns (that value, the number of non-dominated points
    of F)."""
    F = np.asarray(F, dtype=np.float64).reshape(-1, 2)
    if not len(F):
        return -math.inf, 0
    Y = (F - ideal) / (np.asarray(nadir) - ideal)
    order = np.lexsort((Y[:, 1], Y[:, 0]))  # by y0, then y1
    front, best = [], math.inf
    for y in Y[order]:
        if y[1] < best:
            front.append(y)
            best = y[1]
    front = np.array(front)
    inside = front[np.all(front <= 1.0, axis=1)]
    if len(inside):
        right = np.append(inside[1:, 0], 1.0)
        return float(np.sum((right - inside[:, 0]) * (1.0 - inside[:, 1]))), len(front)
    return -float(np.min(np.sqrt(np.sum(np.maximum(front - 1.0, 0.0) ** 2, axis=1)))), len(front)


def read_biobj_observer(folder: str, function: int, dimension: int) -> dict:
    """What COCO's bbob-biobj observer wrote of one run in folder: the
    reference hypervolume of the instance, the indicator I_ref - I_HV at each
    evaluation the .dat file logged (at every target it crossed, 20 per
    decade) and the final one, and the evaluations (.tdat's last line)."""
    import glob

    stem = f"bbob-biobj_f{function:02d}_d{dimension:02d}_hyp"
    dat = glob.glob(os.path.join(folder, "*", stem + ".dat"))
    tdat = glob.glob(os.path.join(folder, "*", stem + ".tdat"))
    if len(dat) != 1 or len(tdat) != 1:
        raise SystemExit(f"COCO's biobj data of f{function} D={dimension} not found in {folder}")

    def rows(path: str) -> tuple:
        ref, out = math.nan, []
        with open(path) as f:
            for line in f:
                if line.startswith("%"):
                    if "reference value =" in line:
                        ref = float(line.split("reference value =")[1].split(",")[0])
                elif line.strip():
                    v = line.split()
                    out.append((int(v[0]), float(v[1])))
        return ref, out

    reference, trace = rows(dat[0])
    _, timed = rows(tdat[0])
    return {"reference_value": reference, "trace": trace, "evaluations": timed[-1][0], "indicator": timed[-1][1]}


def biobj_target_hits(trace: Sequence[tuple]) -> List[Optional[int]]:
    """The first logged evaluation at which the indicator is <= each of BIOBJ_TARGETS."""
    hits: List[Optional[int]] = []
    for t in BIOBJ_TARGETS:
        hits.append(next((e for e, v in trace if v <= t), None))
    return hits


def run_cell(data: str, suite: str, function: int, dimension: int, instance: int, library: str,
             budget_multiplier: float, observe: bool = True) -> dict:
    """Runs one cell with COCO's observer and writes its record; returns it."""
    import cocoex

    cid = cell_id(suite, function, dimension, instance)
    run = runner(library)
    fopt = fopt_of(suite, function, dimension, instance)
    s, problem = _problem(suite, function, dimension, instance)
    biobj = problem.number_of_objectives == 2
    if problem.number_of_objectives > 2:
        problem.free()
        s.free()
        raise SystemExit(f"{suite}: more than two objectives are not wired into this runner")
    if biobj != is_biobj_library(library):
        problem.free()
        s.free()
        raise SystemExit(f"{library} on {suite}: the libraries of two objectives ({', '.join(BIOBJ_LIBRARIES)}) "
                         f"run bbob-biobj, the others the single-objective suites")
    if biobj:
        ideal, nadir = biobj_ideal(problem.name), np.array(problem.largest_fvalues_of_interest)
    if problem.number_of_constraints and not (library.startswith("evokit-") or library == "pycma-con2"):
        problem.free()
        s.free()
        raise SystemExit(f"{library} takes no constraints: on {suite} run evokit-<strategy> or pycma-con2")
    observer = None
    if observe:
        # COCO writes to exdata/<result_folder> below the working directory
        base = os.path.abspath(os.path.join(data, suite, library, "coco"))
        folder = os.path.join(base, "exdata", cid)
        if os.path.exists(folder):  # an interrupted cell: its data is redone
            shutil.rmtree(folder)
        os.makedirs(base, exist_ok=True)
        with contextlib.chdir(base):
            observer = cocoex.Observer(suite, f"result_folder: {cid} algorithm_name: {library}")
            problem.observe_with(observer)
    budget = int(budget_multiplier * dimension)
    obj = Objective(problem, budget, fopt)
    seed = (1000003 * function + 1009 * dimension + instance) % 2 ** 31
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with contextlib.chdir(os.path.join(data, suite, library, "coco") if observe else os.getcwd()):
        runs = run(obj, seed)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    rec = {"suite": suite, "function": function, "dimension": dimension, "instance_index": instance,
           "library": library, "problem": problem.id, "budget": budget, "evaluations": obj.evaluations,
           "solved": bool(problem.final_target_hit), "best_delta": obj.best, "target_hits": obj.hits,
           "independent_runs": runs, "cpu_s": round(cpu, 4), "wall_s": round(wall, 4), "seed": seed}
    problem.free()  # finishes COCO's files of the cell
    s.free()
    del observer
    if biobj:
        # the indicator as COCO's observer logged it, and as computed here from every
        # evaluated objective vector, the ideal and the nadir (the two must agree)
        hv, nondominated = biobj_hypervolume(obj.values, ideal, nadir)
        rec.update(solved=False, best_delta=None, ideal=ideal.tolist(), nadir=nadir.tolist(),
                   hypervolume=hv, nondominated=nondominated)
        if observe:
            logged = read_biobj_observer(folder, function, dimension)
            if logged["evaluations"] != obj.evaluations:
                raise SystemExit(f"{cid} {library}: COCO logged {logged['evaluations']} evaluations, "
                                 f"the library made {obj.evaluations}")
            rec.update(reference_value=logged["reference_value"], indicator=logged["indicator"],
                       indicator_here=logged["reference_value"] - hv, trace=logged["trace"],
                       target_hits=biobj_target_hits(logged["trace"]))
        else:
            rec.update(reference_value=None, indicator=None, indicator_here=None, trace=[],
                       target_hits=[None] * len(BIOBJ_TARGETS))
    _write_json(record_path(data, suite, library, cid), rec)
    return rec


def cmd_run(args) -> None:
    todo = cells(args.suite, parse_ints(args.functions), parse_ints(args.dims), parse_ints(args.instances),
                 args.libraries.split(","))
    for lib in {c[4] for c in todo}:
        runner(lib)  # unknown names fail before any run
    if args.shard:
        todo = shard_of(todo, args.shard)
    done = skipped = 0
    header = results.header()  # machine, versions, date, load at the start
    t0 = time.perf_counter()
    for suite, f, d, i, lib in todo:
        cid = cell_id(suite, f, d, i)
        if os.path.exists(record_path(args.data, suite, lib, cid)):
            skipped += 1
            continue
        rec = run_cell(args.data, suite, f, d, i, lib, args.budget)
        done += 1
        if not args.quiet and "indicator" in rec:
            print(f"{cid} {lib:14s} indicator {rec['indicator'] if rec['indicator'] is not None else math.nan:.3e} "
                  f"{rec['evaluations']:>8d} evals {rec['independent_runs']:>3d} runs {rec['wall_s']:8.2f} s "
                  f"{rec['nondominated']:>5d} non-dominated", flush=True)
        elif not args.quiet:
            print(f"{cid} {lib:14s} {'solved' if rec['solved'] else 'missed'} {rec['evaluations']:>8d} evals "
                  f"{rec['independent_runs']:>3d} runs {rec['wall_s']:8.2f} s  best {rec['best_delta']:.2e}",
                  flush=True)
    print(f"{done} cells run, {skipped} already done, {time.perf_counter() - t0:.0f} s")
    if done:
        log_run(args.data, args.suite, {"command": results.command(), "shard": args.shard, "cells_run": done,
                                        "cells_skipped": skipped, "wall_s": round(time.perf_counter() - t0, 1),
                                        **{k: v for k, v in header.items() if k != "command"},
                                        "load_average_end": [round(x, 2) for x in os.getloadavg()]})


def log_run(data: str, suite: str, entry: dict) -> None:
    """Appends a run's header (command, machine, versions, date, load) to
    DATA/<suite>/runs.jsonl, which the summary reports."""
    os.makedirs(os.path.join(data, suite), exist_ok=True)
    with open(os.path.join(data, suite, "runs.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")


# ---- summary ----------------------------------------------------------------------------
def load_records(data: str, suite: str, libraries: Sequence[str]) -> Dict[str, List[dict]]:
    out = {}
    for lib in libraries:
        folder = os.path.join(data, suite, lib, "cells")
        recs = []
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".json"):
                    with open(os.path.join(folder, name)) as f:
                        recs.append(json.load(f))
        out[lib] = recs
    return out


def cpu_per_evaluation(records: Dict[str, List[dict]], cells: set) -> Dict[str, Dict[int, float]]:
    """CPU seconds per evaluation of each library per dimension, over the
    given cells (its runs as they ran: the strategy's own cost and f's)."""
    out: Dict[str, Dict[int, float]] = {}
    for lib, recs in records.items():
        for d in sorted({r["dimension"] for r in recs}):
            runs = [r for r in recs if r["dimension"] == d and (r["function"], d, r["instance_index"]) in cells]
            evals = sum(r["evaluations"] for r in runs)
            if evals:
                out.setdefault(lib, {})[d] = sum(r["cpu_s"] for r in runs) / evals
    return out


def ert(runs: Sequence[dict]) -> float:
    """Expected running time to the final target: evaluations of all runs / runs solved."""
    solved = sum(r["solved"] for r in runs)
    return sum(r["evaluations"] for r in runs) / solved if solved else math.inf


def fisher_less(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test of [[a, b], [c, d]] (alternative 'less',
    scipy.stats.fisher_exact's): P(X <= a) for X hypergeometric with the
    table's margins, the probability that the first row solves so few
    given the second's."""
    row1, col1, n = a + b, a + c, a + b + c + d
    lo = max(0, row1 + col1 - n)
    total = math.comb(n, row1)
    return min(1.0, sum(math.comb(col1, x) * math.comb(n - col1, row1 - x) for x in range(lo, a + 1)) / total)


def _by_cell(recs: Sequence[dict]) -> Dict[tuple, dict]:
    return {(r["function"], r["dimension"], r["instance_index"]): r for r in recs}


def compare(records: Dict[str, List[dict]], first: str = FIRST, suite: str = "bbob") -> dict:
    """Per dimension and function group: runs solved by each library and
    the geometric-mean ERT ratio first / peer over the functions both solve
    in at least half the runs; per dimension also the one-sided Fisher p of
    first's solved runs against each peer's. Only the cells every library
    ran are compared."""
    libs = list(records)
    maps = {lib: _by_cell(records[lib]) for lib in libs}
    common = set.intersection(*(set(m) for m in maps.values())) if maps else set()
    dims = sorted({k[1] for k in common})
    out = {"libraries": libs, "dimensions": {}}
    for d in dims:
        keys = [k for k in common if k[1] == d]
        functions = sorted({k[0] for k in keys})
        instances = sorted({k[2] for k in keys})
        per_f = {}
        for f in functions:
            ks = [k for k in keys if k[0] == f]
            per_f[f] = {lib: {"runs": len(ks), "solved": sum(maps[lib][k]["solved"] for k in ks),
                              "ert": ert([maps[lib][k] for k in ks])} for lib in libs}
        rows = {}
        for group, members in [*groups_of(suite).items(), ("all", range(1, 10 ** 6))]:
            fs = [f for f in functions if f in members]
            if not fs:
                continue
            row = {"functions": fs, "runs": sum(per_f[f][libs[0]]["runs"] for f in fs),
                   "solved": {lib: sum(per_f[f][lib]["solved"] for f in fs) for lib in libs},
                   "ert_ratio": {}, "ert_ratio_functions": {}}
            for peer in libs:
                if peer == first or first not in libs:
                    continue
                both = [f for f in fs if 2 * per_f[f][first]["solved"] >= per_f[f][first]["runs"]
                        and 2 * per_f[f][peer]["solved"] >= per_f[f][peer]["runs"]]
                logs = [math.log(per_f[f][first]["ert"] / per_f[f][peer]["ert"]) for f in both]
                row["ert_ratio"][peer] = math.exp(sum(logs) / len(logs)) if logs else None
                row["ert_ratio_functions"][peer] = both
            rows[group] = row
        fisher = {}
        if first in libs:
            n = rows["all"]["runs"]
            s1 = rows["all"]["solved"][first]
            for peer in libs:
                if peer != first:
                    s2 = rows["all"]["solved"][peer]
                    fisher[peer] = fisher_less(s1, n - s1, s2, n - s2)
        out["dimensions"][str(d)] = {"instances": instances, "functions": per_f, "groups": rows,
                                     "fisher_p_less": fisher}
    return out


def ecdf_curves(records: Dict[str, List[dict]], dimension: int, common: set) -> Dict[str, tuple]:
    """Per library: (evaluations / D, fraction of (run, target) pairs reached)."""
    curves = {}
    for lib, recs in records.items():
        rs = [r for r in recs if r["dimension"] == dimension and
              (r["function"], r["dimension"], r["instance_index"]) in common]
        hits = sorted(h / dimension for r in rs for h in r["target_hits"] if h is not None)
        total = sum(len(r["target_hits"]) for r in rs)  # TARGETS' 51, or BIOBJ_TARGETS' 58 each
        if total:
            curves[lib] = (np.array(hits), np.arange(1, len(hits) + 1) / total)
    return curves


def draw_ecdf(records, dimension: int, common: set, path: str, budget: float, title: Optional[str] = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for lib, (x, y) in ecdf_curves(records, dimension, common).items():
        start = min(1.0, x[0]) if len(x) else 1.0  # bbob-biobj: a target can fall at evaluation 1 (1 / D)
        ax.step(np.concatenate([[start], x, [budget]]), np.concatenate([[0.0], y, [y[-1] if len(y) else 0.0]]),
                where="post", label=lib)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("evaluations / dimension")
    ax.set_ylabel("fraction of (run, target) pairs")
    n_f = len({k[0] for k in common if k[1] == dimension})
    ax.set_title(title or f"bbob, D = {dimension}: {n_f} functions, 51 targets 1e2..1e-8", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _fmt_ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}"


# ---- bbob-biobj's summary ---------------------------------------------------------------------
BIOBJ_FIRST = "evokit-nsga2"


def biobj_target_index(target: float) -> int:
    k = min(range(len(BIOBJ_TARGETS)), key=lambda i: abs(BIOBJ_TARGETS[i] - target))
    if not math.isclose(BIOBJ_TARGETS[k], target, rel_tol=1e-9, abs_tol=1e-15):
        raise SystemExit(f"--target {target:g} is not one of cocopp's bbob-biobj targets "
                         f"(10^0 .. 10^-5 in steps of 10^0.1, 0, -10^-5 .. -10^-4)")
    return k


def ert_at(runs: Sequence[dict], k: int) -> tuple:
    """(runs reaching BIOBJ_TARGETS[k], ERT: the evaluations of every run up to
    that target, or all of them where it was not reached, over the runs reaching it)."""
    reached = [r for r in runs if r["target_hits"][k] is not None]
    spent = sum(r["target_hits"][k] if r["target_hits"][k] is not None else r["evaluations"] for r in runs)
    return len(reached), (spent / len(reached) if reached else math.inf)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test of wins against losses (ties left out): the
    probability of a split at least as uneven under p = 1/2."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def compare_biobj(records: Dict[str, List[dict]], first: str, target: float) -> dict:
    """Per dimension and function group (BIOBJ_GROUPS) over the cells every
    library ran: the median final indicator (I_ref - I_HV, COCO's, smaller is
    better) of each library; for each peer the cells where first's final
    indicator is smaller (better) / larger (worse); the runs reaching
    `target` and the geometric-mean ERT ratio first / peer over the functions
    both reach it in at least half the runs. Per dimension: the two-sided
    sign test of first's better/worse cells against each peer."""
    libs = list(records)
    k = biobj_target_index(target)
    maps = {lib: _by_cell(records[lib]) for lib in libs}
    common = set.intersection(*(set(m) for m in maps.values())) if maps else set()
    out = {"libraries": libs, "first": first, "target": target, "dimensions": {}}
    for d in sorted({c[1] for c in common}):
        keys = sorted(c for c in common if c[1] == d)
        functions = sorted({c[0] for c in keys})
        per_f = {}
        for f in functions:
            ks = [c for c in keys if c[0] == f]
            per_f[f] = {}
            for lib in libs:
                runs = [maps[lib][c] for c in ks]
                reached, e = ert_at(runs, k)
                per_f[f][lib] = {"runs": len(runs), "reached": reached, "ert": e,
                                 "median_indicator": float(np.median([r["indicator"] for r in runs]))}
        rows = {}
        for group, members in [*BIOBJ_GROUPS.items(), ("all", range(1, 10 ** 6))]:
            fs = [f for f in functions if f in members]
            if not fs:
                continue
            ks = [c for c in keys if c[0] in fs]
            row = {"functions": fs, "cells": len(ks),
                   "median_indicator": {lib: float(np.median([maps[lib][c]["indicator"] for c in ks])) for lib in libs},
                   "reached": {lib: sum(per_f[f][lib]["reached"] for f in fs) for lib in libs},
                   "better": {}, "worse": {}, "ert_ratio": {}, "ert_ratio_functions": {}}
            for peer in libs:
                if peer == first:
                    continue
                row["better"][peer] = sum(maps[first][c]["indicator"] < maps[peer][c]["indicator"] for c in ks)
                row["worse"][peer] = sum(maps[first][c]["indicator"] > maps[peer][c]["indicator"] for c in ks)
                both = [f for f in fs
                        if all(2 * per_f[f][lib]["reached"] >= per_f[f][lib]["runs"] for lib in (first, peer))]
                logs = [math.log(per_f[f][first]["ert"] / per_f[f][peer]["ert"]) for f in both]
                row["ert_ratio"][peer] = math.exp(sum(logs) / len(logs)) if logs else None
                row["ert_ratio_functions"][peer] = both
            rows[group] = row
        everything = rows["all"]
        out["dimensions"][str(d)] = {
            "instances": sorted({c[2] for c in keys}), "functions": per_f, "groups": rows,
            "sign_test_p": {p: sign_test(everything["better"][p], everything["worse"][p])
                            for p in everything["better"]}}
    return out


def run_cocopp(data: str, suite: str, libraries: Sequence[str], out: str, name: str) -> List[str]:
    """COCO's post-processing of the observer folders, offline: cocopp reads
    DATA/<suite>/<library>/coco/exdata under the library's name (a link) and
    draws PNG figures; its all-function ECDF of each dimension is copied to
    out/<name>_cocopp_d<D>.png. cocopp's bundled reference algorithm (best
    2016) is left out: its reference hypervolumes are not those of this COCO
    release. Returns the figures' names."""
    import glob
    import re

    import cocopp

    work = tempfile.mkdtemp(prefix="cocopp-")
    try:
        folders = []
        for lib in libraries:
            link = os.path.join(work, lib)
            os.symlink(os.path.abspath(os.path.join(data, suite, lib, "coco", "exdata")), link)
            folders.append(link)
        cocopp.genericsettings.figure_file_formats = ["png"]
        for tb in (cocopp.testbedsettings.GECCOBiObjBBOBTestbed,):
            tb.settings["reference_algorithm_filename"] = ""
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cocopp.main(["-o", os.path.join(work, "ppdata"), *folders])
        figures = []
        for path in sorted(glob.glob(os.path.join(work, "ppdata", "*", "pprldmany_*D_noiselessall.png"))):
            d = int(re.search(r"pprldmany_(\d+)D_noiselessall", path).group(1))
            target = os.path.join(out, f"{name}_cocopp_d{d}.png")
            shutil.copyfile(path, target)
            figures.append(os.path.basename(target))
        return figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fmt_indicator(v: float) -> str:
    return f"{v:.2e}"


def _summary_head(args, records: Dict[str, List[dict]], report) -> tuple:
    """Prints the runs that recorded the cells and the --note; returns the
    cells every library ran and the budgets (x D) among the records."""
    maps = [_by_cell(recs) for recs in records.values()]
    common = set.intersection(*(set(m) for m in maps)) if maps else set()
    budgets = {r["budget"] / r["dimension"] for recs in records.values() for r in recs}
    for line in run_lines(args.data, args.suite, records):
        report.print(line)
    if args.note:
        report.print(args.note + "\n")
    return common, budgets


def cmd_summary_biobj(args, libs: List[str], name: str, report) -> None:
    records = load_records(args.data, args.suite, libs)
    first = BIOBJ_FIRST if BIOBJ_FIRST in libs else libs[0]
    peers = [lib for lib in libs if lib != first]
    targets = [float(t) for t in str(args.target).split(",")]
    by_target = {t: compare_biobj(records, first, t) for t in targets}
    cmp, target = by_target[targets[0]], targets[0]
    common, budgets = _summary_head(args, records, report)
    # the indicator recomputed here from every evaluated objective vector against COCO's
    gap = max((abs(r["indicator"] - r["indicator_here"]) for recs in records.values() for r in recs), default=0.0)
    report.print(f"Cells every library ran: {len(common)}; budget {', '.join(f'{b:g}' for b in sorted(budgets))} x D "
                 f"evaluations. Indicator: COCO's bbob-biobj indicator at the end of the run, I_ref - I_HV, the "
                 f"hypervolume of every non-dominated solution evaluated (normalised: ideal (0, 0), nadir (1, 1)) "
                 f"subtracted from the instance's reference hypervolume, plus the distance to the region of interest "
                 f"where no solution lies in it (smaller is better; < 0: better than COCO's reference set), from "
                 f"COCO's observer files (recomputed here from the evaluated objective vectors: largest difference "
                 f"{gap:.1e}). Median over the group's (function, instance) cells; better/worse: the cells where "
                 f"{first}'s final indicator is smaller/larger than the peer's; reached: runs reaching the target "
                 f"{target:g}; ERT ratio: {first} / peer at that target, geometric mean over the functions both "
                 f"reach in at least half the runs (their count in brackets).\n")
    head = ["D", "group", "cells", *[f"median {lib}" for lib in libs],
            *[f"{first} better/worse than {p}" for p in peers], *[f"reached {lib}" for lib in libs],
            *[f"ERT {first}/{p}" for p in peers]]
    report.print("| " + " | ".join(head) + " |")
    report.print("|" + "---|" * len(head))
    for d, entry in cmp["dimensions"].items():
        for group, row in entry["groups"].items():
            cells_ = [d, group, str(row["cells"]), *[_fmt_indicator(row["median_indicator"][lib]) for lib in libs],
                      *[f"{row['better'][p]}/{row['worse'][p]}" for p in peers],
                      *[str(row["reached"][lib]) for lib in libs],
                      *[f"{_fmt_ratio(row['ert_ratio'][p])} ({len(row['ert_ratio_functions'][p])})" for p in peers]]
            report.print("| " + " | ".join(cells_) + " |")
    report.print()
    if peers:
        report.print(f"Two-sided sign test of {first}'s better/worse cells (ties left out):\n")
        report.print("| D | instances | " + " | ".join(f"p vs {p}" for p in peers) + " |")
        report.print("|---|---|" + "---|" * len(peers))
        for d, entry in cmp["dimensions"].items():
            report.print(f"| {d} | {','.join(map(str, entry['instances']))} | "
                         + " | ".join(f"{entry['sign_test_p'][p]:.2g}" for p in peers) + " |")
        report.print()
    if len(targets) > 1:
        report.print("Runs reaching each target (of the cells every library ran) and the ERT ratio there, "
                     "over all functions:\n")
        report.print("| D | target | runs | " + " | ".join(f"reached {lib}" for lib in libs) + " | "
                     + " | ".join(f"ERT {first}/{p}" for p in peers) + " |")
        report.print("|---|---|---|" + "---|" * (len(libs) + len(peers)))
        for d in cmp["dimensions"]:
            for t in targets:
                row = by_target[t]["dimensions"][d]["groups"]["all"]
                ratios = [f"{_fmt_ratio(row['ert_ratio'][p])} ({len(row['ert_ratio_functions'][p])})" for p in peers]
                report.print(f"| {d} | {t:g} | {row['cells']} | " + " | ".join(str(row["reached"][lib]) for lib in libs)
                             + " | " + " | ".join(ratios) + " |")
        report.print()
    report.print(f"Per function: the median final indicator over the instances (runs reaching {target:g} "
                 f"of runs):\n")
    report.print("| D | f | " + " | ".join(libs) + " |")
    report.print("|---|---|" + "---|" * len(libs))
    for d, entry in cmp["dimensions"].items():
        for f, row in entry["functions"].items():
            report.print(f"| {d} | {f} | " + " | ".join(
                f"{_fmt_indicator(row[lib]['median_indicator'])} ({row[lib]['reached']}/{row[lib]['runs']})"
                for lib in libs) + " |")
    figures, cocopp_figures, cocopp_error = [], [], None
    if not args.no_figures:
        os.makedirs(args.out, exist_ok=True)
        for d in cmp["dimensions"]:
            path = os.path.join(args.out, f"{name}_ecdf_d{int(d)}.png")
            n_f, n_i = len(cmp["dimensions"][d]["functions"]), len(cmp["dimensions"][d]["instances"])
            draw_ecdf(records, int(d), common, path, max(budgets) if budgets else 1e3,
                      title=f"bbob-biobj, D = {d}: {n_f} functions, {n_i} instances, 58 indicator targets 1..-1e-4")
            figures.append(os.path.relpath(path, args.out))
        report.print("\nECDF figures (this script's, from the records: the fraction of (run, target) pairs of "
                     "cocopp's 58 bbob-biobj targets reached against evaluations / D): " + ", ".join(figures))
        if args.cocopp:
            try:
                cocopp_figures = run_cocopp(args.data, args.suite, libs, args.out, name)
                report.print("\ncocopp's figures (`cocopp.main` on the observer folders, offline, without a "
                             "reference algorithm; its ECDF over all functions per dimension): "
                             + ", ".join(cocopp_figures))
            except Exception as e:  # noqa: BLE001  (what failed goes into the report)
                cocopp_error = f"{type(e).__name__}: {e}"
                report.print(f"\ncocopp failed on these folders: {cocopp_error}")
    per_eval = cpu_per_evaluation(records, common)
    if per_eval:
        dims = sorted({d for t in per_eval.values() for d in t})
        report.print("\nCPU seconds per evaluation over the cells every library ran (their whole runs, "
                     "COCO's function and observer included):\n")
        report.print("| library | " + " | ".join(f"D={d}" for d in dims) + " |")
        report.print("|---|" + "---|" * len(dims))
        for lib, t in per_eval.items():
            report.print(f"| {lib} | " + " | ".join(f"{t[d]:.2e}" if d in t else "-" for d in dims) + " |")
    keys = ("cells", "reached", "ert_ratio", "ert_ratio_functions")
    reached = {f"{t:g}": {d: {k: e["groups"]["all"][k] for k in keys} for d, e in by_target[t]["dimensions"].items()}
               for t in targets}
    report.write(args.out, {"suite": args.suite, "comparison": cmp, "figures": figures, "reached_by_target": reached,
                            "cocopp_figures": cocopp_figures, "cocopp_error": cocopp_error,
                            "targets": list(BIOBJ_TARGETS), "indicator_recomputed_max_difference": gap,
                            "cpu_per_evaluation": {lib: {str(d): v for d, v in t.items()}
                                                   for lib, t in per_eval.items()},
                            "data": os.path.relpath(os.path.abspath(args.data), results.ROOT)})


def cmd_summary(args) -> None:
    libs = args.libraries.split(",")
    name = args.name or args.suite.replace("-", "_")  # bbob.md, bbob_largescale.md, ...
    report = results.Report(name, f"COCO {args.suite}: {', '.join(libs)}", quiet=args.quiet)
    if args.suite == "bbob-biobj":
        return cmd_summary_biobj(args, libs, name, report)
    records = load_records(args.data, args.suite, libs)
    cmp = compare(records, FIRST if FIRST in libs else libs[0], args.suite)
    first = FIRST if FIRST in libs else libs[0]
    peers = [lib for lib in libs if lib != first]
    common, budgets = _summary_head(args, records, report)
    report.print(f"Cells every library ran: {len(common)}; budget {', '.join(f'{b:g}' for b in sorted(budgets))} "
                 f"x D evaluations; solved: f - f_opt < 1e-8 (runs solved / runs). ERT ratio: {first} / peer, "
                 f"geometric mean over the functions both solve in at least half the runs (their count in "
                 f"brackets); Fisher p: one-sided (alternative 'less'), {first}'s solved runs against the "
                 f"peer's.\n")
    head = ["D", "group", "runs", *libs, *[f"ERT {first}/{p}" for p in peers]]
    report.print("| " + " | ".join(head) + " |")
    report.print("|" + "---|" * len(head))
    for d, entry in cmp["dimensions"].items():
        for group, row in entry["groups"].items():
            cells_ = [d, group, str(row["runs"]), *[str(row["solved"][lib]) for lib in libs],
                      *[f"{_fmt_ratio(row['ert_ratio'].get(p))} ({len(row['ert_ratio_functions'].get(p, []))})"
                        for p in peers]]
            report.print("| " + " | ".join(cells_) + " |")
    report.print()
    if peers:
        report.print("| D | " + " | ".join(f"Fisher p {first} < {p}" for p in peers) + " |")
        report.print("|---|" + "---|" * len(peers))
        for d, entry in cmp["dimensions"].items():
            report.print(f"| {d} | " + " | ".join(f"{entry['fisher_p_less'][p]:.3f}" for p in peers) + " |")
        report.print()
    report.print("Per function (solved / runs, ERT in evaluations):\n")
    report.print("| D | f | " + " | ".join(libs) + " |")
    report.print("|---|---|" + "---|" * len(libs))
    for d, entry in cmp["dimensions"].items():
        for f, row in entry["functions"].items():
            report.print(f"| {d} | {f} | " + " | ".join(
                f"{row[lib]['solved']}/{row[lib]['runs']} {row[lib]['ert']:,.0f}" if row[lib]["solved"]
                else f"0/{row[lib]['runs']}" for lib in libs) + " |")
    figures = []
    if not args.no_figures:
        for d in cmp["dimensions"]:
            path = os.path.join(args.out, f"{name}_ecdf_d{int(d)}.png")
            os.makedirs(args.out, exist_ok=True)
            draw_ecdf(records, int(d), common, path, max(budgets) if budgets else 1e4)
            figures.append(os.path.relpath(path, args.out))
        report.print("\nECDF figures: " + ", ".join(figures))
    per_eval = cpu_per_evaluation(records, common)
    if per_eval:
        dims = sorted({d for t in per_eval.values() for d in t})
        report.print("\nCPU seconds per evaluation over the cells every library ran (their whole runs):\n")
        report.print("| library | " + " | ".join(f"D={d}" for d in dims) + " |")
        report.print("|---|" + "---|" * len(dims))
        for lib, t in per_eval.items():
            report.print(f"| {lib} | " + " | ".join(f"{t[d]:.2e}" if d in t else "-" for d in dims) + " |")
    timing = load_timing(args.data, libs)
    if timing:
        report.print("\nTiming (COCO's timing experiment): CPU seconds per evaluation\n")
        dims = sorted({int(d) for t in timing.values() for d in t})
        report.print("| library | " + " | ".join(f"D={d}" for d in dims) + " |")
        report.print("|---|" + "---|" * len(dims))
        for lib, t in timing.items():
            report.print(f"| {lib} | " + " | ".join(
                f"{t[str(d)]['cpu_per_evaluation']:.2e}" if str(d) in t else "-" for d in dims) + " |")
    report.write(args.out, {"suite": args.suite, "comparison": cmp, "figures": figures, "timing": timing,
                            "cpu_per_evaluation": {lib: {str(d): v for d, v in t.items()} for lib, t in per_eval.items()},
                            "data": os.path.relpath(os.path.abspath(args.data), results.ROOT)})


def run_lines(data: str, suite: str, records: Dict[str, List[dict]]) -> List[str]:
    """What the summary says of the runs: each logged run's command, date
    and load (runs.jsonl), the span of the cell records' times, and each
    library's CPU seconds."""
    lines = []
    path = os.path.join(data, suite, "runs.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                lines.append(f"- run `{r['command']}`: {r['date']}, {r['cells_run']} cells in {r['wall_s']:,.0f} s, "
                             f"load average {r['load_average_start'][0]:.1f} at the start, "
                             f"{r['load_average_end'][0]:.1f} at the end (EvoKit {r['versions'].get('evokit_commit')})")
    times = [os.path.getmtime(os.path.join(data, suite, lib, "cells", cell_id(suite, r["function"], r["dimension"],
                                                                              r["instance_index"]) + ".json"))
             for lib, recs in records.items() for r in recs]
    if times:
        import datetime

        fmt = "%Y-%m-%d %H:%M UTC"
        first, last = (datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(fmt)
                       for t in (min(times), max(times)))
        cpu = ", ".join(f"{lib} {sum(r['cpu_s'] for r in recs):,.0f} s" for lib, recs in records.items())
        lines.append(f"- cells recorded from {first} to {last}; CPU seconds per library: {cpu}")
    return [*lines, ""] if lines else []


# ---- timing ----------------------------------------------------------------------------------
def timing_path(data: str, library: str) -> str:
    return os.path.join(data, "timing", library + ".json")


def load_timing(data: str, libraries: Sequence[str]) -> dict:
    out = {}
    for lib in libraries:
        p = timing_path(data, lib)
        if os.path.exists(p):
            with open(p) as f:
                out[lib] = json.load(f)
    return out


def cmd_timing(args) -> None:
    """COCO's timing experiment: every bbob function, instance 1, a budget
    of --budget x D, no target stop; CPU seconds / evaluations per D."""
    import cocoex

    for lib in args.libraries.split(","):
        run = runner(lib)
        warm = cocoex.Suite("bbob", "", "function_indices: 1 dimensions: 2 instance_indices: 1")
        for problem in warm:  # imports and first calls, not timed
            run(Objective(_Untargeted(problem), 20), 0)
        path = timing_path(args.data, lib)
        table = {}
        if os.path.exists(path):
            with open(path) as f:
                table = json.load(f)
        for d in parse_ints(args.dims):
            if str(d) in table:
                continue
            evals = cpu = 0.0
            suite = cocoex.Suite("bbob", "", f"dimensions: {d} instance_indices: 1")
            for problem in suite:
                obj = Objective(_Untargeted(problem), int(args.budget * d))
                c0 = time.process_time()
                run(obj, d)
                cpu += time.process_time() - c0
                evals += obj.evaluations
                problem.free()
            table[str(d)] = {"evaluations": int(evals), "cpu_s": round(cpu, 3), "cpu_per_evaluation": cpu / evals}
            print(f"{lib:14s} D={d:3d} {cpu / evals:.2e} s per evaluation ({int(evals)} evaluations)", flush=True)
            _write_json(path, table)


class _Untargeted:
    """A problem whose final target never counts as hit: the timing
    experiment uses the whole budget."""

    def __init__(self, problem):
        self._p = problem
        self.final_target_hit = False

    def __call__(self, x):
        return self._p(x)

    def __getattr__(self, name):
        return getattr(self._p, name)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data", default=DEFAULT_DATA, help="COCO data and cell records (default: exdata/)")
    common.add_argument("--suite", default="bbob", choices=SUITES)
    common.add_argument("--libraries", default="evokit-bipop,pycma-bipop",
                        help="comma-separated: evokit-<strategy>, pycma-bipop, cmaes-ipop, modcma-bipop, nevergrad; "
                             "on bbob-biobj: evokit-nsga2, pymoo-nsga2, comocma")
    common.add_argument("--quiet", action="store_true")
    p = sub.add_parser("run", parents=[common], help="run cells (resumable)")
    p.add_argument("--functions", default="1-24")
    p.add_argument("--dims", default="2,3,5")
    p.add_argument("--instances", default="1-15", help="instance indices of the suite (1-based)")
    p.add_argument("--budget", type=float, default=1e4, help="evaluations per dimension (default 1e4)")
    p.add_argument("--shard", help="i/k: every k-th cell from the i-th")
    s = sub.add_parser("summary", parents=[common], help="tables and ECDF figures from the records")
    results.add_out_argument(s, "bbob")
    s.add_argument("--no-figures", action="store_true")
    s.add_argument("--note", default="", help="a line for the report (how the run was made)")
    s.add_argument("--name", default="",
                   help="the result files' name (default: the suite's, bbob.md, bbob_biobj.md, ...)")
    s.add_argument("--target", default="1e-3",
                   help="bbob-biobj: the indicator target(s) of the runs-reached and ERT columns, comma-separated "
                        "(the first in the group table; default 1e-3)")
    s.add_argument("--cocopp", action="store_true",
                   help="bbob-biobj: also run cocopp on the observer folders (offline) and keep its ECDFs as PNG")
    t = sub.add_parser("timing", parents=[common], help="COCO's timing experiment")
    t.add_argument("--dims", default="2,3,5,10,20,40")
    t.add_argument("--budget", type=float, default=1e3, help="evaluations per dimension (default 1e3)")
    args = parser.parse_args(argv)
    {"run": cmd_run, "summary": cmd_summary, "timing": cmd_timing}[args.command](args)


if __name__ == "__main__":
    main()
