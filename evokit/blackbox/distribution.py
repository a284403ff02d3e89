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

__all__ = ["DistributionES", "SNES", "XNES", "CRFMNES"]


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
    max_iterations, ftarget, tolfun, stagnation_iterations).
    """

    _family = ""
    _ask_returns_copy = False

    def __init__(self, x0, sigma0, *, population_size: Optional[int] = None, seed: int = 0,
                 nan_policy: str = "error", num_threads: int = 1,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = 1e-11,
                 stagnation_iterations: Optional[int] = None,
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
        d["_x0_for_core"] = self._x0
        return d

    def __setstate__(self, d):
        family, it, version, floats, doubles, ints = d.pop("_es")
        x0 = d.pop("_x0_for_core")
        self.__dict__.update(d)
        self._es = _core.make_distribution(self._family, x0, self._options)
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
    hyper-parameter is the paper's default (``parameters`` lists them); the
    initial v is N(0, I / n) drawn from the seed.

    learning_rate_mean: eta_m (paper: 1).
    population_size: even; None is 4 + floor(3 ln n), rounded up to even.
    Other arguments: :class:`DistributionES`.
    """

    _family = "CRFMNES"

    def __init__(self, x0, sigma0, *, learning_rate_mean: float = 1.0, **kwargs):
        super().__init__(x0, sigma0, options={
            "learning_rate_mean": _real("learning_rate_mean", learning_rate_mean, default_zero=False)},
            **kwargs)
