"""Evaluating sampling agents on gymnasium environments.

Training talks to evaluation through one small interface,
:class:`~evokit.evaluation.base.Evaluator`: given the agent and its samples'
infos (``None`` for the centre policy) and an episode seed per sample, return
the rewards. Backends plug in behind it without touching the training loop:

- :class:`~evokit.evaluation.serial.SerialEvaluator`: one environment in this
  process, one policy call per member and step;
- :class:`~evokit.evaluation.processes.ProcessEvaluator`: the same in worker
  processes;
- :class:`~evokit.evaluation.vector.VectorEvaluator`: for environments
  EvoKit's core implements (the extension's registry,
  :mod:`~evokit.evaluation.registry`: CartPole-v0/v1, Pendulum-v1;
  gymnasium's MuJoCo Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5,
  Swimmer-v5 and Humanoid-v5, :mod:`~evokit.evaluation.native_mujoco`), every
  episode of the population runs in C++ (``evokit._core.env_rollouts``),
  threaded over episodes; otherwise the whole population in lockstep on a gymnasium vector
  environment (:mod:`~evokit.evaluation.lockstep`), one batched native policy
  call per step for every member (``evokit._core.PolicyGraph.run_population``),
  finished members masked out; for environments without a vectorised form,
  worker processes each run a slice of the population the same way;
- :class:`~evokit.evaluation.ray_backend.RayEvaluator`: chunks of the
  population on Ray actors, each running one of the above.

With ``Evaluator.obs_norm`` set, every evaluator shows the policy normalised
observations (:mod:`~evokit.evaluation.obsnorm`) and returns the statistics
of the raw ones.

:func:`~evokit.evaluation.factory.make_evaluator` picks one;
:mod:`~evokit.evaluation.envs` makes environments and checks that a policy
fits them. A reward depends only on (parameters, seed): where the environment
is deterministic per seed, every evaluator gives the same rewards (for the
vector evaluator, see its notes on seeding).
"""
