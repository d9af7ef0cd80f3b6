// Counters a connector or user function reports into its subtask's metrics, by Flink's
// names: getMetricGroup().getIOMetricGroup().getNumBytesInCounter().
#pragma once

#include <atomic>
#include <cstdint>

namespace weir {

// A count that only grows (Flink's Counter), one of the subtask's metrics. Increment it
// from the subtask's own thread; the REST API and /metrics read it from theirs.
class Counter {
 public:
  Counter() = default;  // not attached to a subtask: counts nothing
  explicit Counter(std::atomic<uint64_t>* count) : count_(count) {}
  void inc(uint64_t n = 1) const {
    if (count_ != nullptr) count_->fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t getCount() const { return count_ != nullptr ? count_->load(std::memory_order_relaxed) : 0; }

 private:
  std::atomic<uint64_t>* count_ = nullptr;
};

// The bytes a subtask exchanged with the world outside the job (Flink's
// OperatorIOMetricGroup). Records that cross between subtasks of an embedded job are
// moved C++ values, not bytes, and are not counted here.
class OperatorIOMetricGroup {
 public:
  OperatorIOMetricGroup() = default;
  OperatorIOMetricGroup(Counter bytesIn, Counter bytesOut) : bytesIn_(bytesIn), bytesOut_(bytesOut) {}
  // numBytesIn: bytes a source read (from a file, a socket, a queue).
  Counter getNumBytesInCounter() const { return bytesIn_; }
  // numBytesOut: bytes a sink wrote (to a file, a stream, a database).
  Counter getNumBytesOutCounter() const { return bytesOut_; }

 private:
  Counter bytesIn_;
  Counter bytesOut_;
};

// The metrics of one parallel instance of an operator (Flink's OperatorMetricGroup).
class OperatorMetricGroup {
 public:
  OperatorMetricGroup() = default;
  OperatorMetricGroup(OperatorIOMetricGroup io, Counter recordsInErrors) : io_(io), recordsInErrors_(recordsInErrors) {}
  OperatorIOMetricGroup getIOMetricGroup() const { return io_; }
  // numRecordsInErrors: records a source could not read and skipped or sent to its dead
  // letters (Flink's SourceReaderMetricGroup counter of that name).
  Counter getNumRecordsInErrorsCounter() const { return recordsInErrors_; }

 private:
  OperatorIOMetricGroup io_;
  Counter recordsInErrors_;
};

}  // namespace weir
