// Flink's Partitioner, for DataStream::partitionCustom: picks the downstream subtask of
// a record from its key.
#pragma once

namespace weir {

// Derive from it, or pass any callable int(const K&, int numPartitions) instead.
template <class K>
class Partitioner {
 public:
  virtual ~Partitioner() = default;
  // The subtask, between 0 and numPartitions - 1, that gets records with this key. Any
  // other number fails the job, naming it.
  virtual int partition(const K& key, int numPartitions) const = 0;
};

}  // namespace weir
