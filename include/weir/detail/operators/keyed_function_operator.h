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
// batch state backend and timer service; docs/batch.md). A two-input operator whose
// second input is keyed too (IN2, not void) takes both inputs' records of a key
// together, in one timestamp order.
template <class T, class OUT, class K, class KeySelector, class F, class IN2 = void>
class KeyedFunctionOperator : public CollectingOperator<T, OUT, F>,
                              protected KeyedTimers<K>,
                              protected ProcessingTimeCallback {
  using SecondRecord = std::conditional_t<std::is_void_v<IN2>, T, IN2>;  // T: none

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
  void endInput() override {
    if (hasBufferedInput()) this->processWatermark(kMaxWatermark);  // the input ended without it
    CollectingOperator<T, OUT, F>::endInput();
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
    forEachKeyedOf<1>(records, timestamps, keySelector_, ctx, process);
  }
  // The same for the second input's records, keyed by `selector`.
  template <class Selector, class Context, class Process>
  void forEachKeyedSecond(std::span<SecondRecord> records, Timestamps timestamps, const Selector& selector, Context& ctx,
                          Process process) {
    forEachKeyedOf<2>(records, timestamps, selector, ctx, process);
  }

  // Fires the timers the watermark reached, then passes it on. In a batch job the final
  // watermark also fires every processing-time timer: its processing time jumps to the
  // end of time with its input, as in Flink (docs/batch.md).
  template <class OnTimerContext>
  void advanceWatermark(int64_t watermark, OnTimerContext& ctx) {
    if constexpr (kSortable<T, K, IN2>) {
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
  // Processes the second input's records: a two-input operator with IN2 must.
  virtual void processSortedSecond(std::span<SecondRecord>, Timestamps) {
    throw Error(ErrorCode::kInternal, "a two-input keyed operator sorted its second input and cannot process it");
  }

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
  // Records of input `kInput`, keyed by `selector`: in a batch job to the sorted input
  // (processed by key at the end), else processed with their key current.
  template <int kInput, class R, class Selector, class Context, class Process>
  void forEachKeyedOf(std::span<R> records, Timestamps timestamps, const Selector& selector, Context& ctx,
                      Process& process) {
    if constexpr (kSortable<T, K, IN2>) {
      if (sortedInput_.buffering()) {
        this->callUser([&] {
          auto keyOf = [&](R& r) { return std::invoke(selector, r); };
          if constexpr (kInput == 1) sortedInput_.add(records, timestamps, keyOf);
          else sortedInput_.addSecond(records, timestamps, keyOf);
        });
        return;
      }
    }
    this->forEachRecord(records, timestamps, ctx, [&](R& r, Collector<OUT>& collector) {
      key_ = std::invoke(selector, r);
      state_->setCurrentKey(key_);
      process(r, collector);
    });
    state_->clearCurrentKey();
  }

  // Batch: processes the sorted input one key at a time. At the end of each key its
  // timers fire, with the watermark at the end of time, and its state goes; the next key
  // starts again with no watermark (Flink's BatchExecutionInternalTimeService).
  template <class OnTimerContext>
  void processSortedInput(OnTimerContext& ctx) {
    auto first = [&](std::span<T> records, Timestamps timestamps) { this->processBatch(records, timestamps); };
    auto keyEnd = [&](const K& key) {
      watermark_ = kMaxWatermark;
      fireAtEndOfTime(ctx);
      endOfTime_ = false;
      state_->dropStateOf(key);
      watermark_ = kMinWatermark;
    };
    if constexpr (std::is_void_v<IN2>) {
      sortedInput_.drain(first, keyEnd);
    } else {
      sortedInput_.drain(
          first, [&](std::span<IN2> records, Timestamps timestamps) { processSortedSecond(records, timestamps); }, keyEnd);
    }
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
  SortingDataInput<T, K, IN2> sortedInput_;  // batch, until the final watermark
  TimeDomain firing_ = TimeDomain::EVENT_TIME;
};

}  // namespace weir::detail
