"""The C++ core's folders depend downwards only (docs/architecture.md,
"Layers"): every #include of a file under cpp/src names a folder the
file's own folder may use, and the Solver base includes no family."""

import os
import re
from collections import defaultdict

from helpers import ROOT

SRC = os.path.join(ROOT, "cpp", "src")
PUBLIC = os.path.join(ROOT, "cpp", "include", "evokit")

# What each folder may include besides itself (transitively closed below).
USES = {
    "common": set(),
    "noise": {"common"},
    "linalg": {"common"},
    "policy": {"common"},
    "envs": {"noise"},
    "formats": {"noise"},
    "rollout": {"policy", "envs", "noise"},
    "search": {"linalg", "noise", "rollout"},
    "agent": {"search"},
}

# The folder of each installed header of the core (cpp/include/evokit).
HEADER_FOLDER = {
    "errors.h": "common", "sample_key.h": "common",
    "noise.h": "noise", "philox.h": "noise", "gaussian_sampler.h": "noise", "numpy_random.h": "noise",
    "symmetric_eigen.h": "linalg",
    "policy_graph.h": "policy",
    "env.h": "envs", "cartpole.h": "envs", "numpy_ops.h": "envs",
    "crc32.h": "formats", "record_log.h": "formats",
    "population.h": "rollout", "rollout.h": "rollout", "episode_seeds.h": "rollout",
    "solver.h": "search", "ask_tell.h": "search", "strategy_solver.h": "search", "termination.h": "search", "optimizer.h": "search",
    "fitness.h": "search", "cma_es.h": "search", "distribution.h": "search", "ga.h": "search",
    "gaussian_solver.h": "search",
    "es_agent.h": "agent",
}
FAMILY_HEADERS = {"ask_tell.h", "cma_es.h", "distribution.h", "ga.h", "gaussian_solver.h", "strategy_solver.h"}


def closure(folder, seen=None):
    seen = set() if seen is None else seen
    for used in USES[folder]:
        if used not in seen:
            seen.add(used)
            closure(used, seen)
    return seen


def includes(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'^#include "([^"]+)"', f.read(), re.M)


def folder_of(include, own):
    if include.startswith("evokit/formats/"):
        return "formats"
    if include.startswith("evokit/"):
        return HEADER_FOLDER[include[len("evokit/"):]]
    return include.split("/")[0] if "/" in include else own


def test_every_core_header_and_folder_has_its_place():
    headers = {f for f in os.listdir(PUBLIC) if f.endswith(".h")}
    assert headers == set(HEADER_FOLDER), "classify the new header in HEADER_FOLDER (and docs/architecture.md)"
    folders = {d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d))}
    assert folders == set(USES)
    assert not [f for f in os.listdir(SRC) if os.path.isfile(os.path.join(SRC, f))], "cpp/src holds folders only"


def test_the_core_folders_depend_downwards():
    wrong = defaultdict(set)
    for directory, _, files in os.walk(SRC):
        if directory == SRC:
            continue  # folders only (checked above)
        own = os.path.relpath(directory, SRC).split(os.sep)[0]
        allowed = closure(own) | {own}
        for name in files:
            for include in includes(os.path.join(directory, name)):
                target = folder_of(include, own)
                if target not in allowed:
                    wrong[f"{own}/{name}"].add(include)
    assert not wrong, dict(wrong)


def test_the_solver_base_includes_no_family():
    base = includes(os.path.join(SRC, "search", "solver.cc"))
    header = includes(os.path.join(PUBLIC, "solver.h"))
    named = {i[len("evokit/"):] for i in base + header if i.startswith("evokit/")}
    assert not named & FAMILY_HEADERS
    assert not [i for i in base if i.startswith("search/") and "/" in i[len("search/"):]]
