"""Services that serve many clones: predict calls per second of the C++
service library (``evokit::io::ESAgent``) for the unperturbed model and for
perturbed clones, beside onnxruntime's predict of the same ONNX model; the
memory N clones cost; where a predict's time goes; and the requests per
second of the service loop of demo/cpp.

Two models, both tanh MLPs made by ``evokit.policy.mlp.init_mlp``:

- ``cartpole``: 4-16-2 (configs/cartpole.prototxt's, 114 parameters), with
  that config (Gaussian sampling, a cached noise table of 100,000 floats);
- ``mlp1024``: 256-1024-1024-1024-16 (2,379,792 parameters), with the same
  config but a noise table of 2^25 floats (``--big-noise`` also runs it
  with counter-based noise, ``cached: false``).

The C++ figures come from ``evokit_service_bench`` and
``evokit_service_loop`` (demo/cpp), built against an installed EvoKit as a
service builds (``find_package(evokit)``): this script installs ``--build``
(a CMake build of EvoKit with the io component) into a temporary prefix and
builds demo/cpp there, or takes the programs from ``--demo-build``.
onnxruntime runs in this process (``InferenceSession``, ``intra_op_num_threads``
set, sequential execution; one observation per ``run`` and a batch), and
with two caller threads on one session of one intra-op thread each.

    python bench/service_predict.py --build build          # about 8 minutes here
    python bench/service_predict.py --demo-build build-demo --quick

Writes bench/results/service_predict.json and .md (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from results import Report, add_out_argument  # noqa: E402

MODELS = {
    # name: (obs_dim, act_dim, hidden sizes, noise table size or None for counter-based)
    "cartpole": (4, 2, (16,), 100000),
    "mlp1024": (256, 16, (1024, 1024, 1024), 1 << 25),
}

#: The service loop per model: requests per run, requests per sample.
SERVICE_LOOP = {"cartpole": (400000, 100), "mlp1024": (10000, 10)}
RECORDS_PER_LOG = 500  # a new log file every 500 records
APPEND_EVERY = 16      # each thread appends its records 16 at a time


def build_programs(build: str, work: str) -> str:
    """Installs the EvoKit build into work/prefix and builds demo/cpp against
    it (as demo/cpp/round_trip.sh does); returns the demo build directory."""
    prefix, demo = os.path.join(work, "prefix"), os.path.join(work, "demo-build")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "-S", os.path.join(ROOT, "demo", "cpp"), "-B", demo, f"-DCMAKE_PREFIX_PATH={prefix}",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", demo, "-j2", "--target", "evokit_service_bench", "evokit_service_loop"],
                   check=True, stdout=subprocess.DEVNULL)
    return demo


def write_model(path: str, spec) -> None:
    from evokit.policy.mlp import init_mlp
    obs_dim, act_dim, hidden, _ = spec
    with open(path, "wb") as f:
        f.write(init_mlp(obs_dim, act_dim, hidden_sizes=hidden, seed=0).SerializeToString())


def write_config(path: str, cache_size) -> None:
    with open(os.path.join(ROOT, "configs", "cartpole.prototxt")) as f:
        text = f.read()
    if cache_size is None:
        text = text.replace("cached: true", "cached: false")
    else:
        text = text.replace("cache_size: 100000", f"cache_size: {cache_size}")
    with open(path, "w") as f:
        f.write(text)


def onnxruntime_rates(model: str, obs_dim: int, batch: int, threads, seconds: float, rounds: int) -> list:
    """onnxruntime's run() calls per second: one caller with intra_op_num_threads
    = t, and (for t > 1) t caller threads on one session of one intra-op thread;
    each case once per round, the median round reported (as the C++ cases)."""
    import numpy as np
    import onnxruntime as ort

    def session(intra: int):
        so = ort.SessionOptions()
        so.intra_op_num_threads = intra
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])

    def loop(sess, obs, stop_at, counter):
        name = sess.get_inputs()[0].name
        i = 0
        while time.perf_counter() < stop_at:
            sess.run(None, {name: obs[i % 64]})
            i += 1
        counter.append(i)

    def measure(sess, obs, callers):
        loop(sess, obs, time.perf_counter() + seconds / 10, [])  # warm-up
        counts = []
        t0, c0 = time.perf_counter(), time.process_time()
        workers = [threading.Thread(target=loop, args=(sess, obs, t0 + seconds, counts)) for _ in range(callers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return sum(counts) / wall, sum(counts) / cpu

    rng = np.random.default_rng(0)
    samples = {}
    for _ in range(rounds):
        for b in (1, batch):
            obs = [rng.uniform(-1, 1, (b, obs_dim)).astype(np.float32) for _ in range(64)]
            for t in threads:
                cases = [(f"onnxruntime, intra_op_num_threads={t}", t, 1)]
                if t > 1:
                    cases.append((f"onnxruntime, {t} caller threads, intra_op_num_threads=1", 1, t))
                for name, intra, callers in cases:
                    samples.setdefault((name, t, b), []).append(measure(session(intra), obs, callers))
    rows = []
    for (name, t, b), got in samples.items():
        per_s = sorted(g[0] for g in got)
        per_cpu = sorted(g[1] for g in got)
        rows.append({"case": name, "threads": t, "batch": b, "calls_per_s": per_s[len(per_s) // 2],
                     "calls_per_s_min": per_s[0], "calls_per_s_max": per_s[-1],
                     "calls_per_cpu_s": per_cpu[len(per_cpu) // 2], "obs_per_s": per_s[len(per_s) // 2] * b,
                     "rounds": len(got)})
    return rows


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def onnxruntime_session_bytes(model: str, count: int = 4) -> float:
    """Resident bytes per onnxruntime session of the model (what a service
    that gives each perturbed clone its own session pays per clone)."""
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    first = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    shape = first.get_inputs()[0].shape
    x = np.zeros((1, shape[1]), np.float32)
    first.run(None, {first.get_inputs()[0].name: x})
    before = rss_bytes()
    sessions = []
    for _ in range(count):
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        s.run(None, {s.get_inputs()[0].name: x})
        sessions.append(s)
    return (rss_bytes() - before) / count


def service_loop(exe: str, warehouse: str, work: str, threads: int, clones: int, requests: int,
                 episode_steps: int, fsync: bool) -> dict:
    log_dir = tempfile.mkdtemp(prefix="logs-", dir=work)
    out = subprocess.run([exe, "--warehouse", warehouse, "--log-dir", log_dir, "--clones", str(clones),
                          "--threads", str(threads), "--requests", str(requests), "--episode-steps",
                          str(episode_steps), "--records-per-log", str(RECORDS_PER_LOG), "--append-every",
                          str(APPEND_EVERY), "--seed", "1", "--fsync", "1" if fsync else "0"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"served (\d+) requests .* in ([0-9.]+) s: (\d+) requests/s", out)
    files = re.search(r"(\d+) records in (\d+) log files", out)
    parts = re.search(r"predict ([0-9.]+) %, add_noise ([0-9.]+) %, log appends ([0-9.]+) %, "
                      r"the rest \(requests, records\) ([0-9.-]+) %", out)
    # The logs read back: every record, none skipped.
    from evokit.online.samplelog import read_log
    read = 0
    for name in sorted(os.listdir(log_dir)):
        result = read_log(os.path.join(log_dir, name))
        assert not result.skipped, [str(s) for s in result.skipped]
        read += len(result.records)
    shutil.rmtree(log_dir)
    assert read == int(files.group(1)), (read, out)
    return {"threads": threads, "clones": clones, "episode_steps": episode_steps, "fsync": fsync,
            "requests": int(m.group(1)), "wall_s": float(m.group(2)),
            "requests_per_s": int(m.group(3)), "records": int(files.group(1)), "log_files": int(files.group(2)),
            "records_read_back": read, "predict_pct": float(parts.group(1)), "add_noise_pct": float(parts.group(2)),
            "append_pct": float(parts.group(3)), "rest_pct": float(parts.group(4)), "output": out.strip()}


def fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}" if x >= 10 else f"{x:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="a CMake build of EvoKit with the io component, to install and build demo/cpp against")
    p.add_argument("--demo-build", help="a demo/cpp build holding evokit_service_bench and evokit_service_loop")
    p.add_argument("--clones", type=int, default=256)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seconds", type=float, default=0.5, help="per measured case and round")
    p.add_argument("--rounds", type=int, default=3, help="rounds of every case; the median is reported")
    p.add_argument("--big-noise", action="store_true", help="also run mlp1024 with counter-based noise")
    p.add_argument("--quick", action="store_true", help="16 clones, 0.2 s per case, few requests (a smoke run)")
    add_out_argument(p, "service_predict")
    args = p.parse_args()
    if args.quick:
        args.clones, args.seconds, args.rounds = 16, 0.2, 1
    threads = [int(t) for t in args.threads.split(",")]

    report = Report("service_predict", "Services that serve many clones: predict, memory, the service loop")
    work = tempfile.mkdtemp(prefix="evokit-service-bench-")
    try:
        demo = args.demo_build or build_programs(args.build, work)
        bench_exe = os.path.join(demo, "evokit_service_bench")
        loop_exe = os.path.join(demo, "evokit_service_loop")
        runs = [("cartpole", "cartpole", MODELS["cartpole"][3]), ("mlp1024", "mlp1024", MODELS["mlp1024"][3])]
        if args.big_noise:
            runs.append(("mlp1024 (counter-based noise)", "mlp1024", None))
        results = {"models": {}, "service_loop": [], "onnxruntime": {}}
        for label, name, cache in runs:
            model = os.path.join(work, f"{name}.onnx")
            if not os.path.exists(model):
                write_model(model, MODELS[name])
            config = os.path.join(work, f"{label.split()[0]}_{'table' if cache else 'counter'}.prototxt")
            write_config(config, cache)
            report.say(f"== {label}: evokit_service_bench")
            out = subprocess.run([bench_exe, "--model", model, "--config", config, "--clones", str(args.clones),
                                  "--threads", args.threads, "--batch", str(args.batch),
                                  "--seconds", str(args.seconds), "--rounds", str(args.rounds)],
                                 check=True, capture_output=True, text=True)
            results["models"][label] = json.loads(out.stdout)
            if name not in results["onnxruntime"]:
                report.say(f"== {name}: onnxruntime")
                obs_dim = MODELS[name][0]
                results["onnxruntime"][name] = {
                    "cases": onnxruntime_rates(model, obs_dim, args.batch, threads, args.seconds, args.rounds),
                    "session_rss_bytes": onnxruntime_session_bytes(model)}
            if cache is not None:
                warehouse = os.path.join(work, f"W-{name}")
                subprocess.run([sys.executable, "-m", "evokit.cli", "init-solver", "--config", config, "--model", model,
                                "--warehouse", warehouse], check=True, cwd=work, stdout=subprocess.DEVNULL)
                requests, steps = SERVICE_LOOP[name]
                if args.quick:
                    requests //= 20
                for fsync in (True, False):
                    for t in threads:
                        report.say(f"== {name}: evokit_service_loop, {t} threads, fsync {int(fsync)}")
                        r = service_loop(loop_exe, warehouse, work, t, args.clones, requests, steps, fsync)
                        r["model"] = name
                        results["service_loop"].append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # ---- tables ----
    report.print("## Predict calls per second\n")
    report.print("One observation per call (batch 1) and a batch; N = "
                 f"{args.clones} clones. Threads serve their own clones (thread t: clones t, t + T, ...). "
                 f"Every case ran {args.seconds:g} s in each of {args.rounds} rounds, one round after another; "
                 "the median round is shown (the JSON has the extremes). "
                 "calls/s is all threads together per wall second; calls per CPU s divides the calls by the "
                 "CPU time the threads (onnxruntime: the process) used, the cost per core whatever else "
                 "ran on the machine. onnxruntime: Python `InferenceSession.run` on the same "
                 "ONNX file (its per-call Python overhead included).\n")
    report.print("| model | case | threads | batch | calls/s | calls per CPU s | observations/s |")
    report.print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for label, m in results["models"].items():
        rows = list(m["cases"])
        name = label.split()[0]
        if label == name:
            rows += results["onnxruntime"][name]["cases"]
        for b in sorted({c["batch"] for c in rows}):
            for t in sorted({c["threads"] for c in rows}):
                for c in rows:
                    if c["batch"] != b or c["threads"] != t:
                        continue
                    case = c["case"].replace("N clones", f"{args.clones} clones")
                    report.print(f"| {label} | {case} | {t} | {b} | {fmt(c['calls_per_s'])} | "
                                 f"{fmt(c['calls_per_cpu_s'])} | {fmt(c['obs_per_s'])} |")
    report.print("\n## Memory of N clones\n")
    report.print("Heap bytes (glibc's `mallinfo2`, exact) and resident bytes (VmRSS, pages) per clone: "
                 "after `clone()` + `add_noise()`, and after each clone predicted once (its parameters "
                 "materialised into the pool). The pool holds at most 256 MiB of parameter buffers by default. "
                 "onnxruntime: resident bytes per extra `InferenceSession` of the model (a session per "
                 "perturbed clone).\n")
    report.print("| model | parameters | clones | pool buffers / capacity | heap B/clone (noise) | RSS B/clone (noise) "
                 "| heap B/clone (predicted) | RSS B/clone (predicted) | onnxruntime B/session |")
    report.print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, m in results["models"].items():
        name = label.split()[0]
        report.print(f"| {label} | {m['num_params']:,.0f} | {m['clones']} | {m['pool_buffers']:.0f} / "
                     f"{m['pool_capacity']:,.0f} | {fmt(m['clone_heap_bytes_noise'])} | "
                     f"{fmt(m['clone_rss_bytes_noise'])} | {fmt(m['clone_heap_bytes_predicted'])} | "
                     f"{fmt(m['clone_rss_bytes_predicted'])} | "
                     f"{fmt(results['onnxruntime'][name]['session_rss_bytes'])} |")
    report.print("\n## Where a predict's time goes (1 thread, CPU microseconds per call, median of the rounds)\n")
    report.print("`predict` = checks + lease of the parameters + `PolicyGraph::run`; `run` = compiling the "
                 "plan + allocating + `execute`; `execute` = the forward pass alone (a compiled plan, "
                 "no allocation); `execute (view)` = the forward pass reading centre + sigma * noise from "
                 "the table in the kernels (no materialised parameters). `rebuild` = materialising one "
                 "clone's parameters; `lease` = the pool lookup of a clone whose buffer holds them; "
                 "`lease + rebuild` = a lease whose buffer another clone took.\n")
    keys = [("predict_unperturbed_us", "predict"), ("graph_run_us", "run"), ("compile_plan_us", "compile"),
            ("execute_us", "execute"), ("execute_view_us", "execute (view)")]
    report.print("| model | batch | " + " | ".join(k[1] for k in keys) + " | rebuild | lease | lease + rebuild |")
    report.print("| --- | ---: |" + " ---: |" * (len(keys) + 3))
    for label, m in results["models"].items():
        bd = m["breakdown"]
        for b in (1, m["batch"]):
            cells = [fmt(bd[f"{k}_b{b}"]) if f"{k}_b{b}" in bd else "-" for k, _ in keys]
            report.print(f"| {label} | {b} | " + " | ".join(cells) + f" | {fmt(bd['rebuild_us'])} | "
                         f"{fmt(bd['lease_materialised_us'])} | {fmt(bd['lease_rebuild_us'])} |")
    report.print("\n## The service loop (demo/cpp `evokit_service_loop`)\n")
    report.print(f"{args.clones} perturbed clones of a warehouse's iteration 0 (`evokit init-solver` with the "
                 "model's config), synthetic requests (one observation each), thread t serving clones t, t + T, "
                 "...; a clone's sample is complete after the given requests (its record queued, new noise), "
                 f"each thread appends its records {APPEND_EVERY} at a time to logs rotated every "
                 f"{RECORDS_PER_LOG} records, with and without fsync; every log read back whole by "
                 "`evokit.online.samplelog.read_log`. The shares are of the threads' wall time.\n")
    report.print("| model | threads | requests per sample | fsync | requests | requests/s | records | log files | "
                 "predict | add_noise | appends | rest |")
    report.print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results["service_loop"]:
        report.print(f"| {r['model']} | {r['threads']} | {r['episode_steps']} | {'yes' if r['fsync'] else 'no'} | "
                     f"{r['requests']:,} | {r['requests_per_s']:,} | "
                     f"{r['records']:,} | {r['log_files']} | {r['predict_pct']:.1f} % | {r['add_noise_pct']:.1f} % | "
                     f"{r['append_pct']:.1f} % | {r['rest_pct']:.1f} % |")
    report.write(args.out, results)


if __name__ == "__main__":
    main()
