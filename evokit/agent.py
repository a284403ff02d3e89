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

The original agent owns the centre parameters and the solver. Clones share the
ONNX session, the noise table and the centre parameters (a clone sees every
update at once); each clone owns only its perturbed parameter vector.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

import numpy as np

from . import _core
from . import evokit_pb2 as pb
from .config import FITNESS_SHAPING_NAMES, ConfigError, config_to_text, load_config, validate_config
from .model import OnnxPolicy, select_action
from .util import atomic_write_bytes

__all__ = ["ESAgent", "SamplingInfo", "SolverFileError"]

SamplingInfo = pb.SamplingInfo

SOLVER_FILE = "solver.pb"
MODEL_FILE = "model.onnx"


class SolverFileError(ValueError):
    """A solver state file that is missing, corrupt or belongs to another model."""


class ESAgent:
    """An evolution-strategies agent with EvoKit's API.

    Construct it empty and call :meth:`load_config`, :meth:`load_inference_model`
    and :meth:`init_solver` in that order (``ESAgent(config, model)`` does the
    three at once).
    """

    def __init__(self, config=None, model=None):
        self._config: Optional[pb.EvoKitConfig] = None
        self._policy: Optional[OnnxPolicy] = None
        self._params: Optional[np.ndarray] = None  # centre parameters (float32)
        self._sampler = None
        self._optimizer = None
        self._parent: Optional[ESAgent] = None
        self._clone_id = -1
        self._num_clones = 0
        self._draws = 0
        self._noisy: Optional[np.ndarray] = None
        self._info: Optional[pb.SamplingInfo] = None
        #: Salt for the keys this agent's clones draw: samplers that run at the
        #: same time with the same config (several processes) set distinct
        #: values so that their noise differs.
        self.sampling_stream = 0
        if config is not None:
            self.load_config(config)
        if model is not None:
            self.load_inference_model(model)
            if config is not None:
                self.init_solver()

    # ------------------------------------------------------------------ setup

    def load_config(self, config: Union[str, os.PathLike, pb.EvoKitConfig]) -> pb.EvoKitConfig:
        """Load (and validate) the config from a ``.prototxt`` path or a message."""
        self._require_original("load_config")
        self._config = load_config(config)
        return self._config

    def load_inference_model(self, path: Union[str, os.PathLike]) -> None:
        """Load the ONNX policy: a ``.onnx`` file, or a directory holding ``model.onnx``."""
        self._require_original("load_inference_model")
        path = os.fspath(path)
        if os.path.isdir(path) and os.path.exists(os.path.join(path, MODEL_FILE)):
            path = os.path.join(path, MODEL_FILE)
        pattern = self._config.solver.param_pattern if self._config is not None else ".*"
        self._policy = OnnxPolicy.load(path, param_pattern=pattern)
        self._params = self._policy.initial_params()
        self._sampler = None
        self._optimizer = None

    def init_solver(self) -> None:
        """Build the sampler (and its shared noise table) and the optimizer."""
        self._require_original("init_solver")
        if self._config is None:
            raise RuntimeError("init_solver() needs a config: call load_config() first")
        if self._policy is None:
            raise RuntimeError("init_solver() needs a model: call load_inference_model() first")
        cfg = self._config
        validate_config(cfg, source="config", num_params=self._policy.num_params)
        g = cfg.solver.sampling.gaussian_sampling
        if cfg.solver.sampling.type != pb.SamplingConfig.GAUSSIAN_SAMPLING:
            raise ConfigError("config", f"solver.sampling.type {cfg.solver.sampling.type} is not supported")
        self._sampler = _core.GaussianSampler(
            seed=g.seed, sigma=g.std, cached=g.cached, cache_size=g.cache_size,
            num_params=self._policy.num_params, num_threads=cfg.solver.num_threads)
        self._optimizer = _make_optimizer(cfg.solver.optimizer, self._policy.num_params)

    @classmethod
    def _replica(cls, config: pb.EvoKitConfig, policy: OnnxPolicy, params: np.ndarray,
                 model_iter_id: int) -> "ESAgent":
        """An agent for an evaluation worker: same config, model and centre
        parameters, no optimizer state (it never updates)."""
        agent = cls()
        agent._config = config
        agent._policy = policy
        agent._params = np.array(params, dtype=np.float32)
        g = config.solver.sampling.gaussian_sampling
        agent._sampler = _core.GaussianSampler(
            seed=g.seed, sigma=g.std, cached=g.cached, cache_size=g.cache_size,
            num_params=policy.num_params, num_threads=1)
        agent._optimizer = _make_optimizer(config.solver.optimizer, policy.num_params)
        agent._optimizer.steps = model_iter_id
        return agent

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
        perturbed ones for a clone with noise, else the centre."""
        p = self._current_params()
        view = p.view()
        view.flags.writeable = False
        return view

    @property
    def model_iter_id(self) -> int:
        """Number of updates applied to the centre parameters."""
        root = self._root()
        if root._optimizer is None:
            return 0
        return int(root._optimizer.steps)

    @property
    def sampling_info(self) -> Optional[pb.SamplingInfo]:
        """The info of this clone's current noise (None without noise)."""
        if self._info is None or self._info.model_iter_id != self.model_iter_id:
            return None
        return self._info

    # ------------------------------------------------------------ sampling

    def clone(self) -> "ESAgent":
        """A sampling agent sharing this agent's model session, noise table
        and centre parameters. With antithetic sampling, clones are paired in
        the order they are made: clones 2j and 2j+1 draw the same noise with
        opposite signs (call add_noise on both equally often)."""
        root = self._root()
        root._require_solver("clone")
        c = ESAgent()
        c._config = root._config
        c._policy = root._policy
        c._sampler = root._sampler
        c._parent = root
        c._clone_id = root._num_clones
        root._num_clones += 1
        c.sampling_stream = root.sampling_stream
        return c

    def add_noise(self) -> pb.SamplingInfo:
        """Perturb this clone's parameters, theta + sign * sigma * eps(key), and
        return the SamplingInfo from which the noise can be rebuilt."""
        if self._parent is None:
            raise RuntimeError("add_noise() is for sampling agents: call it on agent.clone(), "
                               "not on the agent that owns the solver")
        antithetic = self._config.solver.antithetic
        pair_id = self._clone_id // 2 if antithetic else self._clone_id
        it = self.model_iter_id
        key = self._sampler.draw_key(it, pair_id, self._draws, self.sampling_stream)
        self._draws += 1
        info = pb.SamplingInfo(key=[key], model_iter_id=it,
                               mirrored=bool(antithetic and self._clone_id % 2 == 1))
        self.set_noise(info)
        return info

    def set_noise(self, info: pb.SamplingInfo) -> None:
        """Perturb this clone with the noise that ``info`` names (e.g. to
        re-evaluate a logged sample)."""
        if self._parent is None:
            raise RuntimeError("set_noise() is for sampling agents: call it on agent.clone()")
        key = _single_key(info, "sampling info")
        self._sampler.check_key(key)
        if self._noisy is None:
            self._noisy = np.empty(self.num_params, dtype=np.float32)
        sign = -1.0 if info.mirrored else 1.0
        self._sampler.perturb(self._root()._params, key, sign, out=self._noisy,
                              num_threads=self._config.solver.num_threads)
        self._info = pb.SamplingInfo()
        self._info.CopyFrom(info)
        self._info.model_iter_id = self.model_iter_id

    # ------------------------------------------------------------ inference

    def predict(self, obs) -> np.ndarray:
        """The policy's first output for ``obs`` (one observation or a batch)."""
        return self.policy.run(obs, self._current_params())

    def act(self, obs, discrete: bool = True):
        """The action for ``obs``: argmax of the scores (discrete) or the
        output itself (continuous)."""
        return select_action(self.predict(obs), discrete)

    # --------------------------------------------------------------- update

    def update(self, infos: Sequence[pb.SamplingInfo], rewards) -> dict:
        """One ES step from the samples' infos and rewards (larger is better).

        Every input is checked before anything changes: on error the
        parameters and the solver state are left as they were. Returns a dict
        with the number of samples and the reward statistics.
        """
        if self._parent is not None:
            raise RuntimeError("update() must be called on the agent that owns the solver, "
                               "not on a clone")
        self._require_solver("update")
        infos = list(infos)
        rewards = np.asarray(rewards, dtype=np.float64)
        if rewards.ndim != 1:
            raise ValueError(f"rewards must be a 1-D sequence, got shape {rewards.shape}")
        if len(infos) != len(rewards):
            raise ValueError(f"update() got {len(infos)} sampling infos but {len(rewards)} rewards; "
                             f"they must pair up one to one")
        if not infos:
            raise ValueError("update() needs at least one sample, got none")
        it = self.model_iter_id
        keys = np.empty(len(infos), dtype=np.int64)
        signs = np.empty(len(infos), dtype=np.float32)
        for i, info in enumerate(infos):
            if not isinstance(info, pb.SamplingInfo):
                raise TypeError(f"sampling info {i} is a {type(info).__name__}, expected SamplingInfo")
            keys[i] = _single_key(info, f"sampling info {i}")
            try:
                self._sampler.check_key(int(keys[i]))
            except IndexError as exc:
                raise IndexError(f"sampling info {i}: {exc}") from None
            if info.model_iter_id != it:
                raise ValueError(f"sampling info {i} was drawn at model iteration {info.model_iter_id} "
                                 f"but the agent is at iteration {it}")
            signs[i] = -1.0 if info.mirrored else 1.0
        for i, r in enumerate(rewards):
            if not np.isfinite(r):
                raise ValueError(f"reward of sample {i} is {r}")
        solver = self._config.solver
        method = FITNESS_SHAPING_NAMES[solver.fitness_shaping]
        weights = _core.shape_fitness(rewards.astype(np.float32), method)
        direction = self._sampler.descent_direction(
            keys, signs, weights, self._params, solver.weight_decay, solver.num_threads)
        self._optimizer.step(self._params, direction, solver.num_threads)
        return {"num_samples": len(infos), "model_iter_id": self.model_iter_id,
                "reward_mean": float(rewards.mean()), "reward_max": float(rewards.max()),
                "reward_min": float(rewards.min())}

    # -------------------------------------------------------------- save/load

    def save_inference_model(self, directory: Union[str, os.PathLike]) -> str:
        """Write the centre policy as plain ONNX to ``directory/model.onnx``."""
        self._require_original("save_inference_model")
        path = os.path.join(os.fspath(directory), MODEL_FILE)
        self.policy.save(path, self._params)
        return path

    def save_solver(self, directory: Union[str, os.PathLike]) -> str:
        """Write the solver state (optimizer vectors, step count, config,
        model fingerprint) to ``directory/solver.pb``, atomically."""
        self._require_original("save_solver")
        self._require_solver("save_solver")
        opt = self._optimizer
        state = pb.SolverState(
            num_params=self.num_params, optimizer=self._config.solver.optimizer.type,
            steps=int(opt.steps), model_fingerprint=self.policy.fingerprint(),
            config=config_to_text(self._config))
        for name in opt.state_names:
            state.vectors.add(name=name, data=opt.get_state(name).astype("<f4").tobytes())
        path = os.path.join(os.fspath(directory), SOLVER_FILE)
        atomic_write_bytes(path, state.SerializeToString())
        return path

    def load_solver(self, directory: Union[str, os.PathLike]) -> None:
        """Restore the solver state written by :meth:`save_solver`. The model
        loaded must be the one the state was saved with (same graph and
        parameter count) and the optimizer type must match the config."""
        self._require_original("load_solver")
        self._require_solver("load_solver")
        path = os.path.join(os.fspath(directory), SOLVER_FILE)
        if not os.path.isfile(path):
            raise SolverFileError(f"{path}: no such solver file")
        with open(path, "rb") as f:
            data = f.read()
        state = pb.SolverState()
        try:
            state.ParseFromString(data)
        except Exception as exc:  # google.protobuf.message.DecodeError
            raise SolverFileError(f"{path}: not a solver state file ({exc})") from None
        if not state.HasField("num_params"):
            raise SolverFileError(f"{path}: not a solver state file (no num_params)")
        if state.num_params != self.num_params:
            raise SolverFileError(f"{path}: solver state is for a model with {state.num_params} "
                                  f"parameters, the loaded model has {self.num_params}")
        if state.model_fingerprint != self.policy.fingerprint():
            raise SolverFileError(f"{path}: solver state belongs to another model "
                                  f"(graph fingerprint {state.model_fingerprint[:12]}, "
                                  f"loaded model {self.policy.fingerprint()[:12]})")
        want = self._config.solver.optimizer.type
        if state.optimizer != want:
            name = pb.OptimizerConfig.Type.Name
            raise SolverFileError(f"{path}: solver state is for optimizer {name(state.optimizer)}, "
                                  f"the config asks for {name(want)}")
        vectors = {}
        for v in state.vectors:
            arr = np.frombuffer(v.data, dtype="<f4")
            if arr.size != self.num_params:
                raise SolverFileError(f"{path}: state vector {v.name!r} holds {arr.size} values, "
                                      f"expected {self.num_params}")
            vectors[v.name] = arr
        missing = set(self._optimizer.state_names) - set(vectors)
        if missing:
            raise SolverFileError(f"{path}: state vectors {sorted(missing)} are missing")
        for name, arr in vectors.items():
            self._optimizer.set_state(name, arr.astype(np.float32))
        self._optimizer.steps = state.steps

    # ---------------------------------------------------------------- helpers

    def _root(self) -> "ESAgent":
        return self._parent if self._parent is not None else self

    def _current_params(self) -> np.ndarray:
        root = self._root()
        if root._params is None:
            raise RuntimeError("no model loaded: call load_inference_model() first")
        if self._noisy is not None and self.sampling_info is not None:
            return self._noisy
        return root._params

    def _require_original(self, what: str) -> None:
        if self._parent is not None:
            raise RuntimeError(f"{what}() must be called on the original agent, not on a clone")

    def _require_solver(self, what: str) -> None:
        if self._sampler is None or self._optimizer is None:
            raise RuntimeError(f"{what}() needs the solver: call init_solver() first")


def _single_key(info: pb.SamplingInfo, what: str) -> int:
    if len(info.key) == 0:
        raise ValueError(f"{what} has no key")
    if len(info.key) != 1:
        raise ValueError(f"{what} has {len(info.key)} keys, Gaussian sampling uses exactly 1")
    return int(info.key[0])


def _make_optimizer(cfg: pb.OptimizerConfig, num_params: int):
    T = pb.OptimizerConfig
    if cfg.type == T.SGD:
        return _core.SGD(cfg.base_lr, num_params)
    if cfg.type == T.MOMENTUM:
        return _core.Momentum(cfg.base_lr, cfg.momentum.momentum, num_params)
    if cfg.type == T.ADAM:
        a = cfg.adam
        return _core.Adam(cfg.base_lr, a.beta1, a.beta2, a.epsilon, num_params)
    raise ConfigError("config", f"solver.optimizer.type: unknown optimizer type {cfg.type}")
