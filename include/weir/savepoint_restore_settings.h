// Where a job starts from (Flink's SavepointRestoreSettings and RestoreMode): a
// savepoint or a retained checkpoint, whether state of operators the job no longer has
// may be left behind, and who owns the snapshot afterwards.
#pragma once

#include <string>

namespace weir {

enum class RestoreMode {
  // The snapshot stays the user's: weir reads it and never changes or removes it. The
  // default.
  NO_CLAIM,
  // The job takes the snapshot over: once the job's first checkpoint completes the
  // snapshot is no longer needed and weir removes it (as Flink does in CLAIM mode).
  CLAIM,
};

// "NO_CLAIM" or "CLAIM".
const char* toString(RestoreMode mode);

class SavepointRestoreSettings {
 public:
  // Start from scratch.
  static SavepointRestoreSettings none() { return {}; }
  // Start from the savepoint or checkpoint at `path` (its folder or its _metadata file).
  // With `allowNonRestoredState`, state of an operator the job no longer has (no
  // operator with its uid) is skipped, with a line on stderr that names it; without it,
  // such a snapshot is refused. Throws weir::Error (kInvalidArgument) for an empty path.
  static SavepointRestoreSettings forPath(std::string path, bool allowNonRestoredState = false,
                                          RestoreMode mode = RestoreMode::NO_CLAIM);

  bool restoreSavepoint() const { return !path_.empty(); }
  const std::string& getRestorePath() const { return path_; }
  bool allowNonRestoredState() const { return allowNonRestoredState_; }
  RestoreMode getRestoreMode() const { return mode_; }

 private:
  std::string path_;
  bool allowNonRestoredState_ = false;
  RestoreMode mode_ = RestoreMode::NO_CLAIM;
};

}  // namespace weir
