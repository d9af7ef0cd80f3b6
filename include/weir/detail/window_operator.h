// Keyed event-time windows: assigns each record to its windows, aggregates it into the
// (key, window) accumulator, fires a window when the watermark passes its end, fires it
// again for late records within the allowed lateness, and drops its state after that.
// Window contents and timers live on the heap until the state backends land.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <optional>
#include <queue>

#include "weir/detail/function_traits.h"
#include "weir/detail/stream_operator.h"
#include "weir/windows.h"

namespace weir::detail {

// reduce(): the accumulator is the reduced record.
template <class T, class F>
struct ReduceWindowPolicy {
  using Acc = std::optional<T>;
  using Out = T;
  F fn;
  Acc create() { return std::nullopt; }
  void add(Acc& acc, const T& value) { acc = acc ? callReduce(fn, *acc, value) : value; }
  template <class K>
  void fire(const K&, const TimeWindow&, Acc& acc, int64_t, const Clock&, Collector<T>& out) {
    out.collect(*acc);
  }
};

// aggregate(): an AggregateFunction's accumulator.
template <class T, class A>
struct AggregateWindowPolicy {
  using Acc = typename A::AccumulatorType;
  using Out = typename A::OutputType;
  A fn;
  Acc create() { return fn.createAccumulator(); }
  void add(Acc& acc, const T& value) { acc = fn.add(value, std::move(acc)); }
  template <class K>
  void fire(const K&, const TimeWindow&, Acc& acc, int64_t, const Clock&, Collector<Out>& out) {
    out.collect(fn.getResult(acc));
  }
};

// process(): keeps the window's records and hands them to a ProcessWindowFunction.
template <class T, class F>
struct ProcessWindowPolicy {
  using Acc = std::vector<T>;
  using Out = typename F::OutputType;
  F fn;
  Acc create() { return {}; }
  void add(Acc& acc, const T& value) { acc.push_back(value); }
  template <class K>
  void fire(const K& key, const TimeWindow& window, Acc& acc, int64_t watermark, const Clock& clock,
            Collector<Out>& out) {
    typename F::Context ctx(window, watermark, clock);
    fn.process(key, ctx, std::span<const T>(acc), out);
  }
};

template <class T, class K, class KeySelector, class Assigner, class Policy>
class WindowOperator final : public OneInputOperator<T, typename Policy::Out> {
  using OUT = typename Policy::Out;

 public:
  WindowOperator(KeySelector keySelector, Assigner assigner, int64_t allowedLateness, int lateTag, Policy policy)
      : keySelector_(std::move(keySelector)), assigner_(std::move(assigner)), allowedLateness_(allowedLateness),
        lateTag_(lateTag), policy_(std::move(policy)) {}

  void open() override {
    this->callUser([&] { openFunction(policy_.fn, this->context_); });
  }
  void close() override {
    this->callUser([&] { closeFunction(policy_.fn); });
  }

  std::string checkpointUnsupportedReason() const override { return "window contents are not checkpointed yet"; }

  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    if (tagIndex == lateTag_) late_ = out.get();
    sideOutputs_.add(tagIndex, std::move(out));
  }

  void emitBatch(std::span<T> records, Timestamps timestamps) override {
    if (timestamps.empty() && !records.empty())
      throw OperatorFailure(this->name(), this->context_->getIndexOfThisSubtask(),
                            this->context_->getNumberOfParallelSubtasks(),
                            "event-time windows need timestamps: give the source a WatermarkStrategy with "
                            "withTimestampAssigner");
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchSize);
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        K key = std::invoke(keySelector_, records[i]);
        bool placed = false;
        assigner_.assignWindows(timestamps[i], [&](const TimeWindow& w) {
          if (saturatingAdd(w.maxTimestamp(), allowedLateness_) <= watermark_) return;  // too late for w
          placed = true;
          // A window's timers are registered when its state is created; the state lives
          // until its cleanup timer, so one lookup per record and window suffices.
          auto it = state_.find(std::pair<K, TimeWindow>{key, w});
          bool created = it == state_.end();
          if (created) it = state_.emplace(std::pair<K, TimeWindow>{key, w}, policy_.create()).first;
          policy_.add(it->second, records[i]);
          if (w.maxTimestamp() <= watermark_) {
            // Late but within the allowed lateness: fire again with the updated result.
            collector.setTimestamp(true, w.maxTimestamp());
            policy_.fire(key, w, it->second, watermark_, *this->context().clock(), collector);
          } else if (created) {
            timers_.push(Timer{w.maxTimestamp(), false, key, w});
          }
          if (created) timers_.push(Timer{saturatingAdd(w.maxTimestamp(), allowedLateness_), true, key, w});
        });
        if (!placed) dropLate(records[i], timestamps[i]);
      }
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
    sideOutputs_.flush();
  }

  void emitWatermark(int64_t watermark) override {
    watermark_ = watermark;
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchSize);
    try {
      while (!timers_.empty() && timers_.top().time <= watermark) {
        Timer t = timers_.top();
        timers_.pop();
        auto it = state_.find(std::pair<K, TimeWindow>{t.key, t.window});
        if (it == state_.end()) continue;
        if (t.cleanup) {
          state_.erase(it);
        } else {
          collector.setTimestamp(true, t.window.maxTimestamp());
          policy_.fire(t.key, t.window, it->second, watermark_, *this->context().clock(), collector);
        }
      }
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
    sideOutputs_.emitWatermark(watermark);
    this->out_->emitWatermark(watermark);
  }

  void emitIdleness(bool idle) override {
    sideOutputs_.emitIdleness(idle);
    this->out_->emitIdleness(idle);
  }
  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }

 private:
  struct Timer {
    int64_t time;
    bool cleanup;  // drop the window's state; ordered after its firing at the same time
    K key;
    TimeWindow window;
  };
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.time != b.time ? a.time > b.time : a.cleanup > b.cleanup;
    }
  };
  struct StateHash {
    size_t operator()(const std::pair<K, TimeWindow>& s) const {
      return KeyHasher<K>{}(s.first) * 31 + KeyHasher<TimeWindow>{}(s.second);
    }
  };

  void dropLate(T& record, int64_t timestamp) {
    if (late_) {
      sideOutputs_.setTimestamp(true, timestamp);
      static_cast<SideOutput<T>*>(late_)->collect(record);
    } else {
      this->metrics_->numLateRecordsDropped.fetch_add(1, std::memory_order_relaxed);
    }
  }

  KeySelector keySelector_;
  Assigner assigner_;
  int64_t allowedLateness_;
  int lateTag_;
  Policy policy_;
  int64_t watermark_ = INT64_MIN;
  absl::flat_hash_map<std::pair<K, TimeWindow>, typename Policy::Acc, StateHash> state_;
  std::priority_queue<Timer, std::vector<Timer>, Later> timers_;
  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
  SideOutputs sideOutputs_;
  SideOutputBase* late_ = nullptr;
};

}  // namespace weir::detail
