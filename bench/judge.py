"""Judge a saved policy as a user would: ``model.onnx`` run by plain
onnxruntime (no EvoKit code) on fresh episodes of a gymnasium environment.

    python bench/judge.py runs/Hopper-v5-seed0/model.onnx --env Hopper-v5 --episodes 10

Fresh: episode j is ``env.reset(seed=JUDGE_SEED_BASE + j)``; training draws
its episode seeds from ``hash_draw(...) & 0x7FFFFFFF`` (below 2**31), so the
judge's seeds (from 2**31 up) are never ones training saw. The action is the
argmax of the model's output for a Discrete action space, else the output
itself (the model maps it into the bounds if it was made to).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List

import numpy as np

#: The first episode seed of a judgement (above every training seed).
JUDGE_SEED_BASE = 2**31


def judge(model_path: str, env_id: str, episodes: int, seed_base: int = JUDGE_SEED_BASE) -> List[float]:
    """The returns of ``episodes`` fresh episodes of the model in onnxruntime."""
    import gymnasium as gym
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    env = gym.make(env_id)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    returns = []
    try:
        for j in range(episodes):
            obs, _ = env.reset(seed=seed_base + j)
            total, done = 0.0, False
            while not done:
                out = session.run(None, {name: np.asarray(obs, np.float32).reshape(1, -1)})[0][0]
                action = int(np.argmax(out)) if discrete else out.reshape(env.action_space.shape)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--env", required=True)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed-base", type=int, default=JUDGE_SEED_BASE)
    p.add_argument("--json", action="store_true", help="print the returns as JSON")
    args = p.parse_args(argv)
    returns = judge(args.model, args.env, args.episodes, args.seed_base)
    if args.json:
        print(json.dumps(returns))
    else:
        print(f"{args.model} on {args.env}: mean {np.mean(returns):.1f} over {len(returns)} fresh "
              f"episodes (min {np.min(returns):.1f}, max {np.max(returns):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
