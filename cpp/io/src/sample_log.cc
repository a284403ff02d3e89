#include "evokit/io/sample_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "evokit/crc32.h"
#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

namespace {

constexpr std::size_t kHeaderCrcSpan = 12;  // the header CRC covers bytes 0..11

void put_u32(std::string& out, std::size_t at, std::uint32_t v) {
  for (std::size_t k = 0; k < 4; ++k) out[at + k] = static_cast<char>((v >> (8 * k)) & 0xFFu);
}

std::uint32_t get_u32(std::string_view data, std::size_t at) {
  const auto* b = reinterpret_cast<const unsigned char*>(data.data()) + at;
  return static_cast<std::uint32_t>(b[0]) | (static_cast<std::uint32_t>(b[1]) << 8) |
         (static_cast<std::uint32_t>(b[2]) << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
}

bool magic_at(std::string_view data, std::size_t pos) {
  return data.size() >= pos + 4 && std::memcmp(data.data() + pos, kLogMagic, 4) == 0;
}

bool header_crc_ok(std::string_view data, std::size_t pos) {
  return crc32(data.data() + pos, kHeaderCrcSpan) == get_u32(data, pos + kHeaderCrcSpan);
}

std::size_t find_magic(std::string_view data, std::size_t from) {
  return data.find(std::string_view(kLogMagic, 4), from);
}

// The first magic at or after `start` that begins a header whose header CRC
// holds; with `torn_tail`, also a magic too close to the end for a whole
// header. std::nullopt if there is none.
std::optional<std::size_t> next_record_start(std::string_view data, std::size_t start,
                                             bool torn_tail) {
  std::size_t pos = find_magic(data, start);
  while (pos != std::string_view::npos) {
    if (pos + kLogHeaderSize > data.size()) {
      if (torn_tail) return pos;
      return std::nullopt;
    }
    if (header_crc_ok(data, pos)) return pos;
    pos = find_magic(data, pos + 1);
  }
  return std::nullopt;
}

std::string serialize_deterministic(const proto::SampleRecord& record) {
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    record.SerializeToCodedStream(&coded);
  }
  return payload;
}

}  // namespace

std::string SkippedBytes::to_string() const {
  return path + ": skipped " + std::to_string(length) + " bytes at offset " +
         std::to_string(offset) + ": " + reason;
}

std::string encode_record(const proto::SampleRecord& record) {
  const std::size_t size = record.ByteSizeLong();
  if (size > kMaxPayload) {
    throw std::invalid_argument("SampleRecord of " + std::to_string(size) +
                                " bytes exceeds the maximum payload of " +
                                std::to_string(kMaxPayload) + " bytes");
  }
  const std::string payload = serialize_deterministic(record);
  std::string out(kLogHeaderSize, '\0');
  std::memcpy(out.data(), kLogMagic, 4);
  put_u32(out, 4, static_cast<std::uint32_t>(payload.size()));
  put_u32(out, 8, crc32(payload));
  put_u32(out, 12, crc32(out.data(), kHeaderCrcSpan));
  out += payload;
  return out;
}

LogContents parse_log(const std::string& bytes, const std::string& path) {
  const std::string_view data(bytes);
  const std::size_t size = data.size();
  LogContents result;
  const auto skip = [&](std::size_t offset, std::size_t length, std::string reason) {
    result.skipped.push_back(SkippedBytes{path, offset, length, std::move(reason)});
  };
  std::size_t pos = 0;
  while (pos < size) {
    const std::size_t left = size - pos;
    std::string reason;
    if (left < kLogHeaderSize) {
      const std::size_t n = std::min<std::size_t>(left, 4);
      if (std::memcmp(data.data() + pos, kLogMagic, n) == 0) {
        skip(pos, left, "torn record at end of file (" + std::to_string(left) +
                            " of at least " + std::to_string(kLogHeaderSize) + " bytes)");
        return result;
      }
      reason = "not a record (no magic)";
    } else if (!magic_at(data, pos)) {
      reason = "not a record (no magic)";
    } else if (!header_crc_ok(data, pos)) {
      reason = "bad header checksum";
    } else {
      const std::uint32_t length = get_u32(data, pos + 4);
      const std::uint32_t payload_crc = get_u32(data, pos + 8);
      const std::size_t total = kLogHeaderSize + length;
      const std::size_t end = pos + total;
      if (length > kMaxPayload) {
        reason = "payload length " + std::to_string(length) + " exceeds the maximum of " +
                 std::to_string(kMaxPayload) + " bytes";
      } else if (end > size) {
        // The header is sound but the file ends first: a torn last record,
        // unless a whole record follows (a writer died mid-write and others
        // appended after it).
        const std::optional<std::size_t> next = next_record_start(data, pos + 1, false);
        if (!next) {
          skip(pos, left, "torn record at end of file (" + std::to_string(left) + " of " +
                              std::to_string(total) + " bytes)");
          return result;
        }
        skip(pos, *next - pos, "torn record (" + std::to_string(*next - pos) + " of " +
                                   std::to_string(total) + " bytes) before the next record");
        pos = *next;
        continue;
      } else {
        const std::string_view payload = data.substr(pos + kLogHeaderSize, length);
        if (crc32(payload) != payload_crc) {
          reason = "payload checksum mismatch";
        } else {
          LogRecord rec{path, pos, {}};
          if (rec.record.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
            result.records.push_back(std::move(rec));
          } else {
            // Both checksums hold, so the frame itself is sound: skip
            // exactly this record.
            skip(pos, end - pos, "payload is not a SampleRecord");
          }
          pos = end;
          continue;
        }
      }
    }
    const std::optional<std::size_t> next = next_record_start(data, pos + 1, true);
    const std::size_t stop = next ? *next : size;
    skip(pos, stop - pos, reason);
    pos = stop;
  }
  return result;
}

LogContents read_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw LogError(path + ": cannot read sampling log: " +
                   (errno == ENOENT ? std::string("no such file") : detail::errno_message(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw LogError(path + ": cannot read sampling log: not a regular file");
  }
  // Shared lock: no writer that locks is mid-append while we read. A file
  // system without flock is read anyway.
  (void)::flock(fd, LOCK_SH);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw LogError(path + ": cannot read sampling log: " + detail::errno_message(err));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);  // releases the lock
  return parse_log(bytes, path);
}

// ---- LogWriter ---------------------------------------------------------------

LogWriter::LogWriter(std::string path, bool fsync) : path_(std::move(path)), fsync_(fsync) {
  namespace fs = std::filesystem;
  const fs::path p(path_);
  std::error_code ec;
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) {
      throw LogError(path_ + ": cannot open sampling log for appending: cannot create " +
                     p.parent_path().string() + ": " + ec.message());
    }
  }
  const bool created = !fs::exists(p, ec);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw LogError(path_ + ": cannot open sampling log for appending: " +
                   detail::errno_message(errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw LogError(path_ + ": cannot open sampling log for appending: not a regular file");
  }
  if (created) {  // make the new directory entry durable too
    try {
      detail::fsync_dir(p.has_parent_path() ? p.parent_path().string() : ".");
    } catch (const std::system_error&) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
  }
}

LogWriter::~LogWriter() { close(); }

void LogWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool LogWriter::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fd_ < 0;
}

void LogWriter::append(const proto::SampleRecord& record) {
  append(std::vector<proto::SampleRecord>{record});
}

void LogWriter::append(const std::vector<proto::SampleRecord>& records) {
  std::vector<std::string> frames;
  frames.reserve(records.size());
  for (const auto& r : records) frames.push_back(encode_record(r));
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) throw std::logic_error(path_ + ": append to a closed LogWriter");
  if (frames.empty()) return;
  if (::flock(fd_, LOCK_EX) != 0) {
    throw std::system_error(errno, std::generic_category(), path_ + ": cannot lock sampling log");
  }
  int err = 0;
  const char* what = nullptr;
  for (const std::string& frame : frames) {
    // One write() per frame; continue after a partial write, still locked.
    std::size_t done = 0;
    while (done < frame.size() && err == 0) {
      const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        what = "cannot append to sampling log";
      } else {
        done += static_cast<std::size_t>(n);
      }
    }
    if (err != 0) break;
  }
  if (err == 0 && fsync_ && ::fsync(fd_) != 0) {
    err = errno;
    what = "cannot fsync sampling log";
  }
  ::flock(fd_, LOCK_UN);
  if (err != 0) throw std::system_error(err, std::generic_category(), path_ + ": " + what);
}

}  // namespace evokit::io
