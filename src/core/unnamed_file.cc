#include "core/unnamed_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace weir::core {

int openUnnamedFile(const std::string& directory, std::error_code& ec) {
  int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // A file system without unnamed files (NFS, older overlayfs): a named one, unlinked.
    std::string path = directory + "/weir-spill-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  ec = fd < 0 ? std::error_code(errno, std::generic_category()) : std::error_code();
  return fd;
}

}  // namespace weir::core
