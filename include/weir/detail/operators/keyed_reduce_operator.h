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

// Rolling reduce per key: emits the new aggregate for every record (KeyedStream::reduce,
// sum, min, max); in a batch job only each key's final value, at the end of the input,
// stamped Long.MAX_VALUE (Flink's BatchGroupedReduceOperator). There records without a
// timestamp are first reduced in a table of the operator's own (a combiner: a key's
// records come to it in the order they came, as sorting would give them), which goes
// to the sorted input before a new key would grow its slots past half the sorted-inputs
// budget; records with one go to the sorted input (SortingDataInput), which gives each
// key's in timestamp order. Without anything sorted, the table holds the final values.
// Keeps one value per key:
// on the heap backend in the operator's own flat hash table, on RocksDB as a ValueState
// in RocksDB. Both checkpoint the same entries under "_rolling", so either backend
// restores the other's checkpoints.
template <class T, class K, class KeySelector, class F>
class KeyedReduceOperator final : public UdfOperator<T, T, F> {
 public:
  KeyedReduceOperator(KeySelector keySelector, F fn)
      : UdfOperator<T, T, F>(std::move(fn)), keySelector_(std::move(keySelector)) {}

  void open() override {
    UdfOperator<T, T, F>::open();
    batch_ = this->context().isBatch();
    const size_t tableBudget = this->context().sortedInputsMemory() / 2;
    if (sortedInput_.open(this->context(), tableBudget)) {  // a batch job starts from scratch: nothing to restore
      tableKeys_ = keysWithin(tableBudget);
      return;
    }
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
      out.keyedSchemas[kRollingState] = schema_;
    }
  }

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if constexpr (kSortable<T, K>) {
      if (sortedInput_.buffering() && !timestamps.empty()) {
        this->callUser([&] { sortedInput_.add(records, timestamps, [&](T& r) { return std::invoke(keySelector_, r); }); });
        return;
      }
    }
    if (state_ != nullptr) {
      buffer_.clear();
      buffer_.reserve(records.size());
      reduceInStore(records);
      if (!batch_) this->out_->processBatch(buffer_, timestamps);
      return;
    }
    std::span<T> results;
    try {
      std::span<Stored<K>> keys =
          fillBuffer(keys_, records.size(), [&](size_t i) -> Stored<K> { return std::invoke(keySelector_, records[i]); });
      // The table is larger than the cache: fetch a few records ahead so lookups overlap.
      constexpr size_t kAhead = 8;
      for (size_t i = 0; i < std::min(kAhead, keys.size()); ++i) values_.prefetch(keys[i]);
      if (batch_) {  // the final values go at the end
        for (size_t i = 0; i < keys.size(); ++i) {
          if (i + kAhead < keys.size()) values_.prefetch(keys[i + kAhead]);
          if (values_.size() >= tableKeys_ && !values_.contains(keys[i])) spillTable();  // a new key: no room
          reduceInto(std::move(keys[i]), records[i]);
        }
        return;
      }
      results = fillBuffer(buffer_, records.size(), [&](size_t i) -> T {
        if (i + kAhead < keys.size()) values_.prefetch(keys[i + kAhead]);
        return reduceInto(std::move(keys[i]), records[i]);
      });
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    this->out_->processBatch(results, timestamps);  // one result per record, with its timestamp
  }

  // A batch job's final watermark waits for the final values, which it must not pass.
  void processWatermark(int64_t watermark) override {
    if (batch_) heldWatermark_ = std::max(heldWatermark_, watermark);
    else this->out_->processWatermark(watermark);
  }
  void endInput() override {
    if (batch_) {
      emitFinalValues();
      if (heldWatermark_ != INT64_MIN) this->out_->processWatermark(heldWatermark_);
    }
    this->out_->endInput();
  }

 private:
  // Heap: the key's value, with `record` reduced into it.
  const T& reduceInto(Stored<K>&& key, T& record) {
    auto [it, inserted] = values_.try_emplace(std::move(key), record);
    if (!inserted) it->second = callReduce(this->fn_, it->second, record);
    return it->second;
  }

  // Batch: every key's value, in batches, stamped Long.MAX_VALUE.
  void emitFinalValues() {
    std::vector<int64_t> stamps;
    buffer_.clear();
    auto flush = [&] {
      stamps.assign(buffer_.size(), kMaxWatermark);
      this->out_->processBatch(std::span<T>(buffer_), stamps);
      buffer_.clear();
    };
    if (sortedInput_.buffering() && !sortedInput_.empty()) {
      if constexpr (kSortable<T, K>) {
        spillTable();
        std::optional<T> value;
        sortedInput_.drain(
            [&](std::span<T> records, Timestamps) {
              for (T& r : records) value = value ? this->callUser([&] { return callReduce(this->fn_, *value, r); }) : std::move(r);
            },
            [&](const K&) {
              buffer_.push_back(std::move(*value));
              value.reset();
              if (buffer_.size() == kBatchRecords<T>) flush();
            });
      }
    } else if (state_ != nullptr) {  // one scan of the state's entries, not a lookup per key
      if constexpr (Serializable<T>) {
        const KeyGroupRange all{0, this->context().getMaxNumberOfParallelSubtasks() - 1};
        store_->readEntries(kRollingState, all, [&](const StateEntry& e) {
          buffer_.push_back(this->callUser([&] { return decodeState<T>(e.value, kRollingState, e.keyGroup); }));
          if (buffer_.size() == kBatchRecords<T>) flush();
        });
      }
    } else {
      for (auto& [key, value] : values_) {
        buffer_.push_back(std::move(value));
        if (buffer_.size() == kBatchRecords<T>) flush();
      }
      values_.clear();
    }
    if (!buffer_.empty()) flush();
  }

  // Batch: how many keys the table holds with its slots within `budget`: those of its
  // largest capacity that fits (absl's are 2^n - 1, one control byte a slot), before it
  // would grow (at 7/8 full). A key's or value's own heap memory (a long string's) is
  // not counted.
  static size_t keysWithin(size_t budget) {
    constexpr size_t kSlotBytes = sizeof(std::pair<const K, T>) + 1;
    size_t capacity = 1;
    while ((2 * capacity + 1) * kSlotBytes <= budget) capacity = 2 * capacity + 1;
    return capacity - capacity / 8;
  }
  // Batch: the table's values to the sorted input, each key's before its later records.
  void spillTable() {
    if constexpr (kSortable<T, K>) {
      this->callUser([&] {
        for (const auto& [key, value] : values_) sortedInput_.add(key, value, false, 0);
      });
      decltype(values_)().swap(values_);  // its memory too
    }
  }

  // Where the values live (RocksDB state, or this operator's table), restored.
  void openValues() {
    auto* restored = this->context().restored();
    if (keyedStateInRocksDB(this->context())) {
      store_ = makeKeyedStateBackend<K>(this->context());
      if (restored != nullptr) store_->setRestored(*restored);
      state_ = &valueState<VoidNamespace>(*store_, ValueStateDescriptor<T>(kRollingState));
      return;
    }
    // Heap: the values come through a heap store, which records the schema RocksDB's
    // ValueState would (so that a changed T migrates or is refused here too, and
    // checkpoints carry it) and reads state files and RocksDB files alike.
    auto store = makeKeyedStateBackend<K>(this->context());
    if (restored != nullptr) store->setRestored(*restored);
    store->recordSchema(kRollingState, "ValueState", stateLayout<VoidNamespace, T>({"value"}));
    schema_ = store->stateSchemas().at(kRollingState);
    store->takeRestored(kRollingState, [&](const StateEntry& e) {
      values_.insert_or_assign(decodeState<K>(e.key, kRollingState, e.keyGroup),
                               decodeState<T>(e.value, kRollingState, e.keyGroup));
    });
  }

  // RocksDB: one read and one write of the key's value per record.
  void reduceInStore(std::span<T> records) {
    try {
      for (auto& r : records) {
        K key = std::invoke(keySelector_, r);
        store_->setCurrentKey(key);
        std::optional<T> value = state_->value();
        T next = value ? callReduce(this->fn_, *value, r) : r;
        state_->update(next);
        if (!batch_) buffer_.push_back(std::move(next));
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
  TypeSchema schema_;                                // heap: theirs, as checkpoints record it
  std::vector<Stored<K>> keys_;
  std::vector<T> buffer_;
  bool batch_ = false;                // RuntimeExecutionMode::BATCH: final values only
  SortingDataInput<T, K> sortedInput_;  // batch, until the end of the input
  size_t tableKeys_ = SIZE_MAX;          // batch: the keys values_ may hold before it is sorted
  int64_t heldWatermark_ = INT64_MIN;  // batch: until the final values are out
};

}  // namespace weir::detail
