"""EvoKit's noise kernels against the machine's read bandwidth and NumPy.

    python bench/kernels.py [--quick] [--out DIR] [--repeats R] [--threads T]

Writes bench/results/kernels.json and .md (``--json FILE``: only the rows, to
FILE, as bench/run.py takes them).

Measures, in one run and with medians over repeats:

- bandwidth: a plain read of a float32 array of the noise table's size, with
  1 and T threads. The read kernel is EvoKit's C++ ``_core.sum_floats`` (16
  float lanes per thread, nothing else per element), so the figure is memory
  bound; NumPy's ``ndarray.sum`` is timed too, for reference (it is pairwise
  summation, compute bound on most machines, so it is *not* the yardstick).
- gradient: g = sum_i w_i s_i eps(k_i) at P parameters and N samples,
  cached (windows of the noise table read in place) and uncached (noise
  regenerated with ARS4x32-5 + Box-Muller), for EvoKit (T threads) and
  the NumPy references: per-sample accumulate ``g += w_i * table[k:k+P]``
  and OpenAI's stack-then-dot (``batched_weighted_sum`` in openai/evolution-
  strategies-starter: stack the rows, one dot per batch of 500).
- perturb: theta + sigma * eps(k), cached, EvoKit vs NumPy.
- adam: one Adam step (EvoKit's fused kernel vs the NumPy Adam of OpenAI's
  starter code).
- clone_rss: resident memory added by N clones of an agent at P parameters,
  each add_noise'd and asked for its parameters (so each materialises them),
  beyond the agent (centre, noise table, optimizer state).

Rows (JSON list): {"kernel", "impl", "P", "N", "threads", "median_s", "gbps",
"ratio_to_bandwidth"}; gbps counts the bytes the kernel must move (N * P * 4
read for a gradient; for perturb the centre and the noise read and the result
written, 3 * P * 4, as STREAM counts its kernels; 4 vectors read for Adam), and
ratio_to_bandwidth divides it by the T-thread read bandwidth measured on an
array of the table's size in the same run; for gradient_cached the
yardstick is a plain T-thread read of the noise table itself, timed
alternately with the kernel (``paired_times``; its GB/s in "bandwidth_gbps",
the ratio to the run's separate measurement in "ratio_to_run_bandwidth"),
because the machine's read bandwidth drifts by up to 30% between runs and
the kernels drift with it. Bandwidth rows have kernel
"bandwidth". clone_rss rows put bytes in "rss_bytes" and leave the timing
fields null. Timings are for the machine at hand; a loaded machine (see the
printed load average) gives noisy, pessimistic numbers. On a loaded machine
GNU OpenMP's default (spinning) wait policy can stall every 2-thread call for
a scheduler time slice (~12 ms measured at load 9): run with
OMP_WAIT_POLICY=passive there; on a quiet machine the default is fastest.
The policy in force is printed and stored in every row.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable, Optional

# The NumPy references are single-threaded (their rows say threads = 1). An
# OpenBLAS thread pool (np.dot in the stack-then-dot reference) would spin on
# the cores after each call and slow whatever is timed next: measured, the
# uncached gradient at P = 1e5 took 15-22 ms after a stack-then-dot, 7.5 ms
# without. Set before NumPy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from evokit import _core  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

SIGMA = 0.02


def median_time(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def paired_times(kernel: Callable[[], object], yardstick: Callable[[], object], repeats: int,
                 warmup: int = 1):
    """Median times of ``kernel`` and of ``yardstick``, timed alternately
    (yardstick, kernel, yardstick, kernel, ...): both see the same moment of
    the machine, so their ratio is steadier than two separate medians."""
    for _ in range(warmup):
        yardstick()
        kernel()
    k_times, y_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        yardstick()
        y_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        kernel()
        k_times.append(time.perf_counter() - start)
    return float(np.median(k_times)), float(np.median(y_times))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def available_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def row(kernel: str, impl: str, p: Optional[int], n: Optional[int], threads: int,
        median_s: Optional[float], nbytes: Optional[float], bandwidth: Optional[float], **extra):
    gbps = nbytes / median_s / 1e9 if median_s and nbytes else None
    ratio = gbps / bandwidth if gbps and bandwidth else None
    r = {"kernel": kernel, "impl": impl, "P": p, "N": n, "threads": threads,
         "median_s": median_s, "gbps": gbps, "ratio_to_bandwidth": ratio}
    r.update(extra)
    return r


# ---- NumPy references ------------------------------------------------------

def numpy_accumulate(table, keys, coef, p):
    g = np.zeros(p, np.float32)
    for k, c in zip(keys, coef):
        g += c * table[k:k + p]
    return g


def numpy_stack_dot(table, keys, coef, p, batch_size=500):
    # openai/evolution-strategies-starter es_distributed/es.py batched_weighted_sum
    total = np.zeros(p, np.float32)
    for start in range(0, len(keys), batch_size):
        rows = np.stack([table[k:k + p] for k in keys[start:start + batch_size]])
        total += np.dot(coef[start:start + batch_size], rows)
    return total


def numpy_adam(theta, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    # openai/evolution-strategies-starter es_distributed/optimizers.py Adam
    a = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    m[:] = beta1 * m + (1 - beta1) * g
    v[:] = beta2 * v + (1 - beta2) * (g * g)
    theta -= a * m / (np.sqrt(v) + eps)


# ---- the benchmark -----------------------------------------------------------

def bench_bandwidth(table: np.ndarray, threads: int, repeats: int, rows: list) -> float:
    nbytes = table.nbytes
    best = {}
    for t in sorted({1, threads}):
        s = median_time(lambda: _core.sum_floats(table, num_threads=t), repeats)
        best[t] = nbytes / s / 1e9
        rows.append(row("bandwidth", "evokit_read", table.size, None, t, s, nbytes, None))
    s = median_time(lambda: table.sum(), max(3, repeats // 2))
    rows.append(row("bandwidth", "numpy_sum", table.size, None, 1, s, nbytes, None))
    return best[threads]


def bench_size(p: int, n: int, table_size: int, threads: int, repeats: int, bandwidth: float,
               uncached_repeats: int, rows: list, log) -> None:
    rng = np.random.default_rng(p)
    sampler = _core.GaussianSampler(seed=7, sigma=SIGMA, cached=True, cache_size=table_size,
                                    num_params=p, num_threads=threads)
    table = sampler.table
    keys = rng.integers(0, sampler.max_key + 1, n).astype(np.int64)
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0).astype(np.float32)
    weights = rng.normal(size=n).astype(np.float32)
    coef = weights * signs
    grad_bytes = float(n) * p * 4

    def add(kernel, impl, fn, nbytes, reps, thr, paired=False):
        if paired:
            # timed alternately with a plain T-thread read of the table itself
            s, read_s = paired_times(fn, lambda: _core.sum_floats(table, num_threads=threads), reps)
            local = table.nbytes / read_s / 1e9
            r = row(kernel, impl, p, n, thr, s, nbytes, local, bandwidth_gbps=local,
                    ratio_to_run_bandwidth=nbytes / s / 1e9 / bandwidth)
        else:
            s = median_time(fn, reps)
            r = row(kernel, impl, p, n, thr, s, nbytes, bandwidth)
        rows.append(r)
        log(f"  {kernel:18s} {impl:18s} P={p:<8d} {s * 1e3:9.2f} ms  {r['gbps']:6.2f} GB/s"
            f"  {r['ratio_to_bandwidth']:.2f} of bandwidth"
            + (f" (read alternately: {r['bandwidth_gbps']:.1f} GB/s)" if paired else ""))
        return s

    add("gradient_cached", "evokit",
        lambda: sampler.descent_direction(keys, signs, weights, num_threads=threads),
        grad_bytes, repeats, threads, paired=True)
    np_reps = max(1, min(repeats, 3))
    add("gradient_cached", "numpy_accumulate", lambda: numpy_accumulate(table, keys, coef, p),
        grad_bytes, np_reps, 1)
    if available_bytes() > 3 * grad_bytes:  # the stack holds N * P floats
        add("gradient_cached", "numpy_stack_dot", lambda: numpy_stack_dot(table, keys, coef, p),
            grad_bytes, np_reps, 1)
    else:
        log(f"  gradient_cached    numpy_stack_dot    P={p}: skipped, the {grad_bytes / 2**30:.1f} "
            f"GiB stack does not fit in 1/3 of the available memory")

    uncached = _core.GaussianSampler(seed=7, sigma=SIGMA, cached=False, cache_size=0,
                                     num_params=p, num_threads=threads)
    ukeys = rng.integers(0, _core.MAX_STREAM_KEY, n).astype(np.int64)
    add("gradient_uncached", "evokit",
        lambda: uncached.descent_direction(ukeys, signs, weights, num_threads=threads),
        grad_bytes, uncached_repeats, threads)

    theta = rng.normal(size=p).astype(np.float32)
    out = np.empty(p, np.float32)
    k0 = int(keys[0])
    add("perturb", "evokit", lambda: sampler.perturb(theta, k0, 1.0, out=out, num_threads=threads),
        p * 4.0 * 3, repeats * 3, threads)
    add("perturb", "numpy", lambda: np.add(theta, SIGMA * table[k0:k0 + p], out=out),
        p * 4.0 * 3, repeats * 3, 1)

    g = (rng.normal(size=p) * 0.01).astype(np.float32)
    adam = _core.Adam(0.01, 0.9, 0.999, 1e-8, p)
    params = theta.copy()
    add("adam", "evokit", lambda: adam.step(params, g, num_threads=threads), p * 4.0 * 4,
        repeats * 3, threads)
    m = np.zeros(p, np.float32)
    v = np.zeros(p, np.float32)
    step = [0]

    def np_step():
        step[0] += 1
        numpy_adam(params, g, m, v, step[0])

    add("adam", "numpy", np_step, p * 4.0 * 4, repeats * 3, 1)
    del sampler, uncached, table


def bench_clone_rss(p: int, n: int, table_size: int, threads: int, rows: list, log) -> None:
    theta = np.zeros(p, np.float32)
    agent = _core.ESAgent(theta, seed=3, sigma=SIGMA, cached=True, cache_size=table_size,
                          optimizer="ADAM", learning_rate=0.01, num_threads=threads)
    base = rss_bytes()
    clones = [agent.clone() for _ in range(n)]
    for c in clones:
        c.add_noise()
    after_noise = rss_bytes()
    checksum = 0.0
    for c in clones:
        checksum += float(c.params[0])  # materialise every clone's parameters
    after_params = rss_bytes()
    extra = {"rss_bytes": after_params - base, "rss_bytes_after_add_noise": after_noise - base,
             "param_buffers": agent.num_param_buffers,
             "param_buffer_capacity": agent.param_buffer_capacity}
    rows.append(row("clone_rss", "evokit", p, n, threads, None, None, None, **extra))
    log(f"  clone_rss P={p} N={n}: {(after_params - base) / 2**20:.0f} MiB beyond the agent "
        f"({(after_noise - base) / 2**20:.0f} MiB after add_noise; "
        f"{agent.num_param_buffers} buffers of {p * 4 / 2**20:.1f} MiB) checksum {checksum:.3g}")
    del clones, agent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small P, few repeats (< 30 s)")
    ap.add_argument("--json", metavar="FILE", help="write only the rows, to this JSON file (bench/run.py's use), "
                                                   "instead of the result files")
    add_out_argument(ap, "kernels")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats per kernel")
    ap.add_argument("--threads", type=int, default=2, help="EvoKit threads (default 2)")
    args = ap.parse_args(argv)
    report = None if args.json else Report("kernels", "Noise kernels against read bandwidth and NumPy "
                                                      "(bench/kernels.py" + (" --quick)" if args.quick else ")"))

    n = 256
    if args.quick:
        sizes, table_size, repeats, uncached_repeats, rss_p = [10_000, 100_000], 1 << 22, 3, 1, 100_000
    else:
        sizes, table_size, repeats, uncached_repeats, rss_p = (
            [100_000, 1_000_000, 4_000_000], 1 << 26, 7, 3, 4_000_000)
    if args.repeats is not None:
        repeats = uncached_repeats = args.repeats

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    load = os.getloadavg()
    log(f"bench/kernels.py: {os.cpu_count()} CPUs, {args.threads} EvoKit threads, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, table {table_size} floats "
        f"({table_size * 4 / 2**20:.0f} MiB), N={n}, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default')}")
    rows: list = []
    read_array = np.random.default_rng(0).normal(size=table_size).astype(np.float32)
    bandwidth = bench_bandwidth(read_array, args.threads, repeats * 2, rows)
    for r in rows:
        log(f"  bandwidth {r['impl']:12s} threads={r['threads']} {r['gbps']:6.2f} GB/s")
    del read_array
    for p in sizes:
        bench_size(p, n, table_size, args.threads, repeats, bandwidth, uncached_repeats, rows, log)
    bench_clone_rss(rss_p, n, table_size, args.threads, rows, log)
    load = os.getloadavg()
    log(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for r in rows:
        r.setdefault("load_average", load[0])
        r.setdefault("omp_wait_policy", os.environ.get("OMP_WAIT_POLICY", "default"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        return 0
    from run import kernel_table  # the table bench/run.py shows

    for line in kernel_table(rows):
        report.print(line)
    report.write(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
