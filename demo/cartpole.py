"""EvoKit's minimal example, in Python: train CartPole-v1 with ES.

The same steps as the C++ example in EvoKit's docs, top to bottom:
  1. make a policy network (here: a 4-16-2 MLP written as ONNX),
  2. build an ESAgent: load_config, load_inference_model, init_solver,
  3. clone sampling agents; each add_noise()s and is evaluated,
  4. update the agent from the sampling infos and rewards, and repeat.

    python demo/cartpole.py            # train until the centre policy averages >= 475
    python demo/cartpole.py --quick    # a few generations (what CI runs)
"""

import argparse
import os
import sys
import tempfile

import gymnasium as gym
import numpy as np

import evokit
from evokit.policy.mlp import init_mlp

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "configs", "cartpole.prototxt")


def evaluate(env, agent, seed):
    """Return of one episode; the action is the argmax of the policy's scores."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        action = int(np.argmax(agent.predict(obs.astype(np.float32))))
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="run 3 generations only")
    parser.add_argument("--generations", type=int, default=100)
    args = parser.parse_args()
    generations = 3 if args.quick else args.generations

    # step 1: the policy network, saved as ONNX
    model_dir = tempfile.mkdtemp(prefix="evokit-cartpole-")
    model_path = os.path.join(model_dir, "model.onnx")
    with open(model_path, "wb") as f:
        f.write(init_mlp(obs_dim=4, act_dim=2, hidden_sizes=(16,), seed=0).SerializeToString())

    # step 2: the agent
    agent = evokit.ESAgent()
    agent.load_config(CONFIG)
    agent.load_inference_model(model_path)
    agent.init_solver()

    # step 3: sampling agents; clone() shares the model session and noise table
    population = agent.config.solver.population_size
    sampling_agents = [agent.clone() for _ in range(population)]
    env = gym.make("CartPole-v1")

    for epoch in range(generations):
        sampling_infos, rewards = [], []
        for i, sampling_agent in enumerate(sampling_agents):
            sampling_info = sampling_agent.add_noise()
            rewards.append(evaluate(env, sampling_agent, seed=epoch * population + i // 2))
            sampling_infos.append(sampling_info)

        # step 4: update; the sampling agents see the new parameters at once
        agent.update(sampling_infos, rewards)
        centre = np.mean([evaluate(env, agent, seed=10_000 + k) for k in range(5)])
        print(f"epoch {epoch:3d}  population mean {np.mean(rewards):7.1f}  centre {centre:6.1f}")
        if centre >= 475:
            break

    agent.save_inference_model(model_dir)
    agent.save_solver(model_dir)
    print(f"model and solver saved to {model_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
