"""Black-box minimisation with ask/tell strategies: CMAES and SepCMAES.

    es = evokit.CMAES(x0, sigma0)
    while not es.stop():
        X = es.ask()                          # [population_size, num_params] float64
        X = [np.clip(x, lo, hi) for x in X]   # optional: repaired solutions are fine
        es.tell(X, [f(x) for x in X])
    print(es.result.xbest, es.result.fbest)

or simply ``evokit.CMAES(x0, sigma0).optimize(f)``. The semantics and messages
follow pycma's (ask / tell / stop / result); the numbers come from the C++
core (cpp/include/evokit/cma_es.h), which documents the algorithm (Hansen's
tutorial, arXiv:1604.00772), the keys samples are drawn from, the bound
transformation and the termination criteria.

The ask/tell bookkeeping (the tell contract, NaN policy, optimize with
parallel evaluation, result) is evokit.blackbox.asktell.AskTellStrategy's,
shared with GA and OpenES; CMA supplies the hooks _ask, _tell, _stop, _result
and iterations from the C++ core.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from ..solvers.options import Rule, given
from .asktell import AskTellStrategy, OptimizeResult
from .replay import is_replay_state, replay
from .tracked import ASK_TELL, POPULATION_SIZE, STOP, TOLSTAGNATION

__all__ = ["CMAES", "SepCMAES"]


#: margin's default (computed per run by the core), as the signature shows it.
MARGIN = Rule(_core.MARGIN_RULE)


def _indices(integer_variables) -> np.ndarray:
    idx = np.asarray(integer_variables)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"integer_variables must be a sequence of parameter indices, got {integer_variables!r}")
    return idx.astype(np.int64)


def _bounds(bounds, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    if bounds is None:
        return None, None
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"bounds must be a pair (lower, upper) of scalars, arrays of {n} or None, got {bounds!r}")
    out = []
    for side, default in zip(bounds, (-math.inf, math.inf)):
        b = np.full(n, default) if side is None else np.asarray(side, dtype=np.float64)
        if b.ndim == 0:
            b = np.full(n, float(b))
        out.append(b)
    return out[0], out[1]


class _CMABlackBox(AskTellStrategy):
    _core_class: Any = None

    def __init__(self, x0, sigma0: float, *, population_size: int | None = POPULATION_SIZE,
                 seed: int = ASK_TELL["seed"],
                 bounds=None, max_evaluations: int | None = None, ftarget: float | None = None,
                 tolfun: float = STOP["tolfun"], tolfunhist: float = STOP["tolfunhist"], tolx: float = STOP["tolx"],
                 tolstagnation: int | None = TOLSTAGNATION, conditioncov: float = STOP["conditioncov"],
                 tolupsigma: float = STOP["tolupsigma"],
                 restarts: int = 0, restart_strategy: str = "ipop", integer_variables=None,
                 margin: float | None = MARGIN, step_size_adaptation: str = "auto",
                 nan_policy: str = ASK_TELL["nan_policy"],
                 num_threads: int = ASK_TELL["num_threads"]):
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim != 1:
            raise ValueError(f"x0 must be a 1-D array of the initial solution, got shape {x0.shape}")
        super().__init__(x0.size, nan_policy)
        lower, upper = _bounds(bounds, x0.size)
        self._core_args = ((x0, float(sigma0)), dict(
            population_size=given(population_size), seed=seed, lower=lower, upper=upper,
            max_evaluations=max_evaluations, ftarget=-math.inf if ftarget is None else float(ftarget),
            tolfun=tolfun, tolfunhist=tolfunhist, tolx=tolx, tolstagnation=given(tolstagnation),
            conditioncov=conditioncov, tolupsigma=tolupsigma, restarts=restarts,
            restart_strategy=restart_strategy,
            integer_variables=None if integer_variables is None else _indices(integer_variables),
            margin=None if given(margin) is None else float(margin), step_size_adaptation=step_size_adaptation,
            num_threads=num_threads))
        self._es = self._core_class(*self._core_args[0], **self._core_args[1])

    # ---- pickling: the core's whole state (export_state), never a replay ----------
    def __getstate__(self):
        d = self.__dict__.copy()
        s = d.pop("_es").export_state()
        d["_es_state"] = (s.family, s.model_iter_id, s.noise_version, s.floats, s.doubles, s.ints)
        return d

    def __setstate__(self, d):
        if is_replay_state(d):  # pickled by replay, before CMAES pickled its state
            replay(self, d)
            return
        family, it, version, floats, doubles, ints = d.pop("_es_state")
        self.__dict__.update(d)
        self._es = self._core_class(*self._core_args[0], **self._core_args[1])
        self._es.import_state(_core.SolverState(family, model_iter_id=it, noise_version=version, floats=floats,
                                                doubles=doubles, ints=ints))
        if self._constraints is not None:  # the criteria the first constrained tell switched off
            self._constraints_started()

    # hooks
    def _ask(self) -> np.ndarray:
        return self._es.ask()

    _learns_from_told_solutions = True

    def _tell(self, values: np.ndarray) -> None:
        self._es.tell(values)

    def _tell_solutions(self, solutions: np.ndarray, values: np.ndarray) -> None:
        self._es.tell_solutions(solutions, values)

    def inject(self, solutions, force: bool = False) -> None:
        """Queues solutions for the next ask()s, as pycma's inject: they replace the first
        members of the next ask() (at most population_size per ask, the rest wait for the
        following ones). Unless force, a step x - m longer than sqrt(n) in Mahalanobis
        norm is rescaled to a random chi_n length (pycma's default). In tell() they get
        the Mahalanobis clipping of repaired solutions and no negative (active) weight.
        Call it before ask() or after tell()."""
        x = np.asarray(solutions, dtype=np.float64)
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != self.num_params:
            raise ValueError(f"method `inject` needs a list or array of solutions each of dimension "
                             f"{self.num_params}, got shape {x.shape}")
        self._es.inject(x, force=bool(force))

    def _stop(self) -> dict[str, Any]:
        return self._es.stop()

    def _constraints_started(self) -> None:
        self._es.disable_value_criteria()

    def _count_evaluations(self, n: int) -> None:
        self._es.count_evaluations(n)

    def _favorite(self) -> np.ndarray:
        return self._es.mean_solution

    def _result(self) -> OptimizeResult:
        es = self._es
        mean = es.mean_solution
        return OptimizeResult(xbest=es.best_solution, fbest=es.best_value, evaluations=es.evaluations,
                              iterations=es.iterations, xmean=mean, xfavorite=mean, stds=es.stds,
                              restarts=es.restarts_done)

    @property
    def iterations(self) -> int:
        return self._es.iterations

    # CMA specifics
    @property
    def population_size(self) -> int:
        """lambda of the current run (IPOP/BIPOP restarts change it)."""
        return self._es.population_size

    @property
    def sigma(self) -> float:
        return float(self._es.sigma)

    @property
    def large_restarts(self) -> int:
        """Restarts in the large-population regime (IPOP: all of them); BIPOP's restarts= counts these."""
        return self._es.large_restarts

    @property
    def small_restarts(self) -> int:
        """BIPOP's small-population restarts (not counted by restarts=, as in pycma)."""
        return self._es.small_restarts

    @property
    def keys(self) -> np.ndarray:
        """The noise keys of the last ask(), one per member: log them to rebuild the samples."""
        return self._es.keys

    def regenerate(self, key: int) -> np.ndarray:
        """The solution drawn with `key` under the current state (== its row of ask())."""
        return self._es.regenerate(key)

    @property
    def core(self):
        """The compiled strategy (evokit._core.CMAES / SepCMAES): state, keys, tell_keys."""
        return self._es


class CMAES(_CMABlackBox):
    """Full-covariance CMA-ES (Hansen's tutorial, arXiv:1604.00772, with pycma's
    rank-mu offset and c_sigma), minimising.

    x0, sigma0: the initial mean and step size (about a quarter of the
        search range is a good sigma0).
    population_size: the tutorial's default is 4 + floor(3 ln n).
    seed: the noise seed; same seed, same run, bit for bit, for any
        num_threads.
    bounds: None or (lower, upper), each a scalar, an array of n, or None
        (unbounded on that side); solutions are mapped into the box by pycma's
        default BoundTransform (the identity except within a margin of a
        twentieth of max(|bound|, 1) of each bound, quadratic there, touching
        the bound with slope 0, periodic beyond); the mean lives in the
        unbounded space.
    max_evaluations (pycma's maxfevals), ftarget (stop once an f-value
        <= ftarget), tolfun, tolfunhist, tolx, tolstagnation (iterations;
        default 100 + 100 n^1.5 / population_size), conditioncov, tolupsigma:
        termination criteria, reported by stop() under pycma's names.
    restarts, restart_strategy: restarts after a stop by any criterion but
        maxfevals and ftarget. 'ipop': up to `restarts` restarts, each
        doubling the population. 'bipop' (Hansen 2009) alternates those
        large-population restarts with small-population ones of smaller step
        sizes; as in pycma's ``fmin(..., restarts=R, bipop=True)``, only the
        large restarts are counted: the run ends when the R-th large restart
        stops (see large_restarts / small_restarts), and a small run has at
        most 0.5 * (evaluations of the large runs) / its population size
        iterations (stop() name 'maxiter' in core.restart_history).
    integer_variables: indices of integer coordinates (CMA-ES with margin,
        Hamano et al., GECCO 2022, arXiv:2205.13482): every solution of ask()
        is integral there (the nearest integer, within the bounds if any);
        the distribution stays continuous, and after each update the margin
        correction of the mean and of a diagonal scaling A keeps the
        probability of leaving the mean's integer at least `margin` per
        coordinate, so the integer coordinates cannot freeze. Generations
        in which no integer coordinate leaves its value have nearly equal
        f-values: tolfun, tolfunhist and tolstagnation may then end a run
        that the margin would still improve; set them to 0 / a large
        number and use max_evaluations for long mixed-integer runs.
    margin: the margin alpha in [0, 0.5); the default is the paper's 1 /
        (n population_size); 0: rounding only (plain CMA-ES on the encoded
        function).
    step_size_adaptation: 'csa' (cumulative, the tutorial's Eq. (44)),
        'tpa' (two-point adaptation, Hansen 2008, arXiv:0805.0231, as pycma
        implements it: from the second generation on, two members of each
        ask(), right after any injected ones (rows core.tpa_row and +1), are
        a mirrored pair along the last mean shift, and sigma follows their
        rank difference), or 'auto' (pycma's default: TPA for n >= 300,
        where it needs about 0.6x CSA's evaluations on the sphere at
        n = 1,000, CSA below).
    nan_policy: 'error' (ValueError) or 'worst' (RuntimeWarning; NaN members
        get the population's worst value).
    num_threads: OpenMP threads of the core (sampling, covariance update,
        eigendecomposition); results do not depend on it.

    A drop-in for pycma's ask/tell loop: tell() takes repaired solutions
    (clipped into bounds, rounded, replaced) as pycma does. Rows equal to
    ask()'s are used exactly as sampled; the others define the step
    y = (x - mean) / sigma that the update uses, its Mahalanobis norm
    clipped at sqrt(n) + 2 n / (n + 2) (pycma's repair_genotype). inject()
    proposes outside solutions for the next ask() (pycma's inject).
    """

    _core_class = _core.CMAES


class SepCMAES(_CMABlackBox):
    """Separable CMA-ES (Ros & Hansen 2008): a diagonal covariance matrix, linear time and
    memory per sample, for high dimensions, with pycma's separable learning rates
    (c1_sep, cmu_sep, cc_sep: over 40 seeds on Rosenbrock at n = 100 they need
    1.07x pycma's evaluations where Ros and Hansen's needed 1.21x). Options
    (step_size_adaptation included), repaired solutions in tell(), inject() and
    integer_variables as CMAES."""

    _core_class = _core.SepCMAES
