"""Writes the seeds of the solver-state and warehouse fuzzers (seeds/), which
no test fixture holds: for Gaussian (cpp/io/tests/data/adam.prototxt), CMA
and GA sampling (configs/cartpole_cma.prototxt, cartpole_ga.prototxt), a
warehouse made by ``evokit init-solver`` on cpp/io/tests/data/cartpole_h8.onnx,
as the harnesses read them:

  seeds/solver_state/<family>  the family's index (0, 1, 2: the harness's
                               config), then model_iter_id-0/solver.pb
  seeds/warehouse/<family>     warehouse.pb, "\\n--solver.pb--\\n", then
                               model_iter_id-0/solver.pb

Run it with the evokit package installed, after a change to these files'
format: python cpp/fuzz/make_seeds.py
"""

from __future__ import annotations

import os
import tempfile

from evokit.online.warehouse import Warehouse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "cpp", "io", "tests", "data", "cartpole_h8.onnx")
FAMILIES = [  # in the order of fuzz_solver_state.cc's kConfigs
    ("gaussian", os.path.join(ROOT, "cpp", "io", "tests", "data", "adam.prototxt")),
    ("cma", os.path.join(ROOT, "configs", "cartpole_cma.prototxt")),
    ("ga", os.path.join(ROOT, "configs", "cartpole_ga.prototxt")),
]
MARKER = b"\n--solver.pb--\n"  # fuzz_warehouse.cc splits its input here


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for index, (family, config) in enumerate(FAMILIES):
            wh = os.path.join(tmp, family)
            Warehouse.create(wh, config, MODEL)
            info = _read(os.path.join(wh, "warehouse.pb"))
            solver = _read(os.path.join(wh, "model_iter_id-0", "solver.pb"))
            _write(os.path.join(HERE, "seeds", "solver_state", family), bytes([index]) + solver)
            _write(os.path.join(HERE, "seeds", "warehouse", family), info + MARKER + solver)


if __name__ == "__main__":
    main()
