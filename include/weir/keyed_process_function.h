// Processes the records of a keyed stream with access to the key and to event-time and
// processing-time timers (Flink's KeyedProcessFunction).
#pragma once

#include <cstdint>
#include <optional>

#include "weir/functions.h"

namespace weir {

namespace detail {
class JoinContextAccess;
// What the keyed process operator offers its function's contexts.
template <class K>
class KeyedTimers {
 public:
  virtual ~KeyedTimers() = default;
  virtual int64_t currentWatermark() const = 0;
  virtual int64_t currentProcessingTime() const = 0;
  virtual void registerEventTimeTimer(int64_t time) = 0;
  virtual void deleteEventTimeTimer(int64_t time) = 0;
  virtual void registerProcessingTimeTimer(int64_t time) = 0;
  virtual void deleteProcessingTimeTimer(int64_t time) = 0;
  virtual const K& currentKey() const = 0;
  // Of the timer firing now.
  virtual TimeDomain timerDomain() const = 0;
};
}  // namespace detail

template <class K, class IN, class OUT>
class KeyedProcessFunction : public RichFunction {
 public:
  using KeyType = K;
  using InputType = IN;
  using OutputType = OUT;

  // Timers of the current key. One timer per key, domain and time: registering it again
  // does nothing. Event-time timers fire, in time order, when the watermark reaches them;
  // processing-time timers once the job's clock has passed them (a timer for t when the
  // clock reads t + 1, between batches, never after the end of the input, as in Flink). Both are part of checkpoints; a restored
  // processing-time timer whose time has passed fires at once.
  class TimerService {
   public:
    explicit TimerService(detail::KeyedTimers<K>* timers) : timers_(timers) {}
    int64_t currentWatermark() const { return timers_->currentWatermark(); }
    // The job's processing-time clock (env.setClock), in ms since the epoch.
    int64_t currentProcessingTime() const { return timers_->currentProcessingTime(); }
    void registerEventTimeTimer(int64_t time) { timers_->registerEventTimeTimer(time); }
    void deleteEventTimeTimer(int64_t time) { timers_->deleteEventTimeTimer(time); }
    void registerProcessingTimeTimer(int64_t time) { timers_->registerProcessingTimeTimer(time); }
    void deleteProcessingTimeTimer(int64_t time) { timers_->deleteProcessingTimeTimer(time); }

   private:
    detail::KeyedTimers<K>* timers_;
  };

  class Context {
   public:
    Context(detail::KeyedTimers<K>* timers, detail::SideOutputs* sideOutputs)
        : timerService_(timers), timers_(timers), sideOutputs_(sideOutputs) {}
    // The record's event timestamp, or the timer's time in onTimer.
    std::optional<int64_t> timestamp() const { return timestamp_; }
    const K& getCurrentKey() const { return timers_->currentKey(); }
    TimerService& timerService() { return timerService_; }
    template <class X>
    void output(const OutputTag<X>& tag, X value) {
      sideOutputs_->collect(tag, std::move(value));
    }
    void setTimestamp(std::optional<int64_t> timestamp) { timestamp_ = timestamp; }

   protected:
    const detail::KeyedTimers<K>* timers() const { return timers_; }

   private:
    friend class detail::JoinContextAccess;
    TimerService timerService_;
    detail::KeyedTimers<K>* timers_;
    detail::SideOutputs* sideOutputs_;
    std::optional<int64_t> timestamp_;
  };

  class OnTimerContext : public Context {
   public:
    using Context::Context;
    TimeDomain timeDomain() const { return this->timers()->timerDomain(); }
  };

  virtual void processElement(const IN& value, Context& ctx, Collector<OUT>& out) = 0;
  // A timer of the current key fired; what an event-time timer emits carries `timestamp`,
  // what a processing-time timer emits carries no timestamp (as in Flink).
  virtual void onTimer(int64_t timestamp, OnTimerContext& ctx, Collector<OUT>& out) {}
};

}  // namespace weir
