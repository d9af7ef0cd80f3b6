// The named metrics of one subtask (what MetricGroup registers): counters the subtask
// increments, gauges its thread reads each metrics interval, and a copy of every value
// for the REST API and /metrics, taken from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace weir::detail {

// Groups below an operator: a name and an empty value, or a key and its value.
using MetricGroups = std::vector<std::pair<std::string, std::string>>;

// One metric as readers see it.
struct MetricValue {
  std::string operatorName;
  MetricGroups groups;
  std::string name;
  bool counter = false;  // a count that only grows; otherwise a gauge
  double value = 0;
  // "<operator>.<groups>.<name>", a key-value group as "<key>.<value>" (Flink's REST id).
  std::string identifier() const;
};

class MetricRegistry {
 public:
  // Any thread. The count lives as long as the registry.
  std::atomic<uint64_t>* counter(const std::string& operatorName, const MetricGroups& groups, const std::string& name);
  // The subtask's thread, as every call of `value` is.
  void gauge(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
             std::function<double()> value);
  // The subtask's thread: calls every gauge and keeps what it returned.
  void updateGauges();
  // The subtask's thread, before its operators close: a last update (unless the subtask
  // failed, when its operators may be half made), then the gauges' functions are dropped
  // (they may point into the operators).
  void freeze(bool lastRead = true);
  // The name an operator's metrics go under: its own, or "<name> (n)" for the n-th
  // operator of that name in the subtask's chain (two "Map"s do not share counters).
  std::string operatorScope(const std::string& operatorName);
  bool hasGauges() const { return hasGauges_.load(std::memory_order_relaxed); }
  // Any thread: every metric with a value, in registration order.
  std::vector<MetricValue> values() const;

 private:
  struct Entry {
    std::string operatorName;
    MetricGroups groups;
    std::string name;
    bool counter = false;
    std::atomic<uint64_t> count{0};
    std::atomic<double> last{0};
    std::atomic<bool> hasValue{false};
    std::function<double()> read;  // the subtask's thread only
    bool failing = false;          // the subtask's thread only: `read` threw last time
  };
  void readGauges();  // the subtask's thread
  Entry* find(const std::string& operatorName, const MetricGroups& groups, const std::string& name);  // under mutex_

  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // guarded by mutex_; never erased: addresses stay valid
  std::map<std::string, int> operatorNames_;  // guarded by mutex_: operators of each name so far
  std::atomic<bool> hasGauges_{false};
  bool frozen_ = false;  // the subtask's thread only
};

}  // namespace weir::detail
