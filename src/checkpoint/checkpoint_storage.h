// Checkpoints on the file system (DESIGN "Storage layout"):
//
//   <checkpoint-dir>/<job-id>/chk-<n>/_metadata
//                            /chk-<n>/<operator-id>-<subtask>-state
//
// Every file is written under a temporary name, fsynced, then renamed. _metadata is
// written last and names every state file with its size and checksum (XXH3-64); a
// checkpoint without a readable _metadata does not exist. A restore verifies every
// file before any state is used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weir/detail/operator_snapshot.h"
#include "weir/key_group.h"

namespace weir::detail {

// One operator instance's part of a checkpoint.
struct StateFileInfo {
  std::string operatorId;  // the uid, or one derived from the graph
  std::string operatorName;
  int subtask = 0;
  int parallelism = 1;
  KeyGroupRange keyGroups;
  std::string file;  // name inside the chk-<n> folder
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::vector<std::string> keyedStates;     // names, for inspection
  std::vector<std::string> operatorStates;  // names, for inspection
};

struct CheckpointMetadata {
  static constexpr int kFormatVersion = 1;
  int64_t checkpointId = 0;
  std::string jobId;
  int64_t timestampMillis = 0;
  int maxParallelism = 0;
  std::vector<StateFileInfo> files;
};

// Writes `snapshot` (only key groups in `info.keyGroups`) to <dir>/<info.file>; fills in
// size, checksum and state names. Throws weir::Error (kIo) naming the file.
void writeStateFile(const std::string& dir, OperatorSnapshot& snapshot, StateFileInfo& info);

// Writes <dir>/_metadata last, atomically.
void writeMetadata(const std::string& dir, const CheckpointMetadata& metadata);

// Reads the _metadata of the checkpoint at `path` (a chk-<n> folder or its _metadata).
// Throws weir::Error (kCheckpoint) naming the file when it is missing or corrupt.
CheckpointMetadata readMetadata(const std::string& path);
// The chk-<n> folder of `path` (itself, or the folder of a _metadata file).
std::string checkpointFolder(const std::string& path);

// Checks every state file's size and checksum; throws weir::Error (kCheckpoint) naming
// the first file that is missing, truncated or corrupt.
void verifyCheckpoint(const std::string& dir, const CheckpointMetadata& metadata);

// Adds the part of a verified state file that falls into `keyGroups` to `out`; keyed
// entries of other key groups are skipped. Operator state is returned whole in
// `operatorState` for redistribution.
void readStateFile(const std::string& dir, const StateFileInfo& info, KeyGroupRange keyGroups,
                   RestoredOperatorState& out, std::vector<OperatorStateSnapshot>& operatorState);

// The newest complete checkpoint under `checkpointDir` (any job id), or "" when none.
std::string findLatestCheckpoint(const std::string& checkpointDir);

}  // namespace weir::detail
