"""Black-box minimisers with pycma's ask / tell / stop / result contract.

- :mod:`~evokit.blackbox.asktell`: :class:`AskTellStrategy`, the one base
  that does the ask / tell / stop / result / optimize bookkeeping, and
  :class:`OptimizeResult`;
- :mod:`~evokit.blackbox.cmaes`: :class:`CMAES` and :class:`SepCMAES`;
- :mod:`~evokit.blackbox.tracked`: :class:`TrackedStrategy`, the evaluation
  counts, best solution and stop criteria of the strategies below, whose
  core does not keep them;
- :mod:`~evokit.blackbox.ga`: :class:`GA`, the genetic algorithm of Such et
  al. 2017;
- :mod:`~evokit.blackbox.openes`: :class:`OpenES`, OpenAI-ES: the training
  family GAUSSIAN_SAMPLING as ask / tell, over
  :class:`~evokit.blackbox.solver_es.SolverES` (as :class:`ARS` is
  ARS_SAMPLING);
- :mod:`~evokit.blackbox.constraints`: constraints g(x) <= 0 for all of
  them (``tell(X, f, constraints=G)``), the adaptive augmented Lagrangian of
  Atamna, Auger and Hansen;
- :mod:`~evokit.blackbox.distribution`: :class:`DistributionES`, the one
  class over the core's distribution families, and a subclass per family
  (:class:`SNES`, ...);
- :mod:`~evokit.blackbox.nsga2`: :class:`NSGA2`, multi-objective (Deb et
  al. 2002), over :mod:`~evokit.blackbox.pareto` (non-dominated sort,
  crowding distance, hypervolume).
"""
