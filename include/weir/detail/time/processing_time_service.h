// Processing-time timers of one subtask: operators register the times they want to be
// called at; the subtask's thread calls them, between batches, once its clock has passed
// those times. As in Flink, a timer for t fires when the clock reads t + 1 or later, so
// no record can still be given processing time t after it fired. Pending registrations
// are dropped at the end of input (as Flink quiesces its timer service), so a bounded
// job does not wait for timers in the future.
#pragma once

#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace weir::detail {

// An operator with processing-time timers.
class ProcessingTimeCallback {
 public:
  virtual ~ProcessingTimeCallback() = default;
  // The clock passed `time`: fire every timer at or before it.
  virtual void onProcessingTime(int64_t time) = 0;
};

class ProcessingTimeService {
 public:
  // Task thread only. The same target may be registered for several times; each
  // registration calls it once.
  void registerTimer(int64_t time, ProcessingTimeCallback* target) {
    if (!quiesced_) queue_.push({time, target});
  }
  bool empty() const { return queue_.empty(); }
  // The clock reads `now`: calls the targets of every registration before it, earliest
  // first, with now − 1, the last time the clock has passed.
  void fireDue(int64_t now) {
    while (!queue_.empty() && queue_.top().time < now) {
      ProcessingTimeCallback* target = queue_.top().target;
      queue_.pop();
      target->onProcessingTime(now - 1);
    }
  }
  // When the clock must read for the earliest registration to be due; only when !empty().
  int64_t nextDue() const {
    int64_t t = queue_.top().time;
    return t == std::numeric_limits<int64_t>::max() ? t : t + 1;
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
