"""NumPy references of the distribution strategies (cpp/include/evokit/distribution.h),
written from the papers: the keys and noise every family shares, and one
small, plain update function per family (slow on purpose: no tricks, full
formulas), that tests/blackbox/test_distribution*.py compare the core with.
"""

import numpy as np

import es_oracle

DISTRIBUTION_TAG = 0x44495354  # "DIST", distribution.h's kDistributionTag
KEY_DRAW_TAG = 0x4B455944
SEED_TAG0, SEED_TAG1 = 0x45564F4B, 0x44524157
MASK = 0xFFFFFFFF


def hash_draw(seed, a, b, c):
    """philox.h's hash_draw: Philox4x32-10 of {lo32(a), lo32(b), lo32(c), KEYD}."""
    w = es_oracle.philox4x32([a & MASK, b & MASK, c & MASK, KEY_DRAW_TAG],
                             [(seed & MASK) ^ SEED_TAG0, (seed >> 32) ^ SEED_TAG1])
    return w[0] | (w[1] << 32)


def member_key(seed, generation, k, mirrored=False):
    return hash_draw(seed, generation, k // 2 if mirrored else k, DISTRIBUTION_TAG) >> 2


def member_z(seed, generation, lam, n, mirrored=False):
    """z of every member of a generation [lam, n] (float32 noise widened)."""
    z = np.empty((lam, n))
    for k in range(lam):
        g = es_oracle.gaussians(seed, member_key(seed, generation, k, mirrored), 0, n)
        z[k] = g.astype(np.float64) * (-1.0 if mirrored and k % 2 else 1.0)
    return z


def ranking(values):
    """Member indices by f-value, best first, ties in member order."""
    return np.argsort(np.asarray(values), kind="stable")


def nes_utilities(lam):
    """Wierstra et al. 2014, section 3.1."""
    i = np.arange(1, lam + 1)
    u = np.maximum(0.0, np.log(lam / 2 + 1) - np.log(i))
    return u / u.sum() - 1.0 / lam


# ---- SNES: Wierstra et al. 2014, Algorithm 6 -------------------------------------

def snes_defaults(n):
    return {"population_size": 4 + int(np.floor(3 * np.log(n))), "learning_rate_mean": 1.0,
            "learning_rate_sigma": (3 + np.log(n)) / (5 * np.sqrt(n))}


def snes_generation(mean, sigma, z, values, eta_mu, eta_sigma):
    """One SNES update from the members' z and f-values (minimised)."""
    order = ranking(values)
    u = nes_utilities(len(values))
    s = z[order]
    grad_mu = u @ s
    grad_sigma = u @ (s * s - 1)
    return mean + eta_mu * sigma * grad_mu, sigma * np.exp(eta_sigma / 2 * grad_sigma)


# ---- LM-MA-ES: Loshchilov, Glasmachers, Beyer 2019, Algorithm 1 -------------------

def lmmaes_defaults(n):
    lam = 4 + int(np.floor(3 * np.log(n)))
    mu = lam // 2
    w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
    w /= w.sum()
    m = 4 + int(np.floor(3 * np.log(n)))
    return {"population_size": lam, "mu": mu, "weights": w, "mu_w": 1 / np.sum(w ** 2),
            "memory": m, "c_sigma": min(1.0, 2 * lam / n), "damping": 2.0,
            "c_d": np.array([1 / (1.5 ** i * n) for i in range(m)]),
            "c_c": np.array([min(1.0, lam / (4 ** i * n)) for i in range(m)])}


def lmmaes_direction(z, M, c_d, t):
    """Algorithm 1, lines 6-8: d = z transformed by the first min(t, m) vectors."""
    d = z.copy()
    for j in range(min(t, len(M))):
        d = (1 - c_d[j]) * d + c_d[j] * M[j] * (M[j] @ d)
    return d


def lmmaes_generation(state, z, values, p):
    """One generation (lines 10-14). state: dict y, sigma, ps, M (m x n), t."""
    y, sigma, ps, M, t = state["y"], state["sigma"], state["ps"], state["M"], state["t"]
    n = len(y)
    order = ranking(values)[:p["mu"]]
    w = p["weights"]
    d = np.array([lmmaes_direction(z[k], M, p["c_d"], t) for k in order])
    wz = w @ z[order]
    y = y + sigma * (w @ d)
    cs = p["c_sigma"]
    ps = (1 - cs) * ps + np.sqrt(p["mu_w"] * cs * (2 - cs)) * wz
    M = np.array([(1 - cc) * M[i] + np.sqrt(p["mu_w"] * cc * (2 - cc)) * wz
                  for i, cc in enumerate(p["c_c"])])
    sigma = sigma * np.exp(cs / p["damping"] * (ps @ ps / n - 1))
    return {"y": y, "sigma": sigma, "ps": ps, "M": M, "t": t + 1}


def lmmaes_stds(state, p):
    """sqrt(diag(sigma^2 A A^T)) with A built explicitly (small n only)."""
    n = len(state["y"])
    A = np.eye(n)
    for j in range(min(state["t"], len(state["M"]))):
        m = state["M"][j]
        A = ((1 - p["c_d"][j]) * np.eye(n) + p["c_d"][j] * np.outer(m, m)) @ A
    return state["sigma"] * np.sqrt(np.diag(A @ A.T))


# ---- PGPE (Sehnke et al. 2010) with ClipUp (Toklu et al. 2020) ---------------------

def centered_ranks(values):
    """pgpelib's centred ranks of the fitness -f: worst -0.5 .. best +0.5."""
    lam = len(values)
    u = np.empty(lam)
    u[ranking(values)] = (lam - 1 - np.arange(lam)) / (lam - 1) - 0.5
    return u


def pgpe_generation(state, z, values, p):
    """state: mean, sigma, velocity, second (Adam), t (generations so far).
    z: members' noise (mirrored pairs); p: the options."""
    mean, sigma = state["mean"], state["sigma"]
    u = centered_ranks(values)
    up, um = u[0::2], u[1::2]
    eps = sigma * z[0::2]
    K = len(up)
    g_mu = ((up - um) / 2) @ eps / K
    avg = (up + um) / 2
    g_sigma = (avg - avg.mean()) @ ((eps ** 2 - sigma ** 2) / sigma) / K
    v, s2 = state["velocity"].copy(), state["second"].copy()
    lr = p["center_learning_rate"]
    if p["optimizer"] == "clipup":
        norm = np.linalg.norm(g_mu)
        v = p["momentum"] * v + (lr * g_mu / norm if norm > 0 else 0.0)
        speed = np.linalg.norm(v)
        if speed > p["max_speed"]:
            v = v * (p["max_speed"] / speed)
        mean = mean + v
    elif p["optimizer"] == "sgd":
        v = p["momentum"] * v + lr * g_mu
        mean = mean + v
    else:  # adam
        t = state["t"] + 1
        v = 0.9 * v + 0.1 * g_mu
        s2 = 0.999 * s2 + 0.001 * g_mu ** 2
        mean = mean + lr * (v / (1 - 0.9 ** t)) / (np.sqrt(s2 / (1 - 0.999 ** t)) + 1e-8)
    change = sigma * p["stdev_max_change"]
    sigma = np.clip(sigma + p["stdev_learning_rate"] * g_sigma, sigma - change, sigma + change)
    return {"mean": mean, "sigma": sigma, "velocity": v, "second": s2, "t": state["t"] + 1}


# ---- CEM (de Boer et al. 2005; Szita & Lorincz 2006) -------------------------------

def cem_generation(mean, sigma, x, values, elite_ratio, alpha, extra_variance):
    ne = max(1, int(np.floor(elite_ratio * len(values) + 0.5)))  # round half up
    elite = x[ranking(values)[:ne]]
    var = alpha * elite.var(axis=0) + (1 - alpha) * sigma ** 2 + extra_variance
    return alpha * elite.mean(axis=0) + (1 - alpha) * mean, np.sqrt(var)


# ---- ARS: Mania, Guy, Recht 2018, Algorithm 2 (V1 / V1-t) --------------------------

def ars_generation(theta, z, values, step_size, b):
    """z: the members' noise (pairs 2p, 2p+1 are +delta_p, -delta_p);
    values: f (minimised), so the rewards are -f."""
    delta = z[0::2]
    r_plus, r_minus = -np.asarray(values)[0::2], -np.asarray(values)[1::2]
    top = np.argsort(-np.maximum(r_plus, r_minus), kind="stable")[:b]
    sigma_r = np.concatenate([r_plus[top], r_minus[top]]).std()
    if sigma_r == 0:
        sigma_r = 1.0
    return theta + step_size / (b * sigma_r) * ((r_plus[top] - r_minus[top]) @ delta[top])


# ---- test helpers the family tests share ----------------------------------------------

def run_means(make, generations, f, pickle_at=None):
    """Runs the strategy make() for some generations on the vectorised f,
    pickling and unpickling it before generation pickle_at; returns the
    mean, stds and best f."""
    import pickle
    es = make()
    for g in range(generations):
        if g == pickle_at:
            es = pickle.loads(pickle.dumps(es))
        X = es.ask()
        es.tell(X, f(X))
    return es.mean, es.stds, es.result.fbest


def assert_same_for_threads_and_pickling(make_with_threads, generations=6):
    f = lambda X: (X * X).sum(axis=1)  # noqa: E731
    base = run_means(lambda: make_with_threads(1), generations, f)
    for threads, pickle_at in ((2, None), (1, 3), (2, 1)):
        other = run_means(lambda: make_with_threads(threads), generations, f, pickle_at)
        for a, b in zip(base, other):
            np.testing.assert_array_equal(a, b)


def assert_state_entry_refused(es, entries, entry, value, message):
    """es's state (after one generation) holds exactly `entries`; with
    `entry` replaced by `value` load_state refuses it with `message` and
    the strategy is unchanged."""
    import pytest
    from evokit import _core
    X = es.ask()
    es.tell(X, (X ** 2).sum(axis=1))
    state = es.state()
    assert sorted(state.doubles) == sorted(entries)
    doubles = state.doubles
    doubles[entry] = np.asarray(value, dtype=float)
    before = es.ask().copy()
    with pytest.raises(ValueError, match=message):
        es.load_state(_core.SolverState(state.family, doubles=doubles, ints=state.ints))
    np.testing.assert_array_equal(es.ask(), before)
