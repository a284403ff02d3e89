// The framing of sampling logs (proto/evokit.proto, "Sampling logs"): the one
// implementation, used by the C++ io component (evokit/io/sample_log.h) and,
// through the binding, by Python's evokit.samplelog. It deals in payload
// bytes only; the callers parse payloads (serialized SampleRecords) with
// their protobuf runtime. Each record (little-endian):
//
//   offset  size  field
//        0     4  magic "EKR1"
//        4     4  payload length (uint32, at most kMaxRecordPayload)
//        8     4  CRC-32 of the payload
//       12     4  CRC-32 of bytes 0..11 (guards the length)
//       16     n  payload
//
// scan_record_log splits a log's bytes into records whose checksums hold and
// stretches to skip, each with its reason. After a bad stretch it resumes at
// the next magic whose header checksum holds; a record cut short by the end
// of the file is reported as torn, unless whole records follow it (a writer
// died mid-write and others appended after it). Reading is linear in the
// size for any content: every magic and header is checked once, and the
// payload checksums of all candidate headers come from one CRC pass over the
// file (prefix CRCs combined), so overlapping claimed payloads of a damaged
// or crafted file are never checksummed twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evokit {

inline constexpr char kRecordMagic[4] = {'E', 'K', 'R', '1'};
inline constexpr std::size_t kRecordHeaderSize = 16;
inline constexpr std::uint32_t kMaxRecordPayload = 16u * 1024u * 1024u;

// The framed bytes of `payload`: the header, then the payload. Throws
// std::invalid_argument "SampleRecord of <n> bytes exceeds the maximum
// payload of 16777216 bytes" for a longer payload.
std::string frame_record(std::string_view payload);

// One stretch of a log, in file order.
struct RecordSpan {
  enum class Kind { kRecord, kSkipped };
  Kind kind = Kind::kSkipped;
  std::uint64_t offset = 0;  // where it starts (a record: its header)
  std::uint64_t length = 0;  // its bytes (a record: header and payload)
  std::string reason;        // kSkipped: why, e.g. "payload checksum mismatch"
};

struct RecordLogScan {
  // Records and skipped stretches in file order; together they cover every
  // byte once. A record's payload is data[offset + 16, offset + length).
  std::vector<RecordSpan> spans;
  // The bytes read to get there: the magic search, header checksums and the
  // CRC pass. At most 5 per byte of the log whatever its content (a log of
  // nothing but magics), about 2 for a sound one.
  std::uint64_t bytes_examined = 0;
};

// The records and skipped stretches of the log bytes data[0, size), for any
// content. Throws std::invalid_argument only if data is null and size > 0.
RecordLogScan scan_record_log(const char* data, std::size_t size);

}  // namespace evokit
