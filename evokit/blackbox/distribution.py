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

A family's own options (SNES's learning rates, PGPE's optimizer, ...) are
the fields of its message in proto/evokit.proto (``SNESSamplingConfig``,
the training config's ``solver.sampling.snes_sampling``): each class takes
them as keyword arguments with the defaults written there, and its docstring
and signature list them with the comments written there. Adding a family is
its C++ file, its registry line, its message and a class that names it.

Every member is rebuilt from its key: ``es.keys[k]`` with its index k (a
mirrored family's pair shares a key, the odd member taking -z). A strategy
pickles (its core state and bookkeeping), and an unpickled one continues bit
for bit; ``state()`` / ``load_state()`` give the core's state as a
:class:`evokit._core.SolverState`.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from typing import Any, Dict, NamedTuple, Optional, Tuple

import numpy as np

from .. import _core, evokit_pb2
from ..solvers.options import Rule, field_comments, field_default, given
from .tracked import ASK_TELL, EVEN_POPULATION_SIZE, POPULATION_SIZE, STOP, TOLSTAGNATION, TrackedStrategy, check_int, check_x0

__all__ = ["DistributionES", "SNES", "XNES", "CRFMNES", "LMMAES", "MAES", "PGPE", "CEM"]

# Fields of a family's message that every class takes as its common
# arguments instead: sigma0 (positional, no default) and seed (0 here).
_COMMON_FIELDS = ("sigma0", "seed")


class FamilyOption(NamedTuple):
    """One option of a family: its name, its default, its kind ("real",
    "int" or "enum"), the enum's values (lowercase) and its documentation."""
    name: str
    default: Any
    kind: str
    values: Tuple[str, ...]
    doc: str

    def convert(self, value):
        """The value as the core reads it; for an option whose default is
        0 (a Rule: the formula the core computes for 0), None or the Rule is 0."""
        if given(value) is None and (isinstance(self.default, Rule) or self.default in (0, 0.0)):
            return 0.0 if self.kind == "real" else 0
        if self.kind == "enum":
            if isinstance(value, str) and value.lower() in self.values:
                return value.upper()
            raise ValueError(f"{self.name} must be one of {', '.join(map(repr, self.values))}, got {value!r}")
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{self.name} must be an integer, got {value!r}")
            return int(value)
        return _real(self.name, value, default_zero=False)


def family_options(family: str) -> Tuple[FamilyOption, ...]:
    """The options of a distribution family, from its message in
    proto/evokit.proto (its ``<family>_sampling`` field of SamplingConfig),
    without the common sigma0 and seed."""
    from google.protobuf.descriptor import FieldDescriptor

    fields = {name: field for name, _, field in _core.distribution_families()}
    if family not in fields:
        raise ValueError(f"{family!r} is not a distribution family with a message in proto/evokit.proto "
                         f"(those that have one: {', '.join(fields)})")
    message = evokit_pb2.SamplingConfig.DESCRIPTOR.fields_by_name[fields[family]].message_type
    docs = field_comments(message)
    out = []
    for field in message.fields:
        if field.name in _COMMON_FIELDS:
            continue
        if field.type == FieldDescriptor.TYPE_ENUM:
            values, kind = tuple(v.name.lower() for v in field.enum_type.values), "enum"
        elif field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            values, kind = (), "real"
        else:
            values, kind = (), "int"
        # the default, or the Rule of "(0: <formula>)" that the core computes for 0
        out.append(FamilyOption(field.name, field_default(message, field.name), kind, values,
                                docs.get(field.name, "")))
    return tuple(out)


def _real(name: str, value, *, default_zero: bool = True) -> float:
    """A real option for the core: None is 0.0 (the paper's default)."""
    if value is None and default_zero:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


class DistributionES(TrackedStrategy):
    """The ask / tell class of a distribution family of the core (minimising).

    A subclass sets ``_family`` (the core's family name); its own options
    are its family's message fields (:func:`family_options`), taken as
    keyword arguments. Arguments every family takes: x0 (the initial mean), sigma0 (the initial
    step size, > 0), population_size (the default: the family's), seed,
    nan_policy, num_threads, and the stop criteria of
    :class:`~evokit.blackbox.tracked.TrackedStrategy` (max_evaluations,
    max_iterations, ftarget, tolfun, tolfunhist, stagnation_iterations), plus
    ``conditioncov`` (pycma's name and default 1e14; None: off): stop once
    the covariance's condition number (``condition``) exceeds it, before an
    ill-conditioned distribution loses its precision, and once an update
    left the distribution non-finite (``condition`` is then +inf; CR-FM-NES
    can diverge so on rotated ill-conditioned functions, which its
    D (I + v v^T) D cannot model), so that ``optimize`` ends with the best
    solution found instead of ``ask()`` raising.
    """

    _family = ""
    _family_options: Tuple[FamilyOption, ...] = ()
    #: population_size's default, as the core computes it for population_size
    #: 0: EVEN_POPULATION_SIZE for the families whose members are mirrored
    #: pairs, a number for a family with a fixed default.
    _population_rule: Any = POPULATION_SIZE
    _ask_returns_copy = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls._family:
            return
        if "_family_options" not in cls.__dict__:
            cls._family_options = family_options(cls._family)
        common = [p.replace(default=cls._population_rule) if p.name == "population_size" else p
                  for p in inspect.signature(DistributionES.__init__).parameters.values()]
        own = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
               for o in cls._family_options]
        cls.__signature__ = inspect.Signature(common[1:3] + own + common[3:-1])
        if cls._family_options:
            lines = [f"    {o.name} = {o.default!r}: {o.doc}" +
                     (f" One of {', '.join(map(repr, o.values))}." if o.values else "")
                     for o in cls._family_options]
            cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n    Options (proto/evokit.proto):\n" + \
                "\n".join(lines) + "\n"

    def __init__(self, x0, sigma0, *, population_size: Optional[int] = POPULATION_SIZE, seed: int = ASK_TELL["seed"],
                 nan_policy: str = ASK_TELL["nan_policy"], num_threads: int = ASK_TELL["num_threads"],
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = STOP["tolfun"],
                 tolfunhist: float = STOP["tolfunhist"], stagnation_iterations: Optional[int] = TOLSTAGNATION,
                 conditioncov: Optional[float] = STOP["conditioncov"],
                 **options):
        population_size = check_int("population_size", given(population_size), 2, allow_none=True)
        seed = check_int("seed", seed, 0)
        if seed >= 2 ** 64:
            raise ValueError(f"seed must be < 2**64, got {seed}")
        core_options = {"sigma0": _real("sigma0", sigma0, default_zero=False),
                        "population_size": population_size or 0, "seed": seed,
                        "num_threads": check_int("num_threads", num_threads, 1)}
        for option in self._family_options:
            core_options[option.name] = option.convert(options.pop(option.name, option.default))
        if options:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(options))!r}")
        self._es = _core.make_distribution(self._family, check_x0(x0), core_options)
        super().__init__(x0, sigma0, population_size=self._es.population_size,
                         nan_policy=nan_policy, max_evaluations=max_evaluations,
                         max_iterations=max_iterations, ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads,
                         tolfunhist=tolfunhist)
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
        eigenvalue): exact for the diagonal families (SNES, PGPE, CEM),
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
        d.setdefault("_conditioncov", STOP["conditioncov"])  # pickled before conditioncov existed
        self.__dict__.update(d)
        self._es = _core.make_distribution(self._family, self._x0, self._options)
        self._es.load(_core.SolverState(family, model_iter_id=it, noise_version=version,
                                        floats=floats, doubles=doubles, ints=ints))


class SNES(DistributionES):
    """Separable natural evolution strategies (Wierstra et al. 2014, JMLR,
    Algorithm 6; Schaul et al. 2011), minimising: N(mean, diag(sigma)^2) with
    the NES utilities, linear time and memory per sample.

    population_size: the default is 4 + floor(3 ln n).
    Other arguments: :class:`DistributionES`.
    """

    _family = "SNES"


class XNES(DistributionES):
    """Exponential natural evolution strategies (Glasmachers et al., GECCO
    2010; Wierstra et al. 2014, JMLR, Algorithm 5), minimising:
    N(mean, sigma^2 B B^T) with det B = 1, x = mean + sigma B s, the NES
    utilities, B <- B expm(eta_B / 2 G_B). Full covariance: O(n^2) memory and
    time per sample, for up to a few thousand parameters.

    population_size: the default is 4 + floor(3 ln n).
    Other arguments: :class:`DistributionES`.
    """

    _family = "XNES"


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

    population_size: even; the default is 4 + floor(3 ln n), rounded up to even.
    Other arguments: :class:`DistributionES`.
    """

    _family = "CRFMNES"
    _population_rule = EVEN_POPULATION_SIZE


class LMMAES(DistributionES):
    """Limited-memory matrix adaptation evolution strategy (Loshchilov,
    Glasmachers, Beyer, "Large Scale Black-Box Optimization by Limited-Memory
    Matrix Adaptation", IEEE TEVC 23(2) 2019, Algorithm 1), minimising:
    N(mean, sigma^2 A A^T) with A a product of ``memory`` rank-one updates of
    the identity, so memory and time per sample are O(memory * n): for very
    large n (10^5 and more). The default c_sigma, the paper's 2 lambda / n,
    is capped at 1 for n < 2 lambda, where the paper's formula leaves its
    range.

    population_size: the default is 4 + floor(3 ln n). The other rates are the
    paper's: c_d,i = 1 / (1.5^(i-1) n), c_c,i = lambda / (4^(i-1) n) (capped
    at 1), CMA-ES's weights on the best floor(lambda / 2).
    Other arguments: :class:`DistributionES`.
    """

    _family = "LMMAES"


class MAES(DistributionES):
    """The matrix adaptation evolution strategy (Beyer, Sendhoff, "Simplify
    Your Covariance Matrix Adaptation Evolution Strategy", IEEE TEVC 21(5)
    2017, Fig. 3), minimising: N(mean, sigma^2 M M^T), CMA-ES without its
    covariance matrix, evolution path p_c and eigendecomposition; M is
    updated multiplicatively, M <- M [I + c_1/2 (s s^T - I) + c_w/2
    (<z z^T>_w - I)]. Every strategy parameter is CMA-ES's (the same code:
    the weights, c_1, c_w = c_mu, and the cumulative step-size adaptation),
    ``parameters`` lists them. O(n^2) memory and time per sample: for up to
    a few thousand parameters (at most 20,000).

    population_size: the default is 4 + floor(3 ln n).
    Other arguments: :class:`DistributionES`.
    """

    _family = "MAES"


class PGPE(DistributionES):
    """PGPE (Sehnke et al., "Parameter-exploring policy gradients", Neural
    Networks 23, 2010) with the ClipUp optimizer (Toklu, Liskowski,
    Srivastava, PPSN 2020, arXiv:2008.02387), minimising, in the
    configuration of pgpelib and EvoTorch: mirrored pairs, centred-rank
    fitness shaping, N(center, diag(stdev)^2). sigma0 is the standard
    deviations' initial value (pgpelib's stdev_init); choose
    center_learning_rate for the problem's scale (parameter units).

    population_size: even (pairs); the default is 4 + floor(3 ln n) rounded
        up to even (pgpelib's popsize).
    Other arguments: :class:`DistributionES`.
    """

    _family = "PGPE"
    _population_rule = EVEN_POPULATION_SIZE


class CEM(DistributionES):
    """The cross-entropy method with a diagonal Gaussian (de Boer, Kroese,
    Mannor, Rubinstein, "A tutorial on the cross-entropy method", 2005;
    Kroese, Porotsky, Rubinstein 2006 for the mean and the standard
    deviations smoothed apart), minimising: each generation the mean and the
    per-coordinate standard deviations are refitted to the elite (the best
    elite_ratio of the population, at least one member).

    std_smoothing 1 (with mean_smoothing 1) is EvoTorch's CEM, whose sigma
    often collapses before the mean arrives, the more often the larger n.
    Smaller is more reliable and slower: the sphere from x0 = 1, sigma0 = 1
    reaches 1e-8 at n = 20 on 93 % to 96 % of seeds with 0.7 (40 % with
    0.85), at n = 50 only with about 0.5. CEM stalls when it starts far from
    the optimum in units of sigma0 (its spread shrinks faster than its mean
    travels): start with sigma0 of the distance to cover.

    population_size: the default is 100 (the tutorial's N).
    Other arguments: :class:`DistributionES`.
    """

    _family = "CEM"
    _population_rule = 100


class _PickledDistributionARS:
    """What an ARS pickled while the ask / tell ARS was a distribution family
    of its own (DIST keys, float64) unpickles to: a one-line refusal saying
    what to do. evokit.ARS is now the training family (solver_es.ARS)."""

    def __setstate__(self, state):
        mean = None
        with contextlib.suppress(Exception):
            mean = [float(v) for v in state["_es"][4]["ars.mean"]]
        raise ValueError("this ARS was pickled by an EvoKit whose ask/tell ARS was a float64 distribution family; "
                         "evokit.ARS is now the training family ARS_SAMPLING (other noise keys, float32), which "
                         "cannot continue that run: start a new evokit.ARS(x0, sigma0, ...) from its mean"
                         + ("" if mean is None else f" {mean}"))


def __getattr__(name: str):
    if name == "ARS":  # pickles made before ARS became the training family name this module
        return _PickledDistributionARS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
