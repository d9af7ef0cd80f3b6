// Restoring from a checkpoint: what a new attempt's operators start from, read from a
// checkpoint's files per subtask. Every operator instance gets the key groups it now
// owns and its share of the operator state, so the parallelism may differ from the
// checkpoint's; sources get the splits no reader had been handed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "runtime/job_plan.h"
#include "weir/detail/operators/tracking_split_enumerator.h"
#include "weir/detail/state/operator_snapshot.h"

namespace weir::runtime {

class CheckpointRestore {
 public:
  // Reads and verifies the checkpoint or savepoint at `path` ("": nothing to restore)
  // and checks it against `plan`: its max parallelism, its format (a NATIVE savepoint
  // restores only into the state backend that took it) and its operators, matched by
  // id (uid). State of an operator the job does not have is refused, or with
  // `allowNonRestoredState` skipped with a line on stderr. Throws weir::Error
  // (kCheckpoint) naming the file or the mismatch.
  CheckpointRestore(const JobPlan& plan, const std::string& path, bool allowNonRestoredState = false);

  // What operator `node`'s instance `subtask` of `parallelism` restores; null: nothing.
  std::unique_ptr<detail::RestoredOperatorState> stateOf(int node, int subtask, int parallelism) const;

  // The enumerator of source `node` for a new attempt at `parallelism`. Restored: the
  // splits of the input split as the checkpoint's run split it (at the parallelism it
  // kept) that no reader had been handed, for any reader that asks, then those the
  // source's enumerator finds later (a monitored folder); what readers had goes back
  // through their state.
  std::unique_ptr<detail::TrackingSplitEnumerator> enumeratorFor(const detail::Transformation& node,
                                                                 int parallelism) const;

 private:
  struct AssignedSplits {
    std::vector<std::string> ids;  // every split the checkpoint's readers had been handed
    int splitParallelism = 0;      // what the input was split for; 0: not kept (older checkpoints)
  };
  AssignedSplits assignedSplits(int node) const;
  // Takes the records in flight out of the old instances' operator state: subtask
  // `subtask`'s own, or at another parallelism every old subtask's, for the subtask to
  // pick its share when it replays them.
  static void takeChannelState(std::vector<std::vector<detail::OperatorStateSnapshot>>& old, int subtask,
                               int parallelism, detail::RestoredOperatorState& out);
  const std::vector<const checkpoint::StateFileInfo*>* filesOf(int node) const;

  const JobPlan& plan_;
  std::string folder_;
  checkpoint::CheckpointMetadata metadata_;
  std::map<std::string, std::vector<const checkpoint::StateFileInfo*>> byOperator_;
};

}  // namespace weir::runtime
