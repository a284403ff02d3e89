"""``ESAgent``: EvoKit's agent API over the C++ core and an ONNX policy.

The flow is EvoKit's::

    agent = ESAgent()
    agent.load_config("configs/cartpole.prototxt")
    agent.load_inference_model("model.onnx")
    agent.init_solver()
    clones = [agent.clone() for _ in range(population_size)]
    infos = [c.add_noise() for c in clones]        # SamplingInfo: the keys
    rewards = [evaluate(c) for c in clones]         # c.predict(obs) inside
    agent.update(infos, rewards)                    # rebuild noise from keys, step

The update is the OpenAI-ES estimate (Salimans et al. 2017, eq. 3 with fitness
shaping and mirrored sampling)::

    g = 1 / (N * sigma) * sum_i w_i * s_i * eps(key_i)     s_i = -1 if mirrored else +1
    theta <- optimizer(theta, -g + weight_decay * theta)

where ``w_i`` are the shaped rewards (centered ranks by default) and the
optimizer (SGD, momentum or Adam) minimises its argument.

The sampling family is the config's ``solver.sampling.type``: the core's
one ``Solver`` interface (cpp/include/evokit/solver.h) runs Gaussian
sampling (the update above), CMA-ES or the GA of Such et al. behind the same
calls, and this class never asks which: a clone's noise is a member the solver
draws, ``update`` tells the solver the rewards, the centre is the solver's.

A service that resumes from saved files calls :meth:`load_solver` instead
of :meth:`init_solver`, as PARL EvoKit's online programs do::

    agent.load_config("config.prototxt")
    agent.load_inference_model("model_dir")         # the model saved with the solver
    agent.load_solver("model_dir")                  # builds the solver, restores its state

The original agent owns the solver (and so the centre parameters). Clones share
the ONNX session and the solver (a clone sees every update at once); each clone
owns only its SamplingInfo, its parameters materialised on demand.
"""

from __future__ import annotations

import hashlib
import os
from typing import Optional, Sequence, Union

import numpy as np

from . import _core
from . import evokit_pb2 as pb
from .config import config_to_text, load_config, solver_config_error
from .errors import ModelError, SolverFileError
from .policy.fingerprint import FINGERPRINT_VERSION, params_digest
from .policy.onnx_policy import OnnxPolicy, select_action
from .solvers import solver_options, state_from_proto, state_to_proto
from .statefile import read_state_file, write_state_file

__all__ = ["ESAgent", "SamplingInfo", "SolverFileError", "params_fingerprint"]

SamplingInfo = pb.SamplingInfo

SOLVER_FILE = _core.WAREHOUSE_SOLVER_FILE  # "solver.pb"
MODEL_FILE = _core.WAREHOUSE_MODEL_FILE  # "model.onnx"


class ESAgent:
    """An evolution-strategies agent with EvoKit's API.

    Construct it empty and call :meth:`load_config`, :meth:`load_inference_model`
    and then :meth:`init_solver` (a fresh solver; ``ESAgent(config, model)``
    does the three at once) or :meth:`load_solver` (the solver a
    :meth:`save_solver` wrote), in that order; or take a warehouse iteration
    with :meth:`from_iteration`.
    """

    def __init__(self, config=None, model=None):
        self._config: Optional[pb.EvoKitConfig] = None
        self._policy: Optional[OnnxPolicy] = None
        self._initial: Optional[np.ndarray] = None  # the model's parameters before init_solver
        self._core = None  # _core.ESAgent: the original's or a clone's
        self._parent: Optional[ESAgent] = None
        self._center_view: Optional[np.ndarray] = None
        self._noisy_view: Optional[np.ndarray] = None
        self._stream = 0
        self._info: Optional[pb.SamplingInfo] = None
        self._state: Optional[np.ndarray] = None  # a recurrent policy's state (predict)
        if config is not None:
            self.load_config(config)
        if model is not None:
            self.load_inference_model(model)
            if config is not None:
                self.init_solver()

    # ------------------------------------------------------------------ setup

    def load_config(self, config: Union[str, os.PathLike, pb.EvoKitConfig],
                    validate: bool = True) -> pb.EvoKitConfig:
        """Load (and validate) the config from a ``.prototxt`` path or a message.

        ``validate=False`` is for a config the caller has just validated (a
        command validates its config once): its solver options are still
        checked by :meth:`init_solver`, against the model."""
        self._require_original("load_config")
        self._config = load_config(config, validate=validate)
        return self._config

    def load_inference_model(self, path: Union[str, os.PathLike],
                             backend: Optional[str] = None) -> None:
        """Load the ONNX policy: a ``.onnx`` file, or a directory holding ``model.onnx``.

        ``backend`` (``"auto"``, ``"native"`` or ``"onnxruntime"``) chooses
        the forward pass of :meth:`predict` (see :class:`~evokit.policy.onnx_policy.OnnxPolicy`);
        by default the config's ``solver.backend``, ``"auto"`` without a config.
        """
        self._require_original("load_inference_model")
        path = os.fspath(path)
        if os.path.isdir(path) and os.path.exists(os.path.join(path, MODEL_FILE)):
            path = os.path.join(path, MODEL_FILE)
        pattern = self._config.solver.param_pattern if self._config is not None else ".*"
        if backend is None:
            backend = self._config.solver.backend if self._config is not None else "auto"
        self._policy = OnnxPolicy.load(path, param_pattern=pattern, backend=backend)
        self._initial = self._policy.initial_params()
        self._set_core(None)

    def init_solver(self) -> None:
        """Build the solver the config's ``solver`` section describes (for
        Gaussian sampling the sampler, its noise table and the optimizer),
        starting from the model's parameters. Not needed before
        :meth:`load_solver`, which builds it too."""
        self._require_original("init_solver")
        self._require_config_and_model("init_solver")
        self._install_core(self._new_core())

    def _require_config_and_model(self, what: str) -> None:
        if self._config is None:
            raise RuntimeError(f"{what}() needs a config: call load_config() first")
        if self._policy is None:
            raise RuntimeError(f"{what}() needs a model: call load_inference_model() first")

    def _new_core(self):
        """A core agent with the solver the config describes, at the model's
        parameters (the config and the model are loaded)."""
        # The core checks the solver options (and the noise table against the
        # parameter count) as it builds the solver; load_config checked the rest.
        try:
            return _make_core_agent(self._config, self._initial)
        except ValueError as exc:
            error = solver_config_error(exc, source="config")
            if error is exc:
                raise
            raise error from None

    def _install_core(self, core) -> None:
        self._set_core(core)
        core.sampling_stream = self._stream

    @classmethod
    def replica(cls, config: pb.EvoKitConfig, policy: OnnxPolicy) -> "ESAgent":
        """An agent for an evaluation worker: same config and model, its
        solver set from the owner's :meth:`sampling_state` before each use
        (:meth:`load_sampling_state`), used only to clone and set noise."""
        agent = cls()
        agent._config = config
        agent._policy = policy
        agent._set_core(_make_core_agent(config, policy.initial_params(), num_threads=1))
        return agent

    @classmethod
    def from_iteration(cls, iteration) -> "ESAgent":
        """The agent at a warehouse iteration: ``iteration`` is what
        :meth:`Warehouse.iteration <evokit.online.warehouse.Warehouse.iteration>`
        returns, its config, model and solver state read and verified there.
        They are taken as they are (nothing is read or checked again): the
        solver the config describes is built at the model's parameters and
        the state restored into it, as :meth:`load_solver` restores it."""
        agent = cls()
        agent._config = pb.EvoKitConfig()
        agent._config.CopyFrom(iteration.config)
        agent._policy = iteration.policy
        agent._initial = agent._policy.initial_params()
        agent._restore_solver_state(iteration.state, iteration.solver_path)
        return agent

    def sampling_state(self) -> bytes:
        """What a replica needs to rebuild this agent's members, as
        ``SolverState`` bytes (for Gaussian sampling: the centre and the
        iteration; for CMA / GA: the strategy's state)."""
        self._require_solver("sampling_state")
        return state_to_proto(self._root()._core.solver.sampling_state(),
                              pb.SolverState()).SerializeToString()

    def load_sampling_state(self, data: bytes) -> None:
        """Take the owner's :meth:`sampling_state` (a replica)."""
        self._require_original("load_sampling_state")
        message = pb.SolverState.FromString(data)
        self._core.solver.load_sampling_state(state_from_proto(message, "sampling state"))

    def _set_core(self, core) -> None:
        self._core = core
        self._noisy_view = None
        # The C++ vectors never move: views taken once stay valid and see updates.
        self._center_view = core.center if core is not None else None

    # ------------------------------------------------------------- properties

    @property
    def config(self) -> pb.EvoKitConfig:
        if self._config is None:
            raise RuntimeError("no config loaded: call load_config() first")
        return self._config

    @property
    def policy(self) -> OnnxPolicy:
        if self._policy is None:
            raise RuntimeError("no model loaded: call load_inference_model() first")
        return self._policy

    @property
    def num_params(self) -> int:
        return self.policy.num_params

    @property
    def is_clone(self) -> bool:
        return self._parent is not None

    @property
    def params(self) -> np.ndarray:
        """The parameters this agent predicts with (read-only view): the
        member's for a clone with noise, else the centre."""
        return self._current_params()

    @property
    def center(self) -> np.ndarray:
        """The centre parameters (read-only view; follows every update)."""
        root = self._root()
        if root._center_view is not None:
            return root._center_view
        if root._initial is None:
            raise RuntimeError("no model loaded: call load_inference_model() first")
        view = root._initial.view()
        view.flags.writeable = False
        return view

    @property
    def model_iter_id(self) -> int:
        """Number of updates applied to the centre parameters."""
        core = self._root()._core
        return 0 if core is None else int(core.model_iter_id)

    @property
    def solver(self):
        """The core's solver (``evokit._core.StrategySolver`` over the
        family's strategy: ``sampler``, ``optimizer``, ``set_center`` and
        ``clone_draws(clone)`` for GAUSSIAN_SAMPLING / ARS_SAMPLING, ``cma`` for
        CMA_SAMPLING, ``ga`` for GA_SAMPLING), shared with the clones."""
        self._require_solver("solver")
        return self._root()._core.solver

    @property
    def sampler(self):
        """The Gaussian sampler (``evokit._core.GaussianSampler``): noise from keys."""
        solver = self.solver
        if not hasattr(solver, "sampler"):
            raise RuntimeError(f"sampler: {solver.family} has no Gaussian sampler")
        return solver.sampler

    @property
    def sampling_type(self) -> str:
        """The sampling family: ``"GAUSSIAN_SAMPLING"``, ``"CMA_SAMPLING"``, ``"GA_SAMPLING"``,
        ``"ARS_SAMPLING"`` (``_core.solver_families()``)."""
        return pb.SamplingConfig.Type.Name(self.config.solver.sampling.type)

    @property
    def sampling_stream(self) -> int:
        """Salt for the keys of clones made afterwards: samplers that run at
        the same time with the same config (several processes) set distinct
        values so that their noise differs."""
        return self._root()._stream

    @sampling_stream.setter
    def sampling_stream(self, value: int) -> None:
        self._require_original("sampling_stream")
        self._stream = int(value)
        if self._core is not None:
            self._core.sampling_stream = self._stream

    @property
    def sampling_info(self) -> Optional[pb.SamplingInfo]:
        """The info of this clone's current noise (None without noise)."""
        if self._parent is None or not self._core.has_noise:
            return None
        return self._info

    # ------------------------------------------------------------ sampling

    def clone(self) -> "ESAgent":
        """A sampling agent sharing this agent's model session and solver.
        Clones are numbered in the order they are made; the solver's keys
        depend on the number (with antithetic Gaussian sampling, clones 2j
        and 2j+1 draw the same noise with opposite signs: call add_noise on
        both equally often)."""
        root = self._root()
        root._require_solver("clone")
        c = ESAgent()
        c._config = root._config
        c._policy = root._policy
        c._parent = root
        c._core = root._core.clone()
        c._center_view = root._center_view
        return c

    def add_noise(self) -> pb.SamplingInfo:
        """Take the next member the solver draws for this clone (for Gaussian
        sampling theta + sign * sigma * eps(key)) and return the SamplingInfo
        from which it can be rebuilt."""
        if self._parent is None:
            raise RuntimeError("add_noise() is for sampling agents: call it on agent.clone(), "
                               "not on the agent that owns the solver")
        info = _to_proto(self._core.add_noise())
        self._info = info
        self._state = None
        return info

    def set_noise(self, info) -> None:
        """Take the member ``info`` names (e.g. to re-evaluate a logged
        sample): a SamplingInfo message, or the core's ``_core.SamplingInfo``."""
        if self._parent is None:
            raise RuntimeError("set_noise() is for sampling agents: call it on agent.clone()")
        self._core.set_noise(core_info(info))
        self._state = None
        if isinstance(info, pb.SamplingInfo):
            self._info = pb.SamplingInfo()
            self._info.CopyFrom(info)
        else:
            self._info = _to_proto(info)
        self._info.model_iter_id = self.model_iter_id

    def draw_members(self, count: int, first: int = 0, *, core: bool = False):
        """The next ``count`` members, as clones ``first`` .. ``first + count - 1``
        would draw them with add_noise() (a training generation, or a chunk of
        the online sampler's samples, evaluated without making clones);
        ``core=True``: as the core's ``_core.SamplingInfo`` (what population()
        and update() take as they are), without the protobuf messages."""
        self._require_original("draw_members")
        self._require_solver("draw_members")
        drawn = self._core.draw_members(count, first)
        return drawn if core else [_to_proto(i) for i in drawn]

    def check_member(self, info: pb.SamplingInfo) -> None:
        """Raise (``ValueError`` or ``IndexError``, naming the problem) unless
        the solver can rebuild ``info`` now."""
        self.solver.check_member(core_info(info))

    def population(self, infos, num_threads: int = 1):
        """A ``_core.Population`` of these members (None = the centre) for
        the batched forward pass of ``NativePolicy``."""
        return self.solver.population([None if i is None else core_info(i) for i in infos],
                                      num_threads)

    # ------------------------------------------------------------ inference

    def predict(self, obs) -> np.ndarray:
        """The policy's first output for ``obs`` (one observation or a batch).

        A recurrent policy (``policy.recurrent``) carries its state from one
        call to the next, each agent and clone its own, starting from zeros:
        call :meth:`reset_state` at the start of every episode (add_noise,
        set_noise and update reset it too: a new member starts afresh). The
        batch size must stay the same until the state is reset."""
        policy = self.policy
        if not policy.recurrent:
            return policy.run(obs, self._current_params())
        batch = policy.batch_size(obs)
        if self._state is None:
            self._state = policy.initial_state(batch)
        elif self._state.shape[0] != policy.state_size(batch):
            raise ModelError(f"{policy.source}: the recurrent state holds a batch of "
                             f"{self._state.shape[0] // policy.state_size(1)} observation(s), "
                             f"got {batch}: call reset_state() to start an episode with "
                             f"another batch size")
        return policy.run(obs, self._current_params(), self._state)

    def reset_state(self) -> None:
        """Start a new episode: a recurrent policy's next :meth:`predict`
        starts from a zero state (nothing to do for a feed-forward policy)."""
        self._state = None

    @property
    def state(self) -> Optional[np.ndarray]:
        """The recurrent state :meth:`predict` carries (flat float32, see
        :meth:`OnnxPolicy.initial_state`), or None at an episode's start."""
        return self._state

    def act(self, obs, discrete: bool = True):
        """The action for ``obs``: argmax of the scores (discrete) or the
        output itself (continuous)."""
        return select_action(self.predict(obs), discrete)

    # --------------------------------------------------------------- update

    def update(self, infos: Sequence[pb.SamplingInfo], rewards, history=None) -> dict:
        """One step of the solver from the samples' infos and rewards (larger is better).

        ``history`` maps older iterations to their centre parameters: with
        Gaussian sampling a sample drawn at an older iteration u is used with
        EvoKit's correction, its noise taken as
        ``s * eps(key) + (theta_u - theta) / sigma``.
        Every input is checked before anything changes: on error the
        parameters and the solver state are left as they were. Returns a dict
        with the sample counts and the reward statistics.
        """
        self._require_owner()
        core_infos, rewards = self._samples(infos, rewards)
        return self._updated(self._core.update(core_infos, rewards, history), rewards)

    def shortfall(self, infos: Sequence[pb.SamplingInfo], rewards) -> Optional[str]:
        """Why these samples are not yet enough for an update (None when they
        are); raises like :meth:`update` for a sample that cannot be told."""
        self._require_solver("shortfall")
        core_infos, rewards = self._samples(infos, rewards)
        return self._root()._core.shortfall(core_infos, rewards)

    def update_selected(self, samples: "_core.SelectedRecords", history=None) -> dict:
        """:meth:`update` from the samples ``_core.select_update_records``
        took from sampling logs, read where the core keeps them (``evokit
        update``: millions of samples, no Python object per sample)."""
        self._require_owner()
        return self._updated(self._core.update_selected(samples, history), samples.rewards)

    def _require_owner(self) -> None:
        if self._parent is not None:
            raise RuntimeError("update() must be called on the agent that owns the solver, "
                               "not on a clone")
        self._require_solver("update")

    def _updated(self, stats: dict, rewards: np.ndarray) -> dict:
        """The core's update statistics with the rewards' (the state changed)."""
        self._state = None
        stats.update(reward_mean=float(rewards.mean()), reward_max=float(rewards.max()),
                     reward_min=float(rewards.min()))
        return stats

    def shortfall_selected(self, samples: "_core.SelectedRecords") -> Optional[str]:
        """:meth:`shortfall` of the samples ``_core.select_update_records`` took."""
        self._require_solver("shortfall")
        return self._root()._core.shortfall_selected(samples)

    @staticmethod
    def _samples(infos, rewards):
        rewards = np.asarray(rewards, dtype=np.float64)
        if rewards.ndim != 1:
            raise ValueError(f"rewards must be a 1-D sequence, got shape {rewards.shape}")
        core_infos = []
        for i, info in enumerate(infos):
            if not isinstance(info, (pb.SamplingInfo, _core.SamplingInfo)):
                raise TypeError(f"sampling info {i} is a {type(info).__name__}, expected SamplingInfo")
            core_infos.append(core_info(info))
        return core_infos, rewards

    # -------------------------------------------------------------- save/load

    def save_inference_model(self, directory: Union[str, os.PathLike]) -> str:
        """Write the centre policy as plain ONNX to ``directory/model.onnx``."""
        self._require_original("save_inference_model")
        path = os.path.join(os.fspath(directory), MODEL_FILE)
        self.policy.save(path, self.center)
        return path

    def solver_state(self) -> pb.SolverState:
        """The solver state as saved in ``solver.pb``: the solver's full
        state (key-draw counters included), the config and the fingerprints."""
        self._require_original("solver_state")
        self._require_solver("solver_state")
        state = pb.SolverState(
            num_params=self.num_params, optimizer=self._config.solver.optimizer.type,
            model_fingerprint=self.policy.fingerprint(), config=config_to_text(self._config),
            params_fingerprint=params_fingerprint(self.policy, self.center),
            fingerprint_version=FINGERPRINT_VERSION)
        return state_to_proto(self._core.solver.save(), state)

    def save_solver(self, directory: Union[str, os.PathLike]) -> str:
        """Write :meth:`solver_file_state` to ``directory/solver.pb``, atomically."""
        return write_state_file(os.path.join(os.fspath(directory), SOLVER_FILE),
                                self.solver_file_state())

    def solver_file_state(self, model_bytes: Optional[bytes] = None) -> pb.SolverState:
        """What ``solver.pb`` holds: :meth:`solver_state` and ``model_sha256``,
        the sha256 of the model :meth:`save_inference_model` writes for the
        centre (``model_bytes``, when the caller has serialised it already).
        A warehouse checks it against its iteration's model.onnx; the same
        calls give the same file in a model directory and in a warehouse."""
        if model_bytes is None:
            model_bytes = self.policy.to_model(self.center).SerializeToString()
        state = self.solver_state()
        state.model_sha256 = hashlib.sha256(model_bytes).hexdigest()
        return state

    def load_solver(self, directory: Union[str, os.PathLike]) -> None:
        """Restore the solver state written by :meth:`save_solver` (its sha256
        trailer verified, :mod:`evokit.statefile`). The model loaded must be
        the one the state was saved with (same graph, and the same parameter
        values where the state records their fingerprint) and the optimizer
        type must match the config.
        Call it after :meth:`load_config` and :meth:`load_inference_model`;
        :meth:`init_solver` is not needed: without a solver, the one the
        config describes is built first (as :meth:`init_solver` would), and
        kept only if the state loads.
        A reloaded agent continues as the saved one would have: the same keys
        and the same updates, bit for bit."""
        self._require_original("load_solver")
        self._require_config_and_model("load_solver")
        path = os.path.join(os.fspath(directory), SOLVER_FILE)
        if not os.path.isfile(path):
            raise SolverFileError(f"{path}: no such solver file")
        self.load_solver_state(read_solver_file(path), path, exact_model=True)

    def load_solver_state(self, state: pb.SolverState, path: str = "<solver state>", *,
                          exact_model: bool = False) -> None:
        """Restore a :meth:`solver_state` message (checked as
        :meth:`load_solver` checks a file; ``path`` names it in errors).
        With ``exact_model`` (as :meth:`load_solver`), the agent's centre (the
        loaded model's parameters, until an update) must also be the one the
        state records (its params_fingerprint): the model the state was saved
        with, not just one of the same graph. Builds the solver first if
        the agent has none (see :meth:`load_solver`); on error the agent is
        left as it was."""
        self._require_original("load_solver_state")
        self._require_config_and_model("load_solver_state")
        check_solver_state(state, self.policy, self.center, self._config, path, exact_model=exact_model)
        self._restore_solver_state(state, path)

    def _restore_solver_state(self, state: pb.SolverState, path: str) -> None:
        """Restore a state checked against the agent's config and model
        (:func:`check_solver_state`); on error the agent is left as it was."""
        # The calling-order rule: a state is restored into the agent's solver,
        # or, without one (no init_solver() before), into a new solver built
        # from the config, which the agent keeps once the state has loaded.
        core = self._core if self._core is not None else self._new_core()
        try:
            core.solver.load(state_from_proto(state, path))
        except SolverFileError:
            raise
        except (ValueError, IndexError) as exc:
            message = str(exc)
            if not message.startswith(path):
                message = f"{path}: invalid solver state: {message}"
            raise SolverFileError(message) from None
        if core is not self._core:
            self._install_core(core)

    # ---------------------------------------------------------------- helpers

    def _root(self) -> "ESAgent":
        return self._parent if self._parent is not None else self

    def _current_params(self) -> np.ndarray:
        if self._parent is not None and self._core.has_noise:
            # The core materialises a clone's parameters into a pooled buffer
            # (refilled or reassigned between calls): ask it every time, and
            # keep the same view object while the buffer stays the same.
            view = self._core.params
            if self._noisy_view is None or self._noisy_view.ctypes.data != view.ctypes.data:
                self._noisy_view = view
            return self._noisy_view
        return self.center

    def _require_original(self, what: str) -> None:
        if self._parent is not None:
            raise RuntimeError(f"{what}() must be called on the original agent, not on a clone")

    def _require_solver(self, what: str) -> None:
        if self._root()._core is None:
            raise RuntimeError(f"{what}() needs the solver: call init_solver() or load_solver() "
                               f"first")


def read_solver_file(path: str) -> pb.SolverState:
    """The SolverState of the checksummed file ``path`` (SolverFileError naming it)."""
    return read_state_file(path, pb.SolverState(), SolverFileError, "solver state file")


def check_solver_state(state: pb.SolverState, policy: OnnxPolicy, params: np.ndarray,
                       config: pb.EvoKitConfig, path: str, *, exact_model: bool = False) -> None:
    """Refuse a solver state (read from ``path``) that does not belong to
    ``policy`` at ``params`` under ``config`` (the core's check, in this
    order): num_params, the fingerprint version, the graph's fingerprint, with
    ``exact_model`` the params_fingerprint where the state records one (the
    exact model saved beside it), the optimizer type of the config."""
    name = pb.OptimizerConfig.Type.Name
    try:
        _core.solver_state_check(
            state.HasField("num_params"), state.num_params, state.fingerprint_version,
            state.model_fingerprint, state.params_fingerprint, name(state.optimizer),
            policy.source, policy.num_params, [1, FINGERPRINT_VERSION], policy.fingerprint,
            params, name(config.solver.optimizer.type), exact_model, path)
    except ValueError as exc:
        raise SolverFileError(str(exc)) from None


def params_fingerprint(policy: OnnxPolicy, params: np.ndarray,
                       version: int = FINGERPRINT_VERSION) -> str:
    """sha256 of one exact model: its graph fingerprint (hex, ASCII) followed
    by its parameter values as little-endian float32 (what
    SampleRecord.model_fingerprint holds for samples drawn from it)."""
    return params_digest(policy.fingerprint(version), params)


def core_info(info):
    """A SamplingInfo as the core's ``_core.SamplingInfo`` (one of those is returned as it is):
    a few dozen bytes, where a protobuf message read from a log keeps its whole record alive."""
    if isinstance(info, _core.SamplingInfo):
        return info
    return _core.SamplingInfo(key=list(info.key), model_iter_id=int(info.model_iter_id),
                              mirrored=bool(info.mirrored))


def _to_proto(info) -> pb.SamplingInfo:
    return pb.SamplingInfo(key=list(info.key), model_iter_id=int(info.model_iter_id),
                           mirrored=bool(info.mirrored))


def _make_core_agent(cfg: pb.EvoKitConfig, params: np.ndarray, num_threads: Optional[int] = None):
    threads = cfg.solver.num_threads if num_threads is None else num_threads
    return _core.ESAgent(np.ascontiguousarray(params, dtype=np.float32),
                         solver_options(cfg.solver), num_threads=threads)
