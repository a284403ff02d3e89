#include "evokit/io/sample_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "evokit/io/errors.h"
#include "evokit/record_log.h"
#include "file_util.h"

namespace evokit::io {

namespace {

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
  return frame_record(serialize_deterministic(record));
}

LogContents parse_log(const std::string& bytes, const std::string& path) {
  LogContents result;
  for (RecordSpan& span : scan_record_log(bytes.data(), bytes.size()).spans) {
    if (span.kind == RecordSpan::Kind::kSkipped) {
      result.skipped.push_back(
          SkippedBytes{path, span.offset, span.length, std::move(span.reason)});
      continue;
    }
    LogRecord rec{path, span.offset, {}};
    const char* payload = bytes.data() + span.offset + kLogHeaderSize;
    if (rec.record.ParseFromArray(payload, static_cast<int>(span.length - kLogHeaderSize))) {
      result.records.push_back(std::move(rec));
    } else {
      // Both checksums hold, so the frame itself is sound: skip exactly
      // this record.
      result.skipped.push_back(
          SkippedBytes{path, span.offset, span.length, "payload is not a SampleRecord"});
    }
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
  std::string batch;
  for (const auto& r : records) batch += encode_record(r);
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) throw std::logic_error(path_ + ": append to a closed LogWriter");
  if (batch.empty()) return;
  if (::flock(fd_, LOCK_EX) != 0) {
    throw std::system_error(errno, std::generic_category(), path_ + ": cannot lock sampling log");
  }
  // Whole or not at all: one write() of the batch (continued after a partial
  // write, still locked), then fsync; if either fails the file is cut back
  // to the length it had, so no part of the batch stays behind.
  struct stat st {};
  int err = ::fstat(fd_, &st) != 0 ? errno : 0;
  std::size_t done = 0;
  while (err == 0 && done < batch.size()) {
    const ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (err == 0 && fsync_ && ::fsync(fd_) != 0) err = errno;
  std::string message;
  if (err != 0) {
    message = path_ + ": cannot append " + std::to_string(records.size()) + " record" +
              (records.size() == 1 ? "" : "s") + " (" + std::to_string(batch.size()) +
              " bytes) to the sampling log: " + detail::errno_message(err);
    if (::ftruncate(fd_, st.st_size) == 0) {
      message += "; nothing was appended (the log is back to its " +
                 std::to_string(st.st_size) + " bytes)";
    } else {
      message += "; cutting it back to its " + std::to_string(st.st_size) +
                 " bytes failed too (" + detail::errno_message(errno) +
                 "): the reader skips the torn end";
    }
  }
  ::flock(fd_, LOCK_UN);
  if (err != 0) throw LogError(message);
}

}  // namespace evokit::io
