"""A NumPy reference of one CMA-ES generation, written from the tutorial.

N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
(2016): Appendix A and Table 1; equation numbers as there, with pycma's two
changes to full CMA-ES's defaults (its rank-mu offset 1/4 in Eq. (58) and its
c_sigma = min(1/2, (mueff + 2) / (n + mueff + 3))). The separable variant
(Ros & Hansen 2008) keeps only the diagonal of C and takes pycma's separable
rates (c1_sep, cmu_sep, cc_sep in cma/options_parameters.py). Plain and slow
on purpose: full matrices, a fresh eigendecomposition, no lazy updates.
"""

import numpy as np


def default_params(n, lam=None, separable=False):
    if lam is None:
        lam = 4 + int(np.floor(3 * np.log(n)))                      # Eq. (48)
    mu = lam // 2                                                   # Eq. (48)
    wp = np.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))      # Eq. (49)
    mueff = wp[:mu].sum() ** 2 / (wp[:mu] ** 2).sum()
    mueff_minus = wp[mu:].sum() ** 2 / (wp[mu:] ** 2).sum()
    if separable:                                                   # pycma's c1_sep, cmu_sep
        c1 = 1 / (n + 2 * np.sqrt(n) + mueff / n)
        cmu = min(1 - c1, (0.25 + mueff + 1 / mueff - 2) / (n + 4 * np.sqrt(n) + mueff / 2))
    else:
        alpha_cov = 2.0
        c1 = alpha_cov / ((n + 1.3) ** 2 + mueff)                   # Eq. (57)
        cmu = min(1 - c1, alpha_cov * (mueff - 2 + 1 / mueff + 0.25)  # pycma's rankmu_offset
                  / ((n + 2) ** 2 + alpha_cov * mueff / 2))         # Eq. (58)
    alpha_mu_minus = 1 + c1 / cmu                                   # Eq. (50)
    alpha_mueff_minus = 1 + 2 * mueff_minus / (mueff + 2)           # Eq. (51)
    alpha_posdef_minus = (1 - c1 - cmu) / (n * cmu)                 # Eq. (52)
    w = np.where(wp >= 0, wp / wp[wp > 0].sum(),                    # Eq. (53)
                 min(alpha_mu_minus, alpha_mueff_minus, alpha_posdef_minus) * wp / -wp[wp < 0].sum())
    c_sigma = min(0.5, (mueff + 2) / (n + mueff + 3))               # pycma's cs
    cc = ((1 + 1 / n + mueff / n) / (np.sqrt(n) + 1 / n + 2 * mueff / n) if separable  # pycma's cc_sep
          else (4 + mueff / n) / (n + 4 + 2 * mueff / n))           # Eq. (56)
    return {
        "population_size": lam, "mu": mu, "weights": w, "mueff": mueff, "cm": 1.0,  # Eq. (54)
        "c_sigma": c_sigma,
        "d_sigma": 1 + 2 * max(0.0, np.sqrt((mueff - 1) / (n + 1)) - 1) + c_sigma,  # Eq. (55)
        "cc": cc,
        "c1": c1, "cmu": cmu,
        "chi_n": np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n ** 2)),   # E||N(0, I)||
    }


def tpa_damp(n, lam):
    """TPA's damping (pycma's CMAAdaptSigmaTPA)."""
    return 0.7 + 2 * np.log(n) + 2 * np.log(max(1, lam - n))


def tpa_pair(mean, sigma, C, mean_shift, z_key):
    """TPA's mirrored pair (Hansen 2008, as pycma): m +- sigma f u along the
    mean shift u, f giving ||C^-1/2 f u|| = ||z_key|| (the row's own normals)."""
    C = np.diag(C) if np.ndim(C) == 1 else np.asarray(C, dtype=float)
    eigenvalues, B = np.linalg.eigh(C)
    mahalanobis = np.linalg.norm(np.diag(eigenvalues ** -0.5) @ B.T @ mean_shift)
    y = mean_shift * np.linalg.norm(z_key) / mahalanobis
    return mean + sigma * y, mean - sigma * y


def tpa_sigma(sigma, s, values, row, n):
    """TPA's step-size update: (new sigma, new s) from the pair's ranks."""
    values = np.asarray(values)
    z = (np.sum(values < values[row + 1]) - np.sum(values < values[row])) / (len(values) - 1)
    s = 0.7 * s + 0.3 * np.sign(z) * np.abs(z) ** 0.5
    return sigma * np.exp(s / tpa_damp(n, len(values))), s


def generation(mean, sigma, C, p_sigma, p_c, g, solutions, values, params, separable=False, tpa=None):
    """The distribution after telling `values` for `solutions` (rows x_k = m + sigma y_k).

    C is the covariance matrix, or its diagonal for separable. g counts the
    generations before this one (0 for the first). tpa: None (CSA's sigma,
    Eq. (44)) or (s, row) of TPA's pair. Returns a dict with mean, sigma,
    p_sigma, p_c and C (the diagonal for separable), and with tpa tpa_s and
    mean_shift."""
    p = params
    n = len(mean)
    C = np.diag(C) if separable else np.asarray(C, dtype=float)
    order = np.argsort(values, kind="stable")                       # ties keep the members' order
    y = (np.asarray(solutions, dtype=float)[order] - mean) / sigma  # y_{i:lambda}
    w, mu = p["weights"], p["mu"]
    y_w = w[:mu] @ y[:mu]                                           # Eq. (41)
    new_mean = mean + p["cm"] * sigma * y_w                         # Eq. (42)
    eigenvalues, B = np.linalg.eigh(C)
    C_inv_sqrt = B @ np.diag(eigenvalues ** -0.5) @ B.T
    cs = p["c_sigma"]
    new_p_sigma = (1 - cs) * p_sigma + np.sqrt(cs * (2 - cs) * p["mueff"]) * C_inv_sqrt @ y_w   # Eq. (43)
    norm = np.linalg.norm(new_p_sigma)
    new_sigma = sigma * np.exp(cs / p["d_sigma"] * (norm / p["chi_n"] - 1))                     # Eq. (44)
    h_sigma = norm / np.sqrt(1 - (1 - cs) ** (2 * (g + 1))) < (1.4 + 2 / (n + 1)) * p["chi_n"]
    cc = p["cc"]
    new_p_c = (1 - cc) * p_c + h_sigma * np.sqrt(cc * (2 - cc) * p["mueff"]) * y_w            # Eq. (45)
    w_circ = w * np.where(w >= 0, 1.0, n / np.sum((y @ C_inv_sqrt.T) ** 2, axis=1))          # Eq. (46)
    delta = (1 - h_sigma) * cc * (2 - cc)
    c1, cmu = p["c1"], p["cmu"]
    new_C = ((1 + c1 * delta - c1 - cmu * w.sum()) * C + c1 * np.outer(new_p_c, new_p_c)
             + cmu * (y.T * w_circ) @ y)                                                      # Eq. (47)
    out = {"mean": new_mean, "sigma": new_sigma, "p_sigma": new_p_sigma, "p_c": new_p_c,
           "C": np.diag(new_C).copy() if separable else new_C, "h_sigma": bool(h_sigma)}
    if tpa is not None:
        out["sigma"], out["tpa_s"] = tpa_sigma(sigma, tpa[0], values, tpa[1], n)
        out["mean_shift"] = new_mean - mean
    return out


# ---- shared by the tests that compare the core with this reference -----------------

PARITY_TOL = 1e-10


def random_state(n, rng, separable, p_sigma_scale=1.0):
    """A CMA state to start a generation from (set_state's arguments)."""
    if separable:
        C = rng.uniform(0.2, 3.0, size=n)
    else:
        A = rng.normal(size=(n, n))
        C = A @ A.T / n + 0.3 * np.eye(n)
        C = (C + C.T) / 2
    return {"mean": rng.normal(size=n), "sigma": 0.37, "p_sigma": p_sigma_scale * rng.normal(size=n) * 0.5,
            "p_c": rng.normal(size=n) * 0.3, "cov": C, "generation": 4}


def assert_state_matches(got, want):
    """The core's get_state() equals generation()'s result within PARITY_TOL."""
    import pytest
    np.testing.assert_allclose(got["mean"], want["mean"], rtol=0, atol=PARITY_TOL)
    assert got["sigma"] == pytest.approx(want["sigma"], rel=PARITY_TOL)
    np.testing.assert_allclose(got["p_sigma"], want["p_sigma"], rtol=0, atol=PARITY_TOL)
    np.testing.assert_allclose(got["p_c"], want["p_c"], rtol=0, atol=PARITY_TOL)
    np.testing.assert_allclose(got["cov"], want["C"], rtol=0, atol=PARITY_TOL)
