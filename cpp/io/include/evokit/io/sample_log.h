// Sampling logs: append-only files of framed SampleRecord messages, exactly
// as specified in proto/evokit.proto ("Sampling logs") and written by
// Python's evokit.online.samplelog. The framing and the reader's
// resynchronisation are the core's (evokit/record_log.h, which Python uses
// too); this header adds the protobuf payloads and the files. Each record
// (little-endian):
//
//   offset  size  field
//        0     4  magic "EKR1"
//        4     4  payload length (uint32, at most kMaxPayload)
//        8     4  CRC-32 of the payload
//       12     4  CRC-32 of bytes 0..11
//       16     n  payload: a serialized SampleRecord
//
// Writers (LogWriter) open the log with O_WRONLY | O_APPEND | O_CREAT and
// append each batch of records with one write() under an exclusive flock(),
// then fsync: concurrent writers, in any process or language, never
// interleave bytes, and a batch is appended whole or not at all. read_log keeps every record whose checksums hold and whose payload
// parses, resynchronises after a bad stretch on the next magic whose header
// checksum holds, and reports every skipped stretch with file, offset and
// reason, in time linear in the size of the log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "evokit/io/evokit.pb.h"
#include "evokit/record_log.h"

namespace evokit::io {

inline constexpr const auto& kLogMagic = kRecordMagic;
inline constexpr std::size_t kLogHeaderSize = kRecordHeaderSize;
inline constexpr std::uint32_t kMaxPayload = kMaxRecordPayload;

// The framed bytes of `record`: header and payload. Throws
// std::invalid_argument if the payload would exceed kMaxPayload.
std::string encode_record(const proto::SampleRecord& record);

// A record read back, with where it was found.
struct LogRecord {
  std::string path;
  std::uint64_t offset = 0;  // byte offset of its header
  proto::SampleRecord record;
};

// A stretch of bytes the reader skipped.
struct SkippedBytes {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string reason;
  // "<path>: skipped <length> bytes at offset <offset>: <reason>"
  std::string to_string() const;
};

struct LogContents {
  std::vector<LogRecord> records;
  std::vector<SkippedBytes> skipped;
};

// Every good record of the log at `path`, in file order, and every skipped
// stretch. Never modifies the file (reads under a shared flock). An empty
// file gives nothing; a missing file, a directory or an unreadable file
// throws LogError naming the path.
LogContents read_log(const std::string& path);
// The same over bytes in memory; `path` names them in the results.
LogContents parse_log(const std::string& bytes, const std::string& path);

// An open log for a sampler. Each append() is flock(LOCK_EX) + one write()
// of the batch (continuing after a partial write) + fsync (unless disabled)
// + unlock. Thread-safe. Creates the log (and its parent directories) if
// missing; never rewrites it, and truncates it only to undo its own failed
// append. The descriptor is closed when the writer is destroyed.
class LogWriter {
 public:
  // Throws LogError naming the path if it cannot be opened for appending
  // or is not a regular file.
  explicit LogWriter(std::string path, bool fsync = true);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Encodes every record first (so a bad one appends nothing), then appends
  // them under one lock, whole or not at all: if the write or the fsync
  // fails (a full disk, a file size limit) the log is cut back to its length
  // before the batch and LogError names the path, the records, the bytes and
  // the system's reason. std::system_error if the lock cannot be taken.
  void append(const proto::SampleRecord& record);
  void append(const std::vector<proto::SampleRecord>& records);
  void close();
  bool closed() const;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  bool fsync_;
  mutable std::mutex mutex_;
  int fd_ = -1;
};

}  // namespace evokit::io
