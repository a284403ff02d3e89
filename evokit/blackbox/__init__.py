"""Black-box minimisers with pycma's ask / tell / stop / result contract.

- :mod:`~evokit.blackbox.asktell`: :class:`AskTellStrategy`, the one base
  that does the ask / tell / stop / result / optimize bookkeeping, and
  :class:`OptimizeResult`;
- :mod:`~evokit.blackbox.cmaes`: :class:`CMAES` and :class:`SepCMAES`;
- :mod:`~evokit.blackbox.ga`: :class:`GA`, the genetic algorithm of Such et
  al. 2017, and :class:`OpenES`, OpenAI-ES.
"""
