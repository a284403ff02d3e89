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

std::string read_log_file(const std::string& path) {
  const std::string what = path + ": cannot read sampling log: ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse(what + strerror_of(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(what + "not a regular file");
  }
  (void)::flock(fd, LOCK_SH);  // a file system without flock is read anyway
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      refuse(what + strerror_of(err));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);  // releases the lock
  return bytes;
}

}  // namespace evokit::formats
