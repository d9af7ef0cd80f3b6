// The working folders of RocksDB instances under the RocksDB local directory
// ($TMPDIR, /tmp, or --rocksdb-local-dir): one per instance, named for the process,
// with an owner file beside it that the process holds locked (flock) while it lives.
// A process killed with -9 cannot remove its folders; the next one to make a folder in
// the same directory (and `weir checkpoint clean`) removes those whose owner is gone.
#pragma once

#include <string>
#include <vector>

namespace weir::state {

class LocalFolder {
 public:
  // Makes weir-rocksdb-<pid>-<n>-<what> in `base` ("": $TMPDIR, else /tmp), after
  // removing the folders of dead processes there. Throws weir::Error (kIo) when `base`
  // is not a folder or the folder cannot be made.
  LocalFolder(std::string base, const std::string& what);
  // Removes the folder and its owner file.
  ~LocalFolder();
  LocalFolder(const LocalFolder&) = delete;
  LocalFolder& operator=(const LocalFolder&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int ownerFd_ = -1;  // the owner file, locked
};

// Removes from `base` ("": $TMPDIR, else /tmp) the RocksDB working folders of processes
// that are gone; returns them.
std::vector<std::string> removeDeadLocalFolders(std::string base);

}  // namespace weir::state
