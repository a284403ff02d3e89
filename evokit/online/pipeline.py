"""Online sampling and offline update: the steps of EvoKit's shell loop.

    evokit init-solver --config C --model M --warehouse W     # iteration 0
    for epoch in ...; do
      evokit sample --warehouse W --env CartPole-v1 --num-samples 40 --log L
      evokit update --warehouse W --log L                    # iteration k+1
    done

``sample`` perturbs the newest model (or ``iteration``), evaluates every
sample and appends one :class:`~evokit.evokit_pb2.SampleRecord` per sample to
the log. ``update`` reads logs (never modifying them), keeps the records that
belong to this warehouse and have not been applied, corrects the ones from
older kept iterations, and commits iteration k+1. ``evaluate`` runs episodes
of the newest model (or of any ONNX policy) to see how far the loop has come.

Which records an update uses, and why it drops the others:

- used: drawn at the newest iteration k, or at an older one still kept in the
  warehouse (then corrected by the parameter difference, see
  :meth:`evokit.ESAgent.update`);
- dropped: from another config or model architecture (config fingerprint),
  from another run (the model fingerprint differs from the warehouse's model
  of that iteration), from a future or unknown iteration, from an iteration no
  longer kept, already applied by an earlier update (``consumed.pb``), a
  duplicate within the logs, an invalid key or a non-finite reward.

CMA and GA sampling (``CMA_SAMPLING`` / ``GA_SAMPLING``): a sample is a
member of one generation of the strategy and is rebuilt from the strategy's
state of that iteration, so only samples of the newest iteration are used; a
sample from an older kept iteration is dropped with the reason "drawn at an
older iteration". (A CMA sample cannot be rebuilt exactly against the new
distribution: its key names z, and x = m + sigma B D z changes with m, sigma
and C. A GA individual does carry its full seed list, but it is not a member
of the new generation, and truncation selection ranks one generation.) The
update runs once every member of the generation has a reward (several rewards
of one member, e.g. from several samplers, are averaged; GA elite
re-evaluation needs ``elite_evaluations`` per candidate); until then the
warehouse is left as it is, the report says what is missing, and the records
stay unconsumed for a later update. Which samples a family can use is the
solver's to say (``corrects_older_samples``, ``check_member``,
``shortfall``); this module never asks which family it is.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import evokit_pb2 as pb
from .. import _core
from ..agent import ESAgent
from ..config import parse_config
from ..evaluation.base import Evaluator
from ..evaluation.factory import make_evaluator
from ..evaluation.seeds import SAMPLER_TAG, episode_seed_table
from .samplelog import Skipped, append_sampler_chunk, iter_log
from .warehouse import INFO_FILE, Consumed, Warehouse

__all__ = ["EvaluateReport", "SampleReport", "UpdateReport", "evaluate", "sample", "update"]


@dataclass
class SampleReport:
    iteration: int
    num_samples: int  # sampled and appended by this call
    env_steps: int
    reward_mean: float
    reward_max: float
    log: str
    first_index: int = 0  # the sample_index of the first of them (the log held the ones before)

    def __str__(self) -> str:
        if self.num_samples == 0:
            return (f"{self.log} already holds samples 0 .. {self.first_index - 1} of this sampler at "
                    f"iteration {self.iteration}: nothing to sample")
        resumed = f" (from sample {self.first_index}, the log held the ones before)" if self.first_index else ""
        return (f"sampled {self.num_samples} at iteration {self.iteration}{resumed}: reward mean "
                f"{self.reward_mean:.2f} max {self.reward_max:.2f}, {self.env_steps:,} env steps; "
                f"appended to {self.log}")


@dataclass
class UpdateReport:
    from_iteration: int
    to_iteration: Optional[int]  # None: nothing usable, warehouse unchanged
    used: int = 0
    corrected: int = 0           # of `used`, drawn at older iterations
    dropped: Dict[str, int] = field(default_factory=dict)
    skipped: List[Skipped] = field(default_factory=list)
    log_errors: List[str] = field(default_factory=list)
    reward_mean: float = float("nan")
    # CMA / GA: why the usable samples are not yet enough for an update.
    incomplete: Optional[str] = None

    def lines(self) -> List[str]:
        out = [str(s) for s in self.skipped] + list(self.log_errors)
        if self.incomplete is not None:
            out.append(f"not enough samples yet ({self.incomplete}): warehouse left at iteration "
                       f"{self.from_iteration}, the samples stay for a later update")
        elif self.to_iteration is None:
            out.append(f"no usable samples: warehouse left at iteration {self.from_iteration}")
        else:
            out.append(f"update {self.from_iteration} -> {self.to_iteration}: used {self.used} samples "
                       f"({self.corrected} from older iterations, corrected), reward mean "
                       f"{self.reward_mean:.2f}")
        for reason, n in sorted(self.dropped.items()):
            out.append(f"dropped {n}: {reason}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


#: Samples evaluated and appended to the log at a time by :func:`sample`.
CHUNK_SIZE = 4096


def sample(warehouse, env_id: str, num_samples: int, log, seed: int = 0, *,
           iteration: Optional[int] = None, num_workers: Optional[int] = None, episodes_per_sample: int = 1,
           evaluator: Optional[Evaluator] = None, chunk_size: int = CHUNK_SIZE) -> SampleReport:
    """Evaluate ``num_samples`` perturbations of the warehouse's model and
    append their records to ``log``.

    ``seed`` names this sampler: samplers that run at the same iteration need
    distinct seeds (their keys and episodes derive from it). Its samples of an
    iteration are numbered 0, 1, ... (``SampleRecord.sample_index``), sample
    ``i`` always the same member with the same episode seeds. They are
    evaluated as ``evokit train`` evaluates (the batched native path where the
    policy and the environment run natively; ``num_workers`` defaults to the
    config's ``train.num_workers``) and appended ``chunk_size`` at a time, each
    chunk whole or not at all, so memory does not grow with ``num_samples``.
    The samples ``log`` already holds of this sampler and iteration are not
    drawn again: a sampler stopped part way resumes where its log ends, and
    a larger ``num_samples`` goes on from there."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    it = wh.iteration(iteration)
    k = it.k
    agent = ESAgent.from_iteration(it)
    pairs = agent.solver.mirrored_pairs  # members 2p, 2p + 1 share a noise and their episodes
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if episodes_per_sample < 1:
        raise ValueError(f"episodes per sample must be >= 1, got {episodes_per_sample}")
    if pairs and num_samples % 2:
        raise ValueError(f"num_samples must be even with mirrored pairs ({agent.sampling_type}), got {num_samples}")
    if chunk_size < 1 or (pairs and chunk_size % 2):
        raise ValueError(f"chunk_size must be >= 1{' and even (mirrored pairs)' if pairs else ''}, "
                         f"got {chunk_size}")
    workers = agent.config.train.num_workers if num_workers is None else num_workers
    log = os.fspath(log)
    start = _samples_written(log, seed, k)
    agent.sampling_stream = seed
    cfp, mfp = it.config_fingerprint, it.params_fingerprint
    rewards_sum, reward_max, steps, written = 0.0, -np.inf, 0, 0
    own = evaluator is None
    evaluator = evaluator or make_evaluator(env_id, workers, policy=agent.policy)
    try:
        # Sample i is the member clone i's add_noise() draws, drawn in clone
        # order (what a family with one sequence of members depends on); the
        # samples already written are drawn and dropped, costing no evaluation.
        if start:
            agent.draw_members(start)
        for first in range(start, num_samples, chunk_size):
            count = min(chunk_size, num_samples - first)
            infos = agent.draw_members(count, first, core=True)
            index = np.arange(first, first + count)
            seeds = episode_seed_table(seed, k, index // 2 if pairs else index, episodes_per_sample,
                                       SAMPLER_TAG)
            result = evaluator.evaluate(agent, infos, seeds)
            each = (result.sample_steps if result.sample_steps is not None
                    else np.full(count, result.steps // count, np.int64))
            append_sampler_chunk(log, infos, result.rewards, each, config_fingerprint=cfp, model_fingerprint=mfp,
                                 sampler_id=seed, time=time.time(), first_index=first)
            rewards_sum += float(np.sum(result.rewards))
            reward_max = max(reward_max, float(np.max(result.rewards)))
            steps += int(result.steps)
            written += count
    finally:
        if own:
            evaluator.close()
    return SampleReport(iteration=k, num_samples=written, env_steps=steps,
                        reward_mean=rewards_sum / written if written else float("nan"),
                        reward_max=reward_max if written else float("nan"), log=log, first_index=start)


def _samples_written(log: str, sampler: int, iteration: int) -> int:
    """How many of sampler ``sampler``'s samples of ``iteration`` the log
    holds: one more than the highest ``sample_index`` (chunks are appended
    whole and in order). A log whose records of this sampler and iteration
    carry no index (written before samples were numbered) is refused, since
    drawing again would repeat them."""
    if not os.path.exists(log):
        return 0
    count, unnumbered = 0, 0
    for rec in iter_log(log, []):  # one record at a time: a long log is not held whole
        r = rec.record
        if r.sampler_id != sampler or r.info.model_iter_id != iteration:
            continue
        if r.HasField("sample_index"):
            count = max(count, r.sample_index + 1)
        else:
            unnumbered += 1
    if unnumbered:
        raise ValueError(f"{log} already holds {unnumbered} unnumbered samples of sampler {sampler} at "
                         f"iteration {iteration}; give this sampler another --seed")
    return count


def update(warehouse, logs: Sequence, config=None) -> UpdateReport:
    """One update of the warehouse from the records in ``logs`` (holding the
    warehouse's lock: a concurrent update fails with WarehouseError)."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    with wh.locked():
        return _update_locked(wh, logs, config)


def _update_locked(wh: Warehouse, logs: Sequence, config) -> UpdateReport:
    agent = wh.load_agent(config=config)
    k = agent.model_iter_id
    report = UpdateReport(from_iteration=k, to_iteration=None)
    kept = wh.iterations()
    max_to_keep = agent.config.async_es.max_to_keep
    window = kept[-max_to_keep:]
    consumed = Consumed()
    for u in window:
        if u > 0:
            consumed.update(wh.consumed(u))
    # Which records the update takes is the core's rule
    # (cpp/include/evokit/formats/update_records.h): the logs are read in
    # pieces, decoded on every core, and only each taken record's key and
    # reward are kept. The model of a kept iteration is read (and verified)
    # only if a record names it.
    samples = _core.select_update_records(
        [os.fspath(p) for p in logs], agent.solver, config_fingerprint=wh.info.config_fingerprint,
        iteration=k, window=set(window), max_to_keep=max_to_keep,
        corrects_older_samples=agent.solver.corrects_older_samples, sampling_type=agent.sampling_type,
        model_fingerprint=wh.model_fingerprint, consumed_ids=list(consumed.ids),
        consumed_runs=[(s, it, first, end) for (s, it), runs in consumed.runs().items() for first, end in runs],
        num_threads=os.cpu_count() or 1)
    report.skipped = [Skipped(*s) for s in samples.skipped]
    report.log_errors = list(samples.log_errors)
    report.dropped = dict(samples.dropped)
    if not len(samples):
        return report
    report.incomplete = agent.shortfall_selected(samples)
    if report.incomplete is not None:
        return report
    history = {u: wh.params(u) for u in samples.iterations if u != k}
    stats = agent.update_selected(samples, history=history)
    wh.commit(agent, consumed=Consumed.taken(samples))
    report.to_iteration = agent.model_iter_id
    report.used = len(samples)
    report.corrected = int(stats.get("num_corrected", 0))
    report.reward_mean = float(np.mean(samples.rewards))
    return report


@dataclass
class EvaluateReport:
    what: str            # the model, or the warehouse and its iteration
    rewards: np.ndarray  # the return of each episode

    @property
    def mean(self) -> float:
        return float(self.rewards.mean())

    def __str__(self) -> str:
        return (f"{self.what}: mean return {self.mean:.2f} over {len(self.rewards)} episodes "
                f"(min {self.rewards.min():.2f}, max {self.rewards.max():.2f})")


def evaluate(model, env_id: str, episodes: int = 20, seed: int = 0,
             num_workers: Optional[int] = None) -> EvaluateReport:
    """The returns of ``episodes`` episodes (seeds ``seed``, ``seed + 1``, ...)
    of the centre policy of ``model``: an ONNX policy (a file, or a directory
    holding model.onnx), or a warehouse, whose newest iteration is evaluated.
    Evaluated as ``evokit train`` evaluates, with ``num_workers`` defaulting
    to the config's ``train.num_workers`` (the warehouse's, else the
    default config's)."""
    model = os.fspath(model)
    what = model
    if os.path.isdir(model) and os.path.exists(os.path.join(model, INFO_FILE)):
        wh = Warehouse(model)
        agent = wh.load_agent()
        what = f"{model} iteration {agent.model_iter_id}"
        model = None
    if model is not None:
        agent = ESAgent()
        agent.load_config(parse_config("", validate=False))  # load_config validates it
        agent.load_inference_model(model)
        agent.init_solver()
    seeds = [[seed + i] for i in range(episodes)]
    workers = agent.config.train.num_workers if num_workers is None else num_workers
    with make_evaluator(env_id, workers, policy=agent.policy) as ev:
        result = ev.evaluate(agent, [None] * episodes, seeds)
    return EvaluateReport(what, result.rewards)
