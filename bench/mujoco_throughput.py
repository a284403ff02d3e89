"""Native MuJoCo throughput: env steps/s on gymnasium's Hopper-v5, side by side.

    python bench/mujoco_throughput.py                 # every row, 3 s each, 3 repeats
    python bench/mujoco_throughput.py --seconds 1 --out /tmp/bench   # results elsewhere
    python bench/mujoco_throughput.py --envpool-python /path/to/python   # EnvPool in another env

Rows (one env step = Hopper-v5's frame_skip of 4 MuJoCo steps):

- raw MuJoCo: ``mujoco.mj_step(model, data, nstep=4)`` in a Python loop on
  gymnasium's own Hopper-v5 model, one process per core, all at once (the
  yardstick: the physics alone, no observation, reward or policy). Each
  process resets to the initial state every 1,000 env steps and drives the
  hopper with uniform random controls drawn beforehand;
- gymnasium: ``env.step`` of ``gymnasium.make("Hopper-v5")`` with random
  float32 actions, reset at the end of each episode, one process;
- EvoKit native: ``VectorEvaluator("Hopper-v5", num_threads=T)`` (natively in
  the core, ``evokit._core.env_rollouts``) evaluating a population of 40
  perturbed linear policies (11 -> 3, the centre ``init_mlp``'s small
  normc weights, sigma 0.5), one episode each,
  for T = 1 and 2 threads; the initial states drawn in Python count too.
  One more row takes 400 members on 2 threads: with 40, one member's long
  episode can hold half a generation's steps, which one thread runs alone.
  These rows give the idle share of the worker threads: the part of threads
  x the rollouts' wall time no episode used, as the core measures it
  (``EvalResult.idle_share``; episodes are handed out one at a time);
- ``evokit train configs/hopper.prototxt`` (``--train-config``): a whole
  training run in a fresh process, its env steps per second of wall time as
  its own metrics report them (the last row of metrics.csv: every step of
  the sampled episodes and of the centre evaluations, over the whole run's
  wall time: sampling, updates, centre evaluations, checkpoints); it runs
  once (``--train-repeats``), being long;
- ``mujoco.rollout`` (MuJoCo's own multi-threaded C stepping): 40
  open-loop trajectories of 1,000 env steps from Hopper-v5's initial state
  (gymnasium's reset noise, random controls held over the frame skip, no
  termination), on a ``Rollout(nthread=T)`` pool, T = 1 and 2: the C
  stepping loop without a policy, beside EvoKit's rollouts on the same
  threads;
- EnvPool (if importable, here or with ``--envpool-python``): its Hopper-v5
  (gymnasium API) with 40 environments stepped synchronously on 2 threads
  with random actions.

Each row reports env steps/s over ``--seconds`` of wall time (after a short
warm-up), the cores it uses, and its ratio to the raw-MuJoCo row. On Linux
a row also says how busy other processes kept the machine meanwhile (CPU
time from /proc/stat beyond this script's own and its children's), when that
is more than 5% of the cores. The rows run ``--repeats`` times, interleaved;
each row's figure is from its repeat during which other processes used the
least CPU (the fastest among equals): on a shared machine, the closest to
an idle one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

TASK = "Hopper-v5"
FRAME_SKIP = 4
POPULATION = 40
ROLLOUT_STEPS = 1000  # env steps of each mujoco.rollout trajectory (Hopper-v5's episode limit)


def _raw_worker(seconds: float, seed: int, start, queue) -> None:
    """One core of raw MuJoCo: env steps in `seconds` after `start` fires."""
    import gymnasium
    import mujoco
    import numpy as np

    env = gymnasium.make(TASK).unwrapped
    model = env.model
    data = mujoco.MjData(model)
    controls = np.random.default_rng(seed).uniform(-1.0, 1.0, (4096, model.nu))
    init_qpos, init_qvel = env.init_qpos.copy(), env.init_qvel.copy()
    start.wait()
    steps = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        mujoco.mj_resetData(model, data)
        data.qpos[:] = init_qpos
        data.qvel[:] = init_qvel
        mujoco.mj_forward(model, data)
        for i in range(1000):
            data.ctrl[:] = controls[(steps + i) & 4095]
            mujoco.mj_step(model, data, nstep=FRAME_SKIP)
        steps += 1000
        if time.perf_counter() >= deadline:
            break
    queue.put((steps, time.perf_counter() - t0))


def raw_mujoco(seconds: float, processes: int) -> Dict:
    ctx = multiprocessing.get_context("spawn")
    start, queue = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_raw_worker, args=(seconds, i, start, queue)) for i in range(processes)]
    for p in procs:
        p.start()
    time.sleep(2.0)  # imports and model loading before the common start
    start.set()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    steps = sum(r[0] for r in results)
    wall = max(r[1] for r in results)
    return dict(steps=steps, seconds=wall, cores=processes)


def gymnasium_loop(seconds: float) -> Dict:
    import gymnasium
    import numpy as np

    env = gymnasium.make(TASK)
    actions = np.random.default_rng(0).uniform(-1, 1, (4096, 3)).astype(np.float32)
    env.reset(seed=0)
    steps, episodes = 0, 0
    for i in range(200):  # warm-up
        env.step(actions[i])
    env.reset(seed=1)
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            _, _, terminated, truncated, _ = env.step(actions[steps & 4095])
            steps += 1
            if terminated or truncated:
                episodes += 1
                env.reset(seed=steps)
    wall = time.perf_counter() - t0
    env.close()
    return dict(steps=steps, seconds=wall, cores=1, episodes=episodes)


def evokit_native(seconds: float, threads: int, population: int = POPULATION) -> Dict:
    import evokit
    from evokit.evaluation.vector import VectorEvaluator
    from evokit.policy.mlp import init_mlp

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "linear.onnx")
        with open(model, "wb") as f:
            f.write(init_mlp(11, 3, (), discrete=False, seed=0).SerializeToString())
        config = os.path.join(tmp, "config.prototxt")
        with open(config, "w") as f:
            f.write("solver { type: BASIC_ES optimizer { type: ADAM base_lr: 0.01 } "
                    "sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 "
                    "cached: true seed: 7 cache_size: 100000 } } }\n")
        agent = evokit.ESAgent(config, model)
        infos = [agent.clone().add_noise() for _ in range(population)]
        with VectorEvaluator(TASK, num_threads=threads) as ev:
            if ev.vectorization_mode != "native":
                return dict(skipped=f"{TASK} does not run natively here")
            ev.evaluate(agent, infos, [[i] for i in range(population)])  # warm-up
            steps, episodes, generation, longest = 0, 0, 0, 0
            thread_seconds = busy_seconds = 0.0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                generation += 1
                seeds = [[generation * 100000 + i] for i in range(population)]
                result = ev.evaluate(agent, infos, seeds)
                steps += result.steps
                longest += int(result.sample_steps.max())
                episodes += population
                thread_seconds += result.thread_seconds
                busy_seconds += result.busy_seconds
            wall = time.perf_counter() - t0
    # longest: the share of a generation's steps in its longest episode, which
    # one thread runs alone (it bounds what a second thread can gain).
    # idle: the share of the rollouts' worker time (threads x wall time of
    # each call) no episode used, measured by the core (EvalResult.idle_share).
    return dict(steps=steps, seconds=wall, cores=threads, episodes=episodes,
                longest=longest / steps, idle=1.0 - busy_seconds / thread_seconds)


def mujoco_rollout(seconds: float, threads: int, population: int = POPULATION) -> Dict:
    """MuJoCo's own multi-threaded C stepping, ``mujoco.rollout``: `population`
    open-loop trajectories of ROLLOUT_STEPS env steps each (controls held over
    the frame skip, no termination) from Hopper-v5's initial state with
    gymnasium's reset noise, on a ``Rollout(nthread=threads)`` pool with one
    MjData per thread; the states it writes at every physics step are part of
    its cost."""
    import gymnasium
    import mujoco
    import numpy as np
    from mujoco import rollout

    env = gymnasium.make(TASK).unwrapped
    model = env.model
    data = mujoco.MjData(model)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    rng = np.random.default_rng(0)
    initial = np.empty((population, mujoco.mj_stateSize(model, spec)))
    for i in range(population):
        mujoco.mj_resetData(model, data)
        data.qpos[:] = env.init_qpos + rng.uniform(-5e-3, 5e-3, model.nq)
        data.qvel[:] = env.init_qvel + rng.uniform(-5e-3, 5e-3, model.nv)
        mujoco.mj_getState(model, data, initial[i], spec)
    controls = np.repeat(rng.uniform(-1.0, 1.0, (population, ROLLOUT_STEPS, model.nu)), FRAME_SKIP, axis=1)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as pool:
        pool.rollout(model, datas, initial, controls[:, :FRAME_SKIP])  # warm-up
        steps, calls = 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            pool.rollout(model, datas, initial, controls)
            steps += population * ROLLOUT_STEPS
            calls += 1
        wall = time.perf_counter() - t0
    return dict(steps=steps, seconds=wall, cores=threads, episodes=calls * population)


def evokit_train(config: str) -> Dict:
    """A whole `evokit train CONFIG` run: its metrics' env steps and wall time."""
    import csv

    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-m", "evokit.cli", "train", os.path.abspath(config),
                              "--out", os.path.join(tmp, "run"), "-q"], capture_output=True,
                             text=True, cwd=tmp)
        if out.returncode != 0:
            return dict(skipped=f"evokit train failed: {out.stderr.strip()[-200:]}")
        with open(os.path.join(tmp, "run", "metrics.csv"), newline="") as f:
            last = list(csv.DictReader(f))[-1]
    return dict(steps=int(last["env_steps"]), seconds=float(last["wall_time"]), cores=2,
                generations=int(last["generation"]))


_ENVPOOL_SNIPPET = r"""
import json, sys, time
import numpy as np
import envpool
seconds = float(sys.argv[1])
env = envpool.make("Hopper-v5", env_type="gymnasium", num_envs=40, batch_size=40, num_threads=2, seed=0)
actions = np.random.default_rng(0).uniform(-1, 1, (64, 40, 3)).astype(np.float32)
env.reset()
for i in range(50):
    env.step(actions[i % 64])
steps, i = 0, 0
t0 = time.perf_counter()
while time.perf_counter() - t0 < seconds:
    env.step(actions[i % 64]); i += 1; steps += 40
print(json.dumps(dict(steps=steps, seconds=time.perf_counter() - t0, cores=2,
                      version=envpool.__version__)))
"""


def envpool_rows(seconds: float, python: str) -> Dict:
    try:
        out = subprocess.run([python, "-c", _ENVPOOL_SNIPPET, str(seconds)], capture_output=True,
                             text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return dict(skipped=f"EnvPool did not run: {exc}")
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return dict(skipped=f"EnvPool did not run: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cpu_seconds() -> Optional[tuple]:
    """(busy CPU seconds of the machine, of this process and its waited-for
    children), or None without /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
    own = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
    return busy, own


def measured(run, *args) -> Dict:
    """run(*args), with `others`: the share of the machine's cores other
    processes kept busy meanwhile (None where unknown)."""
    before, t0 = _cpu_seconds(), time.perf_counter()
    row = run(*args)
    after, wall = _cpu_seconds(), time.perf_counter() - t0
    if before is not None and after is not None:
        foreign = (after[0] - before[0]) - (after[1] - before[1])
        row["others"] = max(foreign, 0.0) / (wall * (os.cpu_count() or 1))
    return row


def _quietest(row: Dict) -> tuple:
    """Sort key: least foreign CPU (in 2% steps), then the fastest."""
    if "steps" not in row:
        return (1, 0.0)
    return (round(row.get("others", 0.0) * 50), -row["steps"] / row["seconds"])


def table(rows: List[tuple]) -> str:
    """Markdown table: runner, cores, env steps/s, ratio to raw MuJoCo."""
    base = next((r["steps"] / r["seconds"] for _, r in rows if "steps" in r), None)
    lines = ["| runner | cores | env steps/s | vs raw MuJoCo | notes |", "|---|---:|---:|---:|---|"]
    for name, r in rows:
        if "skipped" in r:
            lines.append(f"| {name} | - | - | - | {r['skipped']} |")
            continue
        rate = r["steps"] / r["seconds"]
        notes = []
        if r.get("episodes"):
            notes.append(f"{r['steps'] / r['episodes']:.0f} steps per episode")
        if r.get("longest"):
            notes.append(f"longest episode {100 * r['longest']:.0f}% of a generation's steps")
        if "idle" in r:
            notes.append(f"worker threads idle {100 * r['idle']:.1f}% of the rollouts' time")
        if r.get("generations"):
            notes.append(f"the whole run: {r['generations']} generations, {r['steps']:,} env steps "
                         f"in {r['seconds']:.1f} s")
        if r.get("version"):
            notes.append(f"envpool {r['version']}")
        if r.get("others", 0) > 0.05:
            notes.append(f"other processes used {100 * r['others']:.0f}% of the cores")
        lines.append(f"| {name} | {r['cores']} | {rate:,.0f} | {rate / base:.2f}x | "
                     f"{'; '.join(notes)} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="wall time per row")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every row, interleaved")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                        help="raw MuJoCo processes (default: one per core)")
    parser.add_argument("--envpool-python", default=sys.executable,
                        help="the interpreter that has envpool (default: this one)")
    add_out_argument(parser, "mujoco_throughput")
    parser.add_argument("--train-config", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "hopper.prototxt"),
        help="the config of the `evokit train` row ('' to leave it out)")
    parser.add_argument("--train-repeats", type=int, default=1,
                        help="runs of the `evokit train` row (default 1: it is long)")
    args = parser.parse_args(argv)

    import mujoco  # noqa: F401 (fails early without MuJoCo)

    report = Report("mujoco_throughput", "Native MuJoCo throughput, Hopper-v5 (bench/mujoco_throughput.py)")
    runs = [(f"raw mj_step(nstep={FRAME_SKIP}), {args.cores} processes",
             raw_mujoco, (args.seconds, args.cores)),
            ("gymnasium env.step, 1 process", gymnasium_loop, (args.seconds,))]
    for threads in (1, 2):
        runs.append((f"EvoKit native, population {POPULATION}, {threads} thread"
                     f"{'s' if threads > 1 else ''}", evokit_native, (args.seconds, threads)))
    runs.append((f"EvoKit native, population {10 * POPULATION}, 2 threads", evokit_native,
                 (args.seconds, 2, 10 * POPULATION)))
    for threads in (1, 2):
        runs.append((f"mujoco.rollout, {POPULATION} open-loop trajectories, {threads} thread"
                     f"{'s' if threads > 1 else ''}", mujoco_rollout, (args.seconds, threads)))
    runs.append(("EnvPool Hopper-v5, 40 envs, 2 threads", envpool_rows,
                 (args.seconds, args.envpool_python)))
    train_row = f"evokit train {os.path.basename(args.train_config)}, 2 workers"
    if args.train_config:
        runs.insert(4, (train_row, evokit_train, (args.train_config,)))
    results: Dict[str, List[Dict]] = {name: [] for name, _, _ in runs}
    for repeat in range(args.repeats):
        for name, run, run_args in runs:
            if name == train_row and repeat >= args.train_repeats:
                continue
            results[name].append(measured(run, *run_args))
        print(f"repeat {repeat + 1} of {args.repeats} done", flush=True)
    rows = [(name, min(results[name], key=_quietest)) for name, _, _ in runs]
    report.print(f"Each row: the quietest of {args.repeats} interleaved runs of {args.seconds:g} s "
                 "(the least CPU taken by other processes meanwhile).\n")
    report.print(table(rows))
    report.write(args.out, {"rows": {name: r for name, r in rows}, "repeats": results})

if __name__ == "__main__":
    main()
