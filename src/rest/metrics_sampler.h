// Turns a job's monotonic counters into per-second rates: records and bytes in/out per second and
// busy / idle / back-pressured milliseconds per second, per subtask (Flink's names).
#pragma once

#include <chrono>
#include <map>
#include <utility>
#include <vector>
#include <vector>

#include "runtime/job_execution.h"

namespace weir::rest {

struct SubtaskRates {
  double numRecordsInPerSecond = 0;
  double numRecordsOutPerSecond = 0;
  double numBytesInPerSecond = 0;
  double numBytesOutPerSecond = 0;
  double busyTimeMsPerSecond = 0;
  double idleTimeMsPerSecond = 0;
  double backPressuredTimeMsPerSecond = 0;
  std::map<std::pair<int, int>, double> emittedPerSecond;  // SubtaskSample::emitted, per second
  // Each operator's numRecordsInPerSecond and numRecordsOutPerSecond (Flink's operator
  // meters), from its built-in counts, as metrics of its own.
  std::vector<detail::MetricValue> operatorRates;
};

// Not thread-safe: the owner serializes calls.
class MetricsSampler {
 public:
  // Takes a new sample of `job`; rates cover the time since the last sample at least
  // 50 ms older.
  void update(const runtime::JobExecution& job);
  // Per vertex, per subtask; empty until two samples were taken.
  const std::vector<std::vector<SubtaskRates>>& rates() const { return rates_; }
  // Rates go to zero (the job ended).
  void clearRates() { rates_.clear(); }
  // The latest counters, per vertex, per subtask.
  const std::vector<std::vector<runtime::SubtaskSample>>& latest() const { return latest_; }

 private:
  // Per vertex, per subtask: what `current` counted per second since baseline_.
  std::vector<std::vector<SubtaskRates>> ratesSince(const std::vector<std::vector<runtime::SubtaskSample>>& current,
                                                    double seconds) const;

  std::vector<std::vector<runtime::SubtaskSample>> latest_;  // the newest sample
  std::vector<std::vector<runtime::SubtaskSample>> baseline_;  // what the rates are counted from
  std::chrono::steady_clock::time_point baselineTime_{};
  std::vector<std::vector<SubtaskRates>> rates_;
};

// Flink's thresholds on the back-pressured share of time: ok ≤ 10%, low ≤ 50%, high above.
const char* backPressureLevel(double ratio);

}  // namespace weir::rest
