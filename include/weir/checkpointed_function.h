// Operator state (Flink's CheckpointedFunction): state held per parallel instance of an
// operator rather than per key, e.g. a source's offsets or a sink's buffer.
//
// A function that derives from CheckpointedFunction gets initializeState() before
// open(), where it obtains its lists from the OperatorStateStore, and snapshotState() at
// each checkpoint, where it brings them up to date. On a restore with another
// parallelism a ListState is split evenly over the new instances and a UnionListState
// is given whole to every one of them.
#pragma once

#include <cstdint>

#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir {

namespace detail {
class OperatorStateRegistry;
}

// The operator states of one parallel instance, by name.
class OperatorStateStore {
 public:
  explicit OperatorStateStore(detail::OperatorStateRegistry* registry) : registry_(registry) {}
  // A list redistributed evenly (in order, in contiguous parts) when parallelism changes.
  template <class T>
  ListState<T>& getListState(const ListStateDescriptor<T>& descriptor);
  // A list of which every instance receives the union of all instances' lists on restore.
  template <class T>
  ListState<T>& getUnionListState(const ListStateDescriptor<T>& descriptor);

 private:
  detail::OperatorStateRegistry* registry_;
};

class FunctionInitializationContext {
 public:
  FunctionInitializationContext(bool restored, OperatorStateStore store) : restored_(restored), store_(store) {}
  // Whether the state was restored from a checkpoint or savepoint.
  bool isRestored() const { return restored_; }
  OperatorStateStore& getOperatorStateStore() { return store_; }

 private:
  bool restored_;
  OperatorStateStore store_;
};

class FunctionSnapshotContext {
 public:
  FunctionSnapshotContext(int64_t checkpointId, int64_t checkpointTimestamp)
      : checkpointId_(checkpointId), checkpointTimestamp_(checkpointTimestamp) {}
  int64_t getCheckpointId() const { return checkpointId_; }
  int64_t getCheckpointTimestamp() const { return checkpointTimestamp_; }

 private:
  int64_t checkpointId_;
  int64_t checkpointTimestamp_;
};

class CheckpointedFunction {
 public:
  virtual ~CheckpointedFunction() = default;
  // Called at each checkpoint, on the task thread: put what must survive into state.
  virtual void snapshotState(const FunctionSnapshotContext& context) = 0;
  // Called once before open(): get the operator states (and read them when restored).
  virtual void initializeState(FunctionInitializationContext& context) = 0;
};

}  // namespace weir

#include "weir/detail/state/operator_state.h"
