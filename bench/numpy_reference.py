"""NumPy reference implementations for the benchmarks: what a user writes
without EvoKit.

- :class:`NumpyCartPole`: gymnasium's CartPole-v1 for a whole population at
  once, one float64 state row per member (the dynamics of
  ``CartPoleEnv.step``, vectorised over members).
- :func:`mlp_forward`: the batched forward pass of a population of tanh MLPs,
  one parameter row per member (``numpy.matmul`` over stacked weights).
- :func:`evaluate_population`: one episode per member in lockstep, members
  whose episode ended dropped from every later step; the counted env steps
  are the steps members took inside their episodes.
- :func:`openai_es`: the OpenAI-ES loop (antithetic pairs, centered ranks,
  Adam) that trains with it.

Episodes start where ``CartPoleEnv.reset(seed=s)`` starts
(``gymnasium.utils.seeding.np_random``), so on the same parameters the
returns are those of EvoKit's evaluators; bench/run.py checks this.
"""

from __future__ import annotations

import time
from typing import List, Sequence, Tuple

import numpy as np

GRAVITY, MASSCART, MASSPOLE, LENGTH, FORCE_MAG, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASSPOLE + MASSCART
POLEMASS_LENGTH = MASSPOLE * LENGTH
THETA_THRESHOLD = 12 * 2 * np.pi / 360
X_THRESHOLD = 2.4


def reset_states(seeds: Sequence[int]) -> np.ndarray:
    """(N, 4) float64: the states CartPoleEnv.reset(seed) starts from."""
    from gymnasium.utils import seeding

    return np.stack([seeding.np_random(int(s))[0].uniform(-0.05, 0.05, size=(4,)) for s in seeds])


def cartpole_step(state: np.ndarray, action: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """CartPoleEnv.step for rows of `state` (N, 4) and actions (N,): the new
    states and whether each episode terminated."""
    x, x_dot, theta, theta_dot = state.T
    force = np.where(action == 1, FORCE_MAG, -FORCE_MAG)
    costheta, sintheta = np.cos(theta), np.sin(theta)
    temp = (force + POLEMASS_LENGTH * np.square(theta_dot) * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * np.square(costheta) / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    new = np.stack([x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot,
                    theta_dot + TAU * thetaacc], axis=1)
    terminated = ((new[:, 0] < -X_THRESHOLD) | (new[:, 0] > X_THRESHOLD)
                  | (new[:, 2] < -THETA_THRESHOLD) | (new[:, 2] > THETA_THRESHOLD))
    return new, terminated


def split_params(params: np.ndarray, shapes: Sequence[Tuple[int, ...]]) -> List[np.ndarray]:
    """Views of a (N, P) parameter matrix as stacked per-layer arrays (N, *shape)."""
    out, off = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        out.append(params[:, off:off + size].reshape((params.shape[0],) + tuple(shape)))
        off += size
    return out


def mlp_forward(layers: Sequence[np.ndarray], obs: np.ndarray) -> np.ndarray:
    """Outputs (N, out) of N tanh MLPs, member i on obs[i]: layers alternate
    weights (N, in, out) and biases (N, out), tanh between layers."""
    x = obs[:, None, :]
    for i in range(0, len(layers), 2):
        x = np.matmul(x, layers[i]) + layers[i + 1][:, None, :]
        if i + 2 < len(layers):
            x = np.tanh(x)
    return x[:, 0, :]


def evaluate_population(params: np.ndarray, shapes, seeds: Sequence[int],
                        max_steps: int = 500) -> Tuple[np.ndarray, int]:
    """Returns (N,) and counted env steps of one episode per member."""
    params = np.ascontiguousarray(params, np.float32)
    n = params.shape[0]
    layers = split_params(params, shapes)
    state = reset_states(seeds)
    alive = np.arange(n)
    returns = np.zeros(n)
    steps = 0
    for _ in range(max_steps):
        sub = [w[alive] for w in layers] if len(alive) < n else layers
        out = mlp_forward(sub, state[alive].astype(np.float32))
        state[alive], terminated = cartpole_step(state[alive], out.argmax(axis=1))
        returns[alive] += 1.0
        steps += len(alive)
        alive = alive[~terminated]
        if len(alive) == 0:
            break
    return returns, steps


def centered_ranks(x: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(x))
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x))
    return ranks / (len(x) - 1) - 0.5


def openai_es(theta: np.ndarray, shapes, *, population: int, sigma: float, lr: float,
              seed: int, max_generations: int, eval_every: int, eval_episodes: int,
              target: float) -> dict:
    """OpenAI-ES with Adam on CartPole-v1 until the centre's mean return over
    `eval_episodes` reaches `target`; everything batched with NumPy."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    theta = theta.astype(np.float64)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    beta1, beta2, eps_adam = 0.9, 0.999, 1e-8
    steps, centre, generation = 0, float("nan"), 0
    pairs = population // 2
    for generation in range(1, max_generations + 1):
        eps = rng.standard_normal((pairs, theta.size))
        eps = np.concatenate([eps, -eps])
        ep_seeds = rng.integers(0, 2**31, pairs)
        rewards, n = evaluate_population(theta + sigma * eps, shapes, np.concatenate([ep_seeds, ep_seeds]))
        steps += n
        grad = -(centered_ranks(rewards) @ eps) / (len(eps) * sigma)  # descent direction
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad * grad
        mhat = m / (1 - beta1 ** generation)
        vhat = v / (1 - beta2 ** generation)
        theta = theta - lr * mhat / (np.sqrt(vhat) + eps_adam)
        if generation % eval_every == 0:
            seeds = rng.integers(0, 2**31, eval_episodes)
            r, n = evaluate_population(np.tile(theta, (eval_episodes, 1)), shapes, seeds)
            steps += n
            centre = float(r.mean())
            if centre >= target:
                break
    return {"solved": bool(centre >= target), "generations": generation, "env_steps": int(steps),
            "centre": centre, "loop_time": time.perf_counter() - t0}
