"""Ray backend scaling: env steps/s against Ray workers on a MuJoCo task.

For each worker count, a fresh local Ray instance with that many CPUs and a
:class:`evokit.evaluation.ray_backend.RayEvaluator` run the same ES generations
(configs/hopper_openai_es.prototxt: Hopper-v5, population 40, antithetic, the same
seeds, so every worker count simulates exactly the same episodes and the
same env steps). The in-process local evaluator (`backend="local"`, one
worker: the native policy in lockstep on a SyncVectorEnv) is the baseline.

Per generation it records

- eval: wall time of `evaluate()` on the driver;
- put: the `ray.put` of the centre parameters (the broadcast);
- busy: evaluation time measured inside the actors, summed over chunks;
- update: `ESAgent.update` (fitness shaping, gradient, Adam) on the driver;

and reports env steps/s = steps / (eval + update), the update's share of the
generation, and the communication share: the part of `evaluate()` that is
not the actors' own work, (eval - busy / workers) / generation, i.e. the
broadcast, task dispatch, result transfer and waiting for the last chunk.

    python bench/ray_scaling.py                       # workers 1 and 2, 8 generations
    python bench/ray_scaling.py --workers 1 2 4 --generations 4 --out /tmp/bench
    python bench/ray_scaling.py --model runs/Hopper-v5-seed0/model.onnx   # long episodes

Needs `pip install 'evokit-es[ray,mujoco]'` (from a checkout: `pip install '.[ray,mujoco]'`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402
CONFIG = os.path.join(ROOT, "configs", "hopper_openai_es.prototxt")


def _agent(cfg, tmp, model_path=None):
    import evokit
    from evokit.evaluation.envs import policy_for_env

    path = model_path
    if path is None:
        model = policy_for_env(cfg.train.env_id, hidden_sizes=cfg.train.hidden_sizes,
                               activation=cfg.train.activation, seed=cfg.train.seed)
        path = os.path.join(tmp, "init_model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
    agent = evokit.ESAgent()
    agent.load_config(cfg)
    agent.load_inference_model(path)
    agent.init_solver()
    agent.sampling_stream = cfg.train.seed
    return agent


def run(cfg, evaluator, generations: int, model_path=None):
    """Per-generation timings of `generations` ES generations."""
    from evokit.evaluation.seeds import episode_seeds

    with tempfile.TemporaryDirectory() as tmp:
        agent = _agent(cfg, tmp, model_path)
        n = cfg.solver.population_size
        clones = [agent.clone() for _ in range(n)]
        rows = []
        for g in range(1, generations + 1):
            infos = [c.add_noise() for c in clones]
            seeds = [episode_seeds(cfg.train.seed, g, i // 2, 1, 0) for i in range(n)]
            t0 = time.perf_counter()
            result = evaluator.evaluate(agent, infos, seeds)
            t1 = time.perf_counter()
            stats = agent.update(infos, result.rewards)
            t2 = time.perf_counter()
            timing = getattr(evaluator, "last_timing", {})
            rows.append({"generation": g, "steps": result.steps, "eval": t1 - t0,
                         "update": t2 - t1, "put": timing.get("put", 0.0),
                         "busy": timing.get("worker_busy", t1 - t0),
                         "reward_mean": stats["reward_mean"]})
    return rows


def summarise(label: str, workers: int, rows) -> dict:
    rows = rows[1:] if len(rows) > 1 else rows  # generation 1 warms up (actor start, env make)
    steps = sum(r["steps"] for r in rows)
    gen = sum(r["eval"] + r["update"] for r in rows)
    comm = sum(r["eval"] - r["busy"] / workers for r in rows)
    return {"backend": label, "workers": workers, "generations": len(rows), "env_steps": steps,
            "steps_per_s": steps / gen, "gen_ms": 1e3 * gen / len(rows),
            "put_ms": 1e3 * statistics.mean(r["put"] for r in rows),
            "comm_share": max(0.0, comm) / gen,
            "update_share": sum(r["update"] for r in rows) / gen,
            "reward_means": [r["reward_mean"] for r in rows]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--model", help="start from this ONNX policy (e.g. a trained model.onnx, whose "
                                   "normalisation nodes it keeps; longer episodes) instead of a "
                                   "fresh MLP")
    add_out_argument(p, "ray_scaling")
    args = p.parse_args(argv)

    import ray

    import evokit
    from evokit.evaluation.factory import make_evaluator
    from evokit.evaluation.ray_backend import RayEvaluator, init_ray

    report = Report("ray_scaling", "Ray backend scaling (bench/ray_scaling.py)")
    cfg = evokit.load_config(args.config)
    results = []
    with make_evaluator(cfg.train.env_id, 1) as local:
        results.append(summarise("local", 1, run(cfg, local, args.generations, args.model)))
    for w in args.workers:
        init_ray(num_cpus=w)
        try:
            with RayEvaluator(cfg.train.env_id, w) as ev:
                results.append(summarise("ray", w, run(cfg, ev, args.generations, args.model)))
        finally:
            ray.shutdown()
    same = all(r["reward_means"] == results[0]["reward_means"] for r in results)

    base = results[0]["steps_per_s"]
    report.print(f"{cfg.train.env_id}, population {cfg.solver.population_size}, "
                 f"{args.model or 'fresh MLP'}, {args.generations - 1} timed generations (+1 warm-up)")
    report.print(f"same rewards on every backend and worker count: {same}\n")
    report.print("| backend | workers | env steps/s | vs local | generation (ms) | ray.put (ms) "
                 "| communication | update |")
    report.print("|---|---|---|---|---|---|---|---|")
    for r in results:
        report.print(f"| {r['backend']} | {r['workers']} | {r['steps_per_s']:,.0f} | "
                     f"{r['steps_per_s'] / base:.2f}x | {r['gen_ms']:.0f} | {r['put_ms']:.2f} | "
                     f"{100 * r['comm_share']:.1f}% | {100 * r['update_share']:.2f}% |")
    report.write(args.out, {"results": results, "same_rewards": same})
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
