// The named metrics of one subtask (what MetricGroup registers): counters the subtask
// increments; gauges, meters and histograms its thread reads each metrics interval; and
// a copy of every value for the REST API and /metrics, taken from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/core/histogram_window.h"
#include "weir/detail/core/meter_window.h"

namespace weir::detail {

// Groups below an operator: a name and an empty value, or a key and its value.
using MetricGroups = std::vector<std::pair<std::string, std::string>>;

// kWatermark: an event-time watermark in ms, INT64_MIN before the first (a built-in gauge).
enum class MetricKind { kCounter, kGauge, kMeter, kHistogram, kWatermark };

// What a histogram shows, as of its subtask's last metrics interval: the count and sum of
// every value it was given, the rest over the values it keeps.
struct HistogramFigures {
  uint64_t count = 0;
  double sum = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p98 = 0, p99 = 0, p999 = 0;
};

// One metric as readers see it.
struct MetricValue {
  std::string operatorName;
  MetricGroups groups;
  std::string name;
  MetricKind kind = MetricKind::kGauge;
  double value = 0;            // a counter's count, a gauge's value, a meter's rate
  HistogramFigures histogram;  // a histogram's figures
  std::string operatorId;      // Flink's operator_id (32 hex digits), or empty
  std::string identifier() const;
};

// "<operator>.<groups>.<name>", a key-value group as "<key>.<value>" (Flink's REST id).
std::string metricIdentifier(const std::string& operatorName, const MetricGroups& groups, const std::string& name);

class MetricRegistry {
 public:
  // Any thread. The count lives as long as the registry.
  std::atomic<uint64_t>* counter(const std::string& operatorName, const MetricGroups& groups, const std::string& name);
  // The subtask's thread, as every call of `value` is.
  void gauge(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
             std::function<double()> value);
  // Any thread; the window and the meter live as long as the registry. A second call
  // with the name returns the first's, whatever its size or span.
  HistogramWindow* histogram(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
                             size_t windowSize);
  MeterWindow* meter(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
                     std::chrono::seconds timeSpan);
  // The runtime's own operator metrics (numRecordsIn, currentOutputWatermark, ...), whose
  // values it keeps elsewhere and any thread reads when asked: a counter whose count is
  // the sum of `counts`, and a watermark that is the least of `watermarks`. What they
  // point to must live until freeze(), which keeps their last values. A user metric of
  // the same name is refused.
  void builtInCounter(const std::string& operatorName, const std::string& name,
                      std::vector<const std::atomic<uint64_t>*> counts);
  // A built-in counter the operator increments itself (numLateRecordsDropped); it lives
  // as long as the registry, as a user counter does.
  std::atomic<uint64_t>* builtInCounter(const std::string& operatorName, const std::string& name);
  void builtInWatermark(const std::string& operatorName, const std::string& name,
                        std::vector<const std::atomic<int64_t>*> watermarks);
  // A built-in gauge of `value`, which shows no value while it is INT64_MIN.
  void builtInGauge(const std::string& operatorName, const std::string& name, const std::atomic<int64_t>* value);
  // The operator_id every metric of the operator carries.
  void setOperatorId(const std::string& operatorName, std::string id);
  // The subtask's thread: calls every gauge and keeps what it returned, and sums up
  // every meter and histogram as of `now`.
  void update(MeterWindow::Clock::time_point now = MeterWindow::Clock::now());
  // The subtask's thread, before its operators close: a last update (unless the subtask
  // failed, when its operators may be half made), then the gauges' functions are dropped
  // (they may point into the operators) and nothing is updated again.
  void freeze(bool lastRead = true);
  // The name an operator's metrics go under: its own, or "<name> (n)" for the n-th
  // operator of that name in the subtask's chain (two "Map"s do not share counters).
  std::string operatorScope(const std::string& operatorName);
  // Whether update() has anything to do: a gauge, meter or histogram is registered.
  bool needsUpdates() const { return needsUpdates_.load(std::memory_order_relaxed); }
  // Any thread: every metric with a value, in registration order.
  std::vector<MetricValue> values() const;

 private:
  struct Entry {
    std::string operatorName;
    MetricGroups groups;
    std::string name;
    MetricKind kind = MetricKind::kGauge;
    std::atomic<uint64_t> count{0};
    std::atomic<double> last{0};
    std::atomic<bool> hasValue{false};
    std::function<double()> read;               // a gauge's; the subtask's thread only
    bool failing = false;                       // the subtask's thread only: `read` threw last time
    std::unique_ptr<HistogramWindow> window;    // a histogram's
    HistogramFigures figures;                   // a histogram's; guarded by mutex_
    std::unique_ptr<MeterWindow> meter;         // a meter's
    // A built-in's sources; guarded by mutex_, cleared by freeze().
    bool builtIn = false;
    std::vector<const std::atomic<uint64_t>*> counts;
    std::vector<const std::atomic<int64_t>*> values;  // a watermark's or a gauge's
  };
  double valueOf(const Entry& e) const;  // under mutex_
  void read(MeterWindow::Clock::time_point now);  // the subtask's thread
  void readGauge(Entry& e);                        // the subtask's thread
  // The entry of this name, made of `kind` if there is none; an error naming it if it has
  // another kind, or is a built-in and the caller is not (or the reverse). Under mutex_.
  Entry& entry(const std::string& operatorName, const MetricGroups& groups, const std::string& name, MetricKind kind,
               bool builtIn = false);

  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // guarded by mutex_; never erased: addresses stay valid
  std::map<std::string, int> operatorNames_;  // guarded by mutex_: operators of each name so far
  std::map<std::string, std::string> operatorIds_;  // guarded by mutex_
  std::atomic<bool> needsUpdates_{false};
  bool frozen_ = false;  // the subtask's thread only
};

}  // namespace weir::detail
