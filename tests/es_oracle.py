"""A compact NumPy reference of what EvoKit computes, used as a test oracle.

- ``philox4x32`` / ``gaussian``: the counter-based noise (Philox4x32-10 and
  a float32 Box-Muller transform), written from the paper and from the
  transform's specification in philox.h, not from our C++;
  ``box_muller_exact`` is the textbook transform it must stay close to.
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


F = np.float32


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def box_muller_f32(w0, w1):
    """The float32 Box-Muller transform of philox.h, step by step in NumPy
    float32 arithmetic (each operation rounded once, as in the C++): two
    arrays of uint32 words in, (z0, z1) out."""
    w0 = np.asarray(w0, dtype=np.uint32)
    w1 = np.asarray(w1, dtype=np.uint32)
    k = ((w0 >> np.uint32(8)) + np.uint32(1)).astype(np.float32)   # exact, <= 2**24
    bits = k.view(np.uint32)
    e = (bits >> np.uint32(23)).astype(np.int32) - 127
    m = ((bits & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000)).view(np.float32)
    big = m > F(1.41421356)
    m = np.where(big, m * F(0.5), m)
    e = np.where(big, e + 1, e)
    f = m - F(1)
    s = f / (f + F(2))
    s2 = s * s
    poly = s2 * (F(1) / F(3) + s2 * (F(1) / F(5) + s2 * (F(1) / F(7) + s2 * (F(1) / F(9)))))
    h = s + s * poly
    ln_u1 = (e - 24).astype(np.float32) * F(0.693147181) + (h + h)
    r = np.sqrt(F(-2) * ln_u1)
    q = w1 >> np.uint32(30)
    x = ((w1 >> np.uint32(6)) & np.uint32(0x00FFFFFF)).astype(np.float32) * F(2.0 ** -24) \
        * F(1.57079633)
    x2 = x * x
    sin3, sin5, sin7 = -F(1) / F(6), F(1) / F(120), -F(1) / F(5040)
    sin9, sin11 = F(1) / F(362880), -F(1) / F(39916800)
    cos2, cos4, cos6 = -F(1) / F(2), F(1) / F(24), -F(1) / F(720)
    cos8, cos10, cos12 = F(1) / F(40320), -F(1) / F(3628800), F(1) / F(479001600)
    sin_x = x + x * (x2 * (sin3 + x2 * (sin5 + x2 * (sin7 + x2 * (sin9 + x2 * sin11)))))
    cos_x = F(1) + x2 * (cos2 + x2 * (cos4 + x2 * (cos6 + x2 * (cos8 + x2 * (cos10 + x2 * cos12)))))
    odd = (q & np.uint32(1)) == 1
    c = np.where(odd, sin_x, cos_x)
    d = np.where(odd, cos_x, sin_x)
    cos_t = np.where((q == 1) | (q == 2), -c, c)
    sin_t = np.where(q >= 2, -d, d)
    return _f32(r * cos_t), _f32(r * sin_t)


def box_muller_exact(w0, w1):
    """The exact Box-Muller transform (float64) of the same 24-bit uniforms:
    u1 = ((w0 >> 8) + 1) 2^-24, theta = 2 pi (w1 >> 6) 2^-26."""
    u1 = ((np.asarray(w0, np.uint64) >> 8) + 1) * 2.0 ** -24
    theta = 2 * np.pi * (np.asarray(w1, np.uint64) >> 6) * 2.0 ** -26
    r = np.sqrt(-2.0 * np.log(u1))
    return r * np.cos(theta), r * np.sin(theta)


def gaussian(seed, stream, index):
    """Normal number ``index`` of ``stream`` under ``seed`` (see philox.h)."""
    block, lane = divmod(index, 4)
    w = philox4x32([block & MASK, block >> 32, stream & MASK, stream >> 32],
                   [seed & MASK, seed >> 32])
    a, b = (w[0], w[1]) if lane < 2 else (w[2], w[3])
    z0, z1 = box_muller_f32([a], [b])
    return (z0 if lane % 2 == 0 else z1)[0]


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
