// A sink that writes exactly once by two-phase commit (Flink's Sink V2
// TwoPhaseCommittingSink): its writer prepares committables when a checkpoint barrier
// passes (prepareCommit), they are stored in that checkpoint, and its committer commits
// them once the checkpoint has completed. docs/sinks.md has a worked example.
#pragma once

#include <memory>
#include <vector>

#include "weir/committer.h"
#include "weir/runtime_context.h"
#include "weir/sink.h"

namespace weir {

// The writer of a TwoPhaseCommittingSink.
template <class T, class CommT>
class PrecommittingSinkWriter : public SinkWriter<T> {
 public:
  // Called when a checkpoint barrier passes, right after flush(false), and once more at
  // the end of input, right after flush(true): ends what was written since the last call
  // (pre-commits a transaction, closes a file) and returns what must be committed for it
  // to become visible. The committables go into the checkpoint, and are committed when
  // it completes (at the end of input: when the job has finished).
  virtual std::vector<CommT> prepareCommit() = 0;
};

// A Sink whose createWriter() returns a PrecommittingSinkWriter<T, CommT> and which
// makes a Committer<CommT>. CommT is serialized into checkpoints like state (a
// WEIR_STRUCT, a string, ...): give it a version when its fields change. Committables
// are redistributed with the sink's operator state when the job is rescaled.
//
// What no completed checkpoint covers (a transaction pre-committed for a checkpoint
// that never completed, or begun after the last one) is the writer's to abort when it is
// restored: a writer that is also a CheckpointedFunction sees what its last checkpoint
// held in initializeState and can clean up everything else it began.
template <class T, class CommT>
class TwoPhaseCommittingSink : public Sink<T> {
 public:
  using CommittableType = CommT;
  // The writer; it must be a PrecommittingSinkWriter<T, CommT> (the job fails to start,
  // naming the sink, when it is not).
  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override = 0;
  // The committer of one subtask, made when the subtask starts.
  virtual std::unique_ptr<Committer<CommT>> createCommitter(RuntimeContext& context) const = 0;
};

}  // namespace weir
