"""Constraint handling for the ask / tell strategies: the adaptive augmented
Lagrangian of Atamna, Auger and Hansen (pure NumPy).

Every strategy (CMAES, SepCMAES, SNES, GA, OpenES) takes inequality
constraints g_i(x) <= 0 (i = 1..m) at tell() or optimize()::

    def f(x):                                  # minimise ||x||^2 ...
        return x @ x
    def g(x):                                  # ... subject to x_0 >= 1 and x_1 >= 0.5
        return [1 - x[0], 0.5 - x[1]]

    es = evokit.CMAES(np.full(5, 3.0), 1.0)
    while not es.stop():
        X = es.ask()
        es.tell(X, [f(x) for x in X], constraints=[g(x) for x in X])   # G: [k, m]
    r = es.result
    r.feasible, r.xbest, r.fbest     # True, ~[1, .5, 0, 0, 0], ~1.25 (the best feasible solution)

or ``evokit.SNES(x0, 1.0).optimize(f, constraints=g)`` (with ``vectorized=True``
both f and g take the [k, n] batch; g then returns the [k, m] matrix). An
equality h(x) = 0 is two inequalities, [h(x) - eps, -h(x) - eps].

The method
----------
Papers: [P16] A. Atamna, A. Auger, N. Hansen, "Augmented Lagrangian
Constraint Handling for CMA-ES -- Case of a Single Linear Constraint", PPSN
XIV, LNCS 9921, pp. 181-191, 2016 (Sect. 3, the AL-CMA-ES); [F17] the same
authors, "Linearly Convergent Evolution Strategies via Augmented Lagrangian
Constraint Handling", FOGA 2017, pp. 149-161 (Algorithm 1: m constraints;
Sect. 8.2: the parameter values); [T20] the same authors, "On Invariance and
Linear Convergence of Evolution Strategies with Augmented Lagrangian
Constraint Handling", Theoretical Computer Science 832:68-97, 2020 (the
algorithm with m constraints and its invariance to f -> a f + b, g_i -> c_i g_i).
pycma's ``cma.constraints_handler.AugmentedLagrangian`` (Atamna et al.'s
settings) was read to check the reading of the papers; no code is taken.

The strategy ranks the told solutions by the augmented Lagrangian
([P16] Eq. 2; [T20] for m constraints)

    h(x; gamma, omega) = f(x) + sum_i  { gamma_i g_i(x) + omega_i/2 g_i(x)^2   if gamma_i + omega_i g_i(x) >= 0
                                       { -gamma_i^2 / (2 omega_i)              otherwise

(gamma: the Lagrange multipliers, lambda in pycma; omega: the penalty
factors, mu in pycma) and, after every tell, adapts them from the f and g
values of the point X_{t+1} that stands for the new distribution
([P16] Eqs. 3-4; [F17] Algorithm 1, lines 7-12; [T20] for m constraints):

    gamma_i <- max(0, gamma_i + omega_i g_i(X_{t+1}) / d_gamma)                       (Eq. 3)
    omega_i <- omega_i chi        if  g_i(X_{t+1}) > 0                                  (EvoKit)
               omega_i chi^(1/4)  if  omega_i g_i(X_{t+1})^2 < k1 |h(X_{t+1}) - h(X_t)| / n
                                  or  k2 |g_i(X_{t+1}) - g_i(X_t)| < |g_i(X_t)|          (Eq. 4)
               omega_i chi^(-1)   otherwise

where both h are taken with the coefficients before the update and n is
num_params. Parameters ([F17] Sect. 8.2, as in [T20]): d_gamma = 5, k1 = 3,
k2 = 5, chi = 2^(1/(5 n)).

Where EvoKit fills in what the papers leave to the implementation:

- X_{t+1}: the papers evaluate f and g at the new mean (one more evaluation
  per iteration). ``tell_center(f, g)`` after a tell gives them (the values
  of ``result.xfavorite``), and ``optimize(f, constraints=g)`` evaluates
  the centre every generation: X_{t+1} is then the centre, as in the
  papers, and a feasible centre counts as a solution. Without it, tell()
  only sees the solutions it is given, so X_{t+1} is the batch's best
  solution by h (pycma's ``which='best'``). X_t is the previous update's
  point. The first update of a constraint only moves gamma (Eq. 4 needs an
  X_t).
- Inequalities ([P16]/[F17] analyse active constraints): gamma is clamped at
  0 (the Powell-Hestenes-Rockafellar multiplier of an inequality, Nocedal &
  Wright, Numerical Optimization, 2nd ed., Eq. 17.65), and omega_i is left
  unchanged while X_{t+1} lies where constraint i adds no slope
  (gamma_i + omega_i g_i < 0: the constraint is inactive there), so that the
  omega of an inactive constraint does not grow without bound (pycma does
  the same).
- The first line of the omega update (not in the papers): omega_i grows by
  chi whenever X_{t+1} violates constraint i. Eq. 4's second test (g
  shrinks slowly relative to itself: raise omega) is what pulls a mean that
  converges from outside the feasible set onto it, and it is written for
  X_{t+1} = the mean; with X_{t+1} a sample, g_i(X_{t+1}) - g_i(X_t) is
  sampling noise of about one standard deviation of the distribution along
  the constraint normal, so with g_i a few such deviations k2 |delta g_i|
  exceeds |g_i| and the test too seldom fires. Without the rule, on
  |x|^2 subject to x_0 >= 1, x_1 + x_2 >= 1 (n = 5, defaults), omega stayed near its initial value, gamma approached gamma* from below at
  about the rate sigma shrank, the mean converged from outside at 3 to 8
  standard deviations (along the constraint normals) from the feasible set,
  no sample was feasible for up to 300 generations, tolfun fired and xbest
  was a solution of the first 20 generations (f about 3 instead of 1.5) on
  10 of 20 seeds; with it, 20 of 20, and 20 of 20 on six more problems
  (n = 10 and 20, another x0, an inactive constraint, an equality pair, an
  ill-conditioned f; bench/constrained_vs_pycma.py), as pycma's fmin_con2
  (whose default omega update also raises omega whenever X_{t+1} violates
  the constraint). The test g_i > 0 is invariant under g_i -> c_i g_i, so
  [T20]'s invariance holds.
- Initialisation: the papers take gamma_0 and omega_0 as inputs. EvoKit sets
  gamma_0 = 0 (no constraint is assumed active) and initialises constraint i
  on the first tell in which a solution violates it (until then it adds
  nothing to h, gamma_i = omega_i = 0):

      omega_0,i = S(f) / (n S(g_i)^2)                                           (init)

  with S the interquartile range of the batch (falling back to the largest
  deviation from the median, then to the largest |value|, then to 1 when the
  batch has no spread). That is the balance Eq. 4 keeps (omega g^2 against
  |delta h| / n, g and delta h at the scale of the batch), and it keeps the
  invariance of [T20]: under f -> a f + b, g_i -> c_i g_i (a, c_i > 0)
  omega_0,i scales as a / c_i^2, so every later h scales by a and the
  ranking, hence the run, is unchanged.

What tell() reports
-------------------
The strategies rank by h, so their own best value is h's. Once constraints
are told, ``result.xbest`` / ``result.fbest`` are instead the best FEASIBLE
solution told (every g_i <= 0; solutions whose f was NaN never count) and its
true f-value; ``result.feasible`` says whether there is one (before: xbest
None, fbest inf, feasible False). ``result.success`` is False, with the
reason in ``result.message`` (and optimize() warns), when no feasible
solution was told, or none in the last 10 + ceil(30 n / batch size) tells
(CMA's tolfun window; :meth:`ConstraintHandler.unconverged`): the search
distribution then ended outside the feasible set, and xbest is an earlier
point, not the constrained optimum the run converged towards. ``result.gbest`` holds xbest's constraint
values, and ``result.xbest_infeasible`` / ``gbest_infeasible`` the told
solution with the smallest total violation sum_i max(0, g_i) (ties: the
smaller f), useful while none is feasible. ftarget sees h, the values the
strategy ranks by; the criteria that judge h's spread are off (below).

Stop criteria. The first tell with constraints switches off the criteria
that judge the spread of the told values: tolfun, tolfunhist and the
stagnation test (CMA's tolstagnation, the others' stagnation_iterations).
Near a constrained optimum, gamma cancels f's slope along the active
constraints' normals, so h's spread over a generation is set by the
penalty factors omega, which adapt by a few percent per generation, not by
f's precision: tolfun on h ended CMA-ES runs on COCO's bbob-constrained at
f - f* of about 1e-7 while the mean still converged. And while the
multipliers approach their optimum, the minimum of h rises towards f* (the
dual function is maximal at the Lagrange multipliers), so a stagnation
test on h would end a run early, often with the mean still just infeasible
(pycma's own AL examples turn it off too). A constrained run ends by the
step size (tolx, tolupsigma), the covariance (conditioncov, noeffectaxis,
noeffectcoord), ftarget, or the budget.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["AugmentedLagrangian", "ConstraintHandler", "augmented_lagrangian", "constraint_matrix"]


#: unconverged(): a run whose last centre (tell_center) has f within this
#: (relative) of the best feasible f converged onto the feasible set's
#: boundary, from outside, at xbest.
CONVERGED_RTOL = 1e-6


def augmented_lagrangian(f, G, multipliers, penalty_factors) -> np.ndarray:
    """h of each solution: f [k] plus the penalty of its constraint values G [k, m]
    under gamma = multipliers [m] and omega = penalty_factors [m] ([P16] Eq. 2).
    A constraint with omega = 0 (not yet initialised, so gamma = 0) adds nothing."""
    G = np.asarray(G, dtype=np.float64)
    gamma = np.asarray(multipliers, dtype=np.float64)
    omega = np.asarray(penalty_factors, dtype=np.float64)
    penalised = gamma + omega * G >= 0
    safe = np.where(omega > 0, omega, 1.0)
    term = np.where(penalised, gamma * G + 0.5 * omega * G ** 2, -gamma ** 2 / (2 * safe))
    return np.asarray(f, dtype=np.float64) + term.sum(axis=-1)


def _scale(v: np.ndarray) -> float:
    """S(v) of (init): the interquartile range, else the largest deviation
    from the median, else the largest |v|, else 1."""
    q1, median, q3 = np.percentile(v, [25, 50, 75])
    for s in (q3 - q1, np.max(np.abs(v - median)), np.max(np.abs(v))):
        if s > 0 and math.isfinite(s):
            return float(s)
    return 1.0


class AugmentedLagrangian:
    """The adaptive augmented Lagrangian of m inequality constraints g_i <= 0
    (see the module docstring for the equations and their sources).

    multipliers (gamma, pycma's lambda) and penalty_factors (omega, pycma's
    mu): one per constraint; initialized[i]: whether constraint i was
    initialised (it was violated by a told solution). damping (d_gamma), k1,
    k2, chi: the parameters of Eqs. 3-4 (None: chi = 2^(1/(5 n))).
    """

    def __init__(self, num_params: int, num_constraints: int, *, damping: float = 5.0,
                 k1: float = 3.0, k2: float = 5.0, chi: Optional[float] = None):
        self.num_params = int(num_params)
        self.damping = float(damping)
        self.k1 = float(k1)
        self.k2 = float(k2)
        self.chi = 2.0 ** (1.0 / (5 * self.num_params)) if chi is None else float(chi)
        self.multipliers = np.zeros(num_constraints)
        self.penalty_factors = np.zeros(num_constraints)
        self.initialized = np.zeros(num_constraints, dtype=bool)
        self.previous: Optional[Tuple[float, np.ndarray]] = None  # f, g of X_t
        self.updates = 0

    @property
    def num_constraints(self) -> int:
        return self.multipliers.size

    def __call__(self, f, G) -> np.ndarray:
        """h of each solution under the current coefficients."""
        return augmented_lagrangian(f, G, self.multipliers, self.penalty_factors)

    def initialize(self, f: np.ndarray, G: np.ndarray) -> None:
        """(init): omega_0 of each uninitialised constraint some solution of
        this batch violates, from the batch's finite f-values (none: wait)."""
        todo = ~self.initialized & np.any(G > 0, axis=0)
        finite = np.isfinite(f)
        if not todo.any() or not finite.any():
            return
        sf = _scale(f[finite])
        for i in np.flatnonzero(todo):
            self.penalty_factors[i] = sf / (self.num_params * _scale(G[:, i]) ** 2)
            self.multipliers[i] = 0.0
            self.initialized[i] = True

    def update(self, f: float, g: np.ndarray) -> None:
        """Eqs. 3-4 from f = f(X_{t+1}) and g = g(X_{t+1}); X_t is the previous update's point."""
        g = np.asarray(g, dtype=np.float64)
        gamma, omega = self.multipliers, self.penalty_factors
        new_gamma, new_omega = gamma.copy(), omega.copy()
        if self.previous is not None:
            f_prev, g_prev = self.previous
            dh = abs(float(self(f, g)) - float(self(f_prev, g_prev)))  # both with gamma_t, omega_t
        for i in np.flatnonzero(self.initialized):
            new_gamma[i] = max(0.0, gamma[i] + omega[i] * g[i] / self.damping)         # Eq. 3
            if self.previous is None or gamma[i] + omega[i] * g[i] < 0:  # no X_t / inactive here
                continue
            if g[i] > 0:                                                   # violated at X_{t+1}
                new_omega[i] = omega[i] * self.chi
            elif (omega[i] * g[i] ** 2 < self.k1 * dh / self.num_params
                    or self.k2 * abs(g[i] - g_prev[i]) < abs(g_prev[i])):                # Eq. 4
                new_omega[i] = omega[i] * self.chi ** 0.25
            else:
                new_omega[i] = omega[i] / self.chi
        self.multipliers, self.penalty_factors = new_gamma, new_omega
        self.previous = (float(f), g.copy())
        self.updates += 1


class ConstraintHandler:
    """What tell(..., constraints=G) keeps: the augmented Lagrangian, the
    checks of G, the best feasible and the least infeasible solutions."""

    def __init__(self, num_params: int, num_constraints: int):
        self.lagrangian = AugmentedLagrangian(num_params, num_constraints)
        self.xbest: Optional[np.ndarray] = None  # best feasible
        self.fbest = math.inf
        self.gbest: Optional[np.ndarray] = None
        self.xbest_infeasible: Optional[np.ndarray] = None  # smallest total violation
        self.gbest_infeasible: Optional[np.ndarray] = None
        self._infeasible_key = (math.inf, math.inf)  # (violation, f)
        self.tells = 0                # tells recorded
        self.batch_size = 0           # solutions in the last one
        self.xbest_tell = 0           # the tell (1, 2, ..) that told xbest; 0: none
        self.last_feasible_tell = 0   # the last tell with a feasible solution; 0: none
        # The Lagrangian before the last tell's update, until center() replaces that update.
        self._before_update: Optional[AugmentedLagrangian] = None
        self.center_value: Optional[float] = None  # f of the last centre told (center())

    @property
    def num_constraints(self) -> int:
        return self.lagrangian.num_constraints

    @staticmethod
    def told(handler: Optional["ConstraintHandler"], constraints, x: np.ndarray, f: np.ndarray,
             nan_rows: np.ndarray, num_params: int, previous_tells: int
             ) -> Tuple[np.ndarray, "ConstraintHandler"]:
        """The values to rank by (h) and the handler after this tell, for
        AskTellStrategy.tell: checks G, then works on a copy so that nothing
        changes if the strategy refuses the values."""
        k = len(x)
        if constraints is None:
            raise ValueError(f"constraints were told before ({handler.num_constraints} per solution): "
                             f"tell() needs constraints=G, an array [{k}, {handler.num_constraints}], "
                             f"every time")
        G = np.array(constraints, dtype=np.float64)
        if handler is None and previous_tells:
            raise ValueError(f"constraints must be told from the first tell() on; {previous_tells} "
                             f"tell(s) were made without them")
        m = handler.num_constraints if handler is not None else (G.shape[1] if G.ndim == 2 else None)
        if G.ndim != 2 or G.shape[0] != k or G.shape[1] == 0 or (m is not None and G.shape[1] != m):
            want = f"[{k}, {m}]" if m is not None else f"[{k}, m] (m >= 1)"
            hint = " (one constraint: G[:, None])" if G.ndim == 1 else ""
            raise ValueError(f"constraints must be an array {want}, one row of constraint values per "
                             f"solution, got shape {G.shape}{hint}")
        bad = np.flatnonzero(np.any(~np.isfinite(G), axis=1))
        if bad.size:
            kind = "NaN" if np.isnan(G[bad]).any() else "infinite"
            raise ValueError(f"constraint values of solutions {bad.tolist()} are {kind}; constraints "
                             f"must be finite numbers")
        new = copy.deepcopy(handler) if handler is not None else ConstraintHandler(num_params, G.shape[1])
        al = new.lagrangian
        al.initialize(f, G)
        h = al(f, G)
        new._before_update = copy.deepcopy(al)  # what center() updates from instead
        finite = np.flatnonzero(np.isfinite(h) & np.isfinite(f))
        if finite.size:
            best = finite[np.argmin(h[finite])]  # X_{t+1}: the batch's best by h
            al.update(f[best], G[best])
        new._record(x, f, G, nan_rows)
        return h, new

    def center(self, x: np.ndarray, f: float, g) -> None:
        """The f- and constraint values of the distribution's new centre x
        after a tell: X_{t+1} of that tell's update becomes the centre, as in
        the papers, instead of the batch's best, and a feasible centre counts
        as a told solution (xbest). Checked first; nothing changes on error."""
        if getattr(self, "_before_update", None) is None:
            raise ValueError("the centre's values follow a tell(..., constraints=G) and come once per tell")
        g = np.atleast_1d(np.asarray(g, dtype=np.float64))
        m = self.num_constraints
        if g.shape != (m,):
            raise ValueError(f"the centre's constraint values must be {m} numbers, got shape {g.shape}")
        if not np.all(np.isfinite(g)):
            raise ValueError(f"the centre's constraint values must be finite, got {g.tolist()}")
        f = float(f)
        if math.isnan(f):
            raise ValueError("the centre's f-value is NaN")
        al = self._before_update
        al.update(f, g)
        self.lagrangian, self._before_update = al, None
        self.center_value = f
        if np.all(g <= 0):
            self.last_feasible_tell = self.tells
            if f < self.fbest:
                self.xbest, self.fbest, self.gbest = np.array(x, dtype=np.float64), f, g.copy()
                self.xbest_tell = self.tells

    def _record(self, x: np.ndarray, f: np.ndarray, G: np.ndarray, nan_rows: np.ndarray) -> None:
        self.tells += 1
        self.batch_size = len(x)
        valid = np.ones(len(x), dtype=bool)
        valid[nan_rows] = False
        violation = np.maximum(G, 0.0).sum(axis=1)
        feasible = np.flatnonzero(valid & (violation == 0))
        if feasible.size:
            self.last_feasible_tell = self.tells
            b = feasible[np.argmin(f[feasible])]
            if f[b] < self.fbest:
                self.xbest, self.fbest, self.gbest = x[b].copy(), float(f[b]), G[b].copy()
                self.xbest_tell = self.tells
        for i in np.flatnonzero(valid & (violation > 0)):
            key = (float(violation[i]), float(f[i]))
            if key < self._infeasible_key:
                self._infeasible_key = key
                self.xbest_infeasible, self.gbest_infeasible = x[i].copy(), G[i].copy()

    @property
    def window(self) -> int:
        """The generations over which unconverged() asks for a feasible
        solution: CMA's tolfun history, 10 + ceil(30 n / batch size)."""
        return 10 + math.ceil(30 * self.lagrangian.num_params / max(1, self.batch_size))

    def unconverged(self) -> Optional[str]:
        """Why the run is not at a constrained optimum, or None: no feasible
        solution was told, or none in the last `window` tells (the search
        distribution is outside the feasible set; xbest is then an old point,
        not the optimum the run converged towards), unless the last centre
        told (tell_center) has f within CONVERGED_RTOL of xbest's: the run
        then converged onto the boundary from outside, at xbest."""
        if self.xbest is None:
            v = self._infeasible_key[0]
            return (f"no feasible solution was found in {self.tells} generations (the least total "
                    f"violation sum_i max(0, g_i) was {v:.3g}); result.xbest is None")
        since = self.tells - self.last_feasible_tell
        centre = getattr(self, "center_value", None)
        if centre is not None and abs(self.fbest - centre) <= CONVERGED_RTOL * max(1.0, abs(self.fbest)):
            # The run converged onto the boundary, from outside or not: xbest's f
            # is within CONVERGED_RTOL of the last centre's.
            return None
        if since >= self.window:
            return (f"no feasible solution was told in the last {since} generations (window "
                    f"{self.window}): the search distribution ended outside the feasible set, so "
                    f"result.xbest (f = {self.fbest:.10g}, from generation {self.xbest_tell}) is "
                    f"an earlier feasible solution, not the constrained optimum")
        return None

    def report(self, result: Any) -> None:
        """Puts the best feasible solution into an OptimizeResult (see the module docstring)."""
        result.feasible = self.xbest is not None
        result.xbest = None if self.xbest is None else self.xbest.copy()
        result.fbest = self.fbest
        result.gbest = None if self.gbest is None else self.gbest.copy()
        result.xbest_infeasible = None if self.xbest_infeasible is None else self.xbest_infeasible.copy()
        result.gbest_infeasible = None if self.gbest_infeasible is None else self.gbest_infeasible.copy()


def constraint_matrix(values, x: np.ndarray, vectorized: bool) -> np.ndarray:
    """G [k, m] for optimize(constraints=g) from what g returned: with
    vectorized=True g(X) itself ([k, m]), else the k rows g(x) (m values
    each, a scalar for m = 1)."""
    if vectorized:
        G = np.asarray(values, dtype=np.float64)
        if G.ndim != 2:
            raise ValueError(f"a vectorized constraints function must return an array [{len(x)}, m] (one "
                             f"row per row of its [{len(x)}, {x.shape[1]}] argument), got shape {G.shape}")
        return G
    rows = [np.atleast_1d(np.asarray(r, dtype=np.float64)) for r in values]
    shapes = {r.shape for r in rows}
    if len(shapes) != 1 or rows[0].ndim != 1:
        raise ValueError(f"constraints(x) must return the same number m of values for every x, got "
                         f"shapes {sorted(shapes)}")
    return np.stack(rows)
