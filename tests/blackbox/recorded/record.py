"""The recorded results of every ask/tell strategy: a fixed budget on fixed
problems and seeds, each recommendation kept bit for bit (float.hex) in
results.json beside this file, so that any change to a strategy's numbers
shows in review (tests/blackbox/test_recorded.py compares them).

    python tests/blackbox/recorded/record.py --check   # compare, print what differs (exit 1)
    python tests/blackbox/recorded/record.py --write   # record anew (after a change that is meant)

The numbers are those of the machine kind the file names (x86-64 Linux,
CI's); the file also records the Python and NumPy versions and the command.
A strategy's run: ask/tell until ``BUDGET`` evaluations or its stop(), one
thread; recorded: the evaluations, the best f-value and the recommendation
(xfavorite: the mean or centre; NSGA-II: the hypervolume and the Pareto
front's f-values).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings

import numpy as np

import evokit

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "results.json")
BUDGET = 600
N = 4
SEEDS = (0, 1)
#: The machine kind whose bits the file holds.
MACHINE = {"system": "Linux", "machine": "x86_64"}


def sphere(x):
    return float(x @ x)


def ellipsoid(x):
    n = len(x)
    return float(sum(1e6 ** (i / (n - 1)) * x[i] ** 2 for i in range(n)))


def rosenbrock(x):
    return float(sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


PROBLEMS = {"sphere": sphere, "ellipsoid": ellipsoid, "rosenbrock": rosenbrock}

#: name -> (class, keyword arguments): every ask/tell strategy of evokit.blackbox.
STRATEGIES = {
    "CMAES": (evokit.CMAES, {}),
    "CMAES-IPOP": (evokit.CMAES, {"restarts": 2, "restart_strategy": "ipop"}),
    "CMAES-BIPOP": (evokit.CMAES, {"restarts": 2, "restart_strategy": "bipop"}),
    "CMAES-TPA": (evokit.CMAES, {"step_size_adaptation": "tpa"}),
    "CMAES-bounds": (evokit.CMAES, {"bounds": (-0.5, 2.0)}),
    "CMAES-integer": (evokit.CMAES, {"integer_variables": [0]}),
    "SepCMAES": (evokit.SepCMAES, {}),
    "SNES": (evokit.SNES, {}),
    "XNES": (evokit.XNES, {}),
    "CRFMNES": (evokit.CRFMNES, {}),
    "LMMAES": (evokit.LMMAES, {}),
    "MAES": (evokit.MAES, {}),
    "PGPE": (evokit.PGPE, {}),
    "CEM": (evokit.CEM, {"population_size": 20}),
    "ARS": (evokit.ARS, {}),
    "GA": (evokit.GA, {"population_size": 20}),
    "OpenES": (evokit.OpenES, {}),
}


def _hex(v) -> str:
    return float(v).hex()


def run(name: str, problem: str, seed: int) -> dict:
    cls, kwargs = STRATEGIES[name]
    f = PROBLEMS[problem]
    es = cls(np.full(N, 1.5), 0.5, seed=seed, **kwargs)
    evaluations = 0
    while not es.stop() and evaluations < BUDGET:
        X = es.ask()
        es.tell(X, [f(x) for x in X])
        evaluations += len(X)
    r = es.result
    return {"evaluations": int(r.evaluations), "fbest": _hex(r.fbest),
            "xfavorite": [_hex(v) for v in r.xfavorite]}


def zdt1(x):
    g = 1 + 9 * x[1:].mean()
    return [x[0], g * (1 - (x[0] / g) ** 0.5)]


def run_nsga2(seed: int) -> dict:
    es = evokit.NSGA2(bounds=(np.zeros(N), np.ones(N)), population_size=20, seed=seed,
                      reference_point=[1.1, 1.1], max_evaluations=BUDGET)
    while not es.stop():
        X = es.ask()
        es.tell(X, [zdt1(x) for x in X])
    r = es.result
    front = sorted([_hex(v) for v in row] for row in r.pareto_f)
    return {"evaluations": int(r.evaluations), "hypervolume": _hex(r.hypervolume), "pareto_f": front}


def compute() -> dict:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in STRATEGIES:
            for problem in PROBLEMS:
                for seed in SEEDS:
                    out[f"{name}/{problem}/seed{seed}"] = run(name, problem, seed)
        for seed in SEEDS:
            out[f"NSGA2/zdt1/seed{seed}"] = run_nsga2(seed)
    return out


def machine_kind() -> dict:
    return {"system": platform.system(), "machine": platform.machine()}


def document(results: dict) -> dict:
    return {"machine": MACHINE,
            "recorded_with": {"python": platform.python_version(), "numpy": np.__version__,
                              "evokit": evokit.__version__, "cpu": _cpu()},
            "command": "python tests/blackbox/recorded/record.py --write",
            "protocol": {"n": N, "x0": 1.5, "sigma0": 0.5, "budget": BUDGET, "seeds": list(SEEDS),
                         "problems": list(PROBLEMS) + ["zdt1 (NSGA2)"]},
            "results": results}


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _headline(entry: dict) -> str:
    key = "fbest" if "fbest" in entry else "hypervolume"
    return f"{key} {float.fromhex(entry[key]):.17g}"


def differences(recorded: dict, now: dict) -> list:
    """Lines naming each entry that is new, gone or changed."""
    lines = []
    for key in sorted(set(recorded) | set(now)):
        if key not in now:
            lines.append(f"{key}: recorded, not computed now")
        elif key not in recorded:
            lines.append(f"{key}: computed now, not recorded")
        elif recorded[key] != now[key]:
            changed = [k for k in now[key] if recorded[key].get(k) != now[key][k]]
            lines.append(f"{key}: {', '.join(changed)} changed ({_headline(recorded[key])} -> "
                         f"{_headline(now[key])})")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare with results.json")
    mode.add_argument("--write", action="store_true", help="write results.json")
    args = parser.parse_args(argv)
    if machine_kind() != MACHINE:
        print(f"this machine is {machine_kind()}; results.json holds the bits of {MACHINE}", file=sys.stderr)
        return 2
    now = compute()
    if args.write:
        tmp = PATH + ".tmp"
        with open(tmp, "w") as f:
            json.dump(document(now), f, indent=1)
            f.write("\n")
        os.replace(tmp, PATH)
        print(f"wrote {len(now)} results to {PATH}")
        return 0
    with open(PATH) as f:
        recorded = json.load(f)["results"]
    lines = differences(recorded, now)
    print("\n".join(lines) if lines else f"all {len(now)} results equal the recorded bits")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
