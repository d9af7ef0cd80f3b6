// A job whose functions register their own metrics (MetricGroup): what the REST, /metrics
// and Web UI tests read back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "weir/weir.h"

namespace weir::testing {

// Counts the even numbers ("evens"), the odd ones in a key-value group
// ("parity.odd.records"), keeps the largest number seen as a gauge ("maxSeen"), every
// number in a histogram of the last 1,000 ("values") and marks each in a meter
// ("numbersPerSecond").
struct CountingMap : RichMapFunction<int64_t, int64_t> {
  void open() override {
    MetricGroup group = getRuntimeContext().getMetricGroup();
    evens = group.counter("evens");
    odds = group.addGroup("parity", "odd").counter("records");
    // Group keys Prometheus cannot take as labels as they are: one of weir's own labels,
    // and one that is not ASCII.
    group.addGroup("job_id", "mine").counter("clash").inc();
    group.addGroup("\xc3\xa5lder", "3").counter("age").inc();
    group.gauge("maxSeen", [this] { return max < 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(max); });
    values = group.histogram("values");
    numbers = group.meter("numbersPerSecond");
  }
  int64_t map(const int64_t& v) override {
    (v % 2 == 0 ? evens : odds).inc();
    values.update(v);
    numbers.markEvent();
    max = std::max(max, v);
    return v;
  }
  Counter evens, odds;
  Histogram values;
  Meter numbers;
  int64_t max = -1;
};

// Counts what it keeps (every multiple of 3), chained after CountingMap.
struct KeepingFilter : RichFilterFunction<int64_t> {
  void open() override { kept = getRuntimeContext().getMetricGroup().counter("kept"); }
  bool filter(const int64_t& v) override {
    if (v % 3 != 0) return false;
    kept.inc();
    return true;
  }
  Counter kept;
};

// numbers 0..count-1 -> "counting map" -> "keeping filter" -> discard, one chain at
// parallelism 2; subtask i maps the numbers [i * count / 2, (i + 1) * count / 2).
inline JobClient startUserMetricsJob(StreamExecutionEnvironment& env, int64_t count, const std::string& name) {
  env.setParallelism(2);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, count), WatermarkStrategy<int64_t>::noWatermarks(),
                 "numbers")
      .map(CountingMap())
      .name("counting map")
      .filter(KeepingFilter())
      .name("keeping filter")
      .sinkTo(DiscardingSink<int64_t>());
  return env.executeAsync(name);
}

}  // namespace weir::testing
