"""The distribution strategies of the C++ core (cpp/include/evokit/distribution.h)
as ask / tell classes: :class:`DistributionES`, the one base, and one small
subclass per family (:class:`SNES`, ...) that names the family and its
arguments.

    es = evokit.SNES(x0, sigma0)
    while not es.stop():
        X = es.ask()                          # [population_size, num_params] float64
        es.tell(X, [f(x) for x in X])
    print(es.result.xbest, es.result.fbest)

or ``evokit.SNES(x0, sigma0).optimize(f)``. The distribution and its update
live in C++ (each family's source file cites its paper and equations); the
bookkeeping (evaluation counts, the best solution, stop criteria, NaN policy,
``optimize``) is :class:`~evokit.blackbox.tracked.TrackedStrategy`'s.

Every member is rebuilt from its key: ``es.keys[k]`` with its index k (a
mirrored family's pair shares a key, the odd member taking -z). A strategy
pickles (its core state and bookkeeping), and an unpickled one continues bit
for bit; ``state()`` / ``load_state()`` give the core's state as a
:class:`evokit._core.SolverState`.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

import numpy as np

from .. import _core
from .tracked import TrackedStrategy, check_int, check_x0

__all__ = ["DistributionES", "SNES", "XNES", "CRFMNES", "LMMAES", "PGPE", "CEM", "ARS"]


def _real(name: str, value, *, default_zero: bool = True) -> float:
    """A real option for the core: None is 0.0 (the paper's default)."""
    if value is None and default_zero:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


class DistributionES(TrackedStrategy):
    """The ask / tell class of a distribution family of the core (minimising).

    Subclasses set ``_family`` (the core's family name) and pass their own
    options to ``__init__`` as ``options`` (plain names, as the core's).
    Arguments every family takes: x0 (the initial mean), sigma0 (the initial
    step size, > 0), population_size (None: the family's default), seed,
    nan_policy, num_threads, and the stop criteria of
    :class:`~evokit.blackbox.tracked.TrackedStrategy` (max_evaluations,
    max_iterations, ftarget, tolfun, stagnation_iterations), plus
    ``conditioncov`` (pycma's name and default 1e14; None: off): stop once
    the covariance's condition number (``condition``) exceeds it, before an
    ill-conditioned distribution loses its precision, and once an update
    left the distribution non-finite (``condition`` is then +inf; CR-FM-NES
    can diverge so on rotated ill-conditioned functions, which its
    D (I + v v^T) D cannot model), so that ``optimize`` ends with the best
    solution found instead of ``ask()`` raising.
    """

    _family = ""
    _ask_returns_copy = False

    def __init__(self, x0, sigma0, *, population_size: Optional[int] = None, seed: int = 0,
                 nan_policy: str = "error", num_threads: int = 1,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = 1e-11,
                 stagnation_iterations: Optional[int] = None, conditioncov: Optional[float] = 1e14,
                 options: Optional[Dict[str, Any]] = None):
        population_size = check_int("population_size", population_size, 2, allow_none=True)
        seed = check_int("seed", seed, 0)
        if seed >= 2 ** 64:
            raise ValueError(f"seed must be < 2**64, got {seed}")
        core_options = {"sigma0": _real("sigma0", sigma0, default_zero=False),
                        "population_size": population_size or 0, "seed": seed,
                        "num_threads": check_int("num_threads", num_threads, 1)}
        core_options.update(options or {})
        self._es = _core.make_distribution(self._family, check_x0(x0), core_options)
        super().__init__(x0, sigma0, population_size=self._es.population_size,
                         nan_policy=nan_policy, max_evaluations=max_evaluations,
                         max_iterations=max_iterations, ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads)
        if conditioncov is not None and (isinstance(conditioncov, bool) or
                                         not isinstance(conditioncov, (int, float)) or not conditioncov > 1):
            raise ValueError(f"conditioncov must be a number > 1 or None, got {conditioncov!r}")
        self._conditioncov = None if conditioncov is None else float(conditioncov)
        self._options = core_options

    # ---- the hooks ------------------------------------------------------------
    def _ask(self) -> np.ndarray:
        return self._es.ask()

    def _tell_strategy(self, values: np.ndarray) -> bool:
        self._es.tell(values)
        return True

    def _favorite(self) -> np.ndarray:
        return self._es.center

    def _nan_replacement(self, values: np.ndarray) -> float:
        return float(values.max()) if values.size else math.inf

    def _stop(self) -> Dict[str, Any]:
        met = super()._stop()
        if self._conditioncov is not None and self._es.condition > self._conditioncov:
            met["conditioncov"] = self._conditioncov
        return met

    def _result(self):
        r = super()._result()
        r.xmean = self._es.center
        r.stds = self._es.stds
        return r

    # ---- the family's view --------------------------------------------------------
    @property
    def population_size(self) -> int:
        return self._es.population_size

    @property
    def mean(self) -> np.ndarray:
        """The distribution's centre (the solution to deploy)."""
        return self._es.center

    @property
    def stds(self) -> np.ndarray:
        """The standard deviation of each coordinate under the distribution."""
        return self._es.stds

    @property
    def condition(self) -> float:
        """The covariance's condition number (largest over smallest
        eigenvalue): exact for the diagonal families (SNES, PGPE, CEM, ARS),
        an upper bound for CR-FM-NES (within a factor of a few), a lower
        bound for xNES and LM-MA-ES ((max stds / min stds)^2); +inf once an
        update left the distribution non-finite."""
        return float(self._es.condition)

    @property
    def parameters(self) -> Dict[str, float]:
        """The hyper-parameters in use, the paper's defaults resolved."""
        return dict(self._es.parameters)

    @property
    def keys(self) -> np.ndarray:
        """The noise keys of the current generation's members (log them with
        the member index to rebuild the samples)."""
        return self._es.keys

    def regenerate(self, k: int) -> np.ndarray:
        """Member k's solution under the current state (== row k of ask())."""
        return self._es.regenerate(int(k))

    @property
    def core(self):
        """The compiled strategy (evokit._core.DistributionStrategy)."""
        return self._es

    def state(self):
        """The core's full state (an evokit._core.SolverState)."""
        return self._es.save()

    def load_state(self, state) -> None:
        """Continues the distribution from state() (checked first); the
        bookkeeping (best solution, counts) is this object's."""
        self._es.load(state)
        self._asked = None

    def __getstate__(self):
        d = self.__dict__.copy()
        s = self._es.save()
        d["_es"] = (s.family, s.model_iter_id, s.noise_version, s.floats, s.doubles, s.ints)
        return d

    def __setstate__(self, d):
        family, it, version, floats, doubles, ints = d.pop("_es")
        d.setdefault("_conditioncov", 1e14)  # pickled before conditioncov existed
        self.__dict__.update(d)
        self._es = _core.make_distribution(self._family, self._x0, self._options)
        self._es.load(_core.SolverState(family, model_iter_id=it, noise_version=version,
                                        floats=floats, doubles=doubles, ints=ints))


class SNES(DistributionES):
    """Separable natural evolution strategies (Wierstra et al. 2014, JMLR,
    Algorithm 6; Schaul et al. 2011), minimising: N(mean, diag(sigma)^2) with
    the NES utilities, linear time and memory per sample.

    learning_rate_mean: eta_mu (paper: 1).
    learning_rate_sigma: eta_sigma (None: the paper's (3 + ln n) / (5 sqrt(n))).
    population_size: None is 4 + floor(3 ln n).
    Other arguments: :class:`DistributionES`.
    """

    _family = "SNES"

    def __init__(self, x0, sigma0, *, learning_rate_mean: float = 1.0,
                 learning_rate_sigma: Optional[float] = None, **kwargs):
        super().__init__(x0, sigma0, options={
            "learning_rate_mean": _real("learning_rate_mean", learning_rate_mean, default_zero=False),
            "learning_rate_sigma": _real("learning_rate_sigma", learning_rate_sigma)}, **kwargs)


class XNES(DistributionES):
    """Exponential natural evolution strategies (Glasmachers et al., GECCO
    2010; Wierstra et al. 2014, JMLR, Algorithm 5), minimising:
    N(mean, sigma^2 B B^T) with det B = 1, x = mean + sigma B s, the NES
    utilities, B <- B expm(eta_B / 2 G_B). Full covariance: O(n^2) memory and
    time per sample, for up to a few thousand parameters.

    learning_rate_mean: eta_mu (paper: 1).
    learning_rate_sigma: eta_sigma (None: the paper's 3 (3 + ln n) / (5 n sqrt(n))).
    learning_rate_shape: eta_B (None: the same default as eta_sigma).
    population_size: None is 4 + floor(3 ln n).
    Other arguments: :class:`DistributionES`.
    """

    _family = "XNES"

    def __init__(self, x0, sigma0, *, learning_rate_mean: float = 1.0,
                 learning_rate_sigma: Optional[float] = None,
                 learning_rate_shape: Optional[float] = None, **kwargs):
        super().__init__(x0, sigma0, options={
            "learning_rate_mean": _real("learning_rate_mean", learning_rate_mean, default_zero=False),
            "learning_rate_sigma": _real("learning_rate_sigma", learning_rate_sigma),
            "learning_rate_shape": _real("learning_rate_shape", learning_rate_shape)}, **kwargs)


class CRFMNES(DistributionES):
    """The cost-reduced fast moving natural evolution strategy (Nomura, Ono,
    IEEE CEC 2022, arXiv:2201.11422, Algorithm 1), minimising:
    N(mean, sigma^2 D (I + v v^T) D) with D diagonal and v a vector, so
    linear time and memory per sample (for up to millions of parameters);
    mirrored members (2p and 2p + 1 are +z and -z), the distance weights
    and the movement-dependent learning rates of the paper. Every other
    hyper-parameter is the paper's default (``parameters`` lists them) but
    c_1, floored at 0 where Table I's formula is negative (n < 5: as
    published it turned D negative and sampled NaN solutions); the initial v
    is N(0, I / n) drawn from the seed.

    learning_rate_mean: eta_m (paper: 1).
    population_size: even; None is 4 + floor(3 ln n), rounded up to even.
    Other arguments: :class:`DistributionES`.
    """

    _family = "CRFMNES"

    def __init__(self, x0, sigma0, *, learning_rate_mean: float = 1.0, **kwargs):
        super().__init__(x0, sigma0, options={
            "learning_rate_mean": _real("learning_rate_mean", learning_rate_mean, default_zero=False)},
            **kwargs)


class LMMAES(DistributionES):
    """Limited-memory matrix adaptation evolution strategy (Loshchilov,
    Glasmachers, Beyer, "Large Scale Black-Box Optimization by Limited-Memory
    Matrix Adaptation", IEEE TEVC 23(2) 2019, Algorithm 1), minimising:
    N(mean, sigma^2 A A^T) with A a product of ``memory`` rank-one updates of
    the identity, so memory and time per sample are O(memory * n): for very
    large n (10^5 and more).

    memory: m, the direction vectors (None: the paper's 4 + floor(3 ln n)).
    c_sigma: the step-size path's rate (None: the paper's 2 lambda / n, capped
        at 1 for n < 2 lambda, where the paper's formula leaves its range).
    damping: d_sigma (paper: 2).
    population_size: None is 4 + floor(3 ln n). The other rates are the
    paper's: c_d,i = 1 / (1.5^(i-1) n), c_c,i = lambda / (4^(i-1) n) (capped
    at 1), CMA-ES's weights on the best floor(lambda / 2).
    Other arguments: :class:`DistributionES`.
    """

    _family = "LMMAES"

    def __init__(self, x0, sigma0, *, memory: Optional[int] = None,
                 c_sigma: Optional[float] = None, damping: float = 2.0, **kwargs):
        super().__init__(x0, sigma0, options={
            "memory": check_int("memory", memory, 1, allow_none=True) or 0,
            "c_sigma": _real("c_sigma", c_sigma),
            "damping": _real("damping", damping, default_zero=False)}, **kwargs)


class PGPE(DistributionES):
    """PGPE (Sehnke et al., "Parameter-exploring policy gradients", Neural
    Networks 23, 2010) with the ClipUp optimizer (Toklu, Liskowski,
    Srivastava, PPSN 2020, arXiv:2008.02387), minimising, in the
    configuration of pgpelib and EvoTorch: mirrored pairs, centred-rank
    fitness shaping, N(center, diag(stdev)^2).

    center_learning_rate: the centre's step size alpha (ClipUp's step_size),
        in parameter units: choose it for the problem's scale.
    optimizer: "clipup" (default), "adam" or "sgd" (with momentum) for the
        centre.
    stdev_learning_rate: the standard deviations' learning rate (0.1).
    stdev_max_change: the largest relative change of a standard deviation
        per generation (0.2).
    max_speed: ClipUp's speed limit (None: 2 * center_learning_rate, as the
        ClipUp paper recommends).
    momentum: ClipUp's (and SGD's) momentum (0.9).
    sigma0: the standard deviations' initial value (pgpelib's stdev_init).
    population_size: even (pairs); None is 4 + floor(3 ln n) rounded up to
        even (pgpelib's popsize).
    Other arguments: :class:`DistributionES`.
    """

    _family = "PGPE"

    def __init__(self, x0, sigma0, *, center_learning_rate: float = 0.15,
                 optimizer: str = "clipup", stdev_learning_rate: float = 0.1,
                 stdev_max_change: float = 0.2, max_speed: Optional[float] = None,
                 momentum: float = 0.9, **kwargs):
        if not isinstance(optimizer, str):
            raise ValueError(f"optimizer must be 'clipup', 'adam' or 'sgd', got {optimizer!r}")
        super().__init__(x0, sigma0, options={
            "optimizer": optimizer.upper(),
            "center_learning_rate": _real("center_learning_rate", center_learning_rate,
                                          default_zero=False),
            "stdev_learning_rate": _real("stdev_learning_rate", stdev_learning_rate,
                                         default_zero=False),
            "stdev_max_change": _real("stdev_max_change", stdev_max_change, default_zero=False),
            "max_speed": _real("max_speed", max_speed),
            "momentum": _real("momentum", momentum, default_zero=False)}, **kwargs)


class CEM(DistributionES):
    """The cross-entropy method with a diagonal Gaussian (de Boer, Kroese,
    Mannor, Rubinstein, "A tutorial on the cross-entropy method", 2005;
    Kroese, Porotsky, Rubinstein 2006 for the mean and the standard
    deviations smoothed apart), minimising: each generation the mean and the
    per-coordinate standard deviations are refitted to the elite (the best
    elite_ratio of the population).

    elite_ratio: the elite's share (0.1; at least one member).
    mean_smoothing: alpha, mean <- alpha * elite mean + (1 - alpha) * mean
        (1: the elite's mean).
    std_smoothing: beta, sigma <- beta * elite std + (1 - beta) * sigma, the
        elite's std with N_e - 1 in the denominator (0.7). 1 (with
        mean_smoothing 1) is EvoTorch's CEM, whose sigma often collapses
        before the mean arrives, the more often the larger n. Smaller is
        more reliable and slower: the sphere from x0 = 1, sigma0 = 1
        reaches 1e-8 at n = 20 on 93 % to 96 % of seeds with 0.7 (40 % with 0.85),
        at n = 50 only with about 0.5.
        CEM stalls when it starts far from the optimum in units of sigma0
        (its spread shrinks faster than its mean travels): start with sigma0
        of the distance to cover.
    extra_variance: added to every variance after each update (Szita &
        Lorincz 2006's noisy CEM, constant noise; 0).
    population_size: None is 100 (the tutorial's N).
    Other arguments: :class:`DistributionES`.
    """

    _family = "CEM"

    def __init__(self, x0, sigma0, *, elite_ratio: float = 0.1, mean_smoothing: float = 1.0,
                 std_smoothing: float = 0.7, extra_variance: float = 0.0, **kwargs):
        super().__init__(x0, sigma0, options={
            "elite_ratio": _real("elite_ratio", elite_ratio, default_zero=False),
            "mean_smoothing": _real("mean_smoothing", mean_smoothing, default_zero=False),
            "std_smoothing": _real("std_smoothing", std_smoothing, default_zero=False),
            "extra_variance": _real("extra_variance", extra_variance, default_zero=False)},
            **kwargs)


class ARS(DistributionES):
    """Augmented random search (Mania, Guy, Recht 2018, arXiv:1803.07055,
    Algorithm 2 without state normalisation: V1, or V1-t with
    top_directions), as an ask/tell strategy, minimising (rewards are -f):
    mirrored pairs theta +- nu delta_k, the top b directions by max(r+, r-),
    theta += step_size / (b sigma_R) sum (r+ - r-) delta.

    sigma0: nu, the exploration noise (fixed).
    step_size: alpha (0.02). sigma_R normalises the rewards, so the step's
        size is set by alpha and by how the reward differences compare
        with their spread.
    top_directions: b (None: all population_size / 2 directions).
    population_size: even; None is 4 + floor(3 ln n) rounded up to even.
    The policy counterpart is ARS_SAMPLING (the trainer's GaussianSolver with
    ARS's options), which shares this selection rule.
    Other arguments: :class:`DistributionES`.
    """

    _family = "ARS"

    def __init__(self, x0, sigma0, *, step_size: float = 0.02,
                 top_directions: Optional[int] = None, **kwargs):
        super().__init__(x0, sigma0, options={
            "step_size": _real("step_size", step_size, default_zero=False),
            "top_directions": check_int("top_directions", top_directions, 1,
                                        allow_none=True) or 0}, **kwargs)
