"""`evokit update` at production scale: millions of records in many log
shards, its wall time and peak resident memory against the record count.

For each count N: a warehouse of a fresh MLP (`evokit init-model`,
`init-solver`), S samplers (`evokit sample --seed s`) each appending N / S
records to its own shard, then `evokit update --log shard_0 ... shard_S-1` in
a fresh process, timed from start to exit with its peak resident memory (the
process's rusage). The update must use every record (none dropped): the
report's counts are checked. Shards are sampled once for the largest N and
the smaller counts read a prefix of the shards (whole shards).

    python bench/update_scale.py [--records 1000000 10000000] [--shards 10]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from online_pipeline import timed  # noqa: E402
from results import Report, add_out_argument  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole.prototxt"))
    ap.add_argument("--env", default="CartPole-v1")
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--shards", type=int, default=10, help="logs (samplers) of the largest count")
    ap.add_argument("--hidden", type=int, nargs="*", default=[16])
    ap.add_argument("--work", help="directory for the warehouse and logs (default: a temporary one)")
    add_out_argument(ap, "update_scale")
    args = ap.parse_args(argv)
    largest = max(args.records)
    per_shard = largest // args.shards
    for n in args.records:
        if n % per_shard:
            ap.error(f"--records {n} is not a whole number of shards of {per_shard:,} records")
    report = Report("update_scale", "evokit update at scale (bench/update_scale.py)")
    rows = {}
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        wh = os.path.join(tmp, "warehouse")
        timed("init-model", "--env", args.env, "--hidden", *map(str, args.hidden), "-o", os.path.join(tmp, "m.onnx"))
        timed("init-solver", "--config", args.config, "--model", os.path.join(tmp, "m.onnx"), "--warehouse", wh)
        logs, sample_s, log_bytes = [], 0.0, 0
        for s in range(args.shards):
            log = os.path.join(tmp, f"shard_{s}.log")
            run = timed("sample", "--warehouse", wh, "--env", args.env, "--num-samples", str(per_shard),
                        "--log", log, "--seed", str(s))
            logs.append(log)
            sample_s += run["wall_s"]
            log_bytes += os.path.getsize(log)
        for n in sorted(args.records):
            shards = logs[:n // per_shard]
            copy = os.path.join(tmp, f"warehouse_{n}")
            timed("init-solver", "--config", args.config, "--model", os.path.join(tmp, "m.onnx"), "--warehouse", copy)
            run = timed("update", "--warehouse", copy, "--log", *shards)
            used = re.search(r"used (\d+) samples", run["out"])
            if used is None or int(used.group(1)) != n:
                raise RuntimeError(f"update of {n:,} records did not use them all:\n{run['out']}")
            size = sum(os.path.getsize(p) for p in shards)
            rows[str(n)] = {"records": n, "shards": len(shards), "log_mib": size / 2**20,
                            "wall_s": run["wall_s"], "peak_mib": run["peak_mib"],
                            "records_per_s": n / run["wall_s"], "report": run["out"].strip()}
    report.print(f"Config {os.path.relpath(args.config, ROOT)}, {args.env}, a 4-{'-'.join(map(str, args.hidden))}-2 "
                 f"MLP; {args.shards} samplers of {per_shard:,} records each "
                 f"({log_bytes / largest:.0f} bytes a record, sampled in {sample_s:.0f} s).\n")
    report.print("| records | shards | log MiB | update wall s | records / s | peak MiB |")
    report.print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows.values():
        report.print(f"| {r['records']:,} | {r['shards']} | {r['log_mib']:,.0f} | {r['wall_s']:.1f} | "
                     f"{r['records_per_s']:,.0f} | {r['peak_mib']:,.0f} |")
    report.write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
