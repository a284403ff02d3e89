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
reads each one at most once and verifies it as it is read, in one place,
:meth:`Warehouse.iteration`, which returns the verified :class:`Iteration`
(config, model bytes, policy, solver state, fingerprints) that
:meth:`ESAgent.from_iteration <evokit.agent.ESAgent.from_iteration>` takes as
it is. warehouse.pb, solver.pb and consumed.pb are verified by their sha256
trailer (:mod:`evokit.statefile`), a model.onnx by the sha256 of its bytes its
solver.pb records (model_sha256), then the solver state against the model
(the params_fingerprint: the exact model), the iteration the state is at and
the warehouse's config fingerprint; a file that does not match is refused,
naming it.

Crash safety: a new iteration is written into a temporary directory beside
the others, every file fsynced, then renamed into place in one step (and the
warehouse directory fsynced). A kill at any point leaves the warehouse at
iteration k or k+1, never half-written; stale temporary directories are
ignored and removed by the next commit.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
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
from ..agent import (MODEL_FILE, SOLVER_FILE, ESAgent, check_solver_state, params_fingerprint,
                     read_solver_file)
from ..config import config_to_text, load_config, parse_config
from ..errors import ConfigError, ModelError, SolverFileError, WarehouseError
from ..policy.fingerprint import FINGERPRINT_VERSION
from ..policy.onnx_policy import OnnxPolicy, write_model_bytes
from ..solvers import solver_options
from ..statefile import read_state_file, write_state_file
from ..util import fsync_dir

__all__ = ["Warehouse", "Iteration", "config_fingerprint",
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


@dataclasses.dataclass(frozen=True, eq=False)
class Iteration:
    """Iteration ``k`` of a warehouse, read and verified by
    :meth:`Warehouse.iteration` (each file read once, each digest computed
    once), as :meth:`ESAgent.from_iteration <evokit.agent.ESAgent.from_iteration>`
    takes it. Read its messages, do not modify them."""

    k: int
    #: ``W/model_iter_id-k``.
    directory: str
    #: The config an agent of the iteration runs with: the one its solver.pb
    #: stores, or the one given to :meth:`Warehouse.iteration`; validated.
    config: pb.EvoKitConfig
    #: The bytes of model.onnx, whose sha256 is solver.pb's model_sha256
    #: where it records one.
    model_bytes: bytes
    #: The model parsed from ``model_bytes`` (the config's param_pattern and
    #: backend); its parameters are the centre of the iteration.
    policy: OnnxPolicy
    #: solver.pb, checked against the model (the exact model), the config's
    #: optimizer and ``k``.
    state: pb.SolverState
    #: What SampleRecord.model_fingerprint of a sample drawn at ``k`` holds:
    #: solver.pb's params_fingerprint (computed, of its fingerprint version,
    #: where it records none).
    params_fingerprint: str
    #: What SampleRecord.config_fingerprint holds: warehouse.pb's, equal to
    #: the one of this config and model.
    config_fingerprint: str

    @property
    def solver_path(self) -> str:
        return os.path.join(self.directory, SOLVER_FILE)

    @property
    def model_path(self) -> str:
        return os.path.join(self.directory, MODEL_FILE)

    @property
    def params(self) -> np.ndarray:
        """The centre parameters (a new array)."""
        return self.policy.initial_params()


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
        self._states: Dict[int, pb.SolverState] = {}  # solver.pb of k, read once
        self._iterations: Dict[int, Iteration] = {}  # verified once, with the stored config
        self._validated: set = set()  # the k whose stored config has been validated

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
            model, state = _write_iteration(os.path.join(tmp, ITER_PREFIX + "0"), agent, consumed=())
            if os.path.isdir(path):
                os.rmdir(path)  # empty, checked above
            os.rename(tmp, path)
            fsync_dir(parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        wh = cls(path)
        # Iteration 0 is what was just written, from this agent: not read back.
        wh._states[0] = state
        wh._iterations[0] = Iteration(0, wh.iteration_dir(0), cfg, model, agent.policy, state,
                                      state.params_fingerprint, info.config_fingerprint)
        wh._validated.add(0)
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

    def iteration(self, k: Optional[int] = None, config=None) -> Iteration:
        """Iteration k (default: the newest), read and verified: what
        :meth:`ESAgent.from_iteration <evokit.agent.ESAgent.from_iteration>`
        takes. ``config`` (a path or a message, validated) replaces the
        stored one if it keeps the key fields (ConfigError otherwise);
        without it the stored config is validated (once per k).

        Each file of k is read once per warehouse object and verified as it
        is read, in this order: solver.pb (its trailer), model.onnx (the
        model_sha256 solver.pb records: ModelError), the solver state against
        the model, the exact model where it records a params_fingerprint,
        and the config's optimizer (SolverFileError), the iteration it is at
        (WarehouseError), the config fingerprint of warehouse.pb
        (WarehouseError)."""
        k = self.latest if k is None else k
        if config is None:
            if k not in self._validated:
                self.config(k)  # the stored config, which the verified iteration holds
                self._validated.add(k)
            return self._verified(k)
        stored = self.config(k, validate=False)  # only compared with the new one
        run_config = load_config(config)
        source = "config" if isinstance(config, pb.EvoKitConfig) else os.fspath(config)
        check_config_compatible(stored, run_config, source=source)
        verified = self._verified(k)
        policy = verified.policy
        if run_config.solver.backend != verified.config.solver.backend:
            policy = _policy(verified.model_bytes, verified.model_path, run_config)
        return dataclasses.replace(verified, config=run_config, policy=policy)

    def _verified(self, k: int) -> Iteration:
        """Iteration k with its stored config (not validated here: only what
        the files hold is verified), read and verified once."""
        known = self._iterations.get(k)
        if known is not None:
            return known
        d = self._require(k)
        solver_path, model_path = os.path.join(d, SOLVER_FILE), os.path.join(d, MODEL_FILE)
        state = self._solver_state(k)
        config = self.config(k, validate=False)
        model = _read_model(model_path, state.model_sha256, solver_path)
        policy = _policy(model, model_path, config)
        params = policy.initial_params()
        check_solver_state(state, policy, params, config, solver_path, exact_model=True)
        _checked(_core.warehouse_check_iteration, d, state.steps, k)
        if config_fingerprint(config, policy, self.info.fingerprint_version) != self.info.config_fingerprint:
            raise WarehouseError(f"{d}: model or config does not match the warehouse "
                                 f"(fingerprint differs from {INFO_FILE})")
        known = Iteration(k, d, config, model, policy, state,
                          state.params_fingerprint or params_fingerprint(policy, params,
                                                                         state.fingerprint_version),
                          self.info.config_fingerprint)
        self._iterations[k] = known
        return known

    def policy(self, k: int) -> OnnxPolicy:
        """The model of iteration k (:meth:`iteration`'s, verified)."""
        return self._verified(k).policy

    def params(self, k: int) -> np.ndarray:
        """The centre parameters of iteration k."""
        return self._verified(k).params

    def model_fingerprint(self, k: int) -> str:
        """What SampleRecord.model_fingerprint of a sample drawn at iteration k
        holds: its params_fingerprint, of the version its solver.pb has."""
        return self._verified(k).params_fingerprint

    def consumed(self, k: int) -> "Consumed":
        """The records the update that produced iteration k used."""
        path = os.path.join(self._require(k), CONSUMED_FILE)
        if not os.path.exists(path):
            return Consumed()
        return Consumed.from_proto(read_state_file(path, pb.ConsumedSamples(), WarehouseError,
                                                   "consumed-samples file"))

    def load_agent(self, k: Optional[int] = None, config=None) -> ESAgent:
        """An agent at iteration k (default: the newest) with its solver state:
        ``ESAgent.from_iteration(self.iteration(k, config))``. ``config``
        replaces the stored one if it keeps the key fields."""
        return ESAgent.from_iteration(self.iteration(k, config))

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
                    self._states.pop(m, None)
                    self._iterations.pop(m, None)
                    self._validated.discard(m)
        fsync_dir(self.path)


def _read_model(path: str, sha256: str, source: str) -> bytes:
    """The bytes of model.onnx at ``path``, whose sha256 must be ``sha256``
    where ``source`` (its solver.pb) records one (model_sha256)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from exc
    if sha256:
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise ModelError(f"{path}: its sha256 is {actual}, {source} records {sha256} for its model "
                             f"(model_sha256): the file is damaged, or the state is another model's")
    return data


def _policy(model: bytes, path: str, config: pb.EvoKitConfig) -> OnnxPolicy:
    """The policy of a model file's bytes, as ``config`` selects its
    parameters and its backend."""
    return OnnxPolicy.from_bytes(model, param_pattern=config.solver.param_pattern, source=path,
                                 backend=config.solver.backend)


def _write_iteration(directory: str, agent: ESAgent, consumed: Iterable["Identity"]
                     ) -> Tuple[bytes, pb.SolverState]:
    """model.onnx, then solver.pb recording the model file's sha256, then
    consumed.pb (if any record was used); returns what model.onnx and
    solver.pb hold."""
    os.makedirs(directory, exist_ok=True)
    model = agent.policy.to_model(agent.center).SerializeToString()
    write_model_bytes(os.path.join(directory, MODEL_FILE), model)
    _crash_point("after-model")
    state = agent.solver_file_state(model)
    write_state_file(os.path.join(directory, SOLVER_FILE), state)
    _crash_point("after-solver")
    used = Consumed(consumed)
    if used:
        write_state_file(os.path.join(directory, CONSUMED_FILE), used.to_proto())
    fsync_dir(directory)
    return model, state


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
    def taken(cls, samples) -> "Consumed":
        """The identities of the records ``_core.select_update_records`` took
        (its ``taken_ids`` and ``taken_runs``), without one object per record."""
        out = cls()
        out.ids = set(samples.taken_ids)
        for sampler, iteration, first, end in samples.taken_runs:
            out._runs.setdefault((sampler, iteration), []).append((first, end))
            out._indices.setdefault((sampler, iteration), [])
        return out

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
