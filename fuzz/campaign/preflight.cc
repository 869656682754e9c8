#include "fuzz/campaign/preflight.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

absl::Status Problem(const std::string& flag, const std::string& path, const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat(flag, "=", path, ": ", what));
}

}  // namespace

absl::Status CheckWritableFolder(const std::string& flag, const std::string& path, bool lock) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) {
      return Problem(flag, path,
                     absl::StrCat(path,
                                  " is not a folder (expected a folder, or a path that "
                                  "does not exist yet)"));
    }
  } else {
    fs::create_directories(path, ec);
    if (ec) {
      return Problem(flag, path,
                     absl::StrCat("cannot create the folder ", path, ": ", ec.message()));
    }
  }
  // A file of our own, as every atomic write makes one.
  const std::string probe = absl::StrCat(path, "/.divfuzz-write-check.", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Problem(flag, path,
                   absl::StrCat("cannot create a file in ", path, ": ", std::strerror(errno),
                                " (expected a writable folder)"));
  }
  const bool wrote = ::write(fd, "x", 1) == 1 && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) {
    return Problem(flag, path,
                   absl::StrCat("cannot write a file in ", path, ": ", std::strerror(write_errno),
                                " (expected a writable folder)"));
  }
  if (!lock) return absl::OkStatus();
  const std::string lock_path = path + "/.lock";
  const int lfd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lfd < 0) {
    return Problem(flag, path,
                   absl::StrCat("cannot open the lock file ", lock_path, ": ", std::strerror(errno),
                                " (expected a lockable findings store)"));
  }
  const bool locked = ::flock(lfd, LOCK_EX | LOCK_NB) == 0 || errno == EWOULDBLOCK;
  const int lock_errno = errno;
  ::flock(lfd, LOCK_UN);
  ::close(lfd);
  if (!locked) {
    return Problem(flag, path,
                   absl::StrCat("cannot lock ", lock_path, ": ", std::strerror(lock_errno),
                                " (expected a file system that supports flock)"));
  }
  return absl::OkStatus();
}

}  // namespace divfuzz::fuzz
