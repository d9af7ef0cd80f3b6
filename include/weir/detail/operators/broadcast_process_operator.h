// The operators behind connect(broadcastStream).process(...): two inputs, the first the
// (keyed or not) main stream, the second the broadcast stream; each subtask keeps its own
// copy of the broadcast state.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "weir/broadcast_process_function.h"
#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/keyed_function_operator.h"
#include "weir/detail/operators/second_input.h"

namespace weir::detail {

// Runs a BroadcastProcessFunction<IN1, IN2, OUT>. In a batch job the main input waits
// (sorted within the job's budget, spilling beyond it) until the broadcast input is
// done: the broadcast side is processed first, as in Flink (docs/batch.md).
template <class IN1, class IN2, class F>
class BroadcastProcessOperator final : public CollectingOperator<IN1, typename F::OutputType, F> {
  using OUT = typename F::OutputType;

 public:
  BroadcastProcessOperator(F fn, std::vector<std::string> declared, std::string checkpointProblem = "")
      : CollectingOperator<IN1, OUT, F>(std::move(fn)), states_(std::move(declared), std::move(checkpointProblem)) {}

  OutputBase* secondInput() override { return &second_; }
  std::string checkpointUnsupportedReason() const override { return states_.checkpointProblem(); }
  void open() override {
    if (auto* restored = this->context().restored()) states_.restore(restored->operatorState);
    CollectingOperator<IN1, OUT, F>::open();
    pending_.open(this->context());
  }
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    CollectingOperator<IN1, OUT, F>::snapshotState(checkpointId, timestamp, out);
    for (auto& s : states_.snapshot()) out.operatorState.push_back(std::move(s));
  }

  void processBatch(std::span<IN1> records, Timestamps timestamps) override {
    if constexpr (kSortable<IN1, uint8_t>) {
      if (pending_.buffering()) {
        this->callUser([&] { pending_.add(records, timestamps, [](IN1&) { return uint8_t{0}; }); });
        return;
      }
    }
    typename F::ReadOnlyContext ctx(&states_, &this->sideOutputs_, &watermark_, this->context().clock().get());
    this->forEachRecord(records, timestamps, ctx,
                        [&](const IN1& r, Collector<OUT>& c) { this->fn_.processElement(r, ctx, c); });
  }
  void processSecond(std::span<IN2> records, Timestamps timestamps) {
    typename F::Context ctx(&states_, &this->sideOutputs_, &watermark_, this->context().clock().get());
    this->forEachRecord(records, timestamps, ctx,
                        [&](const IN2& r, Collector<OUT>& c) { this->fn_.processBroadcastElement(r, ctx, c); });
  }
  void processWatermark(int64_t watermark) override {
    if (watermark == kMaxWatermark) processPending();
    watermark_ = watermark;
    this->forwardWatermark(watermark);
  }
  void endInput() override {
    processPending();  // the input ended without the final watermark
    CollectingOperator<IN1, OUT, F>::endInput();
  }

 private:
  // Batch: both inputs are done; the main input's records now.
  void processPending() {
    if constexpr (kSortable<IN1, uint8_t>)
      pending_.drain([&](std::span<IN1> records, Timestamps timestamps) { processBatch(records, timestamps); },
                     [](const uint8_t&) {});
  }

  BroadcastStates states_;
  SecondInput<IN2, BroadcastProcessOperator> second_{this};
  int64_t watermark_ = INT64_MIN;
  SortingDataInput<IN1, uint8_t> pending_;  // batch: the main input, until the broadcast side is done
};

// Runs a KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>: keyed state, timers and the
// current key on the first input; applyToKeyedState on the broadcast input. In a batch
// job the keyed input waits, to come grouped by key once the broadcast input is done:
// the broadcast side is processed first, as in Flink (docs/batch.md).
template <class IN1, class IN2, class K, class KeySelector, class F>
class KeyedBroadcastProcessOperator final
    : public KeyedFunctionOperator<IN1, typename F::OutputType, K, KeySelector, F>,
      private KeyedStateVisitor<K> {
  using OUT = typename F::OutputType;
  using Base = KeyedFunctionOperator<IN1, OUT, K, KeySelector, F>;

 public:
  KeyedBroadcastProcessOperator(KeySelector keySelector, F fn, std::vector<std::string> declared,
                                std::string checkpointProblem = "")
      : Base(std::move(keySelector), std::move(fn)), states_(std::move(declared), std::move(checkpointProblem)) {}

  OutputBase* secondInput() override { return &second_; }
  std::string checkpointUnsupportedReason() const override {
    std::string keyed = Base::checkpointUnsupportedReason();
    return keyed.empty() ? states_.checkpointProblem() : keyed;
  }
  void open() override {
    if (auto* restored = this->context().restored()) states_.restore(restored->operatorState);
    Base::open();
  }
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    Base::snapshotState(checkpointId, timestamp, out);
    for (auto& s : states_.snapshot()) out.operatorState.push_back(std::move(s));
  }

  void processBatch(std::span<IN1> records, Timestamps timestamps) override {
    typename F::ReadOnlyContext ctx(&states_, &this->sideOutputs_, &this->watermark_, clock(), this);
    this->forEachKeyed(records, timestamps, ctx,
                       [&](const IN1& r, Collector<OUT>& c) { this->fn_.processElement(r, ctx, c); });
  }
  void processSecond(std::span<IN2> records, Timestamps timestamps) {
    typename F::Context ctx(&states_, &this->sideOutputs_, &this->watermark_, clock(), this);
    this->forEachRecord(records, timestamps, ctx,
                        [&](const IN2& r, Collector<OUT>& c) { this->fn_.processBroadcastElement(r, ctx, c); });
    this->state_->clearCurrentKey();  // applyToKeyedState may have set keys
  }
  void processWatermark(int64_t watermark) override {
    typename F::OnTimerContext ctx(&states_, &this->sideOutputs_, &this->watermark_, clock(), this);
    this->advanceWatermark(watermark, ctx);
  }
  void onProcessingTime(int64_t time) override {
    typename F::OnTimerContext ctx(&states_, &this->sideOutputs_, &this->watermark_, clock(), this);
    this->advanceProcessingTime(time, ctx);
  }

 protected:
  bool sortsInputInBatch() const override { return true; }

 private:
  const Clock* clock() { return this->context().clock().get(); }

  // KeyedStateVisitor
  std::vector<K> keysWithState(const std::string& stateName) override { return this->state_->keysWithState(stateName); }
  void setVisitedKey(const K& key) override {
    this->key_ = key;
    this->state_->setCurrentKey(this->key_);
  }
  RuntimeContext& runtimeContext() override { return this->context(); }

  BroadcastStates states_;
  SecondInput<IN2, KeyedBroadcastProcessOperator> second_{this};
};

}  // namespace weir::detail
