#include "state/local_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "weir/error.h"

namespace weir::state {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "weir-rocksdb-";
constexpr const char* kOwnerSuffix = ".owner";

std::string baseOrTemp(std::string base) {
  if (!base.empty()) return base;
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

std::string sanitize(const std::string& owner) {
  std::string out;
  for (char c : owner) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.substr(0, 64);
}

// The pid in weir-rocksdb-<pid>-..., or -1.
long pidOf(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  char* end = nullptr;
  long pid = std::strtol(name.c_str() + std::char_traits<char>::length(kPrefix), &end, 10);
  return end != nullptr && *end == '-' && pid > 0 ? pid : -1;
}

// Whether the process that made folder `name` (with owner file `owner`) is gone: its
// owner file is not locked, or, without one (an older run, or one that died before it
// locked it), no process has its pid.
bool ownerGone(const fs::path& owner, long pid) {
  int fd = ::open(owner.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    bool gone = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return gone;
  }
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::vector<std::string> removeDeadLocalFolders(std::string base) {
  base = baseOrTemp(std::move(base));
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(kOwnerSuffix) || !entry.is_directory(ec)) continue;
    long pid = pidOf(name);
    if (pid < 0 || pid == ::getpid()) continue;
    fs::path owner = entry.path().string() + kOwnerSuffix;
    if (!ownerGone(owner, pid)) continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    if (rm) continue;  // (not ours to remove, say: left)
    fs::remove(owner, rm);
    removed.push_back(entry.path().string());
  }
  // Owner files whose folder is gone already.
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(kOwnerSuffix)) continue;
    fs::path folder = entry.path().string().substr(0, entry.path().string().size() - 6);
    std::error_code exists;
    long pid = pidOf(folder.filename().string());
    if (pid < 0 || pid == ::getpid() || fs::exists(folder, exists)) continue;
    if (ownerGone(entry.path(), pid)) fs::remove(entry.path(), exists);
  }
  return removed;
}

LocalFolder::LocalFolder(std::string base, const std::string& what) {
  base = baseOrTemp(std::move(base));
  std::error_code ec;
  if (!fs::is_directory(base, ec)) {
    throw Error(ErrorCode::kIo, "RocksDB local directory '" + base +
                                    "' does not exist or is not a folder; create it or choose another one");
  }
  removeDeadLocalFolders(base);
  static std::atomic<int> counter{0};
  path_ = (fs::path(base) / (kPrefix + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                             sanitize(what)))
              .string();
  const std::string owner = path_ + kOwnerSuffix;
  ownerFd_ = ::open(owner.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (ownerFd_ < 0 || ::flock(ownerFd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (ownerFd_ >= 0) ::close(ownerFd_);
    throw Error(ErrorCode::kIo, "cannot lock the RocksDB folder's owner file '" + owner + "': " + std::strerror(err));
  }
  if (!fs::create_directory(path_, ec) || ec) {
    ::close(ownerFd_);
    fs::remove(owner, ec);
    throw Error(ErrorCode::kIo, "cannot create the RocksDB folder '" + path_ + "': " +
                                    (ec ? ec.message() : std::string("it already exists")));
  }
}

LocalFolder::~LocalFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::remove(path_ + kOwnerSuffix, ec);
  ::close(ownerFd_);
}

}  // namespace weir::state
