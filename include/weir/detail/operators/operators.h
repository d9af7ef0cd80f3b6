// The built-in one-input operators. Each loops over a batch and calls the user function
// inline: one virtual call per batch, none per record.
#pragma once

#include <absl/container/flat_hash_map.h>


#include "weir/detail/operators/function_traits.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/key_group.h"
#include "weir/keyed_process_function.h"

namespace weir::detail {

template <class IN, class OUT, class F>
class StreamMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void emitBatch(std::span<IN> records, Timestamps timestamps) override {
    if constexpr (std::is_same_v<IN, OUT>) {
      // The batch is ours to consume: map it in place and pass it on.
      try {
        for (auto& r : records) r = callMap(this->fn_, std::move(r));
      } catch (...) {
        this->rethrowAsOperatorFailure();
      }
      this->out_->emitBatch(records, timestamps);  // one output per input: same timestamps
    } else {
      this->out_->emitBatch(mapInto(records), timestamps);
    }
  }
  bool emitSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (MapObject<F, IN> || std::invocable<F&, const IN&>) {
      std::span<OUT> mapped = mapInto(records);
      timestamps_.assign(timestamps.begin(), timestamps.end());
      this->out_->emitBatch(mapped, timestamps_);
      return true;
    } else {
      return false;
    }
  }

 private:
  // Maps into buffer_, moving from records unless they are const.
  template <class R>
  std::span<OUT> mapInto(std::span<R> records) {
    auto map = [&](size_t i) {
      if constexpr (std::is_const_v<R>) return callMap(this->fn_, records[i]);
      else return callMap(this->fn_, std::move(records[i]));
    };
    try {
      return fillBuffer(buffer_, records.size(), map);
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
  }

  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;  // of a shared batch
};

// Keeps the records the predicate accepts, compacting the batch in place (or, for a
// shared batch, copying them out).
template <class T, class F>
class StreamFilter final : public UdfOperator<T, T, F> {
 public:
  using UdfOperator<T, T, F>::UdfOperator;
  void emitBatch(std::span<T> records, Timestamps timestamps) override {
    size_t kept = 0;
    const bool stamped = !timestamps.empty();
    try {
      if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= 16) {
        // Branch-free compaction: copy every record, advance only past kept ones.
        for (size_t i = 0; i < records.size(); ++i) {
          bool keep = callFilter(this->fn_, records[i]);
          records[kept] = records[i];
          if (stamped) timestamps[kept] = timestamps[i];
          kept += keep ? 1 : 0;
        }
      } else {
        for (size_t i = 0; i < records.size(); ++i) {
          if (callFilter(this->fn_, records[i])) {
            if (kept != i) {
              records[kept] = std::move(records[i]);
              if (stamped) timestamps[kept] = timestamps[i];
            }
            ++kept;
          }
        }
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if (kept > 0) this->out_->emitBatch(records.first(kept), stamped ? timestamps.first(kept) : timestamps);
  }
  bool emitSharedBatch(std::span<const T> records, std::span<const int64_t> timestamps) override {
    kept_.clear();
    keptTimestamps_.clear();
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!callFilter(this->fn_, records[i])) continue;
        kept_.push_back(records[i]);
        if (!timestamps.empty()) keptTimestamps_.push_back(timestamps[i]);
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if (!kept_.empty()) this->out_->emitBatch(kept_, keptTimestamps_);
    return true;
  }

 private:
  std::vector<T> kept_;  // of a shared batch
  std::vector<int64_t> keptTimestamps_;
};

template <class IN, class OUT, class F>
class StreamFlatMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void emitBatch(std::span<IN> records, Timestamps timestamps) override { run(records, timestamps); }
  bool emitSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (FlatMapObject<F, IN, OUT> || std::invocable<F&, const IN&, Collector<OUT>&>) {
      run(records, timestamps);
      return true;
    } else {
      return false;
    }
  }

 private:
  // Calls the function on each record, moving from it unless it is const.
  template <class R>
  void run(std::span<R> records, std::span<const int64_t> timestamps) {
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>);
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!timestamps.empty()) collector.setTimestamp(true, timestamps[i]);
        if constexpr (std::is_const_v<R>) callFlatMap(this->fn_, records[i], collector);
        else callFlatMap(this->fn_, std::move(records[i]), collector);
      }
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
  }

  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

// An operator whose function emits through a Collector and to side outputs: owns the
// buffers, discards what a failing call had collected, stamps outputs with the time of
// the record or timer that made them, and passes events on to the side outputs too.
template <class IN, class OUT, class F>
class CollectingOperator : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;

  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    sideOutputs_.add(tagIndex, std::move(out));
  }
  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }
  void emitIdleness(bool idle) override {
    sideOutputs_.emitIdleness(idle);
    this->out_->emitIdleness(idle);
  }

 protected:
  // Runs `body(collector)`; whatever it throws fails the operator.
  template <class Body>
  void collecting(Body&& body) {
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>);
    try {
      body(collector);
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
    sideOutputs_.flush();
  }
  // Calls call(record, collector) for each record, inside collecting(); what it emits,
  // and ctx.timestamp(), carry the record's timestamp.
  template <class R, class Context, class Call>
  void forEachRecord(std::span<R> records, std::span<const int64_t> timestamps, Context& ctx, Call call) {
    collecting([&](Collector<OUT>& collector) {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!timestamps.empty()) {
          stamp(collector, timestamps[i]);
          ctx.setTimestamp(timestamps[i]);
        }
        call(records[i], collector);
      }
    });
  }
  // What is collected next carries `timestamp`.
  void stamp(Collector<OUT>& collector, int64_t timestamp) {
    collector.setTimestamp(true, timestamp);
    sideOutputs_.setTimestamp(true, timestamp);
  }
  void forwardWatermark(int64_t watermark) {
    sideOutputs_.emitWatermark(watermark);
    this->out_->emitWatermark(watermark);
  }

  SideOutputs sideOutputs_;

 private:
  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

// Runs a ProcessFunction (or a lambda with its signature), with side outputs.
template <class IN, class OUT, class F>
class ProcessOperator final : public CollectingOperator<IN, OUT, F> {
 public:
  using CollectingOperator<IN, OUT, F>::CollectingOperator;
  using Context = typename ProcessFunction<IN, OUT>::Context;

  void emitBatch(std::span<IN> records, Timestamps timestamps) override { run(records, timestamps); }
  bool emitSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (kReadsConst) {
      run(records, timestamps);
      return true;
    } else {
      return false;
    }
  }

  void emitWatermark(int64_t watermark) override {
    watermark_ = watermark;
    this->forwardWatermark(watermark);
  }

 private:
  static constexpr bool kReadsConst =
      requires(F& f, const IN& r, Context& c, Collector<OUT>& out) { f.processElement(r, c, out); } ||
      std::invocable<F&, const IN&, Context&, Collector<OUT>&>;

  template <class R>
  void run(std::span<R> records, std::span<const int64_t> timestamps) {
    Context ctx(&this->sideOutputs_, &watermark_, this->context().clock().get());
    this->forEachRecord(records, timestamps, ctx, [&](R& r, Collector<OUT>& collector) {
      if constexpr (requires { this->fn_.processElement(r, ctx, collector); }) {
        this->fn_.processElement(r, ctx, collector);
      } else {
        std::invoke(this->fn_, r, ctx, collector);
      }
    });
  }

  int64_t watermark_ = INT64_MIN;
};

// Rolling reduce per key: emits the new aggregate for every record (KeyedStream::reduce,
// sum, min, max). Keeps one value per key: on the heap backend in the operator's own
// flat hash table, on RocksDB as a ValueState in RocksDB. Both checkpoint the same
// entries under "_rolling", so either backend restores the other's checkpoints.
template <class T, class K, class KeySelector, class F>
class KeyedReduceOperator final : public UdfOperator<T, T, F> {
 public:
  KeyedReduceOperator(KeySelector keySelector, F fn)
      : UdfOperator<T, T, F>(std::move(fn)), keySelector_(std::move(keySelector)) {}

  void open() override {
    UdfOperator<T, T, F>::open();
    if constexpr (Serializable<K> && Serializable<T>) this->callUser([&] { openValues(); });
  }
  void close() override {
    UdfOperator<T, T, F>::close();
    state_ = nullptr;
    store_.reset();
  }

  std::string checkpointUnsupportedReason() const override {
    if constexpr (!Serializable<K> || !Serializable<T>)
      return "its key type " + demangledTypeName(typeid(K)) + " or value type " + demangledTypeName(typeid(T)) +
             " has no weir::Serializer, which checkpoints need";
    return "";
  }
  // The running value of every key, copied out.
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    UdfOperator<T, T, F>::snapshotState(checkpointId, timestamp, out);
    if (store_) {
      store_->snapshot(checkpointId, out);
      return;
    }
    if constexpr (Serializable<K> && Serializable<T>) {
      std::vector<OwnedStateEntry> entries;
      entries.reserve(values_.size());
      int maxParallelism = this->context().getMaxNumberOfParallelSubtasks();
      DataOutput key, value;
      for (const auto& [k, v] : values_) {
        key.clear();
        value.clear();
        Serializer<K>::serialize(k, key);
        Serializer<T>::serialize(v, value);
        entries.push_back({assignToKeyGroup(KeyHash<K>{}(k), maxParallelism), key.data(), value.data()});
      }
      out.keyed[kRollingState] = std::make_unique<MaterializedSnapshot>(std::move(entries));
    }
  }

  void emitBatch(std::span<T> records, Timestamps timestamps) override {
    if (state_ != nullptr) {
      buffer_.clear();
      buffer_.reserve(records.size());
      reduceInStore(records);
      this->out_->emitBatch(buffer_, timestamps);
      return;
    }
    std::span<T> results;
    try {
      std::span<Stored<K>> keys =
          fillBuffer(keys_, records.size(), [&](size_t i) -> Stored<K> { return std::invoke(keySelector_, records[i]); });
      // The table is larger than the cache: fetch a few records ahead so lookups overlap.
      constexpr size_t kAhead = 8;
      for (size_t i = 0; i < std::min(kAhead, keys.size()); ++i) values_.prefetch(keys[i]);
      results = fillBuffer(buffer_, records.size(), [&](size_t i) -> T {
        if (i + kAhead < keys.size()) values_.prefetch(keys[i + kAhead]);
        auto [it, inserted] = values_.try_emplace(std::move(keys[i]), records[i]);
        if (!inserted) it->second = callReduce(this->fn_, it->second, records[i]);
        return it->second;
      });
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    this->out_->emitBatch(results, timestamps);  // one result per record, with its timestamp
  }

 private:
  // Where the values live (RocksDB state, or this operator's table), restored.
  void openValues() {
    auto* restored = this->context().restored();
    if (keyedStateInRocksDB(this->context())) {
      store_ = makeKeyedStateBackend<K>(this->context());
      if (restored != nullptr) store_->setRestored(*restored);
      state_ = &valueState<VoidNamespace>(*store_, ValueStateDescriptor<T>(kRollingState));
      return;
    }
    if (restored == nullptr) return;
    auto restore = [&](const StateEntry& e) {
      values_.insert_or_assign(decodeState<K>(e.key, kRollingState, e.keyGroup),
                               decodeState<T>(e.value, kRollingState, e.keyGroup));
    };
    for (const auto& e : restored->takeKeyed(kRollingState)) restore(StateEntry{e.keyGroup, e.key, e.value});
    if (restored->hasKeyed()) {  // a RocksDB instance's incremental checkpoint
      auto store = makeKeyedStateBackend<K>(this->context());
      store->setRestored(*restored);
      store->takeRestored(kRollingState, restore);
    }
  }

  // RocksDB: one read and one write of the key's value per record.
  void reduceInStore(std::span<T> records) {
    try {
      for (auto& r : records) {
        K key = std::invoke(keySelector_, r);
        store_->setCurrentKey(key);
        std::optional<T> value = state_->value();
        buffer_.push_back(value ? callReduce(this->fn_, *value, r) : r);
        state_->update(buffer_.back());
      }
    } catch (...) {
      store_->clearCurrentKey();
      this->rethrowAsOperatorFailure();
    }
    store_->clearCurrentKey();  // the last key goes now
  }

  KeySelector keySelector_;
  std::unique_ptr<KeyedStateBackend<K>> store_;  // RocksDB: the values,
  ValueState<T>* state_ = nullptr;               // as this state
  absl::flat_hash_map<K, T, KeyHasher<K>> values_;  // heap: the values
  std::vector<Stored<K>> keys_;
  std::vector<T> buffer_;
};

}  // namespace weir::detail

namespace weir::detail {

// What keyed operators with a function share: the keyed state of their subtask, the
// current key (of the function's context and its state) and timers: event-time ones fire
// in time order when the watermark passes them (before it is passed on), processing-time
// ones when the subtask's clock does. Each operator calls advanceWatermark and
// advanceProcessingTime with its function's OnTimerContext.
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
      state_ = makeKeyedStateBackend<K>(context);
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
    context.setKeyedStateStore(state_.get());
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
    this->context().setKeyedStateStore(nullptr);
    timers_.close();
    processingTimers_.close();
    state_.reset();
  }

 protected:
  // Calls process(record, collector) for each record with its key current.
  template <class Context, class Process>
  void forEachKeyed(std::span<T> records, Timestamps timestamps, Context& ctx, Process process) {
    this->forEachRecord(records, timestamps, ctx, [&](T& r, Collector<OUT>& collector) {
      key_ = std::invoke(keySelector_, r);
      state_->setCurrentKey(key_);
      process(r, collector);
    });
    state_->clearCurrentKey();
  }

  // Fires the timers the watermark reached, then passes it on.
  template <class OnTimerContext>
  void advanceWatermark(int64_t watermark, OnTimerContext& ctx) {
    watermark_ = watermark;
    fireTimers(timers_, TimeDomain::EVENT_TIME, watermark, ctx);
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

  // KeyedTimers
  int64_t currentWatermark() const override { return watermark_; }
  int64_t currentProcessingTime() const override { return this->context_->clock()->currentTimeMillis(); }
  const K& currentKey() const override { return key_; }
  TimeDomain timerDomain() const override { return firing_; }
  void registerEventTimeTimer(int64_t time) override { timers_.add(key_, time); }
  void deleteEventTimeTimer(int64_t time) override { timers_.remove(key_, time); }
  void registerProcessingTimeTimer(int64_t time) override {
    processingTimers_.add(key_, time);
    requestCallback(time);
  }
  void deleteProcessingTimeTimer(int64_t time) override { processingTimers_.remove(key_, time); }

 private:
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
  TimeDomain firing_ = TimeDomain::EVENT_TIME;
};

// The second input of a two-input operator: hands its batches to the operator's
// processSecond. Watermarks, idleness and the end of input arrive combined at the first.
template <class IN2, class Owner>
class SecondInput final : public Output<IN2> {
 public:
  explicit SecondInput(Owner* owner) : owner_(owner) {}
  void emitBatch(std::span<IN2> records, Timestamps timestamps) override { owner_->processSecond(records, timestamps); }
  void endInput() override {}
  void emitWatermark(int64_t) override {}
  void emitIdleness(bool) override {}

 private:
  Owner* owner_;
};

// Runs a KeyedProcessFunction.
template <class T, class K, class KeySelector, class F>
class KeyedProcessOperator final : public KeyedFunctionOperator<T, typename F::OutputType, K, KeySelector, F> {
  using Base = KeyedFunctionOperator<T, typename F::OutputType, K, KeySelector, F>;

 public:
  using Base::Base;

  void emitBatch(std::span<T> records, Timestamps timestamps) override {
    typename F::Context ctx(this, &this->sideOutputs_);
    this->forEachKeyed(records, timestamps, ctx, [&](const T& r, auto& collector) {
      this->fn_.processElement(r, ctx, collector);
    });
  }
  void emitWatermark(int64_t watermark) override {
    typename F::OnTimerContext ctx(this, &this->sideOutputs_);
    this->advanceWatermark(watermark, ctx);
  }
  void onProcessingTime(int64_t time) override {
    typename F::OnTimerContext ctx(this, &this->sideOutputs_);
    this->advanceProcessingTime(time, ctx);
  }
};

}  // namespace weir::detail
