#include "evokit/record_log.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "evokit/crc32.h"
#include "test_util.h"

namespace evokit {
namespace {

using Kind = RecordSpan::Kind;

std::string u32(std::uint32_t v) {
  std::string out(4, '\0');
  for (std::size_t k = 0; k < 4; ++k) out[k] = static_cast<char>((v >> (8 * k)) & 0xFF);
  return out;
}

// A header claiming `length` payload bytes with payload CRC `payload_crc`,
// its header CRC correct.
std::string header(std::uint32_t length, std::uint32_t payload_crc) {
  const std::string head = "EKR1" + u32(length) + u32(payload_crc);
  return head + u32(crc32(head));
}

std::string payload(int i, std::size_t size) {
  std::string out(size, '\0');
  for (std::size_t k = 0; k < size; ++k) out[k] = static_cast<char>('a' + (i * 7 + k) % 26);
  return out;
}

// (kind, offset, length, reason) of every span, for comparisons.
using Row = std::tuple<Kind, std::uint64_t, std::uint64_t, std::string>;
using Rows = std::vector<Row>;
Rows rows(const RecordLogScan& scan) {
  Rows out;
  for (const RecordSpan& s : scan.spans) out.emplace_back(s.kind, s.offset, s.length, s.reason);
  return out;
}
Rows scan(const std::string& bytes) { return rows(scan_record_log(bytes.data(), bytes.size())); }
Row record(std::uint64_t offset, std::uint64_t length) {
  return {Kind::kRecord, offset, length, ""};
}
Row skipped(std::uint64_t offset, std::uint64_t length, std::string reason) {
  return {Kind::kSkipped, offset, length, std::move(reason)};
}

// The reader as EvoKit's sampling logs specify it, written the direct way
// (each payload checksummed where it is claimed, resynchronisation by
// searching the bytes again): the reference the linear scan must equal.
Rows reference_scan(std::string_view data) {
  const auto get = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t k = 4; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(data[at + k]);
    return v;
  };
  const auto header_ok = [&](std::size_t pos) {
    return crc32(data.data() + pos, 12) == get(pos + 12);
  };
  const auto next_start = [&](std::size_t from, bool torn_tail) -> std::optional<std::size_t> {
    for (std::size_t p = data.find("EKR1", from); p != data.npos; p = data.find("EKR1", p + 1)) {
      if (p + 16 > data.size()) return torn_tail ? std::optional<std::size_t>(p) : std::nullopt;
      if (header_ok(p)) return p;
    }
    return std::nullopt;
  };
  Rows out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::size_t left = data.size() - pos;
    std::string reason;
    if (left < 16) {
      if (data.substr(pos, 4) == std::string_view("EKR1").substr(0, left)) {
        out.push_back(skipped(pos, left, "torn record at end of file (" + std::to_string(left) +
                                             " of at least 16 bytes)"));
        return out;
      }
      reason = "not a record (no magic)";
    } else if (data.substr(pos, 4) != "EKR1") {
      reason = "not a record (no magic)";
    } else if (!header_ok(pos)) {
      reason = "bad header checksum";
    } else {
      const std::uint32_t length = get(pos + 4);
      const std::size_t total = 16 + std::size_t{length};
      if (length > kMaxRecordPayload) {
        reason = "payload length " + std::to_string(length) +
                 " exceeds the maximum of 16777216 bytes";
      } else if (pos + total > data.size()) {
        const auto next = next_start(pos + 1, false);
        if (!next) {
          out.push_back(skipped(pos, left, "torn record at end of file (" + std::to_string(left) +
                                               " of " + std::to_string(total) + " bytes)"));
          return out;
        }
        out.push_back(skipped(pos, *next - pos,
                              "torn record (" + std::to_string(*next - pos) + " of " +
                                  std::to_string(total) + " bytes) before the next record"));
        pos = *next;
        continue;
      } else if (crc32(data.substr(pos + 16, length)) == get(pos + 8)) {
        out.push_back(record(pos, total));
        pos += total;
        continue;
      } else {
        reason = "payload checksum mismatch";
      }
    }
    const std::size_t stop = next_start(pos + 1, true).value_or(data.size());
    out.push_back(skipped(pos, stop - pos, reason));
    pos = stop;
  }
  return out;
}

TEST(RecordLog, FrameLayout) {
  const std::string p = payload(1, 37);
  const std::string f = frame_record(p);
  EXPECT_EQ(f, "EKR1" + u32(37) + u32(crc32(p)) + u32(crc32(f.substr(0, 12))) + p);
  EXPECT_EQ(f.substr(0, 16), header(37, crc32(p)));
  // The empty payload: length 0, CRC-32 of nothing is 0.
  EXPECT_EQ(frame_record(""), header(0, 0));
  const std::string big(kMaxRecordPayload + 1, 'x');
  EXPECT_THROW_WITH(frame_record(big), std::invalid_argument,
                    "SampleRecord of 16777217 bytes exceeds the maximum payload of 16777216 bytes");
  EXPECT_EQ(frame_record(big.substr(1)).size(), 16 + std::size_t{kMaxRecordPayload});
}

TEST(RecordLog, SoundLog) {
  std::string log;
  std::vector<Row> expected;
  for (int i = 0; i < 50; ++i) {
    const std::string f = frame_record(payload(i, static_cast<std::size_t>(i * 13 % 300)));
    expected.push_back(record(log.size(), f.size()));
    log += f;
  }
  const RecordLogScan s = scan_record_log(log.data(), log.size());
  EXPECT_EQ(rows(s), expected);
  EXPECT_EQ(s.bytes_examined, 2 * log.size() + 12 * 50);  // search, header CRCs, CRC pass
  EXPECT_TRUE(scan_record_log(nullptr, 0).spans.empty());
  EXPECT_THROW_WITH(scan_record_log(nullptr, 1), std::invalid_argument, "data must not be null");
}

TEST(RecordLog, EachKindOfDamage) {
  const std::string a = frame_record(payload(0, 40)), b = frame_record(payload(1, 60)),
                    c = frame_record(payload(2, 20));
  const std::size_t A = a.size(), B = b.size();
  // Garbage before, between and after records; a false magic is no record start.
  const std::string fake = "EKR1" + std::string(12, '\x07');
  const std::string junk = "not a record (no magic)";
  EXPECT_EQ(scan("junk" + a + "xx" + fake + b + "EKR" + c + "tail"),
            (Rows{skipped(0, 4, junk), record(4, A), skipped(4 + A, 2 + 16, junk),
                  record(22 + A, B),
                  skipped(22 + A + B, 3, junk),  // a magic prefix before a record: not torn
                  record(25 + A + B, c.size()), skipped(25 + A + B + c.size(), 4, junk)}));
  // A flipped bit in the length (bad header checksum) or in the payload.
  std::string bad_header = a + b + c, bad_payload = a + b + c;
  bad_header[A + 5] ^= 0x40;
  bad_payload[A + 30] ^= 0x01;
  EXPECT_EQ(scan(bad_header), (Rows{record(0, A), skipped(A, B, "bad header checksum"),
                                    record(A + B, c.size())}));
  EXPECT_EQ(scan(bad_payload), (Rows{record(0, A), skipped(A, B, "payload checksum mismatch"),
                                     record(A + B, c.size())}));
  // A sound header claiming more than the maximum.
  EXPECT_EQ(scan(header(kMaxRecordPayload + 1, 0) + a),
            (Rows{skipped(0, 16, "payload length 16777217 exceeds the maximum of 16777216 bytes"),
                  record(16, A)}));
}

TEST(RecordLog, TornRecords) {
  const std::string a = frame_record(payload(0, 40)), big = frame_record(payload(1, 600));
  const std::size_t A = a.size();
  const std::string torn_header = "torn record at end of file (10 of at least 16 bytes)";
  // Cut in the header, in the payload.
  EXPECT_EQ(scan(a + a.substr(0, 10)), (Rows{record(0, A), skipped(A, 10, torn_header)}));
  EXPECT_EQ(scan(a + a.substr(0, 2)),
            (Rows{record(0, A),
                  skipped(A, 2, "torn record at end of file (2 of at least 16 bytes)")}));
  EXPECT_EQ(scan(a + big.substr(0, 100)),
            (Rows{record(0, A), skipped(A, 100, "torn record at end of file (100 of 616 bytes)")}));
  // Whole records after a torn one: only the torn bytes are lost.
  EXPECT_EQ(scan(a + big.substr(0, 30) + a + a),
            (Rows{record(0, A),
                  skipped(A, 30, "torn record (30 of 616 bytes) before the next record"),
                  record(A + 30, A), record(2 * A + 30, A)}));
  // ... and when its claimed end lies inside them, a checksum mismatch.
  EXPECT_EQ(scan(a.substr(0, 30) + a + a + a),
            (Rows{skipped(0, 30, "payload checksum mismatch"), record(30, A), record(30 + A, A),
                  record(30 + 2 * A, A)}));
  // Garbage, then a torn header at the end: reported separately.
  EXPECT_EQ(scan(a + std::string(30, 'z') + a.substr(0, 10)),
            (Rows{record(0, A), skipped(A, 30, "not a record (no magic)"),
                  skipped(A + 30, 10, torn_header)}));
}

TEST(RecordLog, EqualsTheReferenceReaderOnRandomDamage) {
  std::mt19937 rng(11);
  std::map<std::string, int> reasons;  // the damage the trials met
  for (int trial = 0; trial < 3000; ++trial) {
    std::string log;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const std::string f = frame_record(payload(i, rng() % 200));
      const auto r = [&](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
      switch (r(8)) {
        case 0:  // torn
          log += f.substr(0, r(static_cast<std::uint32_t>(f.size())));
          break;
        case 1: {  // garbage
          const std::uint32_t size = r(40);
          log += std::string(size, static_cast<char>(r(256)));
          break;
        }
        case 2: {  // a sound header claiming a length and a payload checksum
          const std::uint32_t length = r(500);
          log += header(length, static_cast<std::uint32_t>(rng()));
          break;
        }
        default:
          log += f;
      }
    }
    const int flips = static_cast<int>(rng() % 3);
    for (int k = 0; k < flips && !log.empty(); ++k) {
      const std::size_t at = rng() % log.size();
      log[at] = static_cast<char>(log[at] ^ static_cast<char>(1 + rng() % 255));
    }
    if (!log.empty() && rng() % 3 == 0) log.resize(rng() % log.size());
    const RecordLogScan s = scan_record_log(log.data(), log.size());
    ASSERT_EQ(rows(s), reference_scan(log)) << "trial " << trial;
    std::uint64_t covered = 0;  // the spans cover every byte once, in order
    for (const RecordSpan& span : s.spans) {
      ASSERT_EQ(span.offset, covered);
      covered += span.length;
    }
    EXPECT_EQ(covered, log.size());
    for (const RecordSpan& span : s.spans) {
      const bool torn = span.reason.rfind("torn", 0) == 0;  // without its byte counts
      ++reasons[torn ? span.reason.substr(0, span.reason.find(" (")) : span.reason];
    }
  }
  for (const char* reason : {"", "not a record (no magic)", "bad header checksum",
                             "payload checksum mismatch", "torn record at end of file",
                             "torn record"}) {
    EXPECT_GE(reasons[reason], 20) << "'" << reason << "'";
  }
}

// A few MiB of sound headers, every 16 bytes, each claiming the rest of the
// file with a payload checksum that fails: checksumming each claimed payload
// where it is claimed reads size^2 / 32 bytes (5.5e11 for 4 MiB, minutes);
// the scan reads each byte a few times.
TEST(RecordLog, CraftedDamageIsReadInLinearTime) {
  constexpr std::size_t kSize = 4u << 20;
  std::string log;
  log.reserve(kSize);
  while (log.size() < kSize) {
    log += header(static_cast<std::uint32_t>(kSize - log.size() - 16), 1);
  }
  const RecordLogScan s = scan_record_log(log.data(), log.size());
  ASSERT_EQ(s.spans.size(), kSize / 16);
  for (std::size_t i = 0; i < s.spans.size(); ++i) {
    ASSERT_EQ(s.spans[i].offset, 16 * i);
    ASSERT_EQ(s.spans[i].length, 16u);
    ASSERT_EQ(s.spans[i].reason, "payload checksum mismatch");
  }
  EXPECT_LE(s.bytes_examined, 3 * kSize);

  // Nothing but magics: every byte position is a magic start or inside one.
  std::string magics;
  for (std::size_t i = 0; i < kSize / 4; ++i) magics += "EKR1";
  const RecordLogScan m = scan_record_log(magics.data(), magics.size());
  EXPECT_EQ(rows(m), (Rows{skipped(0, kSize - 12, "bad header checksum"),
                           skipped(kSize - 12, 12,
                                   "torn record at end of file (12 of at least 16 bytes)")}));
  EXPECT_LE(m.bytes_examined, 5 * kSize);
}

// The other crafted logs of bench/crafted_logs.py, 4 MiB each: headers
// claiming the maximum payload (the last 16 MiB of claims run past the end),
// and headers whose claims run past the end between two records (each torn
// before the next record). The work stays a few bytes per byte.
TEST(RecordLog, CraftedClaimsOfTheMaximumAndTornClaimsAreReadInLinearTime) {
  constexpr std::size_t kSize = 4u << 20;
  std::string max_claims;
  max_claims.reserve(kSize);
  while (max_claims.size() < kSize) max_claims += header(kMaxRecordPayload, 1);
  const RecordLogScan a = scan_record_log(max_claims.data(), max_claims.size());
  ASSERT_EQ(a.spans.size(), kSize / 16);
  EXPECT_EQ(rows(a).back(),
            skipped(kSize - 16, 16,
                    "torn record at end of file (16 of " + std::to_string(kMaxRecordPayload + 16) +
                        " bytes)"));
  EXPECT_EQ(rows(a)[0], skipped(0, 16,
                                "torn record (16 of " + std::to_string(kMaxRecordPayload + 16) +
                                    " bytes) before the next record"));
  EXPECT_LE(a.bytes_examined, 3 * kSize);

  const std::string sound = frame_record("");
  std::string torn = sound;
  while (torn.size() < kSize - sound.size()) torn += header(kSize, 0);
  torn += sound;
  const RecordLogScan b = scan_record_log(torn.data(), torn.size());
  const Rows r = rows(b);
  ASSERT_EQ(r.size(), kSize / 16);
  EXPECT_EQ(r.front(), record(0, 16));
  EXPECT_EQ(r.back(), record(kSize - 16, 16));
  for (std::size_t i = 1; i + 1 < r.size(); ++i) {
    ASSERT_EQ(r[i], skipped(16 * i, 16,
                            "torn record (16 of " + std::to_string(kSize + 16) +
                                " bytes) before the next record"));
  }
  EXPECT_LE(b.bytes_examined, 3 * kSize);
}

}  // namespace
}  // namespace evokit
