// The input of a keyed operator in a batch job, grouped by key (Flink's SortingDataInput):
// the operator hands it every record as it comes, and at the end of its input takes
// them back one key after another, each key's in timestamp order, so it holds the state
// of one key at a time (docs/batch.md, "Keyed input is grouped by key").
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "weir/detail/core/external_sorter.h"
#include "weir/detail/core/output.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/runtime_context.h"
#include "weir/serializer.h"

namespace weir::detail {

// Whether a keyed operator over T (and IN2, the second input of a two-input one) keyed
// by K can sort its input: each must serialize.
template <class T>
inline constexpr bool kSortableSecond = Serializable<T>;
template <>
inline constexpr bool kSortableSecond<void> = true;
template <class T, class K, class IN2 = void>
inline constexpr bool kSortable = Serializable<T> && Serializable<K> && kSortableSecond<IN2>;

// `T`: the records of the (first) input; `IN2`: those of a second input sorted with them
// (a two-input operator's, as Flink's MultiInputSortingDataInput), or void.
template <class T, class K, class IN2 = void>
class SortingDataInput {
  static constexpr bool kTwoInputs = !std::is_void_v<IN2>;
  using Second = std::conditional_t<kTwoInputs, IN2, T>;  // T: a placeholder, never used

 public:
  // From the operator's open(): in a batch job, takes the input to sort within the job's
  // budget (execution.sorted-inputs.memory), spilling to its folder (io.tmp.dirs).
  // Returns whether it does.
  // `budget`: what of the job's budget it takes (0: all).
  bool open(const RuntimeContext& context, size_t budget = 0) {
    enabled_ = context.isBatch() && kSortable<T, K, IN2>;
    if (enabled_)
      sorter_ = std::make_unique<ExternalSorter>(budget != 0 ? budget : context.sortedInputsMemory(),
                                                 context.tmpDirectory(), context.getTaskNameWithSubtasks());
    return enabled_;
  }
  // Whether the operator's input is sorted (from open() on).
  bool enabled() const { return enabled_; }
  // Whether records wait here: from open() until drain().
  bool buffering() const { return sorter_ != nullptr; }
  // Whether none were taken yet.
  bool empty() const { return taken_ == 0; }

  // Takes records of the (first) input, each under the key `keyOf` gives.
  template <class KeyOf>
  void add(std::span<T> records, Timestamps timestamps, KeyOf&& keyOf) {
    for (size_t i = 0; i < records.size(); ++i)
      add(keyOf(records[i]), records[i], !timestamps.empty(), timestamps.empty() ? 0 : timestamps[i]);
  }
  // Takes one record of the (first) input under `key`, with its timestamp when `stamped`.
  void add(const K& key, const T& record, bool stamped, int64_t timestamp) {
    add<false>(key, record, stamped, timestamp);
  }
  // Takes records of the second input, each under the key `keyOf` gives.
  template <class KeyOf>
  void addSecond(std::span<Second> records, Timestamps timestamps, KeyOf&& keyOf)
    requires kTwoInputs
  {
    for (size_t i = 0; i < records.size(); ++i)
      add<true>(keyOf(records[i]), records[i], !timestamps.empty(), timestamps.empty() ? 0 : timestamps[i]);
  }

  // Gives back every record taken: onRecords(span<T>, Timestamps) with batches of one
  // key's records, in timestamp order (of equal ones, in the order they came), and
  // onKeyEnd(key) after each key's last batch. Then nothing is buffered.
  template <class OnRecords, class OnKeyEnd>
  void drain(OnRecords&& onRecords, OnKeyEnd&& onKeyEnd)
    requires(!kTwoInputs)
  {
    drainInputs(onRecords, [](std::span<Second>, Timestamps) {}, onKeyEnd);
  }
  // The same with two inputs: a key's records of both, in one timestamp order, the first
  // input's in batches to onFirst, the second's to onSecond.
  template <class OnFirst, class OnSecond, class OnKeyEnd>
  void drain(OnFirst&& onFirst, OnSecond&& onSecond, OnKeyEnd&& onKeyEnd)
    requires kTwoInputs
  {
    drainInputs(onFirst, onSecond, onKeyEnd);
  }

 private:
  // What precedes a record's bytes.
  enum Flags : uint8_t { kStamped = 1, kSecond = 2 };

  template <bool kIsSecond, class R>
  void add(const K& key, const R& record, bool stamped, int64_t timestamp) {
    key_.clear();
    Serializer<K>::serialize(key, key_);
    record_.clear();
    record_.write(static_cast<uint8_t>((stamped ? kStamped : 0) | (kIsSecond ? kSecond : 0)));
    if (stamped) record_.write(timestamp);
    Serializer<R>::serialize(record, record_);
    // A record without a timestamp comes first, as Flink's Long.MIN_VALUE does.
    sorter_->add(key_.data(), stamped ? timestamp : kMinWatermark, record_.data());
    ++taken_;
  }

  // A batch of one input's records, stamped throughout or not at all.
  template <class R>
  struct Batch {
    std::vector<R> records;
    std::vector<int64_t> timestamps;
    template <class Give>
    void flush(Give& give) {
      if (!records.empty()) give(std::span<R>(records), Timestamps(timestamps));
      records.clear();
      timestamps.clear();
    }
    // Whether a record (stamped or not) can join it.
    bool fits(bool stamped) const { return records.empty() || stamped != timestamps.empty(); }
    void add(DataInput& in, bool stamped) {
      if (stamped) timestamps.push_back(in.read<int64_t>());
      records.push_back(Serializer<R>::deserialize(in));
    }
  };

  template <class OnFirst, class OnSecond, class OnKeyEnd>
  void drainInputs(OnFirst&& onFirst, OnSecond&& onSecond, OnKeyEnd&& onKeyEnd) {
    std::unique_ptr<ExternalSorter> sorter = std::move(sorter_);
    if (!sorter) return;
    Batch<T> first;
    Batch<Second> second;
    auto flush = [&] {
      first.flush(onFirst);
      if constexpr (kTwoInputs) second.flush(onSecond);
    };
    std::string current;
    bool any = false;
    std::string_view key, bytes;
    auto endKey = [&] {
      flush();
      DataInput in(current);
      onKeyEnd(Serializer<K>::deserialize(in));
    };
    while (sorter->next(key, bytes)) {
      if (!any || key != current) {
        if (any) endKey();
        current.assign(key);
        any = true;
      }
      DataInput in(bytes);
      const auto flags = in.read<uint8_t>();
      const bool stamped = (flags & kStamped) != 0;
      if (kTwoInputs && (flags & kSecond) != 0) {
        if (!first.records.empty() || !second.fits(stamped)) flush();  // in the order sorted
        second.add(in, stamped);
        if (second.records.size() == kBatchRecords<Second>) flush();
      } else {
        if (!second.records.empty() || !first.fits(stamped)) flush();
        first.add(in, stamped);
        if (first.records.size() == kBatchRecords<T>) flush();
      }
    }
    if (any) endKey();
  }

  bool enabled_ = false;
  std::unique_ptr<ExternalSorter> sorter_;
  uint64_t taken_ = 0;
  DataOutput key_, record_;
};

}  // namespace weir::detail
