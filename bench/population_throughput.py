"""Population evaluation throughput: env steps/s of a population of 4-64-64-2
tanh MLPs on CartPole-v1, VectorEvaluator's modes against SerialEvaluator.
(bench/run.py compares EvoKit with the peers; this script compares EvoKit's
own evaluators.)

One generation's evaluation as `evokit train` runs it: a population of
perturbed clones (antithetic pairs, sigma from configs/cartpole.prototxt),
one episode each, every pair on its own episode seed, all in one process.
Two kinds of centre policy:

- "fresh": the initial MLP (init_mlp, seed 0): short episodes of uneven length;
- "balancing": the fresh MLP trained by `evokit.train` until its centre
  balances for 500 steps, so most members run full-length episodes.

    python bench/population_throughput.py                 # population 256
    python bench/population_throughput.py --population 64 --repeats 5

Writes bench/results/population_throughput.json and .md (``--out DIR`` elsewhere).

Reported: env steps per second (steps counted as the evaluators count them:
only members still in their episode), median of the repeats, and the ratio to
SerialEvaluator with the same native policy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(os.path.dirname(HERE), "configs", "cartpole.prototxt")
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402


def make_agent(model_path: str, backend: str = "native"):
    import evokit

    agent = evokit.ESAgent()
    agent.load_config(CONFIG)
    agent.load_inference_model(model_path, backend=backend)
    agent.init_solver()
    return agent


def balancing_model(out_dir: str, fresh: str) -> str:
    import evokit

    cfg = evokit.load_config(CONFIG)
    cfg.train.max_generations = 100
    res = evokit.train(cfg, model=fresh, out_dir=out_dir, log=lambda s: None)
    if not res.solved:
        raise RuntimeError("training the 4-64-64-2 policy did not reach the target")
    return res.model_path


def draws(agent, population: int, repeats: int) -> list:
    """The populations to evaluate (the same for every evaluator): per repeat,
    the infos of `population` clones and one episode seed per antithetic pair."""
    clones = [agent.clone() for _ in range(population)]
    out = []
    for r in range(repeats):
        infos = [c.add_noise() for c in clones]
        out.append((infos, [[1000 * r + i // 2] for i in range(population)]))
    return out


def measure(evaluator, agent, batches: list) -> tuple:
    rates, steps = [], []
    evaluator.evaluate(agent, [None], [[0]])  # warm up (env creation, checks)
    for infos, seeds in batches:
        t0 = time.perf_counter()
        result = evaluator.evaluate(agent, infos, seeds)
        dt = time.perf_counter() - t0
        rates.append(result.steps / dt)
        steps.append(result.steps)
    return statistics.median(rates), statistics.median(steps) / len(batches[0][0])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--population", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--serial-repeats", type=int, default=1)
    add_out_argument(p, "population_throughput")
    args = p.parse_args()
    report = Report("population_throughput", "Population evaluation throughput, EvoKit's evaluators "
                                             "(bench/population_throughput.py)")
    figures = []

    from evokit.evaluation.serial import SerialEvaluator
    from evokit.evaluation.vector import VectorEvaluator
    from evokit.policy.mlp import init_mlp

    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, "fresh.onnx")
        with open(fresh, "wb") as f:
            f.write(init_mlp(4, 2, (64, 64), "tanh", seed=0).SerializeToString())
        models = {"fresh": fresh, "balancing": balancing_model(os.path.join(tmp, "run"), fresh)}
        report.print(f"CartPole-v1, population {args.population} of 4-64-64-2 tanh MLPs, median of "
                     f"{args.repeats} (serial: {args.serial_repeats})\n")
        report.print("| centre policy | evaluator | threads | mean episode length | env steps/s | vs serial |")
        report.print("| --- | --- | --- | --- | --- | --- |")
        for name, path in models.items():
            agent = make_agent(path)
            batches = draws(agent, args.population, args.repeats)
            serial_batches = batches[:args.serial_repeats]
            rows = []
            with SerialEvaluator("CartPole-v1") as ev:
                serial, length = measure(ev, agent, serial_batches)
            rows.append(("SerialEvaluator (native policy)", 1, serial, length))
            ort_agent = make_agent(path, "onnxruntime")
            with SerialEvaluator("CartPole-v1") as ev:
                ort, length = measure(ev, ort_agent, serial_batches)
            rows.append(("SerialEvaluator (onnxruntime policy)", 1, ort, length))
            for mode, label in (("native", "VectorEvaluator (native, in C++)"),
                                ("vector_entry_point", "VectorEvaluator (CartPoleVectorEnv)")):
                for threads in (1, 2):
                    with VectorEvaluator("CartPole-v1", num_threads=threads, vectorization_mode=mode) as ev:
                        rate, length = measure(ev, agent, batches)
                    rows.append((label, threads, rate, length))
            with VectorEvaluator("CartPole-v1", vectorization_mode="sync") as ev:
                rate, length = measure(ev, agent, batches)
            rows.append(("VectorEvaluator (sync)", 1, rate, length))
            for label, threads, rate, length in rows:
                figures.append({"centre": name, "evaluator": label, "threads": threads,
                                "mean_episode_length": length, "steps_per_s": rate, "vs_serial": rate / serial})
                report.print(f"| {name} | {label} | {threads} | {length:.1f} | {rate:,.0f} | "
                             f"{rate / serial:.1f}x |")
    report.write(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
