#include "evokit/formats/log_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace evokit::formats {

namespace {

std::string strerror_of(int err) { return std::generic_category().message(err); }

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

}  // namespace

int open_log_for_append(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string what = path + ": cannot open sampling log for appending: ";
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) refuse(what + strerror_of(ec.value()));
  }
  const bool created = !fs::exists(p, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) refuse(what + strerror_of(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(what + "not a regular file");
  }
  if (created) {  // make the new directory entry durable too
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC);
    const int err = dir_fd < 0 ? errno : (::fsync(dir_fd) != 0 ? errno : 0);
    if (dir_fd >= 0) ::close(dir_fd);
    if (err != 0) {
      ::close(fd);
      refuse(what + "cannot fsync " + dir + ": " + strerror_of(err));
    }
  }
  return fd;
}

void append_to_log(int fd, const std::string& path, std::string_view batch, std::size_t records, bool fsync) {
  if (batch.empty()) return;
  if (::flock(fd, LOCK_EX) != 0) refuse(path + ": cannot lock sampling log: " + strerror_of(errno));
  struct stat st {};
  int err = ::fstat(fd, &st) != 0 ? errno : 0;
  std::size_t done = 0;
  while (err == 0 && done < batch.size()) {
    const ssize_t n = ::write(fd, batch.data() + done, batch.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n == 0) err = EIO;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (err == 0 && fsync && ::fsync(fd) != 0) err = errno;
  std::string message;
  if (err != 0) {
    message = path + ": cannot append " + std::to_string(records) + " record" + (records == 1 ? "" : "s") + " (" +
              std::to_string(batch.size()) + " bytes) to the sampling log: " + strerror_of(err);
    if (::ftruncate(fd, st.st_size) == 0) {
      message += "; nothing was appended (the log is back to its " + std::to_string(st.st_size) + " bytes)";
    } else {
      message += "; cutting it back to its " + std::to_string(st.st_size) + " bytes failed too (" +
                 strerror_of(errno) + "): the reader skips the torn end";
    }
  }
  ::flock(fd, LOCK_UN);
  if (err != 0) refuse(message);
}

namespace {

// The log at `path` open for reading under a shared flock (none where the
// file system has no flock), so that no appender of this module is
// mid-batch; its size in `size`. Closing the descriptor releases the lock.
int open_log_for_reading(const std::string& path, const std::string& what, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse(what + strerror_of(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(what + "not a regular file");
  }
  (void)::flock(fd, LOCK_SH);  // a file system without flock is read anyway
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// Appends up to `want` bytes of `fd` to `bytes`; false at the end of the file.
bool read_more(int fd, const std::string& what, std::string& bytes, std::size_t want) {
  char buffer[1 << 16];
  while (want > 0) {
    const ssize_t n = ::read(fd, buffer, std::min(sizeof(buffer), want));
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(what + strerror_of(errno));
    }
    if (n == 0) return false;
    bytes.append(buffer, static_cast<std::size_t>(n));
    want -= static_cast<std::size_t>(n);
  }
  return true;
}

// Closes a descriptor (releasing its flock) when it goes out of scope.
struct Closer {
  int fd;
  ~Closer() { ::close(fd); }
};

}  // namespace

std::string read_log_file(const std::string& path) {
  const std::string what = path + ": cannot read sampling log: ";
  std::uint64_t size = 0;
  const Closer file{open_log_for_reading(path, what, size)};
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(size));
  while (read_more(file.fd, what, bytes, std::size_t{1} << 30)) {
  }
  return bytes;
}

void scan_log_file(const std::string& path, std::size_t chunk_bytes, const LogPieceFn& on_piece) {
  const std::string what = path + ": cannot read sampling log: ";
  std::uint64_t size = 0;
  const Closer file{open_log_for_reading(path, what, size)};
  // A record is decided by its own bytes, at most `margin` of them: in a
  // buffer of chunk + margin bytes every record that starts within the
  // first `chunk` bytes, and every candidate the scan rejected there, is
  // decided as in the whole file.
  const std::size_t margin = kRecordHeaderSize + kMaxRecordPayload;
  chunk_bytes = std::max<std::size_t>(chunk_bytes, 1);
  std::string buffer;
  buffer.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size, chunk_bytes + margin)));
  std::uint64_t base = 0;
  bool more = true;
  for (;;) {
    if (more && buffer.size() < chunk_bytes + margin) {
      more = read_more(file.fd, what, buffer, chunk_bytes + margin - buffer.size());
    }
    if (buffer.empty()) break;
    RecordLogScan scan = scan_record_log(buffer.data(), buffer.size());
    const std::size_t limit = more ? buffer.size() - margin : buffer.size();
    std::vector<RecordSpan>& spans = scan.spans;
    std::size_t taken = 0, used = 0;
    for (RecordSpan& span : spans) {
      const std::size_t end = static_cast<std::size_t>(span.offset + span.length);
      const bool whole = span.kind == RecordSpan::Kind::kRecord ? end <= buffer.size() : end <= limit;
      if (!whole && !(span.kind == RecordSpan::Kind::kSkipped && span.offset < limit)) break;
      if (!whole) span.length = limit - span.offset;  // the rest comes with the next piece
      used = static_cast<std::size_t>(span.offset + span.length);
      span.offset += base;
      ++taken;
      if (!whole) break;
    }
    spans.resize(taken);
    on_piece(std::string_view(buffer.data(), used), base, spans);
    buffer.erase(0, used);
    base += used;
    if (!more && buffer.empty()) break;
  }
}

}  // namespace evokit::formats
