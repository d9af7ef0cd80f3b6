// Which checkpoints of a job completed, recorded durably in one file of its job folder,
// apart from the chk-<n> folders (Flink's CompletedCheckpointStore):
//
//   <checkpoint-dir>/<job-id>/completed-checkpoints
//
// The coordinator creates it empty when the job starts, and rewrites it (atomically,
// fsynced) with the retained checkpoints each time one completes — after its _metadata
// is durable, before any subtask is told it completed (so before a sink commits), and
// before an older one's folder is removed. So every checkpoint it lists was whole when
// recorded, and a chk-<n> folder with _metadata that it does not list never completed
// (the process died between the two) and no sink committed past it.
//
// `--restore latest` reads these files (findLatestCheckpoint): the newest recorded
// checkpoint is restored, and when it is damaged that is an error naming it, never a
// fall-back to an older one (a sink may have committed output past that one: Flink
// stopped falling back for this reason, FLINK-22502).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_system.h"

namespace weir::checkpoint {

class CompletedCheckpointStore {
 public:
  static constexpr std::string_view kFileName = "completed-checkpoints";

  struct Entry {
    int64_t id = 0;
    int64_t timestampMillis = 0;  // when it was triggered
    bool operator==(const Entry&) const = default;
  };

  // The store of job folder `jobFolder` (which exists), on `fileSystem`.
  CompletedCheckpointStore(std::string jobFolder, std::shared_ptr<core::FileSystem> fileSystem);

  // Records `completed` (oldest first) as the job's completed checkpoints, replacing what
  // the file said; durable on return. Throws weir::Error (kIo) naming the file.
  void write(const std::vector<Entry>& completed);
  // Removes the file (after write({}): no crash leaves it naming a removed checkpoint).
  void remove();

  // What the store of `jobFolder` records, oldest first; nullopt when the folder has no
  // store. Throws weir::Error (kCheckpoint) naming the file when it is there but does
  // not read (not a regular file, too large, truncated or corrupt).
  static std::optional<std::vector<Entry>> read(const std::string& jobFolder, core::FileSystem& fileSystem);

 private:
  const std::string path_;
  const std::shared_ptr<core::FileSystem> fileSystem_;
};

}  // namespace weir::checkpoint
