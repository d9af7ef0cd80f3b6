#pragma once

#include <absl/container/flat_hash_map.h>

#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/sorting_data_input.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/key_group.h"
#include "weir/keyed_process_function.h"

namespace weir::detail {

// What keyed operators with a function share: the keyed state of their subtask, the
// current key (of the function's context and its state) and timers: event-time ones fire
// in time order when the watermark passes them (before it is passed on), processing-time
// ones when the subtask's clock does. Each operator calls advanceWatermark and
// advanceProcessingTime with its function's OnTimerContext.
//
// In a batch job an operator that sortsInputInBatch() takes its input grouped by key
// (SortingDataInput) when the final watermark comes, on the heap whatever the job's
// backend: each key's records, then its timers, then its state is dropped (Flink's
// batch state backend and timer service; docs/batch.md).
template <class T, class OUT, class K, class KeySelector, class F>
class KeyedFunctionOperator : public CollectingOperator<T, OUT, F>,
                              protected KeyedTimers<K>,
                              protected ProcessingTimeCallback {
 public:
  KeyedFunctionOperator(KeySelector keySelector, F fn)
      : CollectingOperator<T, OUT, F>(std::move(fn)), keySelector_(std::move(keySelector)) {}

  void open() override {
    RuntimeContext& context = this->context();
    this->callUser([&] {
      const bool sorting = sortsInputInBatch() && sortedInput_.open(context);
      state_ = sorting ? makeBatchKeyedStateBackend<K>(context) : makeKeyedStateBackend<K>(context);
      if (auto* restored = context.restored()) state_->setRestored(*restored);
      const KeyGroupRange range = computeKeyGroupRangeForOperatorIndex(
          context.getMaxNumberOfParallelSubtasks(), context.getNumberOfParallelSubtasks(), context.getIndexOfThisSubtask());
      auto keyGroupOf = [maxParallelism = context.getMaxNumberOfParallelSubtasks()](const K& key) {
        return assignToKeyGroup(KeyHash<K>{}(key), maxParallelism);
      };
      timers_.open(*state_, kTimersState, range, keyGroupOf);
      processingTimers_.open(*state_, kProcessingTimersState, range, keyGroupOf);
      if (auto next = processingTimers_.earliest()) requestCallback(*next);
    });
    context.setKeyedStateBackend(state_.get());
    CollectingOperator<T, OUT, F>::open();
  }

  std::string checkpointUnsupportedReason() const override {
    if constexpr (!Serializable<K>)
      return "its key type " + demangledTypeName(typeid(K)) + " has no weir::Serializer, which checkpoints need";
    return "";
  }
  // Keyed state and timers, then what the base writes (function, operator state).
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    CollectingOperator<T, OUT, F>::snapshotState(checkpointId, timestamp, out);
    state_->snapshot(checkpointId, out);
    timers_.snapshot(out);
    processingTimers_.snapshot(out);
  }
  void close() override {
    CollectingOperator<T, OUT, F>::close();
    this->context().setKeyedStateBackend(nullptr);
    timers_.close();
    processingTimers_.close();
    state_.reset();
  }

 protected:
  // Calls process(record, collector) for each record with its key current.
  template <class Context, class Process>
  void forEachKeyed(std::span<T> records, Timestamps timestamps, Context& ctx, Process process) {
    if constexpr (kSortable<T, K>) {
      if (sortedInput_.buffering()) {  // batch: processed by key at the end
        this->callUser([&] { sortedInput_.add(records, timestamps, [&](T& r) { return std::invoke(keySelector_, r); }); });
        return;
      }
    }
    this->forEachRecord(records, timestamps, ctx, [&](T& r, Collector<OUT>& collector) {
      key_ = std::invoke(keySelector_, r);
      state_->setCurrentKey(key_);
      process(r, collector);
    });
    state_->clearCurrentKey();
  }

  // Fires the timers the watermark reached, then passes it on. In a batch job the final
  // watermark also fires every processing-time timer: its processing time jumps to the
  // end of time with its input, as in Flink (docs/batch.md).
  template <class OnTimerContext>
  void advanceWatermark(int64_t watermark, OnTimerContext& ctx) {
    if constexpr (kSortable<T, K>) {
      if (watermark == kMaxWatermark && sortedInput_.buffering()) processSortedInput(ctx);
    }
    watermark_ = watermark;
    if (watermark == kMaxWatermark && this->context_->isBatch()) fireAtEndOfTime(ctx);
    else fireTimers(timers_, TimeDomain::EVENT_TIME, watermark, ctx);
    this->forwardWatermark(watermark);
  }
  // Fires the processing-time timers up to `time` (the clock passed it); what they emit
  // has no timestamp.
  template <class OnTimerContext>
  void advanceProcessingTime(int64_t time, OnTimerContext& ctx) {
    if (time < callbackAt_) return;  // superseded by an earlier callback: nothing is due
    callbackAt_ = std::numeric_limits<int64_t>::max();
    fireTimers(processingTimers_, TimeDomain::PROCESSING_TIME, time, ctx);
    if (auto next = processingTimers_.earliest()) requestCallback(*next);
  }

  // Whether a batch job gives this operator its input grouped by key.
  virtual bool sortsInputInBatch() const { return false; }
  // Batch: whether input waits to be processed by key (until the final watermark).
  bool hasBufferedInput() const { return sortedInput_.buffering(); }

  // KeyedTimers
  int64_t currentWatermark() const override { return watermark_; }
  int64_t currentProcessingTime() const override { return this->context_->clock()->currentTimeMillis(); }
  const K& currentKey() const override { return key_; }
  TimeDomain timerDomain() const override { return firing_; }
  void registerEventTimeTimer(int64_t time) override { timers_.add(key_, time); }
  void deleteEventTimeTimer(int64_t time) override { timers_.remove(key_, time); }
  void registerProcessingTimeTimer(int64_t time) override {
    if (endOfTime_) return;
    processingTimers_.add(key_, time);
    if (!this->context_->isBatch()) requestCallback(time);  // batch: at the end of the input
  }
  void deleteProcessingTimeTimer(int64_t time) override { processingTimers_.remove(key_, time); }

 private:
  // Batch: processes the sorted input one key at a time. At the end of each key its
  // timers fire, with the watermark at the end of time, and its state goes; the next key
  // starts again with no watermark (Flink's BatchExecutionInternalTimeService).
  template <class OnTimerContext>
  void processSortedInput(OnTimerContext& ctx) {
    sortedInput_.drain([&](std::span<T> records, Timestamps timestamps) { this->processBatch(records, timestamps); },
                       [&](const K& key) {
                         watermark_ = kMaxWatermark;
                         fireAtEndOfTime(ctx);
                         endOfTime_ = false;
                         key_ = key;
                         state_->setCurrentKey(key_);
                         state_->dropCurrentKeyState();
                         state_->clearCurrentKey();
                         watermark_ = kMinWatermark;
                       });
  }
  // Batch: every timer left fires (docs/batch.md).
  template <class OnTimerContext>
  void fireAtEndOfTime(OnTimerContext& ctx) {
    detail::fireAtEndOfTime(endOfTime_, timers_, [&](bool processingTime) {
      if (processingTime) fireTimers(processingTimers_, TimeDomain::PROCESSING_TIME, kMaxWatermark, ctx);
      else fireTimers(timers_, TimeDomain::EVENT_TIME, kMaxWatermark, ctx);
    });
  }

  template <class OnTimerContext>
  void fireTimers(TimerQueue<K>& queue, TimeDomain domain, int64_t upTo, OnTimerContext& ctx) {
    firing_ = domain;
    this->collecting([&](Collector<OUT>& collector) {
      int64_t time;
      while (queue.pop(upTo, key_, time)) {
        state_->setCurrentKey(key_);
        if (domain == TimeDomain::EVENT_TIME) {
          this->stamp(collector, time);
        } else {
          collector.setTimestamp(false, 0);
          this->sideOutputs_.setTimestamp(false, 0);
        }
        ctx.setTimestamp(time);
        this->fn_.onTimer(time, ctx, collector);
      }
    });
    state_->clearCurrentKey();
  }

  // Asks the subtask to call back at `time`, unless it will call earlier: one callback
  // for all timers, not one per timer. callbackAt_ is never later than the earliest
  // timer, so a callback before it was superseded and finds nothing due.
  void requestCallback(int64_t time) {
    if (time >= callbackAt_) return;
    callbackAt_ = time;
    this->context().processingTimeService().registerTimer(time, this);
  }

 protected:
  KeySelector keySelector_;
  K key_{};
  std::unique_ptr<KeyedStateBackend<K>> state_;
  int64_t watermark_ = INT64_MIN;

 private:
  TimerQueue<K> timers_;
  TimerQueue<K> processingTimers_;
  int64_t callbackAt_ = std::numeric_limits<int64_t>::max();  // the earliest callback asked for
  bool endOfTime_ = false;  // batch: the processing-time timers fired
  SortingDataInput<T, K> sortedInput_;  // batch, until the final watermark
  TimeDomain firing_ = TimeDomain::EVENT_TIME;
};

}  // namespace weir::detail
