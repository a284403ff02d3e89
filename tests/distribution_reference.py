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


# ---- xNES: Wierstra et al. 2014, Algorithm 5 (Glasmachers et al. 2010) -------------

def xnes_defaults(n):
    eta = 3 * (3 + np.log(n)) / (5 * n * np.sqrt(n))
    return {"population_size": 4 + int(np.floor(3 * np.log(n))), "learning_rate_mean": 1.0,
            "learning_rate_sigma": eta, "learning_rate_shape": eta}


def expm_symmetric(a):
    """exp(a) of a symmetric matrix, by NumPy's eigh."""
    values, vectors = np.linalg.eigh(a)
    return (vectors * np.exp(values)) @ vectors.T


def xnes_generation(mean, sigma, B, z, values, eta_mu, eta_sigma, eta_b):
    """One xNES update from the members' s = z and f-values (minimised);
    the samples were mean + sigma * B @ s."""
    d = len(mean)
    order = ranking(values)
    u = nes_utilities(len(values))
    s = z[order]
    g_delta = u @ s
    g_m = sum(u[i] * (np.outer(s[i], s[i]) - np.eye(d)) for i in range(len(u)))
    g_sigma = np.trace(g_m) / d
    g_b = g_m - g_sigma * np.eye(d)
    return (mean + eta_mu * sigma * B @ g_delta, sigma * np.exp(eta_sigma / 2 * g_sigma),
            B @ expm_symmetric(eta_b / 2 * g_b))


# ---- CR-FM-NES: Nomura & Ono, IEEE CEC 2022 (arXiv:2201.11422), Algorithm 1 --------

CRFMNES_V_TAG = 0x43524656  # "CRFV": the initial v's key (crfmnes.cc)


def crfmnes_initial_v(seed, n):
    key = hash_draw(seed, 0, 0, CRFMNES_V_TAG) >> 2
    return es_oracle.gaussians(seed, key, 0, n).astype(np.float64) / np.sqrt(n)


def crfmnes_h_inv(d):
    """The root a > 0 of (1 + a^2) exp(a^2 / 2) / 0.24 - 10 - d (Newton)."""
    a = 6.0
    for _ in range(200):
        f = (1 + a * a) * np.exp(a * a / 2) / 0.24 - 10 - d
        a_next = a - f / ((1 / 0.24) * a * np.exp(a * a / 2) * (3 + a * a))
        if a_next == a:
            break
        a = a_next
    return a


def crfmnes_defaults(n, lam=None, lam_f=None):
    """Table I's hyper-parameters (lambda_F = lambda unless given)."""
    if lam is None:
        lam = 4 + int(np.floor(3 * np.log(n)))
        lam += lam % 2
    lam_f = lam if lam_f is None else lam_f
    w = nes_utilities(lam)
    mu_eff = 1 / np.sum((w + 1 / lam) ** 2)
    return {
        "population_size": lam, "learning_rate_mean": 1.0, "mu_eff": mu_eff,
        "c_sigma": (mu_eff + 2) / (n + mu_eff + 5),
        "c_c": (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n),
        # Table I's rate, floored at 0 (negative for d < 5; crfmnes.cc says why)
        "c_1": max(0.0, 2 / ((n + 1.3) ** 2 + mu_eff) * (n - 5) / 6 * lam_f / lam),
        "chi_d": np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n)),
        "h_inv": crfmnes_h_inv(n),
        "alpha_dist": crfmnes_h_inv(n) * min(1, np.sqrt(lam / n)) * np.sqrt(lam_f / lam),
        "eta_move_sigma": 1.0,
        "eta_stag_sigma": np.tanh((0.024 * lam_f + 0.7 * n + 20) / (n + 12)),
        "eta_conv_sigma": 2 * np.tanh((0.025 * lam_f + 0.75 * n + 10) / (n + 4)),
        "eta_b": np.tanh((min(0.02 * lam_f, 3 * np.log(n)) + 5) / (0.23 * n + 25)),
    }


def crfmnes_samples(state, z):
    """x of every member from its z (rows): m + sigma D y, y = z + (sqrt(1 + |v|^2) - 1) vbar vbar^T z."""
    v = state["v"]
    vbar = v / np.linalg.norm(v)
    y = z + (np.sqrt(1 + v @ v) - 1) * np.outer(z @ vbar, vbar)
    return state["mean"] + state["sigma"] * state["d"] * y


def crfmnes_generation(state, z, values, eta_m=1.0):
    """One CR-FM-NES update (Algorithm 1) of state = {mean, sigma, d, v,
    p_sigma, p_c} from the members' z (rows) and f-values (minimised; +inf is
    infeasible). Written with full matrices where the paper's formulas are
    matrix products (column vectors as in the paper)."""
    n, lam = len(state["mean"]), len(values)
    m, sigma, D, v = state["mean"], state["sigma"], state["d"], state["v"]
    values = np.asarray(values)
    feasible = values < np.inf
    lam_f = int(feasible.sum())
    p = crfmnes_defaults(n, lam, lam_f)
    # rank: feasible by f, then infeasible by |z| (ties in member order)
    idx = np.arange(lam)
    order = np.concatenate([idx[feasible][np.argsort(values[feasible], kind="stable")],
                            idx[~feasible][np.argsort(np.sum(z[~feasible] ** 2, axis=1), kind="stable")]])
    Z = z[order].T                                   # n x lam, ranked columns
    norm_v2 = v @ v
    vbar = v / np.sqrt(norm_v2)
    Y = Z + (np.sqrt(1 + norm_v2) - 1) * np.outer(vbar, vbar @ Z)
    X = m[:, None] + sigma * D[:, None] * Y
    w_rank = nes_utilities(lam)
    w_hat = np.maximum(0.0, np.log(lam / 2 + 1) - np.log(np.arange(1, lam + 1)))
    ps = (1 - p["c_sigma"]) * state["p_sigma"] + np.sqrt(p["c_sigma"] * (2 - p["c_sigma"]) * p["mu_eff"]) * (Z @ w_rank)
    ps_norm = np.linalg.norm(ps)
    w_tmp = w_hat * np.exp(p["alpha_dist"] * np.linalg.norm(Z, axis=0))
    w_dist = w_tmp / w_tmp.sum() - 1 / lam
    if ps_norm >= p["chi_d"]:
        w, eta_sigma = w_dist, p["eta_move_sigma"]
    elif ps_norm >= 0.1 * p["chi_d"]:
        w, eta_sigma = w_rank, p["eta_stag_sigma"]
    else:
        w, eta_sigma = w_rank, p["eta_conv_sigma"]
    wxm = (X - m[:, None]) @ w
    pc = (1 - p["c_c"]) * state["p_c"] + np.sqrt(p["c_c"] * (2 - p["c_c"]) * p["mu_eff"]) * wxm / sigma
    m_new = m + eta_m * wxm
    # the natural gradient of v and D (section III-C), columns [Y, pc / D]
    E = np.concatenate([Y, (pc / D)[:, None]], axis=1)
    gamma = 1 + norm_v2
    vv = vbar * vbar
    alpha = min(1.0, np.sqrt(norm_v2 ** 2 + (2 * gamma - np.sqrt(gamma)) / vv.max()) / (2 + norm_v2))
    b = -(1 - alpha ** 2) * norm_v2 ** 2 / gamma + 2 * alpha ** 2
    H = 2 - (b + 2 * alpha ** 2) * vv
    ip = vbar @ E
    T = E * ip - np.outer(vbar, ip ** 2 + gamma) / 2
    S = E * E - norm_v2 / gamma * (E * vbar[:, None]) * ip - 1
    S = S - alpha / gamma * ((2 + norm_v2) * (T * vbar[:, None]) - norm_v2 * np.outer(vv, vbar @ T))
    # S <- (diag(H) + b vv vv^T)^-1 S, the diagonal-plus-rank-one system solved directly
    S = np.linalg.solve(np.diag(H) + b * np.outer(vv, vv), S)
    T = T - alpha * ((2 + norm_v2) * (S * vbar[:, None]) - np.outer(vbar, vv @ S))
    exw = np.concatenate([p["eta_b"] * w, [p["c_1"]]])
    v_new = v + T @ exw / np.sqrt(norm_v2)
    D_new = D + (S @ exw) * D
    D_new = D_new / np.exp(np.sum(np.log(D_new)) / n + np.log(1 + v_new @ v_new) / (2 * n))
    g_sigma = np.sum((Z * Z - 1) @ w) / n
    return {"mean": m_new, "sigma": sigma * np.exp(eta_sigma / 2 * g_sigma), "d": D_new,
            "v": v_new, "p_sigma": ps, "p_c": pc}


# ---- LM-MA-ES: Loshchilov, Glasmachers, Beyer 2019, Algorithm 1 -------------------

def lmmaes_defaults(n):
    lam = 4 + int(np.floor(3 * np.log(n)))
    mu = lam // 2
    w = np.log((lam + 1) / 2) - np.log(np.arange(1, mu + 1))
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


# ---- MA-ES: Beyer, Sendhoff 2017, Fig. 3 ------------------------------------------

def maes_generation(state, z, values, p):
    """One generation of Fig. 3 as printed: the n x n bracket built and
    multiplied. state: dict y, sigma, s, M; p: CMA-ES's parameters
    (cma_reference.default_params)."""
    y, sigma, s, M = state["y"], state["sigma"], state["s"], state["M"]
    n = len(y)
    mu = p["mu"]
    w = p["weights"][:mu]
    order = ranking(values)[:mu]
    zs = z[order]
    ds = zs @ M.T
    y = y + sigma * (w @ ds)                                                         # (8)
    cs = p["c_sigma"]
    s = (1 - cs) * s + np.sqrt(p["mueff"] * cs * (2 - cs)) * (w @ zs)                 # (9)
    zz = sum(wi * np.outer(zi, zi) for wi, zi in zip(w, zs))
    M = M @ (np.eye(n) + p["c1"] / 2 * (np.outer(s, s) - np.eye(n))
             + p["cmu"] / 2 * (zz - np.eye(n)))                                     # (10)
    sigma = sigma * np.exp(cs / p["d_sigma"] * (np.linalg.norm(s) / p["chi_n"] - 1))  # (11)
    return {"y": y, "sigma": sigma, "s": s, "M": M}


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


# ---- CEM (de Boer et al. 2005; Kroese, Porotsky, Rubinstein 2006; Szita & Lorincz 2006)

def cem_generation(mean, sigma, x, values, elite_ratio, alpha, beta, extra_variance):
    ne = max(1, int(np.floor(elite_ratio * len(values) + 0.5)))  # round half up
    elite = x[ranking(values)[:ne]]
    s_elite = elite.std(axis=0, ddof=1) if ne > 1 else np.zeros_like(sigma)  # Bessel
    s = beta * s_elite + (1 - beta) * sigma
    return alpha * elite.mean(axis=0) + (1 - alpha) * mean, np.sqrt(s * s + extra_variance)


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
