"""The solver facade: the core's one ``Solver`` interface seen from Python.

- :func:`solver_options`: a ``SolverConfig`` as the core's option set (every
  field by its dotted name, so option names are defined once, in the .proto);
- :func:`state_to_proto` / :func:`state_from_proto`: the core's
  ``SolverState`` and the ``SolverState`` message of ``solver.pb``.

Nothing here knows a sampling family: the core's registry
(cpp/include/evokit/solver.h) does.
"""

from .options import solver_options, validate_solver_options
from .state import STATE_VERSION, state_from_proto, state_to_proto

__all__ = ["STATE_VERSION", "solver_options", "state_from_proto", "state_to_proto",
           "validate_solver_options"]
