// The parallel instances of one operator in a savepoint or checkpoint, read back as a
// restore would (src/savepoint/snapshot_instances.cc): what the State Processor API's
// readers (weir/savepoint_reader.h) read.
#pragma once

#include <string>
#include <vector>

#include "weir/detail/state/operator_snapshot.h"
#include "weir/key_group.h"

namespace weir::detail {

// One instance: its state file in the snapshot's folder.
struct SnapshotInstance {
  std::string folder;      // the snapshot's
  std::string operatorId;  // its uid, or the id derived from the graph
  size_t file = 0;         // its index among the snapshot's files
  KeyGroupRange keyGroups;
  int maxParallelism = 0;
};

// The instances of operator `operatorId` in the savepoint or checkpoint at `path` (its
// folder or _metadata), after every file of it is verified. Throws weir::Error naming
// the problem: no snapshot there, a damaged file, or no such operator (listing those
// it holds).
std::vector<SnapshotInstance> snapshotInstances(const std::string& path, const std::string& operatorId);

// What the instance's file holds, for KeyedStateBackendBase::setRestored.
RestoredOperatorState readSnapshotInstance(const SnapshotInstance& instance);

}  // namespace weir::detail
