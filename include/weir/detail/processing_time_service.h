// Processing-time timers of one subtask: operators register the times they want to be
// called at; the subtask's thread calls them, between batches, once its clock reaches
// those times. Pending registrations are dropped at the end of input (as Flink quiesces
// its timer service), so a bounded job does not wait for timers in the future.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace weir::detail {

// An operator with processing-time timers.
class ProcessingTimeCallback {
 public:
  virtual ~ProcessingTimeCallback() = default;
  // The clock reads `now`: fire every timer at or before it.
  virtual void onProcessingTime(int64_t now) = 0;
};

class ProcessingTimeService {
 public:
  // Task thread only. The same target may be registered for several times; each
  // registration calls it once.
  void registerTimer(int64_t time, ProcessingTimeCallback* target) {
    if (!quiesced_) queue_.push({time, target});
  }
  bool empty() const { return queue_.empty(); }
  // The earliest registered time; only when !empty().
  int64_t nextTime() const { return queue_.top().time; }
  // Calls the targets of every registration at or before `now`, earliest first.
  void fireDue(int64_t now) {
    while (!queue_.empty() && queue_.top().time <= now) {
      ProcessingTimeCallback* target = queue_.top().target;
      queue_.pop();
      target->onProcessingTime(now);
    }
  }
  // No timer fires any more (the input ended, or the subtask is stopping).
  void quiesce() {
    quiesced_ = true;
    queue_ = {};
  }

 private:
  struct Registration {
    int64_t time;
    ProcessingTimeCallback* target;
    bool operator>(const Registration& o) const { return time > o.time; }
  };
  std::priority_queue<Registration, std::vector<Registration>, std::greater<>> queue_;
  bool quiesced_ = false;
};

}  // namespace weir::detail
