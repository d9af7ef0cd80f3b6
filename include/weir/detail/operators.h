// The built-in one-input operators. Each loops over a batch and calls the user function
// inline: one virtual call per batch, none per record.
#pragma once

#include <unordered_map>

#include "weir/detail/function_traits.h"
#include "weir/detail/stream_operator.h"
#include "weir/key_group.h"

namespace weir::detail {

template <class IN, class OUT, class F>
class StreamMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void emitBatch(std::span<IN> records) override {
    buffer_.clear();
    buffer_.reserve(records.size());
    try {
      for (auto& r : records) buffer_.push_back(callMap(this->fn_, std::move(r)));
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    this->out_->emitBatch(buffer_);
  }

 private:
  std::vector<OUT> buffer_;
};

// Keeps the records the predicate accepts, compacting the batch in place.
template <class T, class F>
class StreamFilter final : public UdfOperator<T, T, F> {
 public:
  using UdfOperator<T, T, F>::UdfOperator;
  void emitBatch(std::span<T> records) override {
    size_t kept = 0;
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        if (callFilter(this->fn_, records[i])) {
          if (kept != i) records[kept] = std::move(records[i]);
          ++kept;
        }
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if (kept > 0) this->out_->emitBatch(records.first(kept));
  }
};

template <class IN, class OUT, class F>
class StreamFlatMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void emitBatch(std::span<IN> records) override {
    Collector<OUT> collector(&buffer_, this->out_, kBatchSize);
    try {
      for (auto& r : records) callFlatMap(this->fn_, r, collector);
    } catch (...) {
      buffer_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
  }

 private:
  std::vector<OUT> buffer_;
};

// Runs a ProcessFunction (or a lambda with its signature), with side outputs.
template <class IN, class OUT, class F>
class ProcessOperator final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  using Context = typename ProcessFunction<IN, OUT>::Context;

  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    sideOutputs_.add(tagIndex, std::move(out));
  }

  void emitBatch(std::span<IN> records) override {
    Collector<OUT> collector(&buffer_, this->out_, kBatchSize);
    Context ctx(&sideOutputs_);
    try {
      for (auto& r : records) {
        if constexpr (requires { this->fn_.processElement(r, ctx, collector); }) {
          this->fn_.processElement(r, ctx, collector);
        } else {
          std::invoke(this->fn_, r, ctx, collector);
        }
      }
    } catch (...) {
      buffer_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
    sideOutputs_.flush();
  }

  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }

 private:
  std::vector<OUT> buffer_;
  SideOutputs sideOutputs_;
};

// Rolling reduce per key: emits the new aggregate for every record (KeyedStream::reduce,
// sum, min, max). Keeps one value per key on the heap until the state backends land.
template <class T, class K, class KeySelector, class F>
class KeyedReduceOperator final : public UdfOperator<T, T, F> {
 public:
  KeyedReduceOperator(KeySelector keySelector, F fn)
      : UdfOperator<T, T, F>(std::move(fn)), keySelector_(std::move(keySelector)) {}

  void emitBatch(std::span<T> records) override {
    buffer_.clear();
    buffer_.reserve(records.size());
    try {
      for (auto& r : records) {
        auto [it, inserted] = values_.try_emplace(std::invoke(keySelector_, r), r);
        if (!inserted) it->second = callReduce(this->fn_, it->second, r);
        buffer_.push_back(it->second);
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    this->out_->emitBatch(buffer_);
  }

 private:
  KeySelector keySelector_;
  std::unordered_map<K, T, KeyHasher<K>> values_;
  std::vector<T> buffer_;
};

}  // namespace weir::detail
