"""EvoKit's benchmark suite in one command, side by side with the peers.

    python bench/run.py                    # everything; installs missing peers from PyPI
    python bench/run.py --quick            # EvoKit and the NumPy references only (< 60 s; CI)
    python bench/run.py --out DIR          # results: DIR/bench.json and DIR/bench.md

Sections (each a function below, so tests/test_bench.py can run them small):

- machine: CPU, cores, Python and library versions, thread settings, and
  whether the machine is quiet (load average and a short calibration loop,
  before and after; with ``--wait S`` it waits up to S seconds for the load
  to drop below ``--max-load``);
- kernels: ``bench/kernels.py --json FILE`` (the kernel helper's script; its
  figures go into the JSON as they are), P in {1e5, 1e6, 4e6}, N = 256;
- throughput: env steps/s of one generation's evaluation, a population of
  256 perturbed 4-64-64-2 tanh MLPs on CartPole-v1, the same parameter rows
  for every runner: EvoKit (VectorEvaluator, natively in the core), the
  batched NumPy reference (bench/numpy_reference.py), evosax's evaluation
  path (gymnax's RolloutWrapper: jax.vmap over members of a lax.scan over
  500 steps), evotorch (VecGymNE on gymnasium's vector env). Steps are
  counted as the steps members take inside their episodes; for gymnax, which
  always computes 500 steps per member, the computed steps are reported too;
- solve: CartPole-v1 time to solve, median over seeds of the wall time of a
  fresh process from start to exit (imports and JIT compilation included)
  until the centre's mean return over train.eval_episodes fresh episodes is
  >= train.target_return (configs/cartpole.prototxt: 100 and 490); every runner
  with population 40 (antithetic pairs), sigma 0.1, Adam with learning rate
  0.05, centered ranks, the same initial 4-16-2 tanh MLP (configs/
  cartpole.prototxt): ``evokit train``, the NumPy reference (batched, one
  process), evosax OpenES + gymnax, evotorch PGPE (fixed sigma: OpenAI-ES);
- bandwidth: the machine's read bandwidth (NumPy sum over a large array).

Peers run only when importable; without ``--no-install`` the full run first
installs the missing ones with pip (evotorch with torch pinned to 2.13.0,
evosax and gymnax with the installed jax pinned).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(ROOT, "configs", "cartpole.prototxt")
sys.path.insert(0, HERE)

import numpy_reference as npref  # noqa: E402
import results  # noqa: E402

#: The peers: import name -> pip requirement.
PEERS = {"cma": "cma", "evotorch": "evotorch", "evosax": "evosax", "gymnax": "gymnax"}
#: Never let pip pull another torch (GBs) or move jax.
PINNED = {"torch": "2.13.0"}

THROUGHPUT_RUNNERS = ("evokit", "numpy", "evosax_gymnax", "evotorch")
SOLVE_RUNNERS = ("evokit", "numpy", "evosax_gymnax", "evotorch")
QUICK_RUNNERS = ("evokit", "numpy")


def _say(log: Optional[Callable[[str], None]], msg: str) -> None:
    if log is not None:
        log(msg)


# ---- machine ----------------------------------------------------------------------

def machine_info(threads: int) -> dict:
    return {
        "cpu": results.cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
        "python": platform.python_version(), "threads": threads,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "versions": {m: results.version(d) for m, d in (("evokit", "evokit-es"), ("numpy", "numpy"),
                                                         ("gymnasium", "gymnasium"), ("cma", "cma"),
                                                         ("evotorch", "evotorch"), ("torch", "torch"),
                                                         ("evosax", "evosax"), ("gymnax", "gymnax"),
                                                         ("jax", "jax"))},
    }


def calibrate(repeats: int = 5) -> List[float]:
    """Milliseconds of a fixed pure-Python loop, `repeats` times: on a quiet
    machine they agree within a few percent."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i * i
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def quiet_check(max_load: float, wait: float, log=None) -> dict:
    """The load average and a calibration; waits up to `wait` s for the
    1-minute load to drop to `max_load`, and says what it saw."""
    t0 = time.monotonic()
    load = os.getloadavg()
    while load[0] > max_load and time.monotonic() - t0 < wait:
        time.sleep(min(5.0, wait))
        load = os.getloadavg()
    cal = calibrate()
    spread = max(cal) / min(cal)
    quiet = load[0] <= max_load and spread < 1.2
    info = {"load_average": list(load), "max_load": max_load, "waited_s": round(time.monotonic() - t0, 1),
            "calibration_ms": [round(c, 2) for c in cal], "calibration_spread": round(spread, 3),
            "quiet": quiet}
    _say(log, f"machine: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
              f"(max {max_load}), calibration {min(cal):.1f}-{max(cal):.1f} ms "
              f"(spread {spread:.2f}){'' if quiet else '  WARNING: the machine is busy, timings are noisy'}")
    return info


# ---- peers ------------------------------------------------------------------------

def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def install_peers(log=None) -> dict:
    """pip-installs the peers that are missing, with torch (and an installed
    jax) pinned in a constraints file. Returns {package: "present" |
    "installed" | "failed: ..."}."""
    missing = [pkg for mod, pkg in PEERS.items() if not have(mod)]
    status = {pkg: "present" for mod, pkg in PEERS.items() if have(mod)}
    if not missing:
        return status
    gym_before = _version("gymnasium")
    pins = dict(PINNED)
    for name in ("jax", "jaxlib", "numpy"):
        v = _version(name)
        if v:
            pins[name] = v
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(f"{k}=={v}\n" for k, v in pins.items()))
        constraints = f.name
    try:
        _say(log, f"installing {', '.join(missing)} (constraints: {', '.join(f'{k}=={v}' for k, v in pins.items())})")
        out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-c", constraints] + missing,
                             capture_output=True, text=True)
        for pkg in missing:
            status[pkg] = "installed" if out.returncode == 0 else f"failed: {out.stderr.strip()[-300:]}"
    finally:
        os.unlink(constraints)
    importlib.invalidate_caches()
    # gymnax and evotorch pin gymnasium themselves: say so when pip moved it.
    before, after = gym_before, _version("gymnasium")
    if before != after:
        status["gymnasium"] = f"changed by pip from {before} to {after} (a peer's requirement)"
        _say(log, f"WARNING: gymnasium {status['gymnasium']}")
    return status


# ---- kernels ----------------------------------------------------------------------

def kernels_section(quick: bool, log=None, script: Optional[str] = None) -> dict:
    script = script or os.path.join(HERE, "kernels.py")
    if not os.path.exists(script):
        msg = f"skipped: {os.path.relpath(script, ROOT)} is not on this branch"
        _say(log, f"kernels: {msg}")
        return {"skipped": msg}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernels.json")
        cmd = [sys.executable, script, "--json", path] + (["--quick"] if quick else [])
        _say(log, f"kernels: {' '.join(cmd[1:])}")
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0 or not os.path.exists(path):
            return {"error": f"exit {out.returncode}: {out.stderr.strip()[-500:]}"}
        with open(path) as f:
            return {"results": json.load(f)}


# ---- the population -------------------------------------------------------------

def make_agent(model_path: str):
    import evokit

    agent = evokit.ESAgent()
    agent.load_config(CONFIG)
    agent.load_inference_model(model_path, backend="native")
    agent.init_solver()
    return agent


def make_policy(kind: str, out_dir: str, hidden=(64, 64)) -> str:
    """An ONNX 4-64-64-2 tanh MLP: "fresh" (init_mlp, seed 0) or
    "balancing" (fresh trained with evokit.train until its centre balances)."""
    import evokit
    from evokit.policy.mlp import init_mlp

    fresh = os.path.join(out_dir, "fresh.onnx")
    with open(fresh, "wb") as f:
        f.write(init_mlp(4, 2, hidden, "tanh", seed=0).SerializeToString())
    if kind == "fresh":
        return fresh
    cfg = evokit.load_config(CONFIG)
    cfg.train.max_generations = 100
    res = evokit.train(cfg, model=fresh, out_dir=os.path.join(out_dir, "run"), log=lambda s: None)
    if not res.solved:
        raise RuntimeError("training the 4-64-64-2 policy did not reach the target")
    return res.model_path


def draw_batches(agent, population: int, repeats: int) -> List[dict]:
    """Per repeat: the clones' infos, the materialised parameter rows (N, P)
    float32 (for the peers), and one episode seed per antithetic pair."""
    import numpy as np

    clones = [agent.clone() for _ in range(population)]
    out = []
    for r in range(repeats):
        infos = [c.add_noise() for c in clones]
        params = np.stack([agent.sampler.perturb(agent.center, i.key[0], -1.0 if i.mirrored else 1.0)
                           for i in infos]).astype(np.float32)
        out.append({"infos": infos, "params": params,
                    "seeds": [1000 * r + i // 2 for i in range(population)]})
    return out


def _rate(steps: int, seconds: float) -> float:
    return steps / seconds if seconds > 0 else float("nan")


def throughput_evokit(agent, batches, threads: int) -> dict:
    from evokit.evaluation.vector import VectorEvaluator

    rates, cpu_rates, steps, returns = [], [], [], None
    with VectorEvaluator("CartPole-v1", num_threads=threads) as ev:
        ev.evaluate(agent, [None], [[0]])  # warm up
        for b in batches:
            t0, c0 = time.perf_counter(), time.process_time()
            res = ev.evaluate(agent, b["infos"], [[s] for s in b["seeds"]])
            rates.append(_rate(res.steps, time.perf_counter() - t0))
            cpu_rates.append(_rate(res.steps, time.process_time() - c0))
            steps.append(res.steps)
            returns = res.rewards if returns is None else returns
        mode = ev.vectorization_mode
    return {"label": f"EvoKit VectorEvaluator ({mode}), {threads} thread{'s' if threads > 1 else ''}",
            "threads": threads, "steps_per_s": statistics.median(rates), "rates": rates,
            "steps_per_cpu_s": statistics.median(cpu_rates), "counted_steps": steps,
            "first_returns": [float(x) for x in returns]}


def throughput_numpy(agent, batches) -> dict:
    shapes = [tuple(s) for s in agent.policy.param_shapes]
    rates, steps, returns = [], [], None
    for b in batches:
        t0 = time.perf_counter()
        r, n = npref.evaluate_population(b["params"], shapes, b["seeds"])
        rates.append(_rate(n, time.perf_counter() - t0))
        steps.append(n)
        returns = r if returns is None else returns
    return {"label": "NumPy batched reference", "threads": 1, "steps_per_s": statistics.median(rates),
            "rates": rates, "counted_steps": steps, "first_returns": [float(x) for x in returns]}


def _jax_mlp(params, obs):
    import jax.numpy as jnp

    x = obs
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = jnp.tanh(x)
    return x


def throughput_evosax(agent, batches) -> dict:
    import jax
    import jax.numpy as jnp
    from gymnax.experimental import RolloutWrapper

    shapes = [tuple(s) for s in agent.policy.param_shapes]
    rollout = RolloutWrapper(lambda p, obs, key: jnp.argmax(_jax_mlp(p, obs)), env_name="CartPole-v1",
                             num_env_steps=500)

    def as_tree(params):
        return [jnp.asarray(w) for w in npref.split_params(params, shapes)]

    key = jax.random.key(0)
    t0 = time.perf_counter()
    out = rollout.population_rollout(jax.random.split(key, 1), as_tree(batches[0]["params"]))
    jax.block_until_ready(out[-1])
    compile_s = time.perf_counter() - t0
    rates, computed_rates, steps = [], [], []
    for r, b in enumerate(batches):
        tree = as_tree(b["params"])
        t0 = time.perf_counter()
        cum = rollout.population_rollout(jax.random.split(jax.random.key(r + 1), 1), tree)[-1]
        cum = jax.block_until_ready(cum)
        dt = time.perf_counter() - t0
        n = int(round(float(jnp.sum(cum))))  # reward 1 per step inside the episode
        rates.append(_rate(n, dt))
        computed_rates.append(_rate(b["params"].shape[0] * 500, dt))
        steps.append(n)
    return {"label": "evosax + gymnax (RolloutWrapper, jit)", "threads": os.cpu_count(),
            "steps_per_s": statistics.median(rates), "rates": rates, "counted_steps": steps,
            "computed_steps_per_s": statistics.median(computed_rates), "compile_s": compile_s}


def _torch_layout(params, shapes):
    """Rows of our layout (weights (in, out)) in torch.nn.Linear's (out, in)."""
    import numpy as np

    parts = []
    for w in npref.split_params(params, shapes):
        parts.append((w.transpose(0, 2, 1) if w.ndim == 3 else w).reshape(params.shape[0], -1))
    return np.concatenate(parts, axis=1)


def throughput_evotorch(agent, batches) -> dict:
    import torch
    from evotorch.neuroevolution import VecGymNE

    shapes = [tuple(s) for s in agent.policy.param_shapes]
    net = " >> ".join(f"Linear({s[0]}, {s[1]}) >> Tanh()" for s in shapes[0:-2:2]) + \
        f" >> Linear({shapes[-2][0]}, {shapes[-2][1]})"
    problem = VecGymNE("CartPole-v1", net, num_episodes=1, device="cpu")
    rates, steps = [], []
    for b in batches:
        batch = problem.generate_batch(b["params"].shape[0])
        if not rates:  # warm up: the first call makes the vector envs
            batch.set_values(torch.as_tensor(_torch_layout(b["params"], shapes)))
            problem.evaluate(batch)
        batch.set_values(torch.as_tensor(_torch_layout(b["params"], shapes)))
        before = problem.status.get("total_interaction_count", 0)
        t0 = time.perf_counter()
        problem.evaluate(batch)
        dt = time.perf_counter() - t0
        n = int(problem.status.get("total_interaction_count", 0) - before)
        rates.append(_rate(n, dt))
        steps.append(n)
    return {"label": "evotorch VecGymNE", "threads": torch.get_num_threads(),
            "steps_per_s": statistics.median(rates), "rates": rates, "counted_steps": steps}


def throughput_section(*, population: int = 256, repeats: int = 3, threads: int = 2,
                       runners: Sequence[str] = THROUGHPUT_RUNNERS, policy: str = "balancing",
                       log=None) -> dict:
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        agent = make_agent(make_policy(policy, tmp))
        _say(log, f"throughput: {policy} 4-64-64-2 policy ready in {time.perf_counter() - t0:.1f} s")
        batches = draw_batches(agent, population, repeats)
        results: Dict[str, dict] = {}
        for name in runners:
            t0 = time.perf_counter()
            try:
                if name == "evokit":
                    for t in sorted({1, threads}):
                        results[f"evokit_{t}"] = throughput_evokit(agent, batches, t)
                elif name == "numpy":
                    results["numpy"] = throughput_numpy(agent, batches)
                elif name == "evosax_gymnax":
                    results[name] = throughput_evosax(agent, batches)
                elif name == "evotorch":
                    results[name] = throughput_evotorch(agent, batches)
                else:
                    raise ValueError(f"unknown runner {name!r}")
            except ImportError as exc:
                results[name] = {"skipped": f"not installed: {exc}"}
            except Exception as exc:  # a peer's failure is reported, not fatal
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            _say(log, f"throughput: {name} done in {time.perf_counter() - t0:.1f} s, load "
                      f"{os.getloadavg()[0]:.2f}")
    best = f"evokit_{threads}"
    if best in results and "numpy" in results and "first_returns" in results["numpy"]:
        same = np.asarray(results[best]["first_returns"]) == np.asarray(results["numpy"]["first_returns"])
        results["numpy"]["returns_equal_evokit"] = int(same.sum())
    for r in results.values():
        r.pop("first_returns", None)
        if best in results and "steps_per_s" in r:
            r["evokit_ratio"] = results[best]["steps_per_s"] / r["steps_per_s"]
    return {"env": "CartPole-v1", "population": population, "repeats": repeats, "policy": policy,
            "network": "4-64-64-2 tanh", "load_after": list(os.getloadavg()), "runners": results}


# ---- time to solve ----------------------------------------------------------------

def _cartpole_settings() -> dict:
    import evokit

    cfg = evokit.load_config(CONFIG)
    s, t = cfg.solver, cfg.train
    return {"population": s.population_size, "sigma": float(f"{s.sampling.gaussian_sampling.std:.6g}"),
            "lr": float(f"{s.optimizer.base_lr:.6g}"), "hidden": tuple(t.hidden_sizes), "max_generations": t.max_generations,
            "eval_every": t.eval_every, "eval_episodes": t.eval_episodes, "target": t.target_return,
            "workers": t.num_workers}


def _initial_mlp(seed: int, hidden):
    import numpy as np
    from onnx import numpy_helper

    from evokit.policy.mlp import init_mlp

    model = init_mlp(4, 2, hidden_sizes=tuple(hidden), activation="tanh", seed=seed)
    inits = [numpy_helper.to_array(i) for i in model.graph.initializer]
    return np.concatenate([a.ravel() for a in inits]).astype(np.float64), [a.shape for a in inits]


def solve_numpy(seed: int) -> dict:
    c = _cartpole_settings()
    theta, shapes = _initial_mlp(seed, c["hidden"])
    return npref.openai_es(theta, shapes, population=c["population"], sigma=c["sigma"], lr=c["lr"],
                           seed=seed, max_generations=c["max_generations"], eval_every=c["eval_every"],
                           eval_episodes=c["eval_episodes"], target=c["target"])


def solve_evosax(seed: int) -> dict:
    import jax
    import jax.numpy as jnp
    import optax
    from evosax.algorithms import Open_ES
    from gymnax.experimental import RolloutWrapper

    c = _cartpole_settings()
    theta, shapes = _initial_mlp(seed, c["hidden"])
    import numpy as np

    solution = [jnp.asarray(w) for w in npref.split_params(theta[None].astype(np.float32), shapes)]
    solution = [w[0] for w in solution]
    rollout = RolloutWrapper(lambda p, obs, key: jnp.argmax(_jax_mlp(p, obs)), env_name="CartPole-v1",
                             num_env_steps=500)
    es = Open_ES(population_size=c["population"], solution=solution, use_antithetic_sampling=True,
                 optimizer=optax.adam(c["lr"]), std_schedule=optax.constant_schedule(c["sigma"]))
    params = es.default_params
    key = jax.random.key(seed)
    key, k = jax.random.split(key)
    state = es.init(k, solution, params)

    @jax.jit
    def generation(key, state):
        k_ask, k_eval = jax.random.split(key)
        pop, state = es.ask(k_ask, state, params)
        cum = rollout.population_rollout(k_eval[None], pop)[-1].reshape(-1)
        state, _ = es.tell(k_ask, pop, -cum, state, params)  # evosax minimises
        return state, jnp.sum(cum)

    from jax.flatten_util import ravel_pytree

    unravel = ravel_pytree(solution)[1]  # the state's mean is the flat vector

    @jax.jit
    def centre_return(key, state):
        cum = rollout.batch_rollout(jax.random.split(key, c["eval_episodes"]), unravel(state.mean))[-1]
        return jnp.mean(cum), jnp.sum(cum)

    steps, centre, g = 0, float("nan"), 0
    for g in range(1, c["max_generations"] + 1):
        key, k = jax.random.split(key)
        state, n = generation(k, state)
        steps += int(n)
        if g % c["eval_every"] == 0:
            key, k = jax.random.split(key)
            mean, n = centre_return(k, state)
            steps += int(n)
            centre = float(mean)
            if centre >= c["target"]:
                break
    return {"solved": bool(centre >= c["target"]), "generations": g, "env_steps": steps, "centre": centre}


def solve_evotorch(seed: int) -> dict:
    import torch
    from evotorch.algorithms import PGPE
    from evotorch.neuroevolution import VecGymNE

    c = _cartpole_settings()
    torch.manual_seed(seed)
    theta, shapes = _initial_mlp(seed, c["hidden"])
    net = " >> ".join(f"Linear({s[0]}, {s[1]}) >> Tanh()" for s in shapes[0:-2:2]) + \
        f" >> Linear({shapes[-2][0]}, {shapes[-2][1]})"
    problem = VecGymNE("CartPole-v1", net, num_episodes=1, device="cpu", seed=seed) \
        if "seed" in VecGymNE.__init__.__code__.co_varnames else VecGymNE("CartPole-v1", net, num_episodes=1, device="cpu")
    centre0 = torch.as_tensor(_torch_layout(theta[None], shapes)[0], dtype=torch.float32)
    searcher = PGPE(problem, popsize=c["population"], center_learning_rate=c["lr"], stdev_learning_rate=0.0,
                    stdev_init=c["sigma"], optimizer="adam", ranking_method="centered", symmetric=True,
                    center_init=centre0)
    centre, g = float("nan"), 0
    for g in range(1, c["max_generations"] + 1):
        searcher.step()
        if g % c["eval_every"] == 0:
            batch = problem.generate_batch(c["eval_episodes"])
            batch.set_values(searcher.status["center"].detach().clone().expand(c["eval_episodes"], -1))
            problem.evaluate(batch)
            centre = float(batch.evals[:, 0].mean())
            if centre >= c["target"]:
                break
    return {"solved": bool(centre >= c["target"]), "generations": g,
            "env_steps": int(problem.status.get("total_interaction_count", 0)), "centre": centre}


SOLVERS = {"numpy": solve_numpy, "evosax_gymnax": solve_evosax, "evotorch": solve_evotorch}


def _solve_process(runner: str, seed: int, timeout: float) -> dict:
    """One fresh process; wall time from its start to its exit."""
    if runner == "evokit":
        with tempfile.TemporaryDirectory() as out_dir:
            cmd = [sys.executable, "-m", "evokit.cli", "train", CONFIG, "--seed", str(seed), "--out", out_dir,
                   "--quiet", "--require-solved"]
            t0 = time.perf_counter()
            # cwd: `-m` puts the working directory first on sys.path, where a
            # source checkout's evokit/ (no compiled parts) would hide the install.
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=out_dir)
            wall = time.perf_counter() - t0
            metrics = os.path.join(out_dir, "metrics.csv")
            if out.returncode not in (0, 1) or not os.path.exists(metrics):
                return {"error": f"exit {out.returncode}: {out.stderr.strip()[-500:]}", "wall_time": wall}
            import csv

            with open(metrics) as f:
                rows = list(csv.DictReader(f))
        return {"solved": out.returncode == 0, "generations": len(rows), "env_steps": int(rows[-1]["env_steps"]),
                "centre": float(rows[-1]["eval_mean"] or "nan"), "wall_time": wall}
    cmd = [sys.executable, os.path.abspath(__file__), "--solve-runner", runner, "--seed", str(seed)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-500:], "wall_time": wall}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_time"] = wall
    return result


def solve_section(*, seeds: int = 5, runners: Sequence[str] = SOLVE_RUNNERS, timeout: float = 600,
                  log=None) -> dict:
    import evokit.cli  # noqa: F401  (fail here, not in a child, if evokit is missing)

    avail = []
    skipped = {}
    for r in runners:
        mods = {"evosax_gymnax": ("evosax", "gymnax"), "evotorch": ("evotorch",)}.get(r, ())
        miss = [m for m in mods if not have(m)]
        if miss:
            skipped[r] = {"skipped": f"not installed: {', '.join(miss)}"}
        else:
            avail.append(r)
    runs: Dict[str, List[dict]] = {r: [] for r in avail}
    for seed in range(seeds):  # interleaved, so drift in machine load hits every runner
        for r in avail:
            try:
                runs[r].append(_solve_process(r, seed, timeout))
            except subprocess.TimeoutExpired:
                runs[r].append({"error": f"timed out after {timeout} s", "wall_time": timeout})
            res = runs[r][-1]
            _say(log, f"solve: {r} seed {seed}: {res.get('wall_time', float('nan')):.2f} s, "
                      f"solved {res.get('solved')}, load {os.getloadavg()[0]:.2f}")
    results: Dict[str, dict] = dict(skipped)
    for r, rs in runs.items():
        walls = [x["wall_time"] for x in rs]
        results[r] = {"runs": rs, "solved": sum(bool(x.get("solved")) for x in rs), "seeds": len(rs),
                      "median_wall_s": statistics.median(walls), "max_wall_s": max(walls),
                      "median_env_steps": statistics.median([x.get("env_steps", 0) for x in rs])}
    if "evokit" in runs:
        for r in runs:
            results[r]["vs_evokit"] = results[r]["median_wall_s"] / results["evokit"]["median_wall_s"]
    settings = _cartpole_settings()
    settings["hidden"] = list(settings["hidden"])
    return {"env": "CartPole-v1", "settings": settings, "runners": results,
            "load_after": list(os.getloadavg())}


# ---- bandwidth --------------------------------------------------------------------

def bandwidth_section(megabytes: int = 256, repeats: int = 5) -> dict:
    """Read bandwidth: a NumPy float64 sum over `megabytes` MB, best of repeats."""
    import numpy as np

    a = np.ones(megabytes * (1 << 20) // 8)
    a.sum()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t0)
    return {"megabytes": megabytes, "read_GB_per_s": a.nbytes / best / 1e9, "threads": 1}


# ---- report -----------------------------------------------------------------------

def _fmt(x, spec=",.0f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _table(header: str, rows: Dict[str, dict], key: str, cells: Callable[[str, dict], str]) -> List[str]:
    """A Markdown table: `header` (its columns), then one row per runner with
    `key` in its result, else the runner's name and why it has none."""
    columns = header.count("|") - 1
    lines = [header, "| --- " * columns + "|"]
    for name, r in rows.items():
        if key not in r:
            lines.append(f"| {name} | {r.get('skipped') or r.get('error')} |" + " - |" * (columns - 2))
        else:
            lines.append(cells(name, r))
    return lines


def kernel_table(rows: list) -> list:
    """The rows of bench/kernels.py as Markdown: the read bandwidth, then per
    kernel and P the EvoKit time, its share of the 2-thread read bandwidth and
    the ratios the issue sets targets for (uncached / cached, NumPy / EvoKit)."""
    bw = {r["threads"]: r["gbps"] for r in rows if r["kernel"] == "bandwidth" and r["impl"] == "evokit_read"}
    lines = ["Read bandwidth (C++ read of an array of the table's size): " +
             ", ".join(f"{t} thread{'s' if t > 1 else ''} {g:.1f} GB/s" for t, g in sorted(bw.items())), "",
             "\"Of read bandwidth\": for the cached gradient, of a plain read of the noise "
             "table timed alternately with the kernel (its GB/s in the next column); otherwise of the "
             "2-thread figure above.", "",
             "| kernel | P | N | EvoKit (ms) | GB/s | of read bandwidth | table read alongside (GB/s) "
             "| NumPy (ms) | NumPy / EvoKit | stack-then-dot (ms) | uncached / cached |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    timed = {(r["kernel"], r["impl"], r["P"]): r for r in rows if r.get("median_s")}
    order = ("gradient_cached", "gradient_uncached", "perturb", "adam")
    for kernel in order:
        for p in sorted({key[2] for key in timed if key[0] == kernel}):
            ev = timed.get((kernel, "evokit", p))
            if ev is None:
                continue
            ms = ev["median_s"] * 1e3
            ref = timed.get((kernel, "numpy", p)) or timed.get((kernel, "numpy_accumulate", p))
            dot = timed.get((kernel, "numpy_stack_dot", p))
            cached = timed.get(("gradient_cached", "evokit", p))
            cells = [kernel, f"{p:,}", str(ev["N"]) if kernel.startswith("gradient") else "-", f"{ms:.2f}",
                     f"{ev['gbps']:.1f}", f"{ev['ratio_to_bandwidth']:.2f}" if ev["ratio_to_bandwidth"] else "-",
                     f"{ev['bandwidth_gbps']:.1f}" if ev.get("bandwidth_gbps") else "-",
                     f"{ref['median_s'] * 1e3:.2f}" if ref else "-",
                     f"{ref['median_s'] / ev['median_s']:.1f}x" if ref else "-",
                     f"{dot['median_s'] * 1e3:.1f}" if dot else "-",
                     f"{ev['median_s'] / cached['median_s']:.1f}x" if kernel == "gradient_uncached" and cached
                     else "-"]
            lines.append("| " + " | ".join(cells) + " |")
    for r in rows:
        if r["kernel"] == "clone_rss":
            lines += ["", f"Clones: {r['N']} clones at P = {r['P']:,}, each add_noise'd and asked for its "
                          f"parameters, add {r['rss_bytes'] / 2**20:,.0f} MiB resident beyond the agent "
                          f"({r.get('rss_bytes_after_add_noise', 0) / 2**20:,.0f} MiB after add_noise alone)."]
    lines.append("")
    return lines


def render_markdown(res: dict) -> str:
    m, q = res["machine"], res["quiet"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; EvoKit threads: "
             f"{m['threads']}, OMP_NUM_THREADS={m['OMP_NUM_THREADS'] or 'unset'}. Load average at the start "
             f"{q['load_average'][0]:.2f} (quiet: {'yes' if q['quiet'] else 'no'}; calibration spread "
             f"{q['calibration_spread']:.2f}).", ""]
    k = res.get("kernels", {})
    lines += ["### Kernels", ""]
    if "results" in k:
        lines += kernel_table(k["results"])
    else:
        lines += [f"{k.get('skipped') or k.get('error') or 'not run'}", ""]
    t = res.get("throughput")
    if t:
        def throughput_row(name: str, r: dict) -> str:
            notes = []
            if "computed_steps_per_s" in r:
                notes.append(f"{r['computed_steps_per_s']:,.0f} computed steps/s; compile {r['compile_s']:.1f} s")
            if "steps_per_cpu_s" in r:
                notes.append(f"{r['steps_per_cpu_s']:,.0f} steps per CPU-second")
            if "returns_equal_evokit" in r:
                notes.append(f"returns equal EvoKit's for {r['returns_equal_evokit']}/{t['population']}")
            return (f"| {r['label']} | {r['threads']} | {_fmt(r['steps_per_s'])} | "
                    f"{_fmt(r.get('evokit_ratio'), '.1f')}x | {'; '.join(notes)} |")

        lines += [f"### Policy evaluation throughput: {t['env']}, population {t['population']} of "
                  f"{t['network']} MLPs ({t['policy']} centre), median of {t['repeats']}", ""]
        lines += _table("| runner | threads | env steps/s (counted) | EvoKit / runner | notes |",
                        t["runners"], "steps_per_s", throughput_row)
        lines += ["", f"Load average after: {t['load_after'][0]:.2f}.", ""]
    s = res.get("solve")
    if s:
        c = s["settings"]
        lines += [f"### CartPole-v1 time to solve (population {c['population']}, sigma {c['sigma']}, Adam lr "
                  f"{c['lr']}, 4-{'-'.join(map(str, c['hidden']))}-2 tanh, mean return >= {c['target']:g} over "
                  f"{c['eval_episodes']} episodes)", ""]
        lines += _table("| runner | solved | median wall (s) | max wall (s) | median env steps | runner / EvoKit |",
                        s["runners"], "median_wall_s",
                        lambda name, r: f"| {name} | {r['solved']}/{r['seeds']} | {r['median_wall_s']:.2f} | "
                                  f"{r['max_wall_s']:.2f} | {_fmt(r['median_env_steps'])} | "
                                  f"{_fmt(r.get('vs_evokit'), '.2f')}x |")
        lines += ["", f"Load average after: {s['load_after'][0]:.2f}.", ""]
    b = res.get("bandwidth")
    if b:
        lines += [f"Read bandwidth (NumPy sum over {b['megabytes']} MB, 1 thread): {b['read_GB_per_s']:.1f} GB/s.", ""]
    return "\n".join(lines)


def run(args, log=print) -> dict:
    res: dict = {"quick": args.quick, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    if not args.quick and not args.no_install:
        res["peers"] = install_peers(log)
    res["machine"] = machine_info(args.threads)
    res["quiet"] = quiet_check(args.max_load, args.wait, log)
    res["kernels"] = kernels_section(args.quick, log)
    runners = QUICK_RUNNERS if args.quick else THROUGHPUT_RUNNERS
    res["throughput"] = throughput_section(population=args.population, repeats=1 if args.quick else args.repeats,
                                           threads=args.threads, runners=runners,
                                           policy="balancing", log=log)
    res["solve"] = solve_section(seeds=1 if args.quick else args.seeds,
                                 runners=QUICK_RUNNERS if args.quick else SOLVE_RUNNERS, log=log)
    res["bandwidth"] = bandwidth_section(64 if args.quick else 256)
    res["quiet_after"] = {"load_average": list(os.getloadavg()), "calibration_ms": calibrate()}
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="EvoKit and the NumPy references only, small")
    results.add_out_argument(p, "bench")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--population", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--max-load", type=float, default=None,
                   help="1-minute load average counted as quiet (default: half the cores)")
    p.add_argument("--wait", type=float, default=None,
                   help="seconds to wait for a quiet machine (default: 60, 0 with --quick)")
    p.add_argument("--no-install", action="store_true", help="do not pip-install missing peers")
    p.add_argument("--solve-runner", choices=sorted(SOLVERS), help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.solve_runner:
        print(json.dumps(SOLVERS[args.solve_runner](args.seed)))
        return 0
    if args.wait is None:
        args.wait = 0.0 if args.quick else 60.0
    if args.max_load is None:
        args.max_load = (os.cpu_count() or 2) / 2
    report = results.Report("bench", "The suite: bench/run.py" + (" --quick" if args.quick else ""))
    t0 = time.perf_counter()
    res = run(args)
    res["total_s"] = time.perf_counter() - t0
    report.print(render_markdown(res))
    report.write(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
