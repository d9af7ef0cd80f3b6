#include "time/watermark_valve.h"

#include <algorithm>

namespace weir::time {

WatermarkValve::WatermarkValve(int inputs, detail::OutputBase* out, std::atomic<int64_t>* published)
    : channels_(static_cast<size_t>(inputs)), out_(out), published_(published) {}

void WatermarkValve::inputWatermark(int input, int64_t watermark) {
  auto& c = channels_[static_cast<size_t>(input)];
  if (watermark <= c.watermark) return;  // a channel's watermark never goes back
  c.watermark = watermark;
  if (c.active && c.watermark >= lastOutput_) c.aligned = true;
  advance();
}

void WatermarkValve::inputIdleness(int input, bool idle) {
  auto& c = channels_[static_cast<size_t>(input)];
  if (idle == !c.active) return;
  c.active = !idle;
  if (idle) {
    c.aligned = false;
    bool anyActive = std::any_of(channels_.begin(), channels_.end(), [](const Channel& ch) { return ch.active; });
    if (!anyActive) {
      // Everything is idle: release what the channels got to, then say so downstream.
      int64_t highest = INT64_MIN;
      for (auto& ch : channels_) highest = std::max(highest, ch.watermark);
      if (highest > lastOutput_) {
        lastOutput_ = highest;
        if (published_) published_->store(lastOutput_, std::memory_order_relaxed);
        out_->processWatermark(lastOutput_);
      }
      idle_ = true;
      out_->processIdleness(true);
    } else {
      advance();
    }
  } else {
    // A channel that comes back behind the output waits until it catches up.
    c.aligned = c.watermark >= lastOutput_;
    if (idle_) {
      idle_ = false;
      out_->processIdleness(false);
    }
  }
}

void WatermarkValve::advance() {
  int64_t lowest = INT64_MAX;
  bool any = false;
  for (auto& c : channels_) {
    if (c.active && c.aligned) {
      lowest = std::min(lowest, c.watermark);
      any = true;
    }
  }
  if (any && lowest > lastOutput_) {
    lastOutput_ = lowest;
    if (published_) published_->store(lastOutput_, std::memory_order_relaxed);
    out_->processWatermark(lastOutput_);
  }
}

}  // namespace weir::time
