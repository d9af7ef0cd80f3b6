// A file system for tests that fails what it is told to and forgets, on a simulated
// crash, every byte and every name not yet durable (LevelDB's FaultInjectionTestEnv):
//
//   auto disk = std::make_shared<test::FaultInjectingFileSystem>();
//   disk->failNth(FaultInjectingFileSystem::Op::kSync, 1, std::errc::io_error, "_metadata");
//   test::useFileSystem(stream, disk);   // the job's checkpoints go through it
//   ...
//   disk->crash();    // the process "dies": nothing more reaches the disk, and the disk
//                     // is left as it would be after a power cut
//   disk->restart();  // the machine is back
//
// Every call goes to the local disk (core::FileSystem::local()) as it comes, and the file
// system remembers what is not durable yet:
//   * bytes appended to a file and not fsynced since (WritableFile::sync);
//   * names not made durable by syncing their folder (FileSystem::syncDirectory): files
//     created, renames, and folders made.
// crash() undoes those on the disk: the names in reverse order (a rename is renamed
// back, a file or folder made is removed with what it holds), then every file written
// through it is cut to the bytes last synced. Removals are not undone (a file removed
// stays removed). Paths are compared as spelled, after lexical normalization.
//
// Thread-safe: one mutex guards its books and the disk calls it makes, so calls from the
// checkpoint coordinator's I/O thread and the test's own do not interleave.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "core/file_system.h"

namespace weir::test {

class FaultInjectingFileSystem final : public core::FileSystem {
 public:
  // The calls that can be counted and made to fail.
  enum class Op {
    kOpenForWrite,
    kWrite,  // WritableFile::append
    kSync,   // WritableFile::sync
    kOpenForRead,
    kRead,  // ReadableFile::read
    kRename,
    kRemove,  // remove and removeAll
    kCreateDirectories,
    kSyncDirectory,
    kTruncate,
  };
  static const char* name(Op op);

  FaultInjectingFileSystem() = default;
  FaultInjectingFileSystem(const FaultInjectingFileSystem&) = delete;
  FaultInjectingFileSystem& operator=(const FaultInjectingFileSystem&) = delete;

  // The `nth` call of `op` from now (1: the next) on a path containing `pathPart` fails
  // with `error` and does nothing. For a rename, either path may contain it.
  void failNth(Op op, int nth, std::errc error = std::errc::io_error, std::string pathPart = "");
  // Every call of `op` on a path containing `pathPart` fails with `error` from now on.
  void failAlways(Op op, std::errc error = std::errc::io_error, std::string pathPart = "");
  // The disk holds `bytes` more (negative: no limit, the default): the write that would
  // go past writes what fits and fails with ENOSPC, as write(2) does; so do all after it.
  // Removing files gives no space back.
  void setSpaceLeft(int64_t bytes);
  // No failure planned and no limit of space any more.
  void clearFaults();

  // The process dies now: every later call fails with EIO (also on files opened before),
  // and the disk is left as a power cut would leave it (see above).
  void crash();
  // The machine is back: calls work again, and everything on the disk counts as durable.
  void restart();
  bool crashed() const;

  // A failure this file system injected.
  struct Failure {
    Op op;
    std::string path;
    std::error_code error;
  };
  std::vector<Failure> failures() const;
  // Calls of `op` so far, failed or not.
  int64_t calls(Op op) const;
  // Called after every call with the path it acted on (a rename's: the new name) and
  // how it ended, so a test can wait for a step of a job without sleeping. It runs with
  // the file system's lock held: it must not call the file system.
  using Observer = std::function<void(Op op, const std::string& path, std::error_code result)>;
  void setObserver(Observer observer);

  std::unique_ptr<core::WritableFile> openForWrite(const std::string& path, WriteMode mode,
                                                   std::error_code& ec) override;
  std::unique_ptr<core::ReadableFile> openForRead(const std::string& path, std::error_code& ec) override;
  std::error_code rename(const std::string& from, const std::string& to) override;
  std::error_code remove(const std::string& path) override;
  std::error_code removeAll(const std::string& path) override;
  std::error_code createDirectories(const std::string& path) override;
  std::error_code syncDirectory(const std::string& path) override;
  std::error_code list(const std::string& path, std::vector<std::string>& names) override;
  std::error_code fileSize(const std::string& path, uint64_t& size) override;
  // Durable at once (what it cut off never comes back on a crash).
  std::error_code truncate(const std::string& path, uint64_t size) override;

 private:
  class Writable;
  class Readable;
  // A file written through this file system: its size, and how much of it is durable.
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
    std::string path;  // its name now
  };
  // A name not yet durable: made in folder `dir` (made durable by syncing it).
  struct NameChange {
    enum class Kind { kCreatedFile, kRenamed, kMadeDirectory } kind;
    std::string dir;
    std::string path;                     // the file or folder made, or a rename's new name
    std::string from;                     // kRenamed: the old name
    std::optional<std::string> replaced;  // kRenamed: what `path` held before, if anything
  };
  struct Rule {
    Op op;
    std::string pathPart;
    int64_t countdown;  // fails when it reaches 0; -1: every time
    std::error_code error;
  };

  static std::string normal(const std::string& path);
  // Counts the call; true (with `ec` set) when it must fail. With mutex_ held.
  bool injectLocked(Op op, const std::string& path, std::error_code& ec, const std::string& otherPath = "");
  // Forgets the files at or under `path`. With mutex_ held.
  void forgetLocked(const std::string& path);
  // What the calls do, with mutex_ held.
  std::unique_ptr<core::WritableFile> openForWriteLocked(const std::string& path, WriteMode mode, std::error_code& ec);
  std::unique_ptr<core::ReadableFile> openForReadLocked(const std::string& path, std::error_code& ec);
  std::error_code renameLocked(const std::string& from, const std::string& to);
  std::error_code removeLocked(const std::string& path, bool all);
  std::error_code createDirectoriesLocked(const std::string& path);
  std::error_code syncDirectoryLocked(const std::string& path);
  // Tells the observer how a call ended; returns `result`. With mutex_ held.
  std::error_code observedLocked(Op op, const std::string& path, std::error_code result);

  const std::shared_ptr<core::FileSystem> disk_ = core::FileSystem::local();
  mutable std::mutex mutex_;
  bool crashed_ = false;                                        // guarded by mutex_
  int64_t generation_ = 0;                                      // guarded by mutex_; one per crash
  std::map<std::string, std::shared_ptr<FileState>> files_;     // guarded by mutex_; by path
  std::vector<NameChange> names_;                               // guarded by mutex_; oldest first
  std::vector<Rule> rules_;                                     // guarded by mutex_
  int64_t spaceLeft_ = -1;                                      // guarded by mutex_
  std::vector<Failure> failures_;                               // guarded by mutex_
  std::map<Op, int64_t> calls_;                                 // guarded by mutex_
  Observer observer_;                                           // guarded by mutex_
};

// The job of `anyStreamOfTheJob` writes and reads its checkpoints through `fileSystem`:
// the internal hook tests use (StreamGraph::fileSystem), not an option of the API.
template <class Stream>
void useFileSystem(const Stream& anyStreamOfTheJob, std::shared_ptr<core::FileSystem> fileSystem) {
  anyStreamOfTheJob.graph()->graph.fileSystem = std::move(fileSystem);
}

}  // namespace weir::test
