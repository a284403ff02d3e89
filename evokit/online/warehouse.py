"""The model warehouse of the online-sampling / offline-update pipeline.

Layout (as in EvoKit, iteration k lives in ``W/model_iter_id-k/``)::

    W/warehouse.pb              WarehouseInfo: the config it was created with
    W/model_iter_id-0/          model.onnx, solver.pb
    W/model_iter_id-1/          model.onnx, solver.pb, consumed.pb
    ...

``solver.pb`` holds the optimizer state and the config of that iteration;
``consumed.pb`` lists the records that the update producing the iteration
used (numbered records as runs of sample indices per sampler and iteration,
others by id: :class:`Consumed`), so that running ``update`` again on the
same logs does not apply them twice. Only the last ``async_es.max_to_keep`` iterations are kept.

An iteration's files never change once it is committed: a :class:`Warehouse`
reads each one at most once (its model and its solver state), and a model
loaded for an agent serves as that iteration's model too. Each is verified as
it is read: warehouse.pb, solver.pb and consumed.pb by their sha256 trailer
(:mod:`evokit.statefile`), a model.onnx by the sha256 of its bytes its
solver.pb records (model_sha256) and by the params_fingerprint (the exact
model); a file that does not match is refused, naming it.

Crash safety: a new iteration is written into a temporary directory beside
the others, every file fsynced, then renamed into place in one step (and the
warehouse directory fsynced). A kill at any point leaves the warehouse at
iteration k or k+1, never half-written; stale temporary directories are
ignored and removed by the next commit.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
from typing import Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from .. import evokit_pb2 as pb
from .. import _core
from ..agent import (MODEL_FILE, SOLVER_FILE, ESAgent, check_params_fingerprint, params_fingerprint,
                     read_solver_file)
from ..config import config_to_text, load_config, parse_config
from ..errors import ConfigError, SolverFileError, WarehouseError
from ..policy.fingerprint import FINGERPRINT_VERSION
from ..policy.onnx_policy import OnnxPolicy, write_model_bytes
from ..solvers import solver_options
from ..statefile import read_state_file, write_state_file
from ..util import fsync_dir

__all__ = ["Warehouse", "config_fingerprint",
           "ITER_PREFIX", "INFO_FILE", "CONSUMED_FILE"]

# The layout's names and rules are the core's (cpp/include/evokit/formats/warehouse.h),
# which the C++ io library's io::Warehouse uses too.
ITER_PREFIX = _core.WAREHOUSE_ITERATION_PREFIX  # "model_iter_id-"
INFO_FILE = _core.WAREHOUSE_INFO_FILE  # "warehouse.pb"
CONSUMED_FILE = _core.WAREHOUSE_CONSUMED_FILE  # "consumed.pb"


def _checked(check, *args):
    """``check(*args)``, a refusal of the core's layout rules as WarehouseError."""
    try:
        return check(*args)
    except ValueError as exc:
        raise WarehouseError(str(exc)) from None

_TMP_PREFIX = ".tmp-"


def _key_fields(config: pb.EvoKitConfig) -> List[str]:
    """The fields that give a key its meaning (the solver's registry names
    them per family): changing one between iterations would make the keys in
    existing logs name other members."""
    return ["solver." + name for name in _core.solver_key_options(solver_options(config.solver))]


def _field(config: pb.EvoKitConfig, name: str):
    return functools.reduce(getattr, name.split("."), config)


# Also refused between iterations: it shapes the saved solver state.
_STATE_FIELDS = ["solver.optimizer.type"]


def config_fingerprint(config: pb.EvoKitConfig, policy: OnnxPolicy,
                       version: int = FINGERPRINT_VERSION) -> str:
    """sha256 of what gives keys their meaning: the key fields of the config
    and the model's graph (architecture and which initializers are parameters;
    its fingerprint of ``version``)."""
    h = hashlib.sha256()
    for name in _key_fields(config):
        h.update(f"{name}={_field(config, name)!r};".encode())
    h.update(policy.fingerprint(version).encode())
    return h.hexdigest()


def check_config_compatible(old: pb.EvoKitConfig, new: pb.EvoKitConfig, source: str) -> None:
    """Refuse a config change that would make old keys (or the solver state)
    meaningless."""
    for name in _key_fields(old) + _STATE_FIELDS:
        before, after = _field(old, name), _field(new, name)
        if before != after:
            raise ConfigError(source, f"{name} changes from {before!r} to {after!r}; the keys "
                                      f"in existing logs (and the solver state) would no longer match: "
                                      f"start a new warehouse with `evokit init-solver` instead",
                              field=name)


class Warehouse:
    """An existing warehouse. Raises :class:`WarehouseError` if ``path`` is
    missing, not a warehouse, or holds no complete iteration."""

    def __init__(self, path):
        self.path = os.fspath(path)
        info_path = _checked(_core.warehouse_check_dir, self.path)
        self.info = read_state_file(info_path, pb.WarehouseInfo(), WarehouseError, "warehouse info")
        try:
            # Validated when the warehouse was created; the config an agent
            # runs with is validated when it is loaded (load_agent).
            self.initial_config = parse_config(self.info.config, source=info_path, validate=False)
        except ConfigError as exc:
            raise WarehouseError(f"{info_path}: corrupt warehouse info ({exc})") from None
        _checked(_core.check_noise_version, self.path, "warehouse", self.info.noise_version)
        self.problems: List[str] = []
        _checked(_core.warehouse_require_iterations, self.path)
        self._policies: Dict[int, OnnxPolicy] = {}
        self._states: Dict[int, pb.SolverState] = {}

    # ---- creation ------------------------------------------------------------

    @classmethod
    def create(cls, path, config, model) -> "Warehouse":
        """``evokit init-solver``: a new warehouse with ``model`` and a fresh
        solver as iteration 0. ``path`` must not exist or be an empty directory."""
        path = os.fspath(path)
        _checked(_core.warehouse_check_new_path, path)
        agent = ESAgent()
        cfg = agent.load_config(config)
        agent.load_inference_model(model)
        agent.init_solver()
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=_TMP_PREFIX + os.path.basename(path) + "-", dir=parent)
        try:
            info = pb.WarehouseInfo(config=config_to_text(cfg),
                                    config_fingerprint=config_fingerprint(cfg, agent.policy),
                                    created_iteration=0, fingerprint_version=FINGERPRINT_VERSION,
                                    noise_version=_core.NOISE_VERSION)
            write_state_file(os.path.join(tmp, INFO_FILE), info)
            _write_iteration(os.path.join(tmp, ITER_PREFIX + "0"), agent, consumed=())
            if os.path.isdir(path):
                os.rmdir(path)  # empty, checked above
            os.rename(tmp, path)
            fsync_dir(parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        wh = cls(path)
        wh._policies[0] = agent.policy  # iteration 0's model: the one just written
        return wh

    # ---- reading -------------------------------------------------------------

    def iterations(self) -> List[int]:
        """Complete iterations, ascending. Directories named like an iteration
        but missing a file are reported in :attr:`problems` and skipped."""
        found, self.problems = _checked(_core.warehouse_scan, self.path)
        return found

    @property
    def latest(self) -> int:
        return self.iterations()[-1]

    def iteration_dir(self, k: int) -> str:
        return _core.warehouse_iteration_dir(self.path, k)

    def has_iteration(self, k: int) -> bool:
        return k in self.iterations()

    def _require(self, k: int) -> str:
        return _checked(_core.warehouse_require_iteration, self.path, k)

    def config(self, k: Optional[int] = None, validate: bool = True) -> pb.EvoKitConfig:
        """The config of iteration k (stored in its solver state); validated
        unless ``validate=False``."""
        k = self.latest if k is None else k
        path = os.path.join(self._require(k), SOLVER_FILE)
        state = self._solver_state(k)
        try:
            return parse_config(state.config, source=path, validate=validate)
        except Exception as exc:
            raise SolverFileError(f"{path}: not a solver state file ({exc})") from None

    def _solver_state(self, k: int) -> pb.SolverState:
        """The solver state of iteration k (its solver.pb, read once)."""
        state = self._states.get(k)
        if state is not None:
            return state
        state = read_solver_file(os.path.join(self._require(k), SOLVER_FILE))
        self._states[k] = state
        return state

    def policy(self, k: int) -> OnnxPolicy:
        """The model of iteration k (loaded once: the model of an agent
        :meth:`load_agent` made at k, else its model.onnx, checked against
        the model_sha256 and params_fingerprint its solver.pb records)."""
        if k not in self._policies:
            d = self._require(k)
            pattern = self.initial_config.solver.param_pattern
            state = self._solver_state(k)
            policy = OnnxPolicy.load(os.path.join(d, MODEL_FILE), param_pattern=pattern,
                                     sha256=state.model_sha256 or None,
                                     sha256_source=os.path.join(d, SOLVER_FILE))
            check_params_fingerprint(state, policy, policy.initial_params(),
                                     os.path.join(d, SOLVER_FILE))
            self._policies[k] = policy
        return self._policies[k]

    def params(self, k: int) -> np.ndarray:
        """The centre parameters of iteration k."""
        return self.policy(k).initial_params()

    def model_fingerprint(self, k: int) -> str:
        """What SampleRecord.model_fingerprint of a sample drawn at iteration k
        holds: its params_fingerprint, of the version its solver.pb has."""
        p = self.policy(k)  # checked against the params_fingerprint solver.pb records
        state = self._solver_state(k)
        return state.params_fingerprint or params_fingerprint(p, p.initial_params(),
                                                              state.fingerprint_version)

    def consumed(self, k: int) -> "Consumed":
        """The records the update that produced iteration k used."""
        path = os.path.join(self._require(k), CONSUMED_FILE)
        if not os.path.exists(path):
            return Consumed()
        return Consumed.from_proto(read_state_file(path, pb.ConsumedSamples(), WarehouseError,
                                                   "consumed-samples file"))

    def load_agent(self, k: Optional[int] = None, config=None) -> ESAgent:
        """An agent at iteration k (default: the newest) with its solver state.
        ``config`` replaces the stored one if it keeps the key fields."""
        k = self.latest if k is None else k
        d = self._require(k)
        # The config the agent runs with is validated here, once.
        if config is not None:
            stored = self.config(k, validate=False)  # only compared with the new one
            agent_config = load_config(config)
            source = "config" if isinstance(config, pb.EvoKitConfig) else os.fspath(config)
            check_config_compatible(stored, agent_config, source=source)
        else:
            agent_config = self.config(k)
        agent = ESAgent()
        agent.load_config(agent_config, validate=False)
        agent.load_inference_model(os.path.join(d, MODEL_FILE),
                                   sha256=self._solver_state(k).model_sha256 or None,
                                   sha256_source=os.path.join(d, SOLVER_FILE))
        agent.init_solver()
        agent.load_solver_state(self._solver_state(k), os.path.join(d, SOLVER_FILE), exact_model=True)
        _checked(_core.warehouse_check_iteration, d, agent.model_iter_id, k)
        expect = self.info.config_fingerprint
        if config_fingerprint(agent.config, agent.policy, self.info.fingerprint_version) != expect:
            raise WarehouseError(f"{d}: model or config does not match the warehouse "
                                 f"(fingerprint differs from {INFO_FILE})")
        # The agent's model is iteration k's model.onnx with the parameters
        # the warehouse's config selects (the fingerprint covers their names):
        # the warehouse's model of k, not to be loaded a second time.
        self._policies.setdefault(k, agent.policy)
        return agent

    # ---- writing -------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self):
        """Hold the warehouse's update lock (an exclusive flock on
        warehouse.pb): one update at a time; a second one fails at once."""
        fd = os.open(os.path.join(self.path, INFO_FILE), os.O_RDONLY | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise WarehouseError(f"{self.path}: another update is running on this warehouse") from None
            yield self
        finally:
            os.close(fd)

    def commit(self, agent: ESAgent, consumed: Iterable["Identity"] = ()) -> int:
        """Write ``agent`` (which must be at latest + 1) as the next iteration,
        atomically, then drop iterations beyond ``async_es.max_to_keep``."""
        k = agent.model_iter_id
        latest = self.latest
        if k != latest + 1:
            raise WarehouseError(f"{self.path}: cannot commit iteration {k}, the newest is {latest}")
        final = self.iteration_dir(k)
        tmp = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{ITER_PREFIX}{k}-", dir=self.path)
        try:
            _write_iteration(tmp, agent, consumed)
            _crash_point("before-rename")
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fsync_dir(self.path)
        _crash_point("after-rename")
        self._prune(agent.config.async_es.max_to_keep)
        return k

    def _prune(self, max_to_keep: int) -> None:
        keep = set(self.iterations()[-max_to_keep:])
        for name in os.listdir(self.path):
            m = _core.warehouse_iteration_of(name)
            full = os.path.join(self.path, name)
            if (m is not None and m not in keep) or name.startswith(_TMP_PREFIX):
                shutil.rmtree(full, ignore_errors=True)
                if m is not None:
                    self._policies.pop(m, None)
                    self._states.pop(m, None)
        fsync_dir(self.path)


def _write_iteration(directory: str, agent: ESAgent, consumed: Iterable["Identity"]) -> None:
    """model.onnx, then solver.pb recording the model file's sha256, then
    consumed.pb (if any record was used)."""
    os.makedirs(directory, exist_ok=True)
    model = agent.policy.to_model(agent.center).SerializeToString()
    write_model_bytes(os.path.join(directory, MODEL_FILE), model)
    _crash_point("after-model")
    write_state_file(os.path.join(directory, SOLVER_FILE), agent.solver_file_state(model))
    _crash_point("after-solver")
    used = Consumed(consumed)
    if used:
        write_state_file(os.path.join(directory, CONSUMED_FILE), used.to_proto())
    fsync_dir(directory)


#: A record's identity (LogRecord.identity): (sampler_id, model_iter_id,
#: sample_index) for a numbered record, its record_id (bytes) otherwise.
Identity = Union[Tuple[int, int, int], bytes]


class Consumed:
    """A set of record identities kept as consumed.pb keeps them: the ids of
    unnumbered records, and per (sampler, iteration) the runs of consecutive
    sample indices, so that it grows with the runs, not with the records."""

    def __init__(self, identities: Iterable[Identity] = ()):
        self.ids: set = set()
        self._indices: Dict[Tuple[int, int], List[int]] = {}  # unsorted, until compacted
        self._runs: Dict[Tuple[int, int], List[Tuple[int, int]]] = {}  # sorted, disjoint, [first, end)
        for identity in identities:
            self.add(identity)

    def add(self, identity: Identity) -> None:
        if isinstance(identity, bytes):
            self.ids.add(identity)
        else:
            sampler, iteration, index = identity
            self._indices.setdefault((sampler, iteration), []).append(index)

    def _compact(self) -> None:
        for key, indices in self._indices.items():
            runs = self._runs.get(key, [])
            for i in indices:
                runs.append((i, i + 1))
            runs.sort()
            merged: List[Tuple[int, int]] = []
            for first, end in runs:
                if merged and first <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], end))
                else:
                    merged.append((first, end))
            self._runs[key] = merged
        self._indices = {}

    def runs(self) -> Dict[Tuple[int, int], List[Tuple[int, int]]]:
        """(sampler, iteration) -> the runs [first, end) of consumed indices."""
        self._compact()
        return self._runs

    def update(self, other: "Consumed") -> None:
        self.ids |= other.ids
        for key, runs in other.runs().items():
            for first, end in runs:
                self._runs.setdefault(key, []).append((first, end))
            self._indices.setdefault(key, [])

    def __contains__(self, identity: Identity) -> bool:
        if isinstance(identity, bytes):
            return identity in self.ids
        sampler, iteration, index = identity
        runs = (self.runs() if self._indices else self._runs).get((sampler, iteration))
        if not runs:
            return False
        at = bisect.bisect_right(runs, (index, float("inf"))) - 1
        return at >= 0 and runs[at][0] <= index < runs[at][1]

    def __iter__(self):
        """Every identity: the ids, then each numbered record's (sampler, iteration, index)."""
        yield from self.ids
        for (sampler, iteration), runs in sorted(self.runs().items()):
            for first, end in runs:
                for index in range(first, end):
                    yield (sampler, iteration, index)

    def __bool__(self) -> bool:
        return bool(self.ids) or any(self.runs().values())

    def __len__(self) -> int:
        return len(self.ids) + sum(end - first for runs in self.runs().values() for first, end in runs)

    @classmethod
    def from_proto(cls, msg: pb.ConsumedSamples) -> "Consumed":
        out = cls()
        out.ids = set(msg.record_ids)
        for r in msg.ranges:
            out._runs.setdefault((r.sampler_id, r.model_iter_id), []).append((r.first, r.end))
            out._indices.setdefault((r.sampler_id, r.model_iter_id), [])
        return out

    def to_proto(self) -> pb.ConsumedSamples:
        return pb.ConsumedSamples(
            record_ids=sorted(self.ids),
            ranges=[pb.ConsumedRange(sampler_id=s, model_iter_id=k, first=first, end=end)
                    for (s, k), runs in sorted(self.runs().items()) for first, end in runs])


def _crash_point(stage: str) -> None:
    """Fault injection for the crash-safety tests: with EVOKIT_CRASH_AT=stage
    in the environment the process dies here, as a kill would leave it."""
    if os.environ.get("EVOKIT_CRASH_AT") == stage:
        os._exit(137)
