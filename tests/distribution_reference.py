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
