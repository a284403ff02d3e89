"""A compact NumPy reference of what EvoKit computes, used as a test oracle.

- ``philox4x32``: Philox4x32-10, which draws sampling keys (hash_draw);
- ``ars4x32`` / ``gaussians``: the counter-based noise (ARS4x32-5 and a
  float32 Box-Muller transform), written from the Random123 paper, FIPS-197
  and the transform's specification in noise.h, not from our C++;
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


# ---- ARS4x32 (Random123), from the paper and FIPS-197 -------------------------

def _gf_mul(a, b):
    p = 0
    for _ in range(8):
        if b & 1:
            p ^= a
        a = ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF
        b >>= 1
    return p


def _sbox():
    box = np.zeros(256, np.uint8)
    for x in range(256):
        inv = 0
        for y in range(1, 256):  # the multiplicative inverse, 0 for 0
            if _gf_mul(x, y) == 1:
                inv = y
                break
        b = inv
        for _ in range(4):  # b ^ rotl(b, 1) ^ ... ^ rotl(b, 4) ^ 0x63
            inv = ((inv << 1) | (inv >> 7)) & 0xFF
            b ^= inv
        box[x] = b ^ 0x63
    return box


SBOX = _sbox()
# ShiftRows on bytes 4c + r (column c, row r): row r moves left by r.
SHIFT_ROWS = np.array([4 * ((c + r) % 4) + r for c in range(4) for r in range(4)])
WEYL = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
MASK64 = (1 << 64) - 1


def _xtime(a):
    return ((a << 1) ^ np.where(a & 0x80, 0x1B, 0)).astype(np.uint8)


def _aes_round(state, round_key, last):
    """AESENC (or AESENCLAST) of (n, 16) uint8 states."""
    t = SBOX[state][:, SHIFT_ROWS]
    if not last:
        a = t.reshape(-1, 4, 4)  # [block, column, row]
        x = _xtime(a)
        rot1, rot2, rot3 = (np.roll(a, -k, axis=2) for k in (1, 2, 3))
        t = (x ^ np.roll(x, -1, axis=2) ^ rot1 ^ rot2 ^ rot3).reshape(-1, 16)
    return t ^ round_key


def _words_to_bytes(words):
    return np.asarray(words, dtype="<u4").reshape(-1, 4).view(np.uint8).reshape(-1, 16)


NOISE_ARS_ROUNDS = 5  # the rounds of the noise (noise version 4)


def ars4x32(counters, key, rounds=NOISE_ARS_ROUNDS):
    """ARS4x32-``rounds`` of each counter (rows of four 32-bit words) under
    one key of four words: rk_r = key + r * WEYL per 64-bit half,
    v = ctr ^ rk_0, AESENC with rk_1 .. rk_{R-1}, AESENCLAST with rk_R."""
    k = [int(x) & MASK for x in key]
    lo, hi = k[0] | (k[1] << 32), k[2] | (k[3] << 32)
    state = _words_to_bytes(counters)
    for r in range(rounds + 1):
        rk = np.frombuffer((((lo + r * WEYL[0]) & MASK64) | (((hi + r * WEYL[1]) & MASK64) << 64))
                           .to_bytes(16, "little"), np.uint8)
        state = state ^ rk if r == 0 else _aes_round(state, rk, r == rounds)
    return np.ascontiguousarray(state).view("<u4").reshape(-1, 4).astype(np.uint32)


# ---- the float32 Box-Muller transform of noise.h ------------------------------

def _tables():
    j = np.arange(32)
    ln = np.log1p(j / 32) - np.where(j >= 16, np.log(2), 0.0)
    centre = (2 * j + 1) * np.pi / 32
    return (ln.astype(np.float32), (32 / (32 + j)).astype(np.float32),
            np.cos(centre).astype(np.float32), np.sin(centre).astype(np.float32))


LN_TABLE, RECIP_TABLE, COS_TABLE, SIN_TABLE = _tables()
# sin(a h) ~ a (SIN1 + a^2 SIN3), h = pi / 16: the minimax fit (absolute
# error) on [-1/2, 1/2] that noise.h gives as float32 bits; cos(a h) by its
# Taylor coefficients rounded to float32.
_H = np.pi / 16
SIN1, SIN3 = np.uint32(0x3E490FD7).view(F), np.uint32(0xBAA54469).view(F)
COS2, COS4 = F(-_H ** 2 / 2), F(_H ** 4 / 24)


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def box_muller_f32(wr, wa):
    """The float32 Box-Muller transform of noise.h, step by step in NumPy
    float32 arithmetic (each operation rounded once, as in the C++): radius
    words and angle words (uint32) in, (z0, z1) out."""
    wr = np.asarray(wr, dtype=np.uint32)
    wa = np.asarray(wa, dtype=np.uint32)
    k = ((wr >> np.uint32(8)) + np.uint32(1)).astype(np.float32)   # exact, <= 2**24
    bits = k.view(np.uint32)
    j = (bits >> np.uint32(18)) & np.uint32(31)
    m = ((bits & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000)).view(np.float32)
    c = ((bits & np.uint32(0x007C0000)) | np.uint32(0x3F800000)).view(np.float32)
    n = ((bits + np.uint32(0x00400000)) >> np.uint32(23)).astype(np.int32) - 151
    t = (m - c) * RECIP_TABLE[j]
    p = t + t * (t * (F(-0.5) + t * (F(1) / F(3) + t * F(-0.25))))
    ln_u = n.astype(np.float32) * F(np.log(2)) + (LN_TABLE[j] + p)
    y = F(-2) * ln_u
    r = np.sqrt(np.where(y > 0, y, F(0)))  # +0 where y is -0 (u = 1)
    s = wa >> np.uint32(27)
    a = ((wa & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - F(1.5)
    a2 = a * a
    sd = a * (SIN1 + a2 * SIN3)
    cd = F(1) + a2 * (COS2 + a2 * COS4)
    cj, sj = COS_TABLE[s], SIN_TABLE[s]
    return _f32(r * (cj * cd - sj * sd)), _f32(r * (sj * cd + cj * sd))


def uniforms(wr, wa):
    """The uniforms the transform realises: u in (0, 1] and theta in [0, 2 pi)."""
    u = ((np.asarray(wr, np.uint64) >> 8) + 1) * 2.0 ** -24
    wa = np.asarray(wa, np.uint32)
    a = (wa & np.uint32(0x007FFFFF)).astype(np.float64) * 2.0 ** -23 - 0.5
    theta = (2 * (wa >> np.uint32(27)).astype(np.float64) + 1) * np.pi / 32 + a * np.pi / 16
    return u, theta


def box_muller_exact(wr, wa):
    """The exact Box-Muller transform (float64) of the same u and theta."""
    u, theta = uniforms(wr, wa)
    r = np.sqrt(-2.0 * np.log(u))
    return r * np.cos(theta), r * np.sin(theta)


def gaussians(seed, stream, start, n):
    """Normals start .. start + n - 1 of ``stream`` under ``seed`` (noise.h)."""
    first, last = start // 4, (start + n - 1) // 4
    blocks = np.arange(first, last + 1, dtype=np.uint64)
    counters = np.stack([blocks & MASK, blocks >> np.uint64(32),
                         np.full_like(blocks, stream & MASK), np.full_like(blocks, stream >> 32)],
                        axis=1).astype(np.uint32)
    w = ars4x32(counters, [seed & MASK, seed >> 32, 0, 0])
    z = np.empty((len(blocks), 4), np.float32)
    z[:, 0], z[:, 1] = box_muller_f32(w[:, 0], w[:, 1])
    z[:, 2], z[:, 3] = box_muller_f32(w[:, 2], w[:, 3])
    return z.reshape(-1)[start - 4 * first:start - 4 * first + n]


def gaussian(seed, stream, index):
    """Normal number ``index`` of ``stream`` under ``seed`` (see noise.h)."""
    return gaussians(seed, stream, index, 1)[0]


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
