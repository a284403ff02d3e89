"""Reading crafted (hostile) sampling logs: time against size.

Writes damaged logs of each kind below at each size and reads them with
``evokit.online.samplelog.read_log`` (the core's ``scan_record_log`` through
``evokit._core``, then the payloads parsed in Python), printing wall and CPU
seconds (CPU time is the figure to compare on a shared machine) and the
bytes the scan examined per byte of log. A reader that checksummed every
claimed payload where it is claimed needs time quadratic in the size: for ``claims``, size**2 / 32
bytes of CRC, 1.4e14 at 64 MiB.

Kinds (each a file of exactly SIZE bytes):

- ``claims``: a sound header every 16 bytes, each claiming the rest of the
  file, every payload checksum wrong;
- ``claims_max``: the same, each claiming the maximum payload (16 MiB), so
  the last 16 MiB are torn claims;
- ``magics``: the magic over and over, no header checksum holding;
- ``torn``: a record, then headers whose claims run past the end of the file,
  then a record: each claim is torn before the next record;
- ``not_sample``: sound frames (both checksums hold) whose 16-byte payloads
  do not parse as a SampleRecord.

Usage: python bench/crafted_logs.py [--sizes-mib 1 4 16 64] [--kinds ...] [--out DIR]
(writes bench/results/crafted_logs.json and .md by default).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
import zlib

from evokit import _core
from evokit.online.samplelog import MAGIC, read_log

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import Report, add_out_argument  # noqa: E402

HEADER = 16


def _header(length: int, payload_crc: int) -> bytes:
    head = struct.pack("<4sII", MAGIC, length, payload_crc)
    return head + struct.pack("<I", zlib.crc32(head))


def crafted_log(kind: str, size: int) -> bytes:
    """``size`` bytes (a multiple of 16) of the crafted log ``kind``."""
    if kind == "claims":
        return b"".join(_header(size - c - HEADER, 1) for c in range(0, size, HEADER))
    if kind == "claims_max":
        return _header(_core.MAX_RECORD_PAYLOAD, 1) * (size // HEADER)
    if kind == "magics":
        return MAGIC * (size // 4)
    if kind == "torn":
        record = _core.frame_record(b"")
        middle = (size - 2 * len(record)) // HEADER
        return record + _header(size, 0) * middle + record
    if kind == "not_sample":
        payload = b"\xff" * HEADER  # a field with an invalid wire type
        return (_header(HEADER, zlib.crc32(payload)) + payload) * (size // (2 * HEADER))
    raise ValueError(f"unknown kind {kind!r}")


KINDS = ["claims", "claims_max", "magics", "torn", "not_sample"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes-mib", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS)
    add_out_argument(ap, "crafted_logs")
    args = ap.parse_args(argv)
    report = Report("crafted_logs", "Reading crafted sampling logs (bench/crafted_logs.py)")
    report.print("| kind | MiB | read_log s | (cpu s) | scan s | (cpu s) | examined / byte | records | skipped |")
    report.print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds:
            for mib in args.sizes_mib:
                data = crafted_log(kind, mib << 20)
                path = os.path.join(tmp, f"{kind}.log")
                with open(path, "wb") as f:
                    f.write(data)
                t0, c0 = time.perf_counter(), time.process_time()
                result = read_log(path)
                t1, c1 = time.perf_counter(), time.process_time()
                _, examined = _core.scan_record_log(data)
                t2, c2 = time.perf_counter(), time.process_time()
                rows.append({"kind": kind, "mib": mib, "read_log_s": t1 - t0, "read_log_cpu_s": c1 - c0,
                             "scan_s": t2 - t1, "scan_cpu_s": c2 - c1, "examined_per_byte": examined / len(data),
                             "records": len(result.records), "skipped": len(result.skipped)})
                report.print(f"| {kind} | {mib} | {t1 - t0:.2f} | {c1 - c0:.2f} | {t2 - t1:.2f} | {c2 - c1:.2f} "
                             f"| {examined / len(data):.2f} | {len(result.records)} | {len(result.skipped)} |")
                os.remove(path)
    report.write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
