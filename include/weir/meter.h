// A rate an operator measures (Flink's Meter over its MeterView):
// getRuntimeContext().getMetricGroup().meter("eventsPerSecond") counts events and shows
// how many came per second over the last 60 seconds.
#pragma once

#include <cstdint>

namespace weir {

namespace detail {
class MeterWindow;
}

// One meter of a subtask's metric group. Mark events from the subtask's own thread.
class Meter {
 public:
  Meter() = default;  // not attached to a subtask: counts nothing
  explicit Meter(detail::MeterWindow* window) : window_(window) {}
  void markEvent() const { markEvent(1); }
  void markEvent(uint64_t n) const;
  // Events per second over the meter's time span (60 s unless registered with another),
  // or over the time since it was registered while that is shorter. The subtask's thread.
  double getRate() const;
  // Every event marked so far. Any thread.
  uint64_t getCount() const;

 private:
  detail::MeterWindow* window_ = nullptr;
};

}  // namespace weir
