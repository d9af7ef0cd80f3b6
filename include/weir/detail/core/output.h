// The typed link between chained operators: what an operator hands its records to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace weir::detail {

// The event timestamps of a batch, one per record in milliseconds, or empty when the
// stream carries none (no timestamp assigner upstream).
using Timestamps = std::span<int64_t>;

// Records a batch holds as plain values (numbers, pairs of them, structs of them): a
// buffer of them is filled by assignment into slots that are already there, a loop the
// compiler unrolls, instead of a push_back per record, which it may not inline.
template <class T>
concept PlainRecord =
    std::is_trivially_destructible_v<T> && std::is_default_constructible_v<T> && std::is_move_assignable_v<T>;

// What a buffer of T holds: bool as a byte, since std::vector<bool> has no data().
template <class T>
using Stored = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

// Sets the first n records of `buffer` to make(0), ..., make(n - 1) and returns them.
// Plain records reuse the slots of earlier batches; others are built anew.
template <class T, class Make>
std::span<T> fillBuffer(std::vector<T>& buffer, size_t n, Make&& make) {
  if constexpr (PlainRecord<T>) {
    if (buffer.size() < n) buffer.resize(n);
    for (size_t i = 0; i < n; ++i) buffer[i] = make(i);
  } else {
    buffer.clear();
    buffer.reserve(n);
    for (size_t i = 0; i < n; ++i) buffer.push_back(make(i));
  }
  return {buffer.data(), n};
}

// Anything that receives a stream: a chained operator's input, a fan-out, a channel writer.
// Watermarks and idleness arrive between batches, in order with them.
class OutputBase {
 public:
  virtual ~OutputBase() = default;
  // The input has ended: finish, pass on what is left, then end the downstream.
  virtual void endInput() = 0;
  // No record with a timestamp at or below `watermark` follows.
  virtual void processWatermark(int64_t watermark) = 0;
  // The stream went idle (emits nothing for a while) or became active again.
  virtual void processIdleness(bool idle) = 0;
};

// Receives batches of T. The callee may move from the records; the caller reuses the
// memory after the call returns. One virtual call per batch, never per record.
template <class T>
class Output : public OutputBase {
 public:
  virtual void processBatch(std::span<T> records, Timestamps timestamps) = 0;
  // The same batch, to be left as it is: other operators read it after this one (a
  // fan-out). Returns false, having done nothing, when the callee needs a batch of its
  // own to move from or reorder; the caller then hands it a copy through processBatch.
  // Operators that can work from const records override it and spare that copy.
  virtual bool processSharedBatch(std::span<const T> /*records*/, std::span<const int64_t> /*timestamps*/) {
    return false;
  }
};

// Hands every batch to several outputs (one stream consumed by several operators). One
// target, the owner, takes the batch itself after the others; the others read it as it
// is, or get a copy when they must change it. The owner is the last target that needs a
// copy (learnt from the first batch), so a copy is made only when two targets need one.
template <class T>
class FanOut final : public Output<T> {
 public:
  explicit FanOut(std::vector<Output<T>*> targets)
      : targets_(std::move(targets)), needsCopy_(targets_.size(), false), owner_(targets_.size() - 1) {}

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    size_t owner = owner_;
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (i == owner) continue;
      if (!needsCopy_[i] && targets_[i]->processSharedBatch(records, timestamps)) continue;
      if (!needsCopy_[i]) {
        needsCopy_[i] = true;
        if (!needsCopy_[owner_]) owner_ = i;  // from the next batch on
      }
      copy_.assign(records.begin(), records.end());
      copyTimestamps_.assign(timestamps.begin(), timestamps.end());
      targets_[i]->processBatch(copy_, copyTimestamps_);
    }
    targets_[owner]->processBatch(records, timestamps);
  }

  void endInput() override {
    for (auto* t : targets_) t->endInput();
  }
  void processWatermark(int64_t watermark) override {
    for (auto* t : targets_) t->processWatermark(watermark);
  }
  void processIdleness(bool idle) override {
    for (auto* t : targets_) t->processIdleness(idle);
  }

 private:
  std::vector<Output<T>*> targets_;
  std::vector<bool> needsCopy_;  // targets that refused a shared batch
  size_t owner_;
  std::vector<T> copy_;
  std::vector<int64_t> copyTimestamps_;
};

// Swallows a stream nobody consumes (e.g. a side output without getSideOutput).
template <class T>
class NullOutput final : public Output<T> {
 public:
  void processBatch(std::span<T>, Timestamps) override {}
  void endInput() override {}
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}
};

}  // namespace weir::detail
