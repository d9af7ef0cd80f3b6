// Checkpoints on the file system (DESIGN "Storage layout"):
//
//   <checkpoint-dir>/<job-id>/completed-checkpoints     (completed_checkpoint_store.h)
//                            /chk-<n>/_metadata
//                            /chk-<n>/<operator-id>-<subtask>-state
//                            /chk-<n>/<operator-id>-<subtask>-state-<RocksDB file>
//                            /shared/<unique>-<n>.sst
//
// Every file is written under a temporary name, fsynced, then renamed. _metadata is
// written last and names every file with its size and checksum (XXH3-64); a checkpoint
// without a readable _metadata does not exist. A restore verifies every file before any
// state is used. Incremental RocksDB checkpoints keep their SST files in shared/, where
// later checkpoints refer to them (SharedFiles counts who does); RocksDB's other files
// (MANIFEST, CURRENT, OPTIONS) are private to their chk-<n> folder.
//
// Every byte goes through a core::FileSystem (POSIX unless a test gives another): the
// one in CheckpointTarget for writing, the one passed for reading. _metadata is written
// only once every name it depends on is durable: the state files and their folder are
// synced as they are written, and the job folder (which names chk-<n> and shared/) just
// before _metadata.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/key_group.h"

namespace weir::checkpoint {

using detail::OperatorSnapshot;
using detail::OperatorStateSnapshot;
using detail::RestoredOperatorState;

// One file of an incremental RocksDB checkpoint.
struct RocksDBFileInfo {
  std::string name;     // RocksDB's name for it ("000012.sst", "MANIFEST-000005")
  std::string stored;   // its name in shared/ when `shared`, else in the chk-<n> folder
  bool shared = false;  // SST files: shared between checkpoints
  uint64_t size = 0;
  uint64_t checksum = 0;
};

// One operator instance's part of a checkpoint.
struct StateFileInfo {
  std::string operatorId;  // the uid, or one derived from the graph
  std::string operatorName;
  int subtask = 0;
  int parallelism = 1;
  int maxParallelism = 0;  // its operator's key groups; 0 (as read from version 3): CheckpointMetadata's
  KeyGroupRange keyGroups;
  std::string file;  // name inside the chk-<n> folder
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::vector<std::string> keyedStates;     // names, for inspection
  std::vector<std::string> operatorStates;  // names, for inspection
  std::vector<RocksDBFileInfo> rocksdb;     // incremental: its RocksDB instance's files
  uint64_t uploadedBytes = 0;               // of `rocksdb`, what this checkpoint wrote (not stored)
};

// What a snapshot is (Flink's CheckpointProperties): a checkpoint, or a savepoint in
// one of its formats, which stop-with-savepoint takes synchronously (the job ends once
// it completes).
struct SnapshotKind {
  bool savepoint = false;
  bool native = false;       // a savepoint in the NATIVE format (the state backend's files)
  bool synchronous = false;  // stop-with-savepoint
};

struct CheckpointMetadata {
  // 3: a timer's entry key starts with its time (timer_queue.h), as RocksDB keeps them.
  // Earlier versions are refused: their timers would not decode.
  // 4: each state file names its operator's max parallelism (setMaxParallelism per
  // operator); a file of version 3 has the job's.
  static constexpr int kFormatVersion = 4;
  static constexpr int kOldestFormatVersion = 3;
  int64_t checkpointId = 0;
  std::string jobId;
  int64_t timestampMillis = 0;
  int maxParallelism = 0;  // the job's; each file has its operator's
  std::vector<StateFileInfo> files;
  // Savepoints: "CANONICAL" or "NATIVE", and the state backend that took it ("hashmap",
  // "rocksdb"); empty for a checkpoint.
  std::string savepointFormat;
  std::string stateBackend;
  bool isSavepoint() const { return !savepointFormat.empty(); }
};

// The files in a job's shared/ folder and the checkpoints that use each: completed and
// retained ones, and those in progress. A file is deleted once the last checkpoint using
// it is released (on `fileSystem`). Thread-safe.
class SharedFiles {
 public:
  explicit SharedFiles(std::shared_ptr<core::FileSystem> fileSystem = core::FileSystem::local())
      : fileSystem_(std::move(fileSystem)) {}
  struct File {
    uint64_t size = 0;
    uint64_t checksum = 0;
  };
  // Checkpoint `id` uses the file at `path` too; nullopt (and nothing changes) when the
  // file is not known, or no longer.
  std::optional<File> retain(int64_t id, const std::string& path);
  // Checkpoint `id` stored a new file at `path`.
  void add(int64_t id, const std::string& path, File file);
  // Checkpoint `id` is gone (subsumed, aborted, discarded): deletes the files no other
  // checkpoint uses. Releasing twice does nothing.
  void release(int64_t id);
  // The files known, by path.
  std::vector<std::string> paths() const;

 private:
  struct Entry {
    File file;
    std::set<int64_t> users;
  };
  const std::shared_ptr<core::FileSystem> fileSystem_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> files_;               // guarded by mutex_
  std::map<int64_t, std::vector<std::string>> uses_;  // guarded by mutex_; by checkpoint
};

// Where the files of checkpoint `checkpointId` go.
struct CheckpointTarget {
  std::string folder;        // chk-<n>
  std::string sharedFolder;  // shared/, made when first needed
  int64_t checkpointId = 0;
  SharedFiles* shared = nullptr;
  core::FileSystem* fileSystem = core::FileSystem::local().get();  // what the files are written to
  // A savepoint is self-contained: no file in shared/.
  SnapshotKind kind{};
};

// Writes `snapshot` (only key groups in `info.keyGroups`) to <folder>/<info.file>, and an
// incremental RocksDB checkpoint's files, taken first, beside it and in shared/ (or, when
// they cannot be taken as they were at the barrier, its every entry); fills in sizes,
// checksums and state names. A savepoint's RocksDB files (NATIVE) all go beside the state
// file. Throws weir::Error (kIo) naming the file.
void writeStateFile(const CheckpointTarget& target, OperatorSnapshot& snapshot, StateFileInfo& info);
// Where a checkpoint at `dir` keeps RocksDB file `f`.
std::string rocksDBFilePath(const std::string& dir, const RocksDBFileInfo& f);

// Writes `bytes` to `path` whole or not at all: under a temporary name, fsynced, then
// renamed and its folder fsynced. Throws weir::Error (kIo) naming the file.
void writeFileAtomically(core::FileSystem& fileSystem, const std::string& path, std::string_view bytes);

// Removes the checkpoint or savepoint in `folder`: _metadata first, made durable before
// any file it names goes, so a removal cut short (the process dies) leaves no longer a
// checkpoint rather than one with files missing. Stops at the first failure, leaving
// the snapshot whole if _metadata stays, and returns it.
std::error_code removeCheckpointFolder(core::FileSystem& fileSystem, const std::string& folder);

// The XXH3-64 of `bytes` as 16 lower-case hex digits: the checksum line of _metadata
// and of the completed-checkpoints file.
std::string checksumHex(std::string_view bytes);

// One state file's entry of _metadata as JSON text, and back: how the instances of a
// bootstrapped savepoint (weir/savepoint_writer.h) tell the one that writes its
// _metadata what they wrote. Decoding throws weir::Error (kCheckpoint) naming `file`,
// the _metadata it is meant for.
std::string encodeStateFileInfo(const StateFileInfo& info);
StateFileInfo decodeStateFileInfo(const std::string& text, const std::string& file);

// Writes <dir>/_metadata last, atomically, after syncing the folder that holds `dir`.
// Throws weir::Error (kIo) naming the file.
void writeMetadata(const std::string& dir, const CheckpointMetadata& metadata,
                   core::FileSystem& fileSystem = *core::FileSystem::local());

// The largest _metadata read: it lists files, not state (a job of 512 subtasks and ten
// operators on incremental RocksDB writes a few MB).
constexpr uint64_t kMaxMetadataBytes = uint64_t{64} << 20;

// Reads the _metadata of the checkpoint at `path` (a chk-<n> folder or its _metadata).
// Throws weir::Error (kCheckpoint) naming the file when it is missing, not a regular
// file, larger than kMaxMetadataBytes or corrupt.
CheckpointMetadata readMetadata(const std::string& path, core::FileSystem& fileSystem = *core::FileSystem::local());
// The chk-<n> folder of `path` (itself, or the folder of a _metadata file), spelled
// by normalPath.
std::string checkpointFolder(const std::string& path);
// One spelling of a path: absolute, symbolic links resolved. Shared files are known by
// their path (SharedFiles, RocksDBUploads), and a restore spells them from the
// checkpoint's folder: both go through this.
std::string normalPath(const std::string& path);

// Checks every state file's size and checksum, reading none of a file whose size is
// not the metadata's and no more of one than that; throws weir::Error (kCheckpoint)
// naming the first file that is missing, not a regular file, of another size or
// corrupt.
void verifyCheckpoint(const std::string& dir, const CheckpointMetadata& metadata,
                      core::FileSystem& fileSystem = *core::FileSystem::local());

// Adds the part of a verified state file that falls into `keyGroups` to `out`; keyed
// entries of other key groups are skipped, and RocksDB files are added only when their
// key groups overlap. Operator state is returned whole in `operatorState` for
// redistribution. Keyed states are read from `fileSystem` when taken.
void readStateFile(const std::string& dir, const StateFileInfo& info, KeyGroupRange keyGroups,
                   RestoredOperatorState& out, std::vector<OperatorStateSnapshot>& operatorState,
                   std::shared_ptr<core::FileSystem> fileSystem = core::FileSystem::local());

// The newest checkpoint that a completed-checkpoints file under `checkpointDir` records
// (any job id), or "" when none completed. Throws weir::Error (kCheckpoint) when that one
// is missing or its _metadata does not read — never an older one in its place — and when
// checkpoints with _metadata lie in a job folder with no record
// (completed_checkpoint_store.h).
// (Like cleanCheckpoints and JobFolderLock, it looks at the local disk directly: it is
// for tools and for a job about to start, not part of a running job's I/O.)
std::string findLatestCheckpoint(const std::string& checkpointDir);

// An exclusive lock (flock) on a job's checkpoint folder, held while the job writes
// checkpoints there (released by the kernel if the process dies): cleaning a folder
// takes it first, so it never touches a running job's files.
class JobFolderLock {
 public:
  explicit JobFolderLock(const std::string& folder);
  ~JobFolderLock();
  JobFolderLock(const JobFolderLock&) = delete;
  JobFolderLock& operator=(const JobFolderLock&) = delete;
  // Whether this lock holds the folder (false: another holder has it).
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

// What cleaning a job's checkpoint folder removed (or, dry, would remove).
struct CleanedFolder {
  std::string folder;
  std::vector<std::string> sharedFiles;  // in shared/, that no complete checkpoint lists
  std::vector<std::string> incomplete;   // chk-<n> folders without _metadata
  uint64_t bytes = 0;
  bool running = false;  // a running job holds it: left as it is
};

// Removes from `folder` — a job's checkpoint folder, or a checkpoint directory holding
// job folders (each cleaned, those of running jobs skipped) — what no complete
// checkpoint there uses: files in shared/ that no _metadata lists (left by a process
// killed while uploading) and chk-<n> folders without _metadata (a checkpoint that never
// completed). Throws weir::Error, removing nothing from that job folder, when one of its
// _metadata files does not read, or when the job folder given is a running job's.
std::vector<CleanedFolder> cleanCheckpoints(const std::string& folder, bool dryRun);

}  // namespace weir::checkpoint
