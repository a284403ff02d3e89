#include "evokit/io/sample_log.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "evokit/crc32.h"
#include "evokit/formats/sample_record.h"
#include "evokit/record_log.h"
#include "evokit/io/errors.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

proto::SampleRecord make_record(int i) {
  proto::SampleRecord r;
  r.mutable_info()->add_key(1000 + i);
  r.mutable_info()->set_model_iter_id(3);
  r.mutable_info()->set_mirrored(i % 2 == 1);
  r.set_reward(0.5 * i);
  r.set_config_fingerprint(std::string(64, 'c'));
  r.set_model_fingerprint(std::string(64, 'm'));
  r.set_sampler_id(9);
  r.set_env_steps(10 + i);
  r.set_time(1.7e9);
  return r;
}

std::string frames(int first, int count) {
  std::string out;
  for (int i = first; i < first + count; ++i) out += encode_record(make_record(i));
  return out;
}

LogContents parse(const std::string& bytes) { return parse_log(bytes, "L"); }

TEST(SampleLog, ReadsAndReencodesPythonsLogByteForByte) {
  const std::string bytes = read_bytes(data_path("python_samples.log"));
  const LogContents log = read_log(data_path("python_samples.log"));
  EXPECT_TRUE(log.skipped.empty());
  ASSERT_EQ(log.records.size(), 3u);
  const std::vector<float> rewards = testing::expected_floats("record_rewards");
  std::string again;
  for (std::size_t i = 0; i < 3; ++i) {
    const proto::SampleRecord& r = log.records[i].record;
    EXPECT_EQ(log.records[i].path, data_path("python_samples.log"));
    EXPECT_EQ(log.records[i].offset, again.size());
    EXPECT_EQ(r.reward(), rewards[i]);
    EXPECT_EQ(r.info().key(0), 11 + static_cast<std::int64_t>(i));
    EXPECT_EQ(r.info().mirrored(), i == 1);
    EXPECT_EQ(r.sampler_id(), 5u);
    EXPECT_EQ(r.env_steps(), 100 + static_cast<std::int64_t>(i));
    again += encode_record(r);
  }
  EXPECT_EQ(again, bytes);
}

TEST(SampleLog, FrameLayout) {
  const proto::SampleRecord r = make_record(1);
  const std::string f = encode_record(r);
  const std::string payload = r.SerializeAsString();
  ASSERT_EQ(f.size(), 16 + payload.size());
  EXPECT_EQ(f.substr(0, 4), "EKR1");
  const auto u32 = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(f[at])) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(f[at + 1])) << 8 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(f[at + 2])) << 16 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(f[at + 3])) << 24;
  };
  EXPECT_EQ(u32(4), payload.size());
  EXPECT_EQ(u32(8), crc32(payload));
  EXPECT_EQ(u32(12), crc32(f.data(), 12));
  EXPECT_EQ(f.substr(16), payload);
}

TEST(SampleLog, WriterAppendsAndNeverTruncates) {
  TempDir dir;
  const std::string path = dir.file("logs/a.log");  // parent created
  {
    LogWriter w(path);
    w.append(make_record(0));
    w.append({make_record(1), make_record(2)});
  }
  {
    LogWriter w(path, /*fsync=*/false);
    w.append(make_record(3));
    w.close();
    EXPECT_TRUE(w.closed());
    EXPECT_THROW_WITH(w.append(make_record(4)), std::logic_error, "closed LogWriter");
  }
  EXPECT_EQ(read_bytes(path), frames(0, 4));
  const LogContents log = read_log(path);
  ASSERT_EQ(log.records.size(), 4u);
  EXPECT_EQ(log.records[3].record.reward(), 1.5);
}

TEST(SampleLog, ConcurrentWritersNeverInterleave) {
  TempDir dir;
  const std::string path = dir.file("shared.log");
  constexpr int kThreads = 4, kEach = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LogWriter w(path, /*fsync=*/false);  // each its own descriptor and flock
      for (int i = 0; i < kEach; ++i) w.append(make_record(t * 1000 + i));
    });
  }
  for (auto& th : threads) th.join();
  const LogContents log = read_log(path);
  EXPECT_TRUE(log.skipped.empty());
  EXPECT_EQ(log.records.size(), static_cast<std::size_t>(kThreads * kEach));
}

TEST(SampleLog, EmptyAndMissing) {
  TempDir dir;
  write_bytes(dir.file("empty.log"), "");
  const LogContents empty = read_log(dir.file("empty.log"));
  EXPECT_TRUE(empty.records.empty());
  EXPECT_TRUE(empty.skipped.empty());
  EXPECT_THROW_WITH(read_log(dir.file("none.log")), LogError,
                    "none.log: cannot read sampling log: No such file or directory");
  EXPECT_THROW_WITH(read_log(dir.path()), LogError, "not a regular file");
  EXPECT_THROW_WITH(LogWriter w(dir.path()), LogError, "cannot open sampling log for appending");
}

TEST(SampleLogCorruption, GarbageBeforeTheFirstRecord) {
  const LogContents log = parse("junk!!" + frames(0, 2));
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.records[0].offset, 6u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].to_string(), "L: skipped 6 bytes at offset 0: not a record (no magic)");
}

TEST(SampleLogCorruption, BadPayloadChecksumSkipsExactlyThatRecord) {
  const std::string one = encode_record(make_record(0));
  std::string bytes = frames(0, 3);
  bytes[one.size() + 20] ^= 0x01;  // inside the second payload
  const LogContents log = parse(bytes);
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.records[0].record.info().key(0), 1000);
  EXPECT_EQ(log.records[1].record.info().key(0), 1002);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].offset, one.size());
  EXPECT_EQ(log.skipped[0].length, encode_record(make_record(1)).size());
  EXPECT_EQ(log.skipped[0].reason, "payload checksum mismatch");
}

TEST(SampleLogCorruption, BadHeaderChecksumResyncsOnTheNextGoodMagic) {
  std::string bytes = frames(0, 3);
  bytes[5] ^= 0x40;  // the first record's length
  const LogContents log = parse(bytes);
  ASSERT_EQ(log.records.size(), 2u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].offset, 0u);
  EXPECT_EQ(log.skipped[0].reason, "bad header checksum");
  EXPECT_EQ(log.records[0].offset, log.skipped[0].length);
}

TEST(SampleLogCorruption, MagicInsideGarbageIsNotTrustedWithoutItsChecksum) {
  // "EKR1" followed by a wrong header checksum inside the garbage.
  const std::string fake = std::string("EKR1") + std::string(12, '\x07');
  const LogContents log = parse("xx" + fake + frames(0, 1));
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].length, 2 + fake.size());
}

TEST(SampleLogCorruption, TornLastRecord) {
  const std::string whole = frames(0, 2);
  const std::size_t last = encode_record(make_record(1)).size();
  const LogContents log = parse(whole.substr(0, whole.size() - 5));
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].reason, "torn record at end of file (" + std::to_string(last - 5) +
                                       " of " + std::to_string(last) + " bytes)");
}

TEST(SampleLogCorruption, TornHeaderAtTheEnd) {
  const std::string one = frames(0, 1);
  const LogContents log = parse(one + one.substr(0, 10));
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].offset, one.size());
  EXPECT_EQ(log.skipped[0].reason, "torn record at end of file (10 of at least 16 bytes)");
}

TEST(SampleLogCorruption, TornRecordFollowedByWholeOnes) {
  // A writer died mid-write and others appended after it. The torn record
  // claims more bytes than the file has: reported as torn.
  proto::SampleRecord big = make_record(1);
  big.set_config_fingerprint(std::string(600, 'b'));
  const std::string a = encode_record(make_record(0));
  const std::string big_frame = encode_record(big);
  LogContents log = parse(a + big_frame.substr(0, 30) + frames(2, 2));
  ASSERT_EQ(log.records.size(), 3u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].offset, a.size());
  EXPECT_EQ(log.skipped[0].length, 30u);
  EXPECT_EQ(log.skipped[0].reason, "torn record (30 of " + std::to_string(big_frame.size()) +
                                       " bytes) before the next record");
  // Its claimed end lies inside the following records: a checksum mismatch.
  const std::string small_torn = encode_record(make_record(1)).substr(0, 30);
  log = parse(a + small_torn + frames(2, 2));
  ASSERT_EQ(log.records.size(), 3u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].length, 30u);
  EXPECT_EQ(log.skipped[0].reason, "payload checksum mismatch");
}

TEST(SampleLogCorruption, OversizedLengthAndNonRecordPayload) {
  // A sound header announcing more than kMaxPayload bytes.
  std::string head = "EKR1";
  const auto put = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) head += static_cast<char>((v >> (8 * k)) & 0xFF);
  };
  put(kMaxPayload + 1);
  put(0);
  put(crc32(head));
  LogContents log = parse(head + frames(0, 1));
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].reason, "payload length 16777217 exceeds the maximum of 16777216 bytes");

  // Both checksums hold but the payload is not a SampleRecord.
  const std::string payload = "\xff\xff\xff";
  head = "EKR1";
  put(static_cast<std::uint32_t>(payload.size()));
  put(crc32(payload));
  put(crc32(head));
  log = parse(head + payload + frames(0, 1));
  ASSERT_EQ(log.records.size(), 1u);
  ASSERT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.skipped[0].length, 16 + payload.size());
  EXPECT_EQ(log.skipped[0].reason, "payload is not a SampleRecord");
}

TEST(SampleLogCorruption, CraftedHeadersClaimingTheRestOfTheFile) {
  // 2 MiB of sound headers, one every 16 bytes, each claiming the rest of the
  // file with a wrong payload checksum: the core's linear scan (checksumming
  // each claim where it is made read 1.4e11 bytes: minutes).
  constexpr std::size_t kSize = 2u << 20;
  TempDir dir;
  std::string bytes;
  while (bytes.size() < kSize) {
    std::string head = "EKR1";
    for (const std::uint32_t v : {static_cast<std::uint32_t>(kSize - bytes.size() - 16), 1u}) {
      for (int k = 0; k < 4; ++k) head += static_cast<char>((v >> (8 * k)) & 0xFF);
    }
    const std::uint32_t crc = crc32(head);
    for (int k = 0; k < 4; ++k) head += static_cast<char>((crc >> (8 * k)) & 0xFF);
    bytes += head;
  }
  write_bytes(dir.file("crafted.log"), bytes);
  const LogContents log = read_log(dir.file("crafted.log"));
  EXPECT_TRUE(log.records.empty());
  ASSERT_EQ(log.skipped.size(), kSize / 16);
  EXPECT_EQ(log.skipped.back().to_string(),
            dir.file("crafted.log") + ": skipped 16 bytes at offset " + std::to_string(kSize - 16) +
                ": payload checksum mismatch");
}

// Files this process writes are limited to `limit` bytes while it lives: a
// write past it fails with EFBIG, as one fails with ENOSPC on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t limit) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit now = old_;
    now.rlim_cur = limit;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &now), 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

TEST(SampleLog, AppendOnAFullDiskIsUndoneAndNamesTheLog) {
  // Issue 16: a batch is appended whole or not at all.
  TempDir dir;
  const std::string path = dir.file("a.log");
  LogWriter w(path);
  w.append(make_record(0));
  const std::string before = read_bytes(path);
  std::vector<proto::SampleRecord> batch;
  for (int i = 1; i <= 3; ++i) batch.push_back(make_record(i));
  const std::string batch_bytes = frames(1, 3);
  {
    FileSizeLimit limit(before.size() + batch_bytes.size() / 2);
    try {
      w.append(batch);
      ADD_FAILURE() << "the append past the limit succeeded";
    } catch (const LogError& e) {
      EXPECT_EQ(std::string(e.what()),
                path + ": cannot append 3 records (" + std::to_string(batch_bytes.size()) +
                    " bytes) to the sampling log: File too large; nothing was appended (the log "
                    "is back to its " + std::to_string(before.size()) + " bytes)");
    }
  }
  EXPECT_EQ(read_bytes(path), before);
  w.append(batch);  // the retry appends the batch whole
  EXPECT_EQ(read_bytes(path), before + batch_bytes);
}

TEST(SampleLog, OversizedRecordIsRefusedAndAppendsNothing) {
  TempDir dir;
  LogWriter w(dir.file("a.log"));
  proto::SampleRecord big = make_record(0);
  big.set_config_fingerprint(std::string(kMaxPayload, 'x'));
  EXPECT_THROW_WITH(w.append({make_record(1), big}), std::invalid_argument,
                    "exceeds the maximum payload of 16777216 bytes");
  EXPECT_EQ(read_bytes(dir.file("a.log")), "");
}

// The online sampler's chunks are encoded by the core
// (evokit/formats/sample_record.h): protobuf C++ reads them as the records
// they are and writes the same bytes for them.
TEST(SampleRecordChunk, TheCoresBytesAreProtobufsBytes) {
  formats::SampleRecordChunk chunk{std::string(64, 'c'), "m", 18446744073709551615ull, 1.7e9, 41};
  std::vector<SamplingInfo> infos(3);
  infos[0].key = {7, -1};
  infos[0].model_iter_id = 3;
  infos[1].key = {};
  infos[1].mirrored = true;
  infos[2].key = {INT64_MIN};
  infos[2].model_iter_id = -2;
  const double rewards[] = {1.5, -0.0, -1e300};
  const std::int64_t steps[] = {10, 0, -3};
  std::string bytes;
  formats::append_sample_records(bytes, chunk, infos, rewards, steps);
  std::string want;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    proto::SampleRecord r;
    for (std::int64_t k : infos[i].key) r.mutable_info()->add_key(k);
    r.mutable_info()->set_model_iter_id(infos[i].model_iter_id);
    r.mutable_info()->set_mirrored(infos[i].mirrored);
    r.set_reward(rewards[i]);
    r.set_config_fingerprint(chunk.config_fingerprint);
    r.set_model_fingerprint(chunk.model_fingerprint);
    r.set_sampler_id(chunk.sampler_id);
    r.set_env_steps(steps[i]);
    r.set_time(chunk.time);
    r.set_sample_index(chunk.first_index + i);
    std::string payload;
    {
      google::protobuf::io::StringOutputStream stream(&payload);
      google::protobuf::io::CodedOutputStream out(&stream);
      out.SetSerializationDeterministic(true);
      ASSERT_TRUE(r.SerializeToCodedStream(&out));
    }
    want += frame_record(payload);
  }
  EXPECT_EQ(bytes, want);
}

}  // namespace
}  // namespace evokit::io
