// Processing time: where weir reads "now" for state TTL (and, later, processing-time
// timers). A job uses the system clock unless a test injects a ManualClock, so tests
// advance time instead of sleeping.
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
};

class SystemClock final : public Clock {
 public:
  int64_t currentTimeMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
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
