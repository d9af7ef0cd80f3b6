// The metrics a connector or user function reports, by Flink's names:
// getRuntimeContext().getMetricGroup().counter("events"), .gauge("queued", fn),
// .histogram("latencyMs"), .meter("eventsPerSecond"), .addGroup("topic", "clicks"), and
// the fixed ones such as getMetricGroup().getIOMetricGroup().getNumBytesInCounter().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "weir/histogram.h"
#include "weir/meter.h"

namespace weir {

namespace detail {
class MetricRegistry;
}

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

// Where an operator registers named metrics (Flink's MetricGroup). The REST API lists
// each as "<subtask>.<operator>.<groups>.<name>"; /metrics exports it as
// weir_taskmanager_job_task_operator_<groups>_<name> (in snake_case; flink_… and the names
// as given with the flink prefix), with a key-value group as a label.
//
// Unlike Flink, weir calls a gauge's function on the subtask's own thread (once per
// metrics interval, and once more before the operator closes), never concurrently with
// the operator: it may read the operator's members without locks. Readers see the value
// of the last call; meters and histograms are summed up on the same thread at the same
// times.
class MetricGroup {
 public:
  MetricGroup() = default;  // not attached to a subtask: its metrics are shown nowhere
  MetricGroup(detail::MetricRegistry* registry, std::string operatorName)
      : registry_(registry), operator_(std::move(operatorName)) {}

  // The counter of this name in this group, made on first use (a second call with the
  // name returns the same counter). Throws weir::Error (kInvalidArgument) for an empty
  // name or one another kind of metric of this group has (so do the calls below).
  Counter counter(const std::string& name) const;
  // Registers `value` as the gauge of this name; a second registration replaces the
  // function. A value that is not a number (NaN) is not shown. A function that throws
  // is reported once on stderr and shows no value until it returns one again.
  void gauge(const std::string& name, std::function<double()> value) const;
  // The histogram of this name, made on first use, keeping the last `windowSize` values
  // (Flink's DescriptiveStatisticsHistogram(windowSize)); a second call returns the first
  // one. Shown as <name>_min, _max, _mean, _median, _stddev, _p75 … _p999 once it has a
  // value.
  Histogram histogram(const std::string& name, size_t windowSize = 1000) const;
  // The meter of this name, made on first use: events per second over `timeSpan`
  // (Flink's MeterView(timeSpanInSeconds)); a second call returns the first one.
  Meter meter(const std::string& name, std::chrono::seconds timeSpan = std::chrono::seconds(60)) const;
  // A subgroup: "<this>.<name>".
  MetricGroup addGroup(const std::string& name) const;
  // A key-value subgroup: "<this>.<key>.<value>"; /metrics makes it a label key="value".
  MetricGroup addGroup(const std::string& key, const std::string& value) const;
  // The metric's identifier below its subtask: "<operator>.<groups>.<name>".
  std::string getMetricIdentifier(const std::string& name) const;

 private:
  detail::MetricRegistry* registry_ = nullptr;
  std::string operator_;
  // Each group: its name and an empty value, or a key and its value.
  std::vector<std::pair<std::string, std::string>> groups_;
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
class OperatorMetricGroup : public MetricGroup {
 public:
  OperatorMetricGroup() = default;
  OperatorMetricGroup(MetricGroup group, OperatorIOMetricGroup io, Counter recordsInErrors)
      : MetricGroup(std::move(group)), io_(io), recordsInErrors_(recordsInErrors) {}
  OperatorIOMetricGroup getIOMetricGroup() const { return io_; }
  // numRecordsInErrors: records a source could not read and skipped or sent to its dead
  // letters (Flink's SourceReaderMetricGroup counter of that name).
  Counter getNumRecordsInErrorsCounter() const { return recordsInErrors_; }

 private:
  OperatorIOMetricGroup io_;
  Counter recordsInErrors_;
};

}  // namespace weir
