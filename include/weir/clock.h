// Processing time: where weir reads "now" for state TTL, processing-time timers and
// processing-time windows. A job uses the system clock unless a test injects a
// ManualClock, so tests advance time instead of sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace weir {

// Read by every task thread (and RocksDB's compaction threads): implementations must be
// safe to call concurrently.
class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the epoch.
  virtual int64_t currentTimeMillis() const = 0;
  // How long a subtask waiting for a processing-time timer at `millis` may sleep before
  // it reads the clock again (new records wake it sooner). A clock that can be moved at
  // any moment is read again every millisecond, which is the default.
  virtual std::chrono::milliseconds sleepUntil(int64_t millis) const {
    (void)millis;
    return std::chrono::milliseconds(1);
  }
};

class SystemClock final : public Clock {
 public:
  int64_t currentTimeMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  // Until the timer is due, but at most 100 ms, so a step of the system clock delays a
  // timer by no more than that.
  std::chrono::milliseconds sleepUntil(int64_t millis) const override {
    int64_t wait = millis - currentTimeMillis();
    return std::chrono::milliseconds(wait < 0 ? 0 : wait > 100 ? 100 : wait);
  }
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t startMillis = 0) : now_(startMillis) {}
  int64_t currentTimeMillis() const override { return now_.load(std::memory_order_acquire); }
  void setTime(int64_t millis) { now_.store(millis, std::memory_order_release); }
  void advance(std::chrono::milliseconds by) { now_.fetch_add(by.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace weir
