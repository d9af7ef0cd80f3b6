// The input of a keyed operator in a batch job, grouped by key (Flink's SortingDataInput):
// the operator hands it every record as it comes, and at the end of its input takes
// them back one key after another, each key's in timestamp order, so it holds the state
// of one key at a time (docs/batch.md, "Keyed input is grouped by key").
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weir/detail/core/external_sorter.h"
#include "weir/detail/core/output.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/runtime_context.h"
#include "weir/serializer.h"

namespace weir::detail {

// Whether a keyed operator over T keyed by K can sort its input: both must serialize.
template <class T, class K>
inline constexpr bool kSortable = Serializable<T> && Serializable<K>;

template <class T, class K>
class SortingDataInput {
 public:
  // From the operator's open(): in a batch job, takes the input to sort within the job's
  // budget (execution.sorted-inputs.memory), spilling to its folder (io.tmp.dirs).
  // Returns whether it does.
  // `budget`: what of the job's budget it takes (0: all).
  bool open(const RuntimeContext& context, size_t budget = 0) {
    enabled_ = context.isBatch() && kSortable<T, K>;
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

  // Takes records, each under the key `keyOf` gives.
  template <class KeyOf>
  void add(std::span<T> records, Timestamps timestamps, KeyOf&& keyOf) {
    for (size_t i = 0; i < records.size(); ++i)
      add(keyOf(records[i]), records[i], !timestamps.empty(), timestamps.empty() ? 0 : timestamps[i]);
  }
  // Takes one record under `key`, with its timestamp when `stamped`.
  void add(const K& key, const T& record, bool stamped, int64_t timestamp) {
    key_.clear();
    Serializer<K>::serialize(key, key_);
    record_.clear();
    record_.write(stamped);
    if (stamped) record_.write(timestamp);
    Serializer<T>::serialize(record, record_);
    // A record without a timestamp comes first, as Flink's Long.MIN_VALUE does.
    sorter_->add(key_.data(), stamped ? timestamp : kMinWatermark, record_.data());
    ++taken_;
  }

  // Gives back every record taken: onRecords(span<T>, Timestamps) with batches of one
  // key's records, in timestamp order (of equal ones, in the order they came), and
  // onKeyEnd(key) after each key's last batch. Then nothing is buffered.
  template <class OnRecords, class OnKeyEnd>
  void drain(OnRecords&& onRecords, OnKeyEnd&& onKeyEnd) {
    std::unique_ptr<ExternalSorter> sorter = std::move(sorter_);
    if (!sorter) return;
    std::vector<T> records;
    std::vector<int64_t> timestamps;
    auto flush = [&] {
      if (!records.empty()) onRecords(std::span<T>(records), Timestamps(timestamps));
      records.clear();
      timestamps.clear();
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
      const bool stamped = in.read<bool>();
      // A batch is stamped throughout or not at all.
      if (!records.empty() && stamped == timestamps.empty()) flush();
      if (stamped) timestamps.push_back(in.read<int64_t>());
      records.push_back(Serializer<T>::deserialize(in));
      if (records.size() == kBatchRecords<T>) flush();
    }
    if (any) endKey();
  }

 private:
  bool enabled_ = false;
  std::unique_ptr<ExternalSorter> sorter_;
  uint64_t taken_ = 0;
  DataOutput key_, record_;
};

}  // namespace weir::detail
