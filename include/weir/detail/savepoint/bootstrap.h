// The files of a savepoint that SavepointWriter (weir/savepoint_writer.h) makes: each
// instance of a bootstrap operator writes its state as a CANONICAL savepoint holds it
// and hands on that file's entry of _metadata; one sink gathers the entries and writes
// _metadata last (src/savepoint/bootstrap.cc), as Flink's State Processor API does it.
#pragma once

#include <string>
#include <vector>

#include "weir/detail/state/operator_snapshot.h"

namespace weir::detail {

// Where one bootstrapped operator's state goes.
struct BootstrapTarget {
  std::string folder;      // the savepoint's
  std::string operatorId;  // the uid its state is for
  int maxParallelism = 0;  // the savepoint's
};

// Checks that `folder` can take a new savepoint (it holds none: weir never overwrites
// one) and makes it. Throws weir::Error naming the folder.
void prepareBootstrapFolder(const std::string& folder);

// Writes instance `subtask` of a bootstrap operator, `snapshot` (taken for a CANONICAL
// savepoint), into `target.folder`; returns its file's entry of _metadata, encoded.
// Throws weir::Error (kIo) naming the file.
std::string writeBootstrappedInstance(const BootstrapTarget& target, const std::string& operatorName, int subtask,
                                      int parallelism, OperatorSnapshot& snapshot);

// Writes the savepoint's _metadata, naming the files of `instances` (entries that
// writeBootstrappedInstance returned), after checking that every operator's instances
// are all there. Throws weir::Error naming the problem.
void writeBootstrappedMetadata(const std::string& folder, int maxParallelism, const std::string& stateBackend,
                               const std::vector<std::string>& instances);

}  // namespace weir::detail
