#include "file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace evokit::io::detail {

std::string errno_message(int err) { return std::generic_category().message(err); }

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return (std::filesystem::path(a) / b).string();
}

bool read_file(const std::string& path, std::string& out, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errno == ENOENT ? "no such file" : errno_message(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = errno_message(errno);
    ::close(fd);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "is a directory";
    ::close(fd);
    return false;
  }
  out.clear();
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno_message(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(), dir + ": cannot open directory");
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::system_error(err, std::generic_category(), dir + ": cannot fsync");
}

void atomic_write(const std::string& path, const std::string& data) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(fs::path(path));
  const fs::path dir = target.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::system_error(ec, path + ": cannot create directory " + dir.string());

  std::string pattern = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(),
                            path + ": cannot create a temporary file in " + dir.string());
  }
  const std::string tmp(name.data());
  const auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), path + ": " + what);
  };
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual 0644 (less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("cannot set permissions");
  if (::fsync(fd) != 0) fail("cannot fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), path + ": cannot close");
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), path + ": cannot rename into place");
  }
  fsync_dir(dir.string());
}

}  // namespace evokit::io::detail
