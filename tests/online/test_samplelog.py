"""Sampling logs (evokit.online.samplelog): framing, torn / corrupt / foreign bytes,
concurrent writers (processes and threads), read-only readers."""

import errno
import fcntl
import hashlib
import multiprocessing
import os
import random
import resource
import signal
import struct
import threading
import warnings
import zlib

import pytest

from evokit import _core
from evokit import evokit_pb2 as pb
from evokit.errors import LogError
from evokit.online.samplelog import (
    MAGIC, MAX_PAYLOAD, LogWriter, append_records, encode_record, read_log, read_logs,
)


def make_record(i, sampler_id=0, pad=0):
    """A record with every field set; ``pad`` extra bytes of fingerprint vary its size."""
    return pb.SampleRecord(
        info=pb.SamplingInfo(key=[i * 7919 - 50, i], model_iter_id=i // 3, mirrored=bool(i % 2)),
        reward=(i - 10) * 0.37,
        config_fingerprint=hashlib.sha256(b"config").hexdigest(),
        model_fingerprint=hashlib.sha256(str(i).encode()).hexdigest() + "m" * pad,
        sampler_id=sampler_id,
        env_steps=1000 + 13 * i,
        time=1.7e9 + i / 8,
    )


def various_records():
    recs = [make_record(i, sampler_id=i % 3, pad=(i * 37) % 300) for i in range(20)]
    recs += [
        pb.SampleRecord(),  # empty payload
        pb.SampleRecord(info=pb.SamplingInfo(key=[-(2**63), 2**63 - 1]), sampler_id=2**64 - 1),
        pb.SampleRecord(reward=float("inf"), env_steps=-1, time=0.0),
        pb.SampleRecord(reward=-0.0, model_fingerprint="x" * 70000),  # a large payload
        pb.SampleRecord(info=pb.SamplingInfo(key=[1, 2, 3, 4, 5], mirrored=True)),
    ]
    return recs


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_log(path, records):
    """Append ``records`` and return the header offset of each and the end of file."""
    frames = [encode_record(r) for r in records]
    append_records(path, records)
    offsets, pos = [], 0
    for f in frames:
        offsets.append(pos)
        pos += len(f)
    assert os.path.getsize(path) == pos
    return offsets, pos


def keys(result):
    return [r.record.info.key[1] for r in result.records]


# ---------------------------------------------------------------------------
# Format
# ---------------------------------------------------------------------------


def test_round_trip(tmp_path):
    path = str(tmp_path / "logs" / "deep" / "s.log")  # parent directories are created
    recs = various_records()
    append_records(path, recs[:7])
    append_records(path, recs[7:])  # appends, never truncates
    with open(path, "rb") as f:
        assert f.read() == b"".join(encode_record(r) for r in recs)

    result = read_log(path)
    assert result.skipped == []
    assert [r.record for r in result.records] == recs
    offset = 0
    for rec, got in zip(recs, result.records):
        payload = rec.SerializeToString()
        assert got.path == path
        assert got.offset == offset
        assert got.record_id == hashlib.sha256(payload).digest()[:16]
        assert len(got.record_id) == 16
        offset += 16 + len(payload)
    assert offset == os.path.getsize(path)
    assert len({r.record_id for r in result.records}) == len(recs)
    assert result.records[23].record.model_fingerprint == "x" * 70000


def test_encode_record_header_byte_by_byte():
    rec = make_record(5, sampler_id=3, pad=40)
    payload = rec.SerializeToString()
    framed = encode_record(rec)
    assert len(framed) == 16 + len(payload)
    assert framed[0:4] == b"EKR1" == bytes([0x45, 0x4B, 0x52, 0x31])
    assert framed[4:8] == len(payload).to_bytes(4, "little")
    assert framed[8:12] == (zlib.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "little")
    assert framed[12:16] == (zlib.crc32(framed[0:12]) & 0xFFFFFFFF).to_bytes(4, "little")
    assert framed[16:] == payload
    assert framed[:16] == struct.pack("<4sIII", MAGIC, len(payload), zlib.crc32(payload),
                                      zlib.crc32(struct.pack("<4sII", MAGIC, len(payload), zlib.crc32(payload))))
    # the empty record: length 0, CRC-32 of nothing is 0
    assert encode_record(pb.SampleRecord()) == struct.pack("<4sII", MAGIC, 0, 0) + struct.pack(
        "<I", zlib.crc32(struct.pack("<4sII", MAGIC, 0, 0)))


def test_encode_record_refuses_other_messages_and_oversize():
    with pytest.raises(TypeError, match="SampleRecord"):
        encode_record(pb.SamplingInfo(key=[1]))
    with pytest.raises(ValueError, match="exceeds"):
        encode_record(pb.SampleRecord(model_fingerprint="x" * MAX_PAYLOAD))


# ---------------------------------------------------------------------------
# Torn, corrupt and foreign bytes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [1, 3, 4, 9, 15, 16, 17, 40, -1], ids=lambda c: f"cut{c}")
def test_torn_last_record(tmp_path, cut):
    path = str(tmp_path / "s.log")
    recs = [make_record(i, pad=60) for i in range(5)]
    offsets, end = write_log(path, recs)
    size5 = end - offsets[4]
    keep = cut if cut > 0 else size5 + cut  # cut < 16: inside the header; else inside the payload
    os.truncate(path, offsets[4] + keep)

    result = read_log(path)
    assert [r.record for r in result.records] == recs[:4]
    assert len(result.skipped) == 1
    s = result.skipped[0]
    assert (s.path, s.offset, s.length) == (path, offsets[4], keep)
    assert "torn" in s.reason
    if keep >= 16:  # the header is whole: the reason says how much of the record is there
        assert f"({keep} of {size5} bytes)" in s.reason


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


@pytest.mark.parametrize("where, reason", [
    (0, "no magic"),               # magic
    (5, "bad header checksum"),    # length field
    (8, "bad header checksum"),    # payload CRC field (covered by the header CRC)
    (13, "bad header checksum"),   # header CRC field
    (16, "payload checksum mismatch"),
    (60, "payload checksum mismatch"),
])
def test_flipped_byte_in_record_3(tmp_path, where, reason):
    path = str(tmp_path / "s.log")
    recs = [make_record(i, pad=50) for i in range(10)]
    offsets, _ = write_log(path, recs)
    _flip(path, offsets[3] + where)

    result = read_log(path)
    assert [r.record for r in result.records] == recs[:3] + recs[4:]
    assert [r.offset for r in result.records] == offsets[:3] + offsets[4:]
    assert len(result.skipped) == 1
    s = result.skipped[0]
    assert (s.path, s.offset, s.length) == (path, offsets[3], offsets[4] - offsets[3])
    assert reason in s.reason
    text = str(s)
    assert text.startswith(path + ": ")
    assert f"skipped {s.length} bytes at offset {offsets[3]}" in text
    assert reason in text


def _garbage(rng, n):
    data = bytes(rng.getrandbits(8) for _ in range(n)).replace(b"E", b"e")  # never even a magic prefix
    assert MAGIC not in data
    return data


def test_garbage_prefix_middle_and_suffix(tmp_path):
    rng = random.Random(7)
    recs = [make_record(i, pad=i * 11) for i in range(8)]
    frames = [encode_record(r) for r in recs]
    fake_header = MAGIC + struct.pack("<III", 20, 0, 12345)  # magic, but the header CRC does not hold
    pieces = [
        ("junk", _garbage(rng, 37)),                 # prefix
        ("rec", frames[0]), ("rec", frames[1]),
        ("junk", _garbage(rng, 1000)),               # between records
        ("rec", frames[2]), ("rec", frames[3]), ("rec", frames[4]),
        ("junk", _garbage(rng, 5) + fake_header + _garbage(rng, 30)),  # a false magic is not a record start
        ("rec", frames[5]), ("rec", frames[6]),
        ("junk", b"EKR"),                            # a magic prefix before a record is junk, not torn
        ("rec", frames[7]),
        ("junk", _garbage(rng, 50)),                 # suffix
    ]
    path = str(tmp_path / "s.log")
    with open(path, "wb") as f:
        f.write(b"".join(data for _, data in pieces))

    expected_offsets, expected_skips, pos = [], [], 0
    for kind, data in pieces:
        if kind == "rec":
            expected_offsets.append(pos)
        else:
            expected_skips.append((pos, len(data)))
        pos += len(data)

    result = read_log(path)
    assert [r.record for r in result.records] == recs
    assert [r.offset for r in result.records] == expected_offsets
    assert [(s.offset, s.length) for s in result.skipped] == expected_skips
    assert all(s.reason == "not a record (no magic)" for s in result.skipped)
    assert all(s.path == path for s in result.skipped)


def test_garbage_then_torn_header_at_the_end(tmp_path):
    """Resynchronising stops at a magic too close to the end for a whole header:
    the junk and the torn record are reported separately."""
    path = str(tmp_path / "s.log")
    rec = make_record(1)
    junk = _garbage(random.Random(3), 30)
    torn = encode_record(make_record(2))[:10]
    with open(path, "wb") as f:
        f.write(encode_record(rec) + junk + torn)
    start = len(encode_record(rec))
    result = read_log(path)
    assert [r.record for r in result.records] == [rec]
    assert [(s.offset, s.length) for s in result.skipped] == [(start, 30), (start + 30, 10)]
    assert result.skipped[0].reason == "not a record (no magic)"
    assert "torn" in result.skipped[1].reason


def test_torn_record_followed_by_more_records(tmp_path):
    """A writer that died mid-write, then others appended: only the torn bytes are lost."""
    path = str(tmp_path / "s.log")
    small = [make_record(i) for i in range(3)]
    big = encode_record(make_record(99, pad=5000))
    write_log(path, small)
    start = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(big[:40])  # header whole, payload cut: the length runs past the end of the file
    append_records(path, small)
    result = read_log(path)
    assert [r.record for r in result.records] == small + small
    assert result.records[3].offset == start + 40
    assert [(s.offset, s.length) for s in result.skipped] == [(start, 40)]
    assert "torn" in result.skipped[0].reason and f"of {len(big)} bytes" in result.skipped[0].reason

    # the same with enough bytes after the torn record to cover its length
    path2 = str(tmp_path / "s2.log")
    with open(path2, "wb") as f:
        f.write(big[:40])
    many = [make_record(i, pad=200) for i in range(30)]
    append_records(path2, many)
    result = read_log(path2)
    assert [r.record for r in result.records] == many
    assert [(s.offset, s.length, s.reason) for s in result.skipped] == [(0, 40, "payload checksum mismatch")]


def _frame(payload, length=None):
    length = len(payload) if length is None else length
    head = struct.pack("<4sII", MAGIC, length, zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def test_valid_frame_that_is_not_a_sample_record(tmp_path):
    path = str(tmp_path / "s.log")
    recs = [make_record(i) for i in range(4)]
    bad = _frame(b"\xff\xff\xff")
    with open(path, "wb") as f:
        f.write(encode_record(recs[0]) + encode_record(recs[1]) + bad + encode_record(recs[2]) + encode_record(recs[3]))
    result = read_log(path)
    assert [r.record for r in result.records] == recs
    bad_at = len(encode_record(recs[0])) + len(encode_record(recs[1]))
    assert [(s.offset, s.length) for s in result.skipped] == [(bad_at, 19)]
    assert result.skipped[0].reason.startswith("payload is not a SampleRecord: ")


def test_length_over_maximum_with_valid_header_crc(tmp_path):
    path = str(tmp_path / "s.log")
    rec = make_record(1)
    bad = _frame(b"", length=MAX_PAYLOAD + 1)  # header CRC holds, the length is refused
    with open(path, "wb") as f:
        f.write(bad + encode_record(rec))
    result = read_log(path)
    assert [r.record for r in result.records] == [rec]
    assert [(s.offset, s.length) for s in result.skipped] == [(0, 16)]
    assert "exceeds" in result.skipped[0].reason


def test_crafted_headers_claiming_the_rest_of_the_file_read_in_linear_time(tmp_path):
    """4 MiB of sound headers, one every 16 bytes, each claiming the rest of the
    file with a wrong payload checksum. Checksumming every claim where it is
    made reads size**2 / 32 = 5.5e11 bytes (minutes); the reader examines each
    byte a few times."""
    size = 4 << 20
    heads = [struct.pack("<4sII", MAGIC, size - c - 16, 1) for c in range(0, size, 16)]
    data = b"".join(h + struct.pack("<I", zlib.crc32(h)) for h in heads)
    path = str(tmp_path / "crafted.log")
    with open(path, "wb") as f:
        f.write(data)
    result = read_log(path)
    assert result.records == []
    assert len(result.skipped) == size // 16
    assert all((s.offset, s.length, s.reason) == (16 * i, 16, "payload checksum mismatch")
               for i, s in enumerate(result.skipped))
    spans, examined = _core.scan_record_log(data)
    assert len(spans) == size // 16
    assert examined <= 3 * size


def test_crafted_sound_frames_that_are_no_sample_records_read_in_linear_time(tmp_path):
    """4 MiB of sound frames (both checksums hold) whose payloads do not parse:
    each is parsed once and skipped exactly; the scan examines a few bytes per
    byte (bench/crafted_logs.py's not_sample; the other kinds are the core's
    tests, cpp/tests/test_record_log.cc)."""
    size = 4 << 20
    payload = b"\xff" * 16
    head = struct.pack("<4sII", MAGIC, 16, zlib.crc32(payload))
    data = (head + struct.pack("<I", zlib.crc32(head)) + payload) * (size // 32)
    path = str(tmp_path / "crafted.log")
    with open(path, "wb") as f:
        f.write(data)
    result = read_log(path)
    assert result.records == [] and len(result.skipped) == size // 32
    assert [(s.offset, s.length) for s in result.skipped[:2]] == [(0, 32), (32, 32)]
    assert all(s.reason.startswith("payload is not a SampleRecord: ") for s in result.skipped)
    _, examined = _core.scan_record_log(data)
    assert examined <= 3 * size


def test_read_log_restores_the_garbage_collector(tmp_path):
    import gc

    path = str(tmp_path / "s.log")
    append_records(path, [make_record(0)])
    assert gc.isenabled()
    read_log(path)
    assert gc.isenabled()
    gc.disable()
    try:
        read_log(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_scan_record_log_binding():
    """evokit._core's framing: spans in file order covering every byte, bytes
    only, ValueError for an oversized payload."""
    frames = [encode_record(make_record(i)) for i in range(3)]
    data = frames[0] + b"junk" + frames[1] + frames[2][:20]
    spans, examined = _core.scan_record_log(data)
    a, b = len(frames[0]), len(frames[1])
    assert spans == [(0, a, None), (a, 4, "not a record (no magic)"), (a + 4, b, None),
                     (a + 4 + b, 20, f"torn record at end of file (20 of {len(frames[2])} bytes)")]
    assert 0 < examined <= 5 * len(data)
    assert _core.scan_record_log(b"") == ([], 0)
    assert _core.frame_record(b"") == struct.pack("<4sII", MAGIC, 0, 0) + struct.pack(
        "<I", zlib.crc32(struct.pack("<4sII", MAGIC, 0, 0)))
    with pytest.raises(TypeError):
        _core.scan_record_log(bytearray(data))
    with pytest.raises(ValueError, match=r"^SampleRecord of 16777217 bytes exceeds the maximum payload of "
                                         r"16777216 bytes$"):
        _core.frame_record(bytes(MAX_PAYLOAD + 1))


def test_empty_missing_and_directory(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    result = read_log(empty)
    assert result.records == [] and result.skipped == []

    missing = str(tmp_path / "nope.log")
    with pytest.raises(LogError, match="nope.log"):
        read_log(missing)
    with pytest.raises(LogError, match="nope.log"):
        read_logs([str(empty), missing])
    assert not os.path.exists(missing)  # reading never creates

    d = str(tmp_path / "adir")
    os.mkdir(d)
    with pytest.raises(LogError, match="adir"):
        read_log(d)
    with pytest.raises(LogError, match="adir"):
        append_records(d, [make_record(1)])
    with pytest.raises(LogError, match="adir"):
        LogWriter(d)
    assert isinstance(LogError("x"), ValueError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = tmp_path / "s.log"
    append_records(path, [make_record(1)])
    os.chmod(path, 0)
    try:
        with pytest.raises(LogError, match="s.log"):
            read_log(path)
    finally:
        os.chmod(path, 0o644)


def test_read_logs_concatenates_in_order(tmp_path):
    a, b = str(tmp_path / "a.log"), str(tmp_path / "b.log")
    ra = [make_record(i, sampler_id=1) for i in range(3)]
    rb = [make_record(i, sampler_id=2) for i in range(4)]
    append_records(a, ra)
    offsets_b, _ = write_log(b, rb)
    _flip(b, offsets_b[1] + 20)
    result = read_logs([b, a])
    assert [r.record for r in result.records] == [rb[0], rb[2], rb[3]] + ra
    assert [r.path for r in result.records] == [b, b, b, a, a, a]
    assert [(s.path, s.offset) for s in result.skipped] == [(b, offsets_b[1])]


def test_reader_never_modifies_the_log(tmp_path):
    path = str(tmp_path / "s.log")
    offsets, _ = write_log(path, [make_record(i, pad=30) for i in range(6)])
    _flip(path, offsets[2] + 20)
    with open(path, "ab") as f:
        f.write(b"\x00garbage" + encode_record(make_record(9))[:25])
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = os.stat(path)
    with open(path, "rb") as f:
        data = f.read()
    for _ in range(2):
        result = read_log(path)
        assert len(result.records) == 5 and len(result.skipped) == 3
    after = os.stat(path)
    with open(path, "rb") as f:
        assert f.read() == data
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert os.listdir(tmp_path) == ["s.log"]


# ---------------------------------------------------------------------------
# Writing: one write per batch, under the lock, fsync before unlock; whole or
# not at all
# ---------------------------------------------------------------------------


def test_append_waits_for_the_lock_and_writes_the_batch_whole(tmp_path):
    """An append takes the log's exclusive flock: while another open file
    holds it, nothing is written; once released, the batch lands whole."""
    path = str(tmp_path / "s.log")
    append_records(path, [make_record(0)])
    before = _bytes(path)
    recs = [make_record(i, pad=100 * i) for i in range(1, 4)]
    holder = os.open(path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (append_records(path, recs), done.set()))
    worker.start()
    try:
        assert not done.wait(0.3)  # blocked on the lock
        assert _bytes(path) == before
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    worker.join(10)
    assert done.is_set()
    assert _bytes(path) == before + b"".join(encode_record(r) for r in recs)


class _FileSizeLimit:
    """Files this process writes are limited to ``limit`` bytes while the
    context lasts: a write past it fails with EFBIG, as one fails with ENOSPC
    on a full disk (a real failure of the core's write, no mock)."""

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        self.handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self.old = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.limit, self.old[1]))
        return self

    def __exit__(self, *exc):
        resource.setrlimit(resource.RLIMIT_FSIZE, self.old)
        signal.signal(signal.SIGXFSZ, self.handler)


@pytest.mark.parametrize("writer", ["append_records", "LogWriter"])
def test_failed_append_leaves_the_log_as_it_was(tmp_path, writer):
    """A write that fails after part of the batch is on disk: the log is cut
    back to its length before the batch, the error is one line naming the
    log, and a retry appends the batch whole."""
    path = str(tmp_path / "s.log")
    append_records(path, [make_record(0)])
    before = _bytes(path)
    recs = [make_record(i, pad=200) for i in range(1, 4)]
    size = sum(len(encode_record(r)) for r in recs)
    with _FileSizeLimit(len(before) + size // 2), pytest.raises(LogError) as ei:
        if writer == "LogWriter":
            with LogWriter(path) as w:
                w.append_many(recs)
        else:
            append_records(path, recs)
    assert str(ei.value) == (f"{path}: cannot append 3 records ({size} bytes) to the sampling log: "
                             f"{os.strerror(errno.EFBIG)}; nothing was appended (the log is back to its "
                             f"{len(before)} bytes)")
    assert _bytes(path) == before
    append_records(path, recs)
    assert [r.record for r in read_log(path).records] == [make_record(0)] + recs


def test_log_writer(tmp_path):
    path = str(tmp_path / "a" / "w.log")
    recs = [make_record(i, pad=i) for i in range(6)]
    with LogWriter(path) as w:
        assert not w.closed
        w.append(recs[0])
        w.append_many(recs[1:4])
        w.append_many([])
    assert w.closed
    with pytest.raises(ValueError, match="closed"):
        w.append(recs[0])
    w.close()  # twice is fine
    w2 = LogWriter(path, fsync=False)
    w2.append_many(recs[4:])
    w2.close()
    result = read_log(path)
    assert [r.record for r in result.records] == recs and result.skipped == []


# ---------------------------------------------------------------------------
# Concurrency
# ---------------------------------------------------------------------------

PER_WRITER = 200


def concurrent_record(sampler_id, i):
    # payload from ~20 bytes to ~6 KiB, so writes are not trivially small
    pad = random.Random(sampler_id * 100003 + i).choice([0, 0, 10, 200, 1000, 3000, 6000])
    rec = pb.SampleRecord(info=pb.SamplingInfo(key=[i]), sampler_id=sampler_id, reward=float(i))
    if pad:
        rec.model_fingerprint = "f" * pad
    return rec


def _process_writer(path, sampler_id, barrier):
    barrier.wait()
    for i in range(0, PER_WRITER, 20):
        for j in range(i, i + 17):
            append_records(path, [concurrent_record(sampler_id, j)])  # one record per call
        append_records(path, [concurrent_record(sampler_id, j) for j in range(i + 17, i + 20)])  # a batch


def _check_all_once(path, sampler_ids):
    result = read_log(path)
    assert result.skipped == []
    seen = [(r.record.sampler_id, r.record.info.key[0]) for r in result.records]
    assert len(seen) == len(set(seen)) == len(sampler_ids) * PER_WRITER
    assert set(seen) == {(s, i) for s in sampler_ids for i in range(PER_WRITER)}
    for s in sampler_ids:  # each writer's records in the order it wrote them
        assert [k for sid, k in seen if sid == s] == list(range(PER_WRITER))
    for r in result.records:
        assert r.record == concurrent_record(r.record.sampler_id, r.record.info.key[0])
    assert os.path.getsize(path) == sum(
        len(encode_record(concurrent_record(s, i))) for s in sampler_ids for i in range(PER_WRITER))
    return result


def test_concurrent_writer_processes(tmp_path):
    path = str(tmp_path / "shared.log")
    ctx = multiprocessing.get_context("fork")
    sampler_ids = [11, 22, 33, 44, 55]
    barrier = ctx.Barrier(len(sampler_ids))
    procs = [ctx.Process(target=_process_writer, args=(path, s, barrier)) for s in sampler_ids]
    with warnings.catch_warnings():
        # Python >= 3.12 warns about fork() when other tests left OpenMP threads
        # running; the children only encode and append, never touching them.
        warnings.simplefilter("ignore", DeprecationWarning)
        for p in procs:
            p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    result = _check_all_once(path, sampler_ids)
    # the writers really ran at the same time: their records are interleaved
    runs = sum(1 for a, b in zip(result.records, result.records[1:]) if a.record.sampler_id != b.record.sampler_id)
    assert runs > len(sampler_ids)


@pytest.mark.parametrize("shared", [False, True], ids=["writer-per-thread", "one-shared-writer"])
def test_concurrent_writer_threads(tmp_path, shared):
    path = str(tmp_path / "shared.log")
    sampler_ids = [1, 2, 3, 4]
    barrier = threading.Barrier(len(sampler_ids))
    shared_writer = LogWriter(path) if shared else None
    errors = []

    def run(sampler_id):
        try:
            writer = shared_writer or LogWriter(path)
            try:
                barrier.wait()
                for i in range(PER_WRITER):
                    writer.append(concurrent_record(sampler_id, i))
            finally:
                if writer is not shared_writer:
                    writer.close()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in sampler_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if shared_writer is not None:
        shared_writer.close()
    assert errors == []
    _check_all_once(path, sampler_ids)


def test_log_writer_inherited_by_a_forked_child_reopens(tmp_path):
    path = str(tmp_path / "shared.log")
    ctx = multiprocessing.get_context("fork")
    writer = LogWriter(path, fsync=False)
    writer.append(concurrent_record(1, 0))

    def child():
        for i in range(1, PER_WRITER):
            writer.append(concurrent_record(2, i))
        assert writer._fd is not None and writer._pid == os.getpid()
        writer.close()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        p = ctx.Process(target=child)
        p.start()
    for i in range(1, PER_WRITER):
        writer.append(concurrent_record(1, i))
    p.join(60)
    assert p.exitcode == 0
    writer.append(concurrent_record(2, 0))
    writer.close()
    result = read_log(path)
    assert result.skipped == []
    assert sorted((r.record.sampler_id, r.record.info.key[0]) for r in result.records) == [
        (s, i) for s in (1, 2) for i in range(PER_WRITER)]


def test_the_cores_chunk_encoder_writes_the_bytes_protobuf_writes(tmp_path):
    # The online sampler's chunks are encoded by the core
    # (evokit/formats/sample_record.h), every other writer by protobuf: a
    # reader cannot tell them apart. Seeded random records over each field's
    # range: negative and extreme keys and ids, -0.0, inf, NaN and subnormal
    # rewards, 2^64 - 1 sampler ids, empty and long fingerprints.
    from evokit.online.samplelog import append_sampler_chunk

    rng = random.Random(20261129)
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, -1.7976931348623157e308]
    for trial in range(40):
        count = rng.randint(1, 30)
        infos = [_core.SamplingInfo(key=[rng.choice([0, -1, 2 ** 63 - 1, -(2 ** 63), rng.randint(-2 ** 40, 2 ** 40)])
                                         for _ in range(rng.randint(0, 3))],
                                    model_iter_id=rng.choice([0, 1, -5, 2 ** 62, rng.randint(0, 10 ** 6)]),
                                    mirrored=rng.random() < 0.5) for _ in range(count)]
        rewards = [rng.choice(specials) if rng.random() < 0.3 else rng.uniform(-1e6, 1e6) for _ in range(count)]
        steps = [rng.choice([0, -1, 2 ** 63 - 1, rng.randint(0, 10 ** 9)]) for _ in range(count)]
        cfp = "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([0, 64, 300])))
        mfp = "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([0, 64])))
        sampler = rng.choice([0, 1, 2 ** 64 - 1, rng.randint(0, 2 ** 63)])
        now = rng.choice([0.0, 1.7e9 + rng.random(), -1.0])
        first = rng.choice([0, 2 ** 63, rng.randint(0, 10 ** 6)])
        want = b"".join(encode_record(pb.SampleRecord(
            info=pb.SamplingInfo(key=list(info.key), model_iter_id=info.model_iter_id, mirrored=info.mirrored),
            reward=float(r), config_fingerprint=cfp, model_fingerprint=mfp, sampler_id=sampler,
            env_steps=n, time=now, sample_index=first + j))
            for j, (info, r, n) in enumerate(zip(infos, rewards, steps)))
        got = _core.encode_sample_records(infos, rewards, steps, cfp, mfp, sampler, now, first)
        assert got == want, trial
    # And through the file: the log reads back as the records.
    path = tmp_path / "chunk.log"
    append_sampler_chunk(path, infos, rewards, steps, config_fingerprint=cfp, model_fingerprint=mfp,
                         sampler_id=sampler, time=now, first_index=first)
    assert path.read_bytes() == want
    assert [r.record.sample_index for r in read_log(path).records] == [first + j for j in range(count)]


def test_the_core_reads_payloads_as_protobuf_does():
    """The core's decoder (what evokit update reads of a record) against
    protobuf's parser on records and on their damaged bytes: the same
    payloads accepted, the same fields read."""
    rng = random.Random(7)
    extra_fields = [
        b"\x98\x06\x05",                          # field 99, varint: unknown
        b"\x9b\x06\x08\x01\xa3\x06\xa4\x06\x9c\x06",  # field 99, a group holding a field and a group
        b"\x11\x01\x02",                          # field 2 (reward) truncated
        b"\x2a\x01\x07",                          # field 5 (sampler_id) as bytes: unknown
        b"\x0a\x02\x10\x09",                      # info again: model_iter_id 9 (messages merge)
        b"\x0a\x03\x0a\x01\x05",                  # info again: one packed key
        b"\x40\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # an overlong varint
        b"\x45\x01\x02\x03\x04",                  # field 8 as fixed32: unknown
    ]
    checked = accepted = 0
    for i in range(4000):
        rec = make_record(i, sampler_id=i % 5, pad=i % 7)
        if i % 3 == 0:
            rec.sample_index = i
        data = bytearray(rec.SerializeToString())
        for _ in range(rng.randrange(3)):
            op = rng.randrange(4)
            if op == 0 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif op == 1 and data:
                del data[rng.randrange(len(data)):]
            else:
                at = rng.randrange(len(data) + 1)
                data[at:at] = rng.choice(extra_fields)
        payload = bytes(data)
        theirs = pb.SampleRecord()
        try:
            theirs.ParseFromString(payload)
            ok = True
        except Exception:  # noqa: BLE001 -- protobuf's DecodeError
            ok = False
        ours = _core.decode_sample_record(payload)
        assert isinstance(ours, dict) == ok, (payload, ours)
        checked += 1
        if not ok:
            continue
        accepted += 1
        assert ours["key"] == list(theirs.info.key)
        assert ours["model_iter_id"] == theirs.info.model_iter_id
        assert ours["mirrored"] == theirs.info.mirrored
        assert struct.pack("<d", ours["reward"]) == struct.pack("<d", theirs.reward)
        assert ours["sampler_id"] == theirs.sampler_id
        assert ours["sample_index"] == (theirs.sample_index if theirs.HasField("sample_index") else None)
        for name in ("config_fingerprint", "model_fingerprint"):
            want = getattr(theirs, name)  # bytes where they are not UTF-8 (proto2 does not check)
            assert ours[name] == (want if isinstance(want, bytes) else want.encode())
    assert checked == 4000 and 1000 < accepted < 3900
