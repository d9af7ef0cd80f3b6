// What the window tests feed their jobs: keyed, timestamped events, and a punctuated
// watermark generator whose watermarks depend only on the order of the stream.
#pragma once

#include <algorithm>
#include <memory>
#include <tuple>

#include "weir/weir.h"

namespace weir::event_time_test {

struct Event {
  int64_t key = 0;
  int64_t time = 0;
  int64_t value = 0;
  bool operator<(const Event& o) const { return std::tie(key, time, value) < std::tie(o.key, o.time, o.value); }
  bool operator==(const Event&) const = default;
};
WEIR_STRUCT(Event, key, time, value);

// After every record the watermark is the highest timestamp so far − bound − 1; the
// source sends it after the record's batch.
struct Punctuated : WatermarkGenerator<Event> {
  explicit Punctuated(int64_t b) : bound(b) {}
  int64_t bound;
  int64_t highest = kMinWatermark + 1'000'000;
  void onEvent(const Event&, int64_t t, WatermarkOutput& out) override {
    highest = std::max(highest, t);
    out.emitWatermark(highest - bound - 1);
  }
  void onPeriodicEmit(WatermarkOutput&) override {}
};

inline WatermarkStrategy<Event> punctuated(int64_t bound) {
  return WatermarkStrategy<Event>::forGenerator([bound] { return std::make_unique<Punctuated>(bound); })
      .withTimestampAssigner([](const Event& e) { return e.time; });
}

}  // namespace weir::event_time_test
