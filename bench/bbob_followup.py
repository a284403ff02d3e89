"""More runs where EvoKit's ERT trailed pycma's on one function in the COCO
run of bench/bbob.py (bench/results/bbob.md): Gallagher f22 at D = 2, 3 and
Weierstrass f16 at D = 3, 5, instances 1-15 x two seeds other than the
run's, with bench/bbob.py's runners, budget 10^4 x D; runs solved and ERT
per library, written to bench/results/bbob_followup.json (about 10 minutes
on 2 cores).

    pip install coco-experiment cma && python bench/bbob_followup.py
"""

import json
import math
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bbob  # noqa: E402

CASES = [(22, 2), (22, 3), (16, 3), (16, 5)]  # (function, dimension)
LIBRARIES = ["evokit-bipop", "pycma-bipop"]
SEEDS = (11, 12)


def main() -> None:
    warnings.simplefilter("ignore")
    out = {}
    for f, d in CASES:
        for lib in LIBRARIES:
            solved = evals = 0
            for instance in range(1, 16):
                fopt = bbob.fopt_of("bbob", f, d, instance)
                for seed in SEEDS:
                    suite, problem = bbob._problem("bbob", f, d, instance)
                    obj = bbob.Objective(problem, int(1e4 * d), fopt)
                    bbob.runner(lib)(obj, 7919 * instance + seed)
                    solved += bool(problem.final_target_hit)
                    evals += obj.evaluations
                    problem.free()
                    suite.free()
            runs = 15 * len(SEEDS)
            out[f"f{f} D={d} {lib}"] = {"runs": runs, "solved": solved,
                                        "ert": evals / solved if solved else math.inf}
            print(f"f{f} D={d} {lib}: {solved}/{runs} solved, ERT {evals / max(solved, 1):.0f}", flush=True)
    with open(os.path.join(HERE, "results", "bbob_followup.json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
