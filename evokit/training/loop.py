"""The synchronous training loop behind ``evokit train``.

Each generation: the clones add noise, the evaluator returns their rewards, the
agent updates. Every ``train.eval_every`` generations the centre policy is
evaluated over ``train.eval_episodes`` episodes; training stops once their mean
reaches ``train.target_return`` (or after ``train.max_generations``).

Everything random is a pure function of the config: the initial policy of
``train.seed``, the noise keys of the sampling seed and ``train.seed``, the
episode seeds of ``train.seed``, the generation and the sample (the pair, for
a solver whose members are mirrored pairs: ``Solver.mirrored_pairs``). The same config
and seed therefore give the same model, bit for bit, for any number of workers
and threads.

Keys: sample ``i`` of generation ``g`` perturbs the centre with the key
``sampler.draw_key(model_iter_id, pair, g - 1, train.seed)`` (``pair = i // 2``
with antithetic sampling, else ``i``; the odd member of a pair mirrored): what
clone ``i`` drawing once per generation would get, computed here from the
generation alone, so that a resumed run draws exactly the keys an
uninterrupted one draws.

Checkpoints: at the start, at the end, on a solve, after the generation in
progress when SIGINT or SIGTERM arrives, and in between every
``checkpoint_every`` generations or, by default, by time (once
``checkpoint_seconds`` and 20 times the last checkpoint's duration have
passed: at most 5 % of the run), ``RUN_DIR/checkpoint.pb`` is written atomically
(:mod:`evokit.training.checkpoint`): the centre model, the solver state, the
metrics and the counters. It is built in memory, from the model and solver
state that ``model.onnx`` and ``solver.pb`` are written from (nothing is read
back), and holds the run's metrics rows, one appended per generation.
``train(..., resume=True)`` (``evokit train --resume RUN_DIR``) continues from
it and reaches the model, bit for bit, that the uninterrupted run reaches.

Evaluation: by default (``evaluator_kind="auto"``) a policy that runs on the
native backend is evaluated in lockstep by
:class:`~evokit.evaluation.vector.VectorEvaluator` (CartPole: the whole
population on one ``CartPoleVectorEnv`` in this process, one batched policy
call per step, ``train.num_workers`` threads); other policies by worker
processes, or in this process for one worker. Every
evaluator gives the same rewards for a deterministic environment, so the
choice changes the speed, not the model.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from .. import evokit_pb2 as pb
from ..agent import MODEL_FILE, SOLVER_FILE, ESAgent
from ..config import config_to_text, load_config, parse_config
from ..errors import EnvError
from ..evaluation.base import Evaluator
from ..evaluation.envs import check_policy_fits, make_env
from ..evaluation.factory import make_evaluator
from ..evaluation.obsnorm import OBS_NORM_FILE, ObsNorm, RunningStat, with_obs_norm
from ..evaluation.ray_backend import RayEvaluator
from ..evaluation.seeds import EVAL_TAG, SAMPLE_TAG, episode_seeds
from ..policy.mlp import policy_for_spaces
from ..policy.onnx_policy import write_model_bytes
from ..statefile import write_state_file
from ..util import atomic_write_bytes
from .checkpoint import CHECKPOINT_FILE, check_resumable, read_checkpoint, write_checkpoint
from .metrics import COLUMNS as METRICS_COLUMNS
from .metrics import MetricsFile, TensorBoardWriter, row_from_proto, row_to_proto
from .metrics import metrics_format as metrics_format_of
from .progress import NORMAL, Progress

__all__ = ["EVALUATION_BACKENDS", "TrainResult", "train"]

METRICS_FILE = "metrics.csv"
TENSORBOARD_DIR = "tensorboard"
#: What :func:`train` accepts as ``backend``: where the population is evaluated.
EVALUATION_BACKENDS = ("local", "ray")


@dataclass
class TrainResult:
    out_dir: str
    model_path: str
    solved: bool
    generations: int
    env_steps: int           # all steps, training samples and centre evaluations
    wall_time: float         # seconds of training (all parts of a resumed run)
    eval_mean: float         # last centre evaluation
    history: List[dict] = field(default_factory=list)  # metrics rows; eval_mean None if not evaluated




def _overrides(env_id, seed, num_workers, max_generations) -> Dict[str, Any]:
    """The ``train`` fields given as arguments (the command line's options)."""
    if seed is not None and not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    given = {"train.env_id": env_id, "train.seed": seed, "train.num_workers": num_workers,
             "train.max_generations": max_generations}
    return {name: value for name, value in given.items() if value is not None}


class _Run:
    """The state of a run between generations: what a checkpoint holds."""

    def __init__(self, cfg: pb.EvoKitConfig, ckpt: Optional[pb.TrainCheckpoint] = None):
        self.generation = ckpt.generation if ckpt else 0
        self.env_steps = ckpt.env_steps if ckpt else 0
        self.elapsed = ckpt.wall_time if ckpt else 0.0
        self.elapsed_before = self.elapsed  # training time of the earlier parts of the run
        self.eval_mean = ckpt.eval_mean if ckpt and ckpt.HasField("eval_mean") else float("nan")
        self.solved = ckpt.solved if ckpt else False
        self.budget_spent = False  # train.max_env_steps reached
        self.history: List[dict] = [row_from_proto(m) for m in ckpt.metrics] if ckpt else []
        self.obs_stat: Optional[RunningStat] = (
            RunningStat.from_proto(ckpt.obs_stats, "checkpoint obs_stats", _obs_style(cfg.train))
            if ckpt and ckpt.HasField("obs_stats") else None)
        self.resumed_solver: Optional[pb.SolverState] = ckpt.solver if ckpt else None
        self.saved_generation: Optional[int] = None  # of the files last written by checkpoint()
        # The next checkpoint, kept from one to the next: the config is set
        # once and a metrics row appended per generation (add_row).
        self._ckpt = pb.TrainCheckpoint(config=config_to_text(cfg))
        if ckpt:
            self._ckpt.metrics.extend(ckpt.metrics)

    def add_row(self, row: dict) -> None:
        """Record the metrics of the generation that just ended."""
        self.history.append(row)
        self._ckpt.metrics.append(row_to_proto(row))

    def checkpoint(self, out_dir: str, agent: ESAgent, cfg: pb.EvoKitConfig) -> None:
        """Write model.onnx (the complete policy: with observation
        normalisation, its nodes first and obs_norm.pb beside it) and
        solver.pb, then checkpoint.pb holding the plain model and the solver
        state message, nothing read back. Whenever a run stops, model.onnx is
        the policy of its last checkpoint, evaluable on its own."""
        plain = agent.policy.to_model(agent.center)
        model = plain.SerializeToString()
        state = agent.solver_file_state(model)
        if self.obs_stat is None:
            write_model_bytes(os.path.join(out_dir, MODEL_FILE), model)
        else:
            clip = cfg.train.observation_clip
            write_model_bytes(os.path.join(out_dir, MODEL_FILE), with_obs_norm(
                plain, self.obs_stat.normalizer(clip)).SerializeToString())
            write_state_file(os.path.join(out_dir, OBS_NORM_FILE), self.obs_stat.to_proto(clip))
        write_state_file(os.path.join(out_dir, SOLVER_FILE), state)
        ckpt = self._ckpt
        ckpt.generation = self.generation
        ckpt.env_steps = self.env_steps
        ckpt.wall_time = self.elapsed
        ckpt.solved = self.solved
        if math.isnan(self.eval_mean):
            ckpt.ClearField("eval_mean")
        else:
            ckpt.eval_mean = self.eval_mean
        ckpt.model = model
        ckpt.solver.CopyFrom(state)
        if self.obs_stat is not None:
            ckpt.obs_stats.CopyFrom(self.obs_stat.to_proto(cfg.train.observation_clip))
        write_checkpoint(out_dir, ckpt)
        self.saved_generation = self.generation


def train(config: Union[str, os.PathLike, pb.EvoKitConfig, None], *, env_id: Optional[str] = None,
          seed: Optional[int] = None, out_dir: Optional[str] = None, model=None,
          num_workers: Optional[int] = None, max_generations: Optional[int] = None,
          evaluator: Optional[Evaluator] = None, evaluator_kind: str = "auto",
          log: Optional[Callable[[str], None]] = None, progress: Optional[Progress] = None,
          metrics_path: Optional[str] = None, metrics_format: Optional[str] = None,
          tensorboard: Union[bool, str, None] = None, checkpoint_every: Optional[int] = None,
          checkpoint_seconds: float = 10.0,
          resume: bool = False, backend: str = "local",
          address: Optional[str] = None, overwrite: bool = False) -> TrainResult:
    """Train a policy with ES; write ``model.onnx``, ``solver.pb``,
    ``config.prototxt``, ``checkpoint.pb`` and the metrics to ``out_dir``
    (and ``obs_norm.pb`` with ``train.observation_normalization``: the
    statistics, merged from the evaluators after each generation, that
    model.onnx's first nodes apply).

    ``model`` is an ONNX path; without one, an MLP of ``train.hidden_sizes``
    is made for the environment. ``env_id``, ``seed``, ``num_workers`` and
    ``max_generations`` override the config's ``train`` section.
    ``evaluator_kind`` (``"auto"``, ``"vector"``, ``"process"``, ``"serial"``)
    picks the evaluator, see
    :func:`~evokit.evaluation.factory.make_evaluator`, unless an ``evaluator``
    is given. ``backend="ray"`` evaluates on Ray actors
    (:class:`~evokit.evaluation.ray_backend.RayEvaluator`,
    ``train.num_workers`` of them, each using the ``evaluator_kind``
    evaluator): a local Ray instance, or the cluster at ``address``; the model
    is the same bits.

    Output: ``progress`` (a :class:`~evokit.training.progress.Progress`)
    reports the run; without one, ``log`` receives one plain line per
    generation (default: a Progress on stdout, refreshing in place on a
    terminal; pass ``lambda s: None`` for quiet). Metrics go to ``metrics_path`` (default
    ``out_dir/metrics.csv``) as ``metrics_format`` (``"csv"`` or ``"jsonl"``;
    default from the extension) and, with ``tensorboard`` (a directory, or True
    for ``out_dir/tensorboard``), to TensorBoard event files.

    A run never replaces another one: an ``out_dir`` that holds a run
    (its ``checkpoint.pb`` or ``model.onnx``) is refused unless
    ``overwrite=True``; without ``out_dir``, the run goes to
    ``runs/ENV-seedS``, or ``runs/ENV-seedS-2`` (-3, ...) if that holds one.

    ``resume=True`` continues the run in ``out_dir`` from its checkpoint
    (see the module doc for when they are written); ``config`` may then be
    None (the run's own), and may differ from the run's only in
    ``train.num_workers`` and ``train.max_generations``.
    """
    if backend not in EVALUATION_BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(EVALUATION_BACKENDS)}, got {backend!r}")
    if address is not None and backend != "ray":
        raise ValueError(f"address={address!r} is for backend='ray', got backend={backend!r}")
    t0 = time.perf_counter()
    if checkpoint_every is not None and checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    if not checkpoint_seconds >= 0:
        raise ValueError(f"checkpoint_seconds must be >= 0, got {checkpoint_seconds}")
    if metrics_path is not None:
        metrics_format_of(metrics_path, metrics_format)  # refused before anything is written
    if progress is None:
        progress = Progress(NORMAL, log=log) if log is not None else Progress(NORMAL)
    cfg, run, out_dir, model = _open_run(config, (env_id, seed, num_workers, max_generations),
                                         out_dir, model, resume, overwrite)
    t = cfg.train
    agent = _make_agent(cfg, model, out_dir, run)
    atomic_write_bytes(os.path.join(out_dir, "config.prototxt"), config_to_text(cfg).encode())
    if not resume:
        run.checkpoint(out_dir, agent, cfg)  # generation 0: a run killed at once can resume

    population = cfg.solver.population_size
    own_evaluator = evaluator is None
    if evaluator is None and backend == "ray":
        evaluator = RayEvaluator(t.env_id, t.num_workers, address=address, kind=evaluator_kind)
    evaluator = evaluator or make_evaluator(t.env_id, t.num_workers, kind=evaluator_kind,
                                            policy=agent.policy)
    metrics = tb = None
    try:
        metrics = MetricsFile(metrics_path or os.path.join(out_dir, METRICS_FILE), metrics_format,
                              rows=run.history)
        if tensorboard:
            tb = TensorBoardWriter(os.path.join(out_dir, TENSORBOARD_DIR) if tensorboard is True
                                   else tensorboard, first_generation=run.generation + 1)
        progress.start(
            f"evokit train: {t.env_id}, {agent.num_params} parameters, population {population}"
            f"{' (antithetic)' if cfg.solver.antithetic else ''}, {t.num_workers} worker(s), "
            f"seed {t.seed}, policy on {agent.policy.backend}, {type(evaluator).__name__}",
            t.max_generations, run.generation, run.env_steps,
            run.elapsed_before + (time.perf_counter() - t0),
            None if math.isnan(run.eval_mean) else run.eval_mean)
        if resume:
            progress.line(f"resumed {out_dir} at generation {run.generation}")
        progress.line(f"eta: an estimate of the time to generation {t.max_generations} at the "
                      f"recent time per generation (the run stops earlier once the centre reaches "
                      f"{t.target_return:g}); * marks a centre evaluation")
        done = run.solved or (t.max_env_steps and run.env_steps >= t.max_env_steps)
        start = t.max_generations + 1 if done else run.generation + 1
        schedule = _CheckpointSchedule(checkpoint_every, checkpoint_seconds)
        with _StopOnSignal() as stop:
            for generation in range(start, t.max_generations + 1):
                row, timings = _generation(run, generation, agent, evaluator, cfg, t0, metrics)
                tick = time.perf_counter()
                if (run.solved or run.budget_spent or generation == t.max_generations
                        or stop.signum is not None or schedule.due(generation, tick)):
                    run.checkpoint(out_dir, agent, cfg)
                    timings["checkpoint"] = schedule.done(tick, time.perf_counter())
                if stop.signum is None:  # else stdout may be gone with the terminal
                    progress.generation(row, timings)
                if tb is not None:
                    tb.write(row, progress.steps_per_second())
                if run.solved or run.budget_spent:
                    break
                if stop.signum is not None:  # (it may have come after the checkpoint above)
                    if run.saved_generation != generation:
                        run.checkpoint(out_dir, agent, cfg)
                    raise TrainingInterrupted(stop.signum, out_dir)
    finally:
        progress.end_line()
        if own_evaluator:
            evaluator.close()
        if metrics is not None:
            metrics.close()
        if tb is not None:
            tb.close()

    model_path = os.path.join(out_dir, MODEL_FILE)
    if run.saved_generation != run.generation:  # no generation ran: not yet written by this run
        run.checkpoint(out_dir, agent, cfg)
    progress.finish(
        f"{'solved' if run.solved else 'not solved'}: centre return {run.eval_mean:.1f} "
        f"(target {t.target_return:g}) after {run.generation} generations, {run.env_steps:,} "
        f"env steps, {run.elapsed:.1f} s; model written to {model_path}")
    return TrainResult(out_dir=out_dir, model_path=model_path, solved=run.solved,
                       generations=run.generation, env_steps=run.env_steps, wall_time=run.elapsed,
                       eval_mean=run.eval_mean, history=run.history)


#: The files whose presence says a directory holds a run.
_RUN_FILES = (CHECKPOINT_FILE, MODEL_FILE)


def _holds_run(directory: str) -> Optional[str]:
    """The first file of a run in ``directory``, or None."""
    return next((name for name in _RUN_FILES if os.path.exists(os.path.join(directory, name))),
                None)


def _fresh_run_dir(t: pb.TrainConfig) -> str:
    """runs/ENV-seedS, or the first of runs/ENV-seedS-2, -3, ... that holds no run."""
    base = os.path.join("runs", f"{t.env_id}-seed{t.seed}")
    candidate, n = base, 1
    while _holds_run(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _open_run(config, overrides, out_dir: Optional[str], model, resume: bool,
              overwrite: bool = False):
    """The config, the run state, the output directory and the initial model
    (None: make one) of a new run, or of the run in ``out_dir`` to resume."""
    if resume:
        if out_dir is None:
            raise ValueError("resume needs the run directory (out_dir)")
        if model is not None:
            raise ValueError("a resumed run continues from its checkpoint's model: give no model "
                             "(--model) with it")
        ckpt = read_checkpoint(out_dir)
        # The one validation of the config: the run's own, or the one given.
        if config is None:
            wanted = parse_config(ckpt.config, source=os.path.join(out_dir, CHECKPOINT_FILE),
                                  overrides=_overrides(*overrides))
        else:
            wanted = load_config(config, overrides=_overrides(*overrides))
        cfg = check_resumable(out_dir, ckpt, wanted)
        model = os.path.join(out_dir, MODEL_FILE)
        atomic_write_bytes(model, ckpt.model)
        write_state_file(os.path.join(out_dir, SOLVER_FILE), ckpt.solver)
        return cfg, _Run(cfg, ckpt), out_dir, model
    if config is None:
        raise ValueError("a config is needed (it may be left out only to resume a run)")
    cfg = load_config(config, overrides=_overrides(*overrides))  # the one validation
    t = cfg.train
    if out_dir is None:
        out_dir = _fresh_run_dir(t)
    elif _holds_run(out_dir):
        if not overwrite:
            raise FileExistsError(
                f"{out_dir}: holds another run ({_holds_run(out_dir)}); continue it with --resume "
                f"{out_dir}, replace it with --overwrite, or pick another --out")
        for name in _RUN_FILES + (SOLVER_FILE, OBS_NORM_FILE):  # nothing of the old run stays
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(out_dir, name))
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise OSError(f"{out_dir}: cannot create the output directory ({exc.strerror})") from None
    return cfg, _Run(cfg), out_dir, model


def _make_agent(cfg: pb.EvoKitConfig, model, out_dir: str, run: _Run) -> ESAgent:
    """The agent of the run, checked against the environment: from ``model``
    (a fresh MLP written to ``init_model.onnx`` if None), with the solver
    state of the checkpoint when resuming. The environment is made once, for
    the policy's spaces, the check and the size of the observation
    statistics (``run.obs_stat``, with ``train.observation_normalization``)."""
    t = cfg.train
    agent = ESAgent()
    agent.load_config(cfg, validate=False)  # validated by _open_run
    env = None
    try:
        if model is None:
            env = make_env(t.env_id)
            try:
                model_proto = policy_for_spaces(env.observation_space, env.action_space,
                                                hidden_sizes=tuple(t.hidden_sizes),
                                                activation=t.activation, seed=t.seed,
                                                action_mapping=pb.TrainConfig.ActionMapping.Name(
                                                    t.action_mapping).lower())
            except ValueError as exc:
                raise EnvError(f"cannot make a policy for {t.env_id}: "
                               f"{str(exc).replace('policy_for_spaces: ', '')}") from None
            model = os.path.join(out_dir, "init_model.onnx")
            atomic_write_bytes(model, model_proto.SerializeToString())
        agent.load_inference_model(model)
        agent.init_solver()
        agent.sampling_stream = t.seed
        if run.resumed_solver is not None:
            agent.load_solver_state(run.resumed_solver, os.path.join(out_dir, SOLVER_FILE),
                                    exact_model=True)
            if run.history and agent.model_iter_id != run.history[-1]["model_iter_id"]:
                raise ValueError(f"{out_dir}: the checkpoint's solver is at iteration "
                                 f"{agent.model_iter_id}, its metrics at "
                                 f"{run.history[-1]['model_iter_id']}")
        if env is None:
            env = make_env(t.env_id)
        try:
            check_policy_fits(agent.policy, env)  # a clear error before any worker starts
        except EnvError as exc:
            raise EnvError(f"the policy {model} does not fit {t.env_id}: {exc}") from None
        if t.observation_normalization and run.obs_stat is None:
            run.obs_stat = RunningStat(int(np.prod(env.observation_space.shape)), _obs_style(t))
    finally:
        if env is not None:
            env.close()
    return agent


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT or SIGTERM, after the generation in progress
    and a checkpoint of it (``signum``: the signal; ``out_dir``: the run)."""

    def __init__(self, signum: int, out_dir: str):
        super().__init__(f"stopped by signal {signum}; the run in {out_dir} can be resumed")
        self.signum, self.out_dir = signum, out_dir


class _StopOnSignal:
    """While active (in the main thread), the first SIGINT or SIGTERM asks the
    loop to stop after the generation in progress, with a checkpoint; a second
    one stops at once (KeyboardInterrupt, as without this)."""

    def __init__(self):
        self.signum: Optional[int] = None
        self._saved: Dict[int, Any] = {}

    def _handle(self, signum, frame) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum  # nothing printed here: the handler may interrupt a write

    def __enter__(self) -> "_StopOnSignal":
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)


class _CheckpointSchedule:
    """When the loop checkpoints besides the start, the end, a solve and a
    stop: every ``every`` generations if given, else once
    ``max(seconds, 20 x the last checkpoint's duration)`` have passed since
    the last one ended (so checkpoints cost at most 5 % of a run)."""

    def __init__(self, every: Optional[int], seconds: float):
        self.every, self.seconds = every, seconds
        self._last_end = time.perf_counter()
        self._last_cost = 0.0

    def due(self, generation: int, now: float) -> bool:
        if self.every is not None:
            return generation % self.every == 0
        return now - self._last_end >= max(self.seconds, 20.0 * self._last_cost)

    def done(self, start: float, end: float) -> float:
        """Record a checkpoint that ran from ``start`` to ``end``; its duration."""
        self._last_end, self._last_cost = end, end - start
        return self._last_cost


def _generation(run: _Run, generation: int, agent: ESAgent, evaluator: Evaluator,
                cfg: pb.EvoKitConfig, t0: float, metrics: MetricsFile):
    """Sample, evaluate and update once; evaluate the centre when due.
    Returns the metrics row (written) and the seconds of each phase."""
    t = cfg.train
    pairs = agent.solver.mirrored_pairs  # the solver says which members are mirrored pairs
    tick = time.perf_counter()
    # The solver draws the population as clones 0 .. N-1 would (its draw
    # counters are in solver.pb, so a resumed run draws the same members).
    infos = agent.draw_members(cfg.solver.population_size)
    seeds = [episode_seeds(t.seed, generation, i // 2 if pairs else i,
                           t.episodes_per_sample, SAMPLE_TAG) for i in range(len(infos))]
    evaluator.obs_norm = _normalizer(run.obs_stat, t)
    result = evaluator.evaluate(agent, infos, seeds)
    run.env_steps += result.steps
    timings = {"sample": time.perf_counter() - tick}
    tick = time.perf_counter()
    agent.update(infos, _training_rewards(result, t))
    if run.obs_stat is not None:
        if result.obs_stats is None:
            raise ValueError(f"train.observation_normalization needs an evaluator that returns "
                             f"observation statistics; {type(evaluator).__name__} returned none")
        run.obs_stat.update(result.obs_stats)
    timings["update"] = time.perf_counter() - tick
    # The environment's own rewards, whatever the update was given.
    row = {"generation": generation, "model_iter_id": agent.model_iter_id,
           "reward_mean": float(np.mean(result.rewards)), "reward_max": float(np.max(result.rewards)),
           "reward_min": float(np.min(result.rewards)), "eval_mean": None}
    run.budget_spent = bool(t.max_env_steps) and run.env_steps >= t.max_env_steps
    if generation % t.eval_every == 0 or generation == t.max_generations or run.budget_spent:
        tick = time.perf_counter()
        evaluator.obs_norm = _normalizer(run.obs_stat, t)
        centre = evaluator.evaluate(
            agent, [None] * t.eval_episodes,
            [episode_seeds(t.seed, generation, i, 1, EVAL_TAG) for i in range(t.eval_episodes)])
        run.env_steps += centre.steps
        run.eval_mean = row["eval_mean"] = float(centre.rewards.mean())
        run.solved = run.eval_mean >= t.target_return
        timings["centre"] = time.perf_counter() - tick
    run.generation = generation
    run.elapsed = run.elapsed_before + (time.perf_counter() - t0)
    row["env_steps"] = run.env_steps
    row["wall_time"] = run.elapsed
    row = {k: row[k] for k in METRICS_COLUMNS}
    run.add_row(row)
    tick = time.perf_counter()
    metrics.write(row)
    timings["metrics"] = time.perf_counter() - tick
    return row, timings


def _obs_style(t: pb.TrainConfig) -> str:
    return "ars" if t.observation_normalizer == pb.TrainConfig.ARS else "openai_es"


def _training_rewards(result, t: pb.TrainConfig) -> np.ndarray:
    """The rewards the update sees: the environment's, less
    ``train.alive_bonus_offset`` per step (per episode, averaged like the
    returns)."""
    if not t.alive_bonus_offset:
        return result.rewards
    if result.sample_steps is None:
        raise ValueError("train.alive_bonus_offset needs an evaluator that returns each sample's "
                         "env steps (EvalResult.sample_steps)")
    return result.rewards - float(np.float32(t.alive_bonus_offset)) * (
        result.sample_steps / float(t.episodes_per_sample))


def _normalizer(obs_stat: Optional[RunningStat], t: pb.TrainConfig) -> Optional[ObsNorm]:
    return None if obs_stat is None else obs_stat.normalizer(t.observation_clip)
