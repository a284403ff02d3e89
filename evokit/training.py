"""The synchronous training loop behind ``evokit train``.

Each generation: the clones add noise, the evaluator returns their rewards, the
agent updates. Every ``train.eval_every`` generations the centre policy is
evaluated over ``train.eval_episodes`` episodes; training stops once their mean
reaches ``train.target_return`` (or after ``train.max_generations``).

Everything random is a pure function of the config: the initial policy of
``train.seed``, the noise keys of the sampling seed and ``train.seed``, the
episode seeds of ``train.seed``, the generation and the sample. The same config
and seed therefore give the same model, bit for bit, for any number of workers
and threads.

Evaluation: by default (``evaluator_kind="auto"``) a policy that runs on the
native backend is evaluated in lockstep by :class:`~evokit.evaluation.VectorEvaluator`
(CartPole: the whole population on one ``CartPoleVectorEnv`` in this process,
one batched policy call per step, ``train.num_workers`` threads); other
policies by worker processes, or in this process for one worker. Every
evaluator gives the same rewards for a deterministic environment, so the
choice changes the speed, not the model.
"""

from __future__ import annotations

import csv
import os
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Union


from . import _core
from . import evokit_pb2 as pb
from .agent import ESAgent
from .config import config_to_text, load_config, validate_config
from .evaluation import Evaluator, check_policy_fits, make_env, make_evaluator
from .model import policy_for_spaces
from .util import atomic_write_bytes

__all__ = ["TrainResult", "train", "episode_seeds"]

_SAMPLE_SEEDS = 0
_EVAL_SEEDS = 1
METRICS_FILE = "metrics.csv"
METRICS_COLUMNS = ["generation", "model_iter_id", "env_steps", "wall_time", "reward_mean",
                   "reward_max", "reward_min", "eval_mean"]


@dataclass
class TrainResult:
    out_dir: str
    model_path: str
    solved: bool
    generations: int
    env_steps: int           # all steps, training samples and centre evaluations
    wall_time: float         # seconds, loop start to model written
    eval_mean: float         # last centre evaluation
    history: List[dict] = field(default_factory=list)


def episode_seeds(seed: int, generation: int, index: int, count: int, tag: int) -> List[int]:
    """Episode seeds of sample ``index`` of ``generation``: a pure function of
    its arguments (``tag`` separates sample episodes from centre evaluations)."""
    return [int(_core.hash_draw(seed, generation, index, tag * 1_000_003 + j) & 0x7FFFFFFF)
            for j in range(count)]


def _resolve_config(config, env_id, seed, num_workers, max_generations) -> pb.EvoKitConfig:
    cfg = load_config(config)
    if env_id is not None:
        cfg.train.env_id = env_id
    if seed is not None:
        cfg.train.seed = seed
    if num_workers is not None:
        cfg.train.num_workers = num_workers
    if max_generations is not None:
        cfg.train.max_generations = max_generations
    validate_config(cfg, source="config (with command-line overrides)")
    return cfg


def train(config: Union[str, os.PathLike, pb.EvoKitConfig], *, env_id: Optional[str] = None,
          seed: Optional[int] = None, out_dir: Optional[str] = None, model=None,
          num_workers: Optional[int] = None, max_generations: Optional[int] = None,
          evaluator: Optional[Evaluator] = None, evaluator_kind: str = "auto",
          log: Optional[Callable[[str], None]] = None) -> TrainResult:
    """Train a policy with ES; write ``model.onnx``, ``solver.pb``,
    ``config.prototxt`` and ``metrics.csv`` to ``out_dir``.

    ``model`` is an ONNX path; without one, an MLP of ``train.hidden_sizes``
    is made for the environment. ``env_id``, ``seed``, ``num_workers`` and
    ``max_generations`` override the config's ``train`` section.
    ``evaluator_kind`` (``"auto"``, ``"vector"``, ``"process"``, ``"serial"``)
    picks the evaluator, see :func:`~evokit.evaluation.make_evaluator`, unless
    an ``evaluator`` is given. ``log``
    receives one progress line per generation (default: print to stdout;
    pass ``lambda s: None`` for quiet).
    """
    t0 = time.perf_counter()
    cfg = _resolve_config(config, env_id, seed, num_workers, max_generations)
    t = cfg.train
    log = log if log is not None else (lambda s: print(s, flush=True))
    out_dir = out_dir if out_dir is not None else os.path.join("runs", f"{t.env_id}-seed{t.seed}")
    os.makedirs(out_dir, exist_ok=True)

    agent = ESAgent()
    agent.load_config(cfg)
    if model is None:
        env = make_env(t.env_id)
        model_proto = policy_for_spaces(env.observation_space, env.action_space,
                                        hidden_sizes=tuple(t.hidden_sizes),
                                        activation=t.activation, seed=t.seed)
        env.close()
        model = os.path.join(out_dir, "init_model.onnx")
        atomic_write_bytes(model, model_proto.SerializeToString())
    agent.load_inference_model(model)
    agent.init_solver()
    agent.sampling_stream = t.seed
    env = make_env(t.env_id)
    check_policy_fits(agent.policy, env)  # a clear error before any worker starts
    env.close()

    population = cfg.solver.population_size
    antithetic = cfg.solver.antithetic
    clones = [agent.clone() for _ in range(population)]
    own_evaluator = evaluator is None
    if not agent.is_gaussian and evaluator is None:
        # CMA / GA samples are rebuilt from the strategy's state, held here only.
        if evaluator_kind not in ("auto", "serial"):
            raise ValueError(f"evaluator_kind {evaluator_kind!r} rebuilds Gaussian noise only; "
                             f"{agent.sampling_type} samples are evaluated in this process: "
                             f"use 'auto' or 'serial'")
        evaluator_kind = "serial"
    evaluator = evaluator or make_evaluator(t.env_id, t.num_workers, kind=evaluator_kind,
                                            policy=agent.policy)
    log(f"evokit train: {t.env_id}, {agent.num_params} parameters, population {population}"
        f"{' (antithetic)' if antithetic else ''}, {t.num_workers} worker(s), seed {t.seed}, "
        f"policy on {agent.policy.backend}, {type(evaluator).__name__}")

    history: List[dict] = []
    env_steps = 0
    eval_mean = float("nan")
    solved = False
    generation = 0
    try:
        for generation in range(1, t.max_generations + 1):
            infos = [c.add_noise() for c in clones]
            seeds = [episode_seeds(t.seed, generation, i // 2 if antithetic else i,
                                   t.episodes_per_sample, _SAMPLE_SEEDS) for i in range(population)]
            result = evaluator.evaluate(agent, infos, seeds)
            env_steps += result.steps
            stats = agent.update(infos, result.rewards)
            row = {"generation": generation, "model_iter_id": agent.model_iter_id,
                   "env_steps": env_steps, "reward_mean": stats["reward_mean"],
                   "reward_max": stats["reward_max"], "reward_min": stats["reward_min"],
                   "eval_mean": ""}
            if generation % t.eval_every == 0 or generation == t.max_generations:
                centre = evaluator.evaluate(
                    agent, [None] * t.eval_episodes,
                    [episode_seeds(t.seed, generation, i, 1, _EVAL_SEEDS) for i in range(t.eval_episodes)])
                env_steps += centre.steps
                eval_mean = float(centre.rewards.mean())
                row["eval_mean"] = eval_mean
                row["env_steps"] = env_steps
                solved = eval_mean >= t.target_return
            row["wall_time"] = time.perf_counter() - t0
            history.append(row)
            log(_progress_line(row))
            if solved:
                break
    finally:
        if own_evaluator:
            evaluator.close()

    model_path = agent.save_inference_model(out_dir)
    agent.save_solver(out_dir)
    atomic_write_bytes(os.path.join(out_dir, "config.prototxt"), config_to_text(cfg).encode())
    _write_metrics(os.path.join(out_dir, METRICS_FILE), history)
    wall = time.perf_counter() - t0
    log(f"{'solved' if solved else 'not solved'}: centre return {eval_mean:.1f} "
        f"(target {t.target_return:g}) after {generation} generations, {env_steps:,} env steps, "
        f"{wall:.1f} s; model written to {model_path}")
    return TrainResult(out_dir=out_dir, model_path=model_path, solved=solved,
                       generations=generation, env_steps=env_steps, wall_time=wall,
                       eval_mean=eval_mean, history=history)


def _progress_line(row: dict) -> str:
    line = (f"gen {row['generation']:4d}  steps {row['env_steps']:>9,}  "
            f"reward mean {row['reward_mean']:8.2f} max {row['reward_max']:8.2f} "
            f"min {row['reward_min']:8.2f}  {row['wall_time']:6.1f} s")
    if row["eval_mean"] != "":
        line += f"  centre {row['eval_mean']:8.2f}"
    return line


def _write_metrics(path: str, history: List[dict]) -> None:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=METRICS_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in history:
        writer.writerow(row)
    atomic_write_bytes(path, buf.getvalue().encode())
