// The built-in one-input operators. Each loops over a batch and calls the user function
// inline: one virtual call per batch, none per record.
#pragma once

#include <absl/container/flat_hash_map.h>

#include "weir/detail/function_traits.h"
#include "weir/detail/stream_operator.h"
#include "weir/key_group.h"

namespace weir::detail {

template <class IN, class OUT, class F>
class StreamMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void emitBatch(std::span<IN> records) override {
    try {
      if constexpr (std::is_same_v<IN, OUT>) {
        // The batch is ours to consume: map it in place and pass it on.
        for (auto& r : records) r = callMap(this->fn_, std::move(r));
      } else {
        buffer_.clear();
        buffer_.reserve(records.size());
        for (auto& r : records) buffer_.push_back(callMap(this->fn_, std::move(r)));
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if constexpr (std::is_same_v<IN, OUT>) this->out_->emitBatch(records);
    else this->out_->emitBatch(buffer_);
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
      if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= 16) {
        // Branch-free compaction: copy every record, advance only past kept ones.
        for (size_t i = 0; i < records.size(); ++i) {
          bool keep = callFilter(this->fn_, records[i]);
          records[kept] = records[i];
          kept += keep ? 1 : 0;
        }
      } else {
        for (size_t i = 0; i < records.size(); ++i) {
          if (callFilter(this->fn_, records[i])) {
            if (kept != i) records[kept] = std::move(records[i]);
            ++kept;
          }
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
// sum, min, max). Keeps one value per key in a flat hash table on the heap until the
// state backends land.
template <class T, class K, class KeySelector, class F>
class KeyedReduceOperator final : public UdfOperator<T, T, F> {
 public:
  KeyedReduceOperator(KeySelector keySelector, F fn)
      : UdfOperator<T, T, F>(std::move(fn)), keySelector_(std::move(keySelector)) {}

  void emitBatch(std::span<T> records) override {
    buffer_.clear();
    buffer_.reserve(records.size());
    keys_.clear();
    try {
      for (auto& r : records) keys_.push_back(std::invoke(keySelector_, r));
      // The table is larger than the cache: fetch a few records ahead so lookups overlap.
      constexpr size_t kAhead = 8;
      for (size_t i = 0; i < std::min(kAhead, keys_.size()); ++i) values_.prefetch(keys_[i]);
      for (size_t i = 0; i < records.size(); ++i) {
        if (i + kAhead < keys_.size()) values_.prefetch(keys_[i + kAhead]);
        auto [it, inserted] = values_.try_emplace(std::move(keys_[i]), records[i]);
        if (!inserted) it->second = callReduce(this->fn_, it->second, records[i]);
        buffer_.push_back(it->second);
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    this->out_->emitBatch(buffer_);
  }

 private:
  KeySelector keySelector_;
  absl::flat_hash_map<K, T, KeyHasher<K>> values_;
  std::vector<K> keys_;
  std::vector<T> buffer_;
};

}  // namespace weir::detail
