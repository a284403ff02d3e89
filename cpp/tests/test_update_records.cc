// The update's record selection (evokit/formats/update_records.h), the log
// read in pieces (formats/log_file.h scan_log_file) and SampleKey.
#include "evokit/formats/update_records.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "evokit/crc32.h"
#include "evokit/formats/log_file.h"
#include "evokit/formats/sample_record.h"
#include "evokit/record_log.h"
#include "evokit/sample_key.h"
#include "test_util.h"

namespace evokit {
namespace {

using formats::DecodedRecord;
using formats::decode_sample_record;
using formats::SampleRuns;

// ---- SampleKey ----------------------------------------------------------------

TEST(SampleKey, OneValueInlineMoreOnTheHeapLikeAVector) {
  SampleKey k;
  EXPECT_TRUE(k.empty());
  k.push_back(7);
  EXPECT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0], 7);
  std::vector<std::int64_t> want{7};
  for (std::int64_t v = 1; v < 40; ++v) {  // grows through several heap blocks
    k.push_back(-v);
    want.push_back(-v);
    ASSERT_EQ(k.to_vector(), want);
  }
  SampleKey copy = k;
  EXPECT_EQ(copy, k);
  SampleKey moved = std::move(copy);
  EXPECT_EQ(moved, k);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from key is empty
  moved = SampleKey{1, 2};
  EXPECT_EQ(moved.to_vector(), (std::vector<std::int64_t>{1, 2}));
  moved = SampleKey{5};
  EXPECT_EQ(moved.to_vector(), (std::vector<std::int64_t>{5}));
  EXPECT_TRUE(SampleKey{1} < SampleKey({1, 0}));
  EXPECT_TRUE(SampleKey({1, 2}) == (std::vector<std::int64_t>{1, 2}));
  EXPECT_THROW((void)SampleKey{1}.at(1), std::out_of_range);
  k = k;  // NOLINT: self-assignment keeps the values
  EXPECT_EQ(k.to_vector(), want);
}

TEST(SampleKey, KeepsSamplingInfoSmall) {
  EXPECT_EQ(sizeof(SampleKey), 16u);
  EXPECT_LE(sizeof(SamplingInfo), 32u);
}

// ---- the log read in pieces -----------------------------------------------------

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("evokit_update_records_" + name)).string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u32(std::uint32_t v) {
  std::string out(4, '\0');
  for (std::size_t k = 0; k < 4; ++k) out[k] = static_cast<char>((v >> (8 * k)) & 0xFF);
  return out;
}

// A damaged log of about `size` bytes: records (a few of MiBs), garbage,
// torn records and sound headers that claim payloads (up to the maximum) whose checksums fail.
std::string damaged_log(std::size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string log;
  int i = 0;
  while (log.size() < size) {
    std::string payload(rng() % 300, '\0');
    for (char& c : payload) c = static_cast<char>('a' + (i * 7 + rng()) % 26);
    const std::string f = frame_record(payload);
    switch (rng() % 16) {
      case 0:
        log += f.substr(0, rng() % f.size());
        break;
      case 1:
        log += std::string(rng() % 5000, static_cast<char>(rng() % 256));
        break;
      case 2: {
        const std::uint32_t length = rng() % 2 ? rng() % 4000 : kMaxRecordPayload - rng() % 100;
        const std::string head = "EKR1" + u32(length) + u32(static_cast<std::uint32_t>(rng()));
        log += head + u32(crc32(head));
        break;
      }
      case 3:  // now and then a large record, which a piece must not cut
        if (rng() % 512 == 0) log += frame_record(std::string((1 << 20) + rng() % (1 << 20), 'L'));
        break;
      default:
        log += f;
    }
    ++i;
  }
  log += std::string(3 << 20, 'x');  // a skipped stretch longer than the small pieces
  log += frame_record("last");
  return log;
}

struct Span {
  RecordSpan::Kind kind;
  std::uint64_t offset, length;
  bool operator==(const Span& o) const { return kind == o.kind && offset == o.offset && length == o.length; }
};

// The spans, with consecutive skipped stretches joined (a stretch that
// crosses a piece's end comes in two parts).
std::vector<Span> joined(const std::vector<RecordSpan>& spans) {
  std::vector<Span> out;
  for (const RecordSpan& s : spans) {
    if (s.kind == RecordSpan::Kind::kSkipped && !out.empty() && out.back().kind == RecordSpan::Kind::kSkipped) {
      out.back().length += s.length;
    } else {
      out.push_back({s.kind, s.offset, s.length});
    }
  }
  return out;
}

TEST(ScanLogFile, PiecesFindTheRecordsTheWholeFileHas) {
  const std::string log = damaged_log(std::size_t{40} << 20, 5);
  const std::string path = temp_path("pieces.log");
  write_file(path, log);
  const RecordLogScan whole = scan_record_log(log.data(), log.size());
  const std::vector<Span> want = joined(whole.spans);
  std::size_t records = 0;
  for (const Span& s : want) records += s.kind == RecordSpan::Kind::kRecord;
  ASSERT_GT(records, 20000u);
  for (const std::size_t chunk : {std::size_t{1} << 20, std::size_t{3} << 20, std::size_t{64} << 20}) {
    std::vector<RecordSpan> got;
    std::size_t pieces = 0;
    std::uint64_t next = 0;
    formats::scan_log_file(path, chunk, [&](std::string_view data, std::uint64_t base,
                                             const std::vector<RecordSpan>& spans) {
      ++pieces;
      ASSERT_EQ(base, next);  // the pieces follow one another
      next += data.size();
      for (const RecordSpan& s : spans) {
        ASSERT_GE(s.offset, base);
        ASSERT_LE(s.offset + s.length, base + data.size());
        if (s.kind == RecordSpan::Kind::kRecord) {  // the bytes handed over are the file's
          ASSERT_EQ(data.substr(s.offset - base, s.length), std::string_view(log).substr(s.offset, s.length));
        }
        got.push_back(s);
      }
    });
    EXPECT_EQ(next, log.size()) << chunk;
    EXPECT_EQ(joined(got), want) << "chunk " << chunk;
    if (chunk < log.size()) EXPECT_GT(pieces, 1u) << chunk;
  }
  std::remove(path.c_str());
}

TEST(ScanLogFile, RefusesWhatReadLogFileRefuses) {
  EXPECT_TRUE(testing::ThrowsWithMessage<std::invalid_argument>(
      [] { formats::scan_log_file(temp_path("missing.log"), 1 << 20, [](auto, auto, const auto&) {}); },
      "missing.log: cannot read sampling log: No such file or directory"));
}

// ---- decoding a SampleRecord -------------------------------------------------------

std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string tag(std::uint32_t number, int wire) { return varint((std::uint64_t{number} << 3) | wire); }
std::string len(std::uint32_t number, const std::string& bytes) { return tag(number, 2) + varint(bytes.size()) + bytes; }

TEST(DecodeSampleRecord, ReadsWhatTheSamplerWrites) {
  std::vector<SamplingInfo> infos(2);
  infos[0].key = {12345};
  infos[0].model_iter_id = 3;
  infos[1].key = {-7, 8};
  infos[1].mirrored = true;
  const double rewards[] = {1.5, -2.25};
  const std::int64_t steps[] = {10, 20};
  std::string framed;
  formats::append_sample_records(framed, {"cfg", "model", 9, 1.0, 40}, infos, rewards, steps);
  const RecordLogScan scan = scan_record_log(framed.data(), framed.size());
  ASSERT_EQ(scan.spans.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const RecordSpan& s = scan.spans[i];
    DecodedRecord r;
    ASSERT_EQ(decode_sample_record(std::string_view(framed).substr(s.offset + 16, s.length - 16), r), "");
    EXPECT_EQ(r.info.key, infos[i].key);
    EXPECT_EQ(r.info.model_iter_id, infos[i].model_iter_id);
    EXPECT_EQ(r.info.mirrored, infos[i].mirrored);
    EXPECT_EQ(r.reward, rewards[i]);
    EXPECT_EQ(r.config_fingerprint, "cfg");
    EXPECT_EQ(r.model_fingerprint, "model");
    EXPECT_EQ(r.sampler_id, 9u);
    ASSERT_TRUE(r.sample_index.has_value());
    EXPECT_EQ(*r.sample_index, 40 + i);
  }
}

TEST(DecodeSampleRecord, ReadsAsProtobufDoes) {
  // info given twice merges (keys appended, the last iteration wins), keys
  // packed and unpacked, unknown fields and groups skipped, a known field of
  // another wire type kept as unknown, the last scalar winning.
  const std::string info1 = tag(1, 0) + varint(5) + len(1, varint(6) + varint(7)) + tag(2, 0) + varint(1);
  const std::string info2 = tag(1, 0) + varint(8) + tag(2, 0) + varint(4) + tag(3, 0) + varint(2);
  const std::string group = tag(77, 3) + tag(1, 0) + varint(1) + tag(78, 3) + tag(78, 4) + tag(77, 4);
  const std::string payload = len(1, info1) + tag(5, 0) + varint(3) + group + len(1, info2) + tag(5, 0) + varint(4) +
                              len(3, "cfg") + tag(8, 2) + varint(0) + tag(99, 5) + "abcd" + tag(2, 0) + varint(1);
  DecodedRecord r;
  ASSERT_EQ(decode_sample_record(payload, r), "");
  EXPECT_EQ(r.info.key.to_vector(), (std::vector<std::int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(r.info.model_iter_id, 4);
  EXPECT_TRUE(r.info.mirrored);
  EXPECT_EQ(r.sampler_id, 4u);
  EXPECT_EQ(r.config_fingerprint, "cfg");
  EXPECT_FALSE(r.sample_index.has_value());  // field 8 as bytes: unknown
  EXPECT_EQ(r.reward, 0.0);                  // field 2 as a varint: unknown
}

TEST(DecodeSampleRecord, NamesWhatIsWrong) {
  const auto error = [](const std::string& payload) {
    DecodedRecord r;
    return decode_sample_record(payload, r);
  };
  EXPECT_EQ(error(tag(5, 0)), "truncated varint at byte 1");
  EXPECT_EQ(error(tag(0, 0) + varint(1)), "invalid field number at byte 0");
  EXPECT_EQ(error(tag(2, 1) + "abc"), "truncated fixed-width value at byte 1");
  EXPECT_EQ(error(tag(3, 2) + varint(10) + "abc"), "length beyond the payload at byte 1");
  EXPECT_EQ(error(tag(9, 3) + tag(1, 0) + varint(1)), "unterminated group at byte 1");
  EXPECT_EQ(error(tag(9, 3) + tag(8, 4)), "end of another group at byte 2");
  EXPECT_EQ(error(tag(9, 4)), "end of a group that was not started at byte 1");
  EXPECT_EQ(error(tag(9, 6)), "invalid wire type at byte 1");
  EXPECT_EQ(error(std::string(11, '\xff')), "truncated or overlong tag at byte 0");
  EXPECT_EQ(error(len(1, tag(1, 2) + varint(2) + "\xff")), "info: truncated packed keys at byte 1");
}

// ---- selecting the records of several logs ------------------------------------

// Three logs of samplers 0-2 (iteration 0, numbered 0 .. n-1), then records
// appended twice, a conflicting claim, an unnumbered record twice, a bad
// reward, a bad key, a foreign record and an unreadable log.
std::vector<std::string> sample_logs() {
  std::vector<std::string> paths;
  for (std::uint64_t s = 0; s < 3; ++s) {
    std::vector<SamplingInfo> infos(500 + 100 * s);
    std::vector<double> rewards(infos.size());
    std::vector<std::int64_t> steps(infos.size(), 10);
    for (std::size_t i = 0; i < infos.size(); ++i) {
      infos[i].key = {static_cast<std::int64_t>(i * 3 + s)};
      rewards[i] = static_cast<double>((i * 7919 + s) % 101);
    }
    std::string bytes;
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 0}, infos, rewards.data(), steps.data());
    // appended twice: sample 5; a claim: sample 6 with another reward
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 5}, {infos[5]}, &rewards[5], steps.data());
    const double other = rewards[6] + 1;
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 6}, {infos[6]}, &other, steps.data());
    const double nan = std::nan(""), big = 1e39;
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 9000}, {infos[1]}, &nan, steps.data());
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 9001}, {infos[1]}, &big, steps.data());
    SamplingInfo bad;
    bad.key = {-1};
    formats::append_sample_records(bytes, {"cfg", "m0", s, 1.0, 9002}, {bad}, &rewards[0], steps.data());
    formats::append_sample_records(bytes, {"other", "m0", s, 1.0, 9003}, {infos[1]}, &rewards[0], steps.data());
    bytes += "garbage";
    paths.push_back(temp_path("select_" + std::to_string(s) + ".log"));
    write_file(paths.back(), bytes);
  }
  paths.insert(paths.begin() + 1, temp_path("select_missing.log"));
  return paths;
}

formats::SelectedRecords select(const std::vector<std::string>& paths, int threads, std::size_t chunk) {
  formats::UpdateRule rule;
  rule.config_fingerprint = "cfg";
  rule.window = {0};
  rule.max_to_keep = 1;
  rule.sampling_type = "GAUSSIAN_SAMPLING";
  rule.model_fingerprint = [](std::int64_t) { return std::string("m0"); };
  rule.rebuildable = [](const SamplingInfo& info) { return info.key.size() == 1 && info.key[0] >= 0; };
  rule.consumed.runs[{2, 0}] = {{10, 20}};
  rule.num_threads = threads;
  rule.chunk_bytes = chunk;
  return formats::select_update_records(paths, rule);
}

TEST(SelectUpdateRecords, ReadersInParallelTakeWhatOneReaderTakes) {
  const std::vector<std::string> paths = sample_logs();
  const formats::SelectedRecords one = select(paths, 1, std::size_t{1} << 20);
  EXPECT_EQ(one.infos.size(), 500u + 600u + 700u - 10u);
  EXPECT_EQ(one.dropped, (std::map<std::string, std::uint64_t>{
                             {"already applied by an earlier update", 10},
                             {"another record with the same sampler, iteration and sample_index came first", 3},
                             {"duplicate of another record in these logs", 3},
                             {"from another config or model (config fingerprint differs)", 3},
                             {"invalid key", 3},
                             {"reward beyond the float32 range (|reward| > 3.4e38)", 3},
                             {"reward is not finite", 3}}));
  ASSERT_EQ(one.log_errors.size(), 1u);
  EXPECT_NE(one.log_errors[0].find("select_missing.log: cannot read sampling log"), std::string::npos);
  EXPECT_EQ(one.skipped.size(), 3u);  // each log's garbage
  EXPECT_EQ(one.taken.runs.at({0, 0}), (SampleRuns{{0, 500}}));
  EXPECT_EQ(one.taken.runs.at({2, 0}), (SampleRuns{{0, 10}, {20, 700}}));
  for (const int threads : {2, 3, 4}) {
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{4096}}) {
      const formats::SelectedRecords many = select(paths, threads, chunk);
      ASSERT_EQ(many.infos.size(), one.infos.size());
      for (std::size_t i = 0; i < one.infos.size(); ++i) {
        ASSERT_EQ(many.infos[i].key, one.infos[i].key) << i;
        ASSERT_EQ(many.rewards[i], one.rewards[i]) << i;
      }
      EXPECT_EQ(many.dropped, one.dropped);
      EXPECT_EQ(many.log_errors, one.log_errors);
      EXPECT_EQ(many.taken.runs, one.taken.runs);
      EXPECT_EQ(many.skipped.size(), one.skipped.size());
    }
  }
  for (const std::string& p : paths) std::remove(p.c_str());
}

TEST(SelectUpdateRecords, AnErrorWhileTakingStopsTheReaders) {
  const std::vector<std::string> paths = sample_logs();
  formats::UpdateRule rule;
  rule.config_fingerprint = "cfg";
  rule.window = {0};
  rule.model_fingerprint = [](std::int64_t) -> std::string { throw std::runtime_error("model unreadable"); };
  rule.rebuildable = [](const SamplingInfo&) { return true; };
  rule.num_threads = 3;
  rule.chunk_bytes = 1;
  EXPECT_TRUE(testing::ThrowsWithMessage<std::runtime_error>([&] { formats::select_update_records(paths, rule); },
                                                              "model unreadable"));
  for (const std::string& p : paths) std::remove(p.c_str());
}

}  // namespace
}  // namespace evokit
