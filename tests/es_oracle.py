"""A compact NumPy reference of what EvoKit computes, used as a test oracle.

- ``philox4x32`` / ``gaussian``: the counter-based noise (Philox4x32-10 and
  Box-Muller), written from the papers, not from our C++.
- ``es_step``: one OpenAI-ES update (Salimans et al. 2017): centered-rank
  fitness shaping, mirrored sampling, g = sum_i w_i s_i eps_i / (N sigma),
  descent direction -g + weight_decay * theta, then SGD, momentum or Adam.
"""

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox4x32(counter, key, rounds=10):
    c = [int(x) & MASK for x in counter]
    k = [int(x) & MASK for x in key]
    for _ in range(rounds):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK]
        k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
    return tuple(c)


def gaussian(seed, stream, index):
    """Normal number ``index`` of ``stream`` under ``seed`` (see philox.h)."""
    block, lane = divmod(index, 4)
    w = philox4x32([block & MASK, block >> 32, stream & MASK, stream >> 32],
                   [seed & MASK, seed >> 32])
    a, b = (w[0], w[1]) if lane < 2 else (w[2], w[3])
    u1 = (a + 1.0) * 2.0 ** -32
    u2 = b * 2.0 ** -32
    r = np.sqrt(-2.0 * np.log(u1))
    z = r * (np.cos(2 * np.pi * u2) if lane % 2 == 0 else np.sin(2 * np.pi * u2))
    return np.float32(z)


def centered_ranks(x):
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n, dtype=np.float64)
    for v in np.unique(x):  # ties get their mean rank
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks / (n - 1) - 0.5 if n > 1 else np.zeros(n)


def es_direction(theta, eps, signs, weights, sigma, weight_decay):
    """-1/(N sigma) sum_i w_i s_i eps_i + weight_decay * theta, in float64."""
    eps = np.asarray(eps, dtype=np.float64)
    n = len(weights)
    g = (np.asarray(weights, np.float64) * np.asarray(signs, np.float64)) @ eps / (n * sigma)
    return -g + weight_decay * np.asarray(theta, np.float64)


def optimizer_step(theta, d, state, kind, lr, momentum=0.9, beta1=0.9, beta2=0.999, epsilon=1e-8):
    theta = np.asarray(theta, np.float64)
    state = dict(state)
    t = state.get("t", 0) + 1
    state["t"] = t
    if kind == "SGD":
        return theta - lr * d, state
    if kind == "MOMENTUM":
        v = momentum * state.get("velocity", 0.0) + d
        state["velocity"] = v
        return theta - lr * v, state
    if kind == "ADAM":
        m = beta1 * state.get("m", 0.0) + (1 - beta1) * d
        v = beta2 * state.get("v", 0.0) + (1 - beta2) * d * d
        state["m"], state["v"] = m, v
        m_hat = m / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        return theta - lr * m_hat / (np.sqrt(v_hat) + epsilon), state
    raise ValueError(kind)
