// Timers of a keyed operator in one time domain: one timer per (key, time), fired in
// time order once the watermark (or the clock) reaches them. A window operator's "key" is
// a (key, window) pair, hashed by `Hash`. They live on the heap, or with the RocksDB state
// backend in a RocksDB column of the operator's instance, as Flink keeps them by default
// (state.backend.rocksdb.timer-service.factory: ROCKSDB), so they take no memory per timer.
//
// Checkpoints hold a timer as an entry of state "_timers" (or "_processing_timers") in
// its key group, with an empty value and as key its time — 8 bytes big-endian with the
// sign bit flipped, so that bytes sort as times do — then the rest of what identifies it
// (the serialized key; a window). That is also the RocksDB key behind the key group, so
// a key group's timers are in time order there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/key_group.h"
#include "weir/serializer.h"

namespace weir::detail {

// A timer's time as the front of its entry key (see the top of this file).
inline void writeTimerTime(int64_t time, DataOutput& out) {
  uint64_t bits = static_cast<uint64_t>(time) ^ (uint64_t{1} << 63);
  if constexpr (std::endian::native == std::endian::little) bits = byteSwap(bits);
  out.writeRaw(&bits, sizeof bits);
}
inline int64_t readTimerTime(DataInput& in) {
  uint64_t bits;
  in.readRaw(&bits, sizeof bits, "timer time");
  if constexpr (std::endian::native == std::endian::little) bits = byteSwap(bits);
  return static_cast<int64_t>(bits ^ (uint64_t{1} << 63));
}

// The time of a timer entry of state `state` in a checkpoint; its key goes on at byte 8.
inline int64_t checkpointedTimerTime(const StateEntry& e, const std::string& state) {
  DataInput in(e.key);
  try {
    return readTimerTime(in);
  } catch (const SerializationError& error) {
    throw Error(ErrorCode::kSerialization, stateWhere(state, e.keyGroup) + ": " + error.what());
  }
}

// In a batch job, the timers due once the input is done (each key's, when the input is
// grouped by key): `fire(false)` fires the event-time ones, then `fire(true)` the
// processing-time ones, since processing time jumps to the end of time (Flink's batch
// timer service). While `endOfTime` is set, processing-time timers registered are not
// kept (they would be due at once, and could register another forever); event-time
// ones those register fire too. The caller clears `endOfTime` for a next key.
template <class Fire, class EventTimers>
void fireAtEndOfTime(bool& endOfTime, EventTimers& eventTimers, Fire&& fire) {
  fire(false);
  endOfTime = true;
  fire(true);
  while (eventTimers.earliest()) fire(false);
}

class RocksDBColumn;
class RocksDBInstance;

// The timers of one column of a RocksDB instance, as Flink's RocksDB timer queue keeps
// them: each key group's first timers (at most 128) are cached on the heap, with the key
// groups ordered by their first timer, so finding and firing the earliest timer reads
// nothing from RocksDB until a key group's cache runs dry. A timer is identified by its
// key group, time and `rest` (the bytes after the time in its entry key).
class RocksDBTimers {
 public:
  static constexpr size_t kCacheSize = 128;  // Flink's default (timer-service.cache-size)

  // The timers of column `name` for key groups `range`; reads the first ones of each key
  // group the column already holds (a restored instance's).
  RocksDBTimers(RocksDBInstance& db, const std::string& name, KeyGroupRange range);
  ~RocksDBTimers();

  void add(int keyGroup, int64_t time, std::string_view rest);
  void remove(int keyGroup, int64_t time, std::string_view rest);
  // Whether the timer exists (a RocksDB read unless the cache tells).
  bool contains(int keyGroup, int64_t time, std::string_view rest);
  // The time of the earliest timer, if any.
  std::optional<int64_t> earliest() const;
  // Takes the earliest timer at or before `upTo`; false when there is none.
  bool pop(int64_t upTo, int& keyGroup, int64_t& time, std::string& rest);

 private:
  struct Group {
    std::set<std::string> cache;  // the smallest entry keys of the key group (time first)
    bool complete = true;         // the cache holds all of them
    bool queued = false;          // in heads_ with the time of its first cached timer
    int64_t head = 0;
  };
  Group& group(int keyGroup);
  static std::string entryKey(int64_t time, std::string_view rest);
  std::string rocksKey(int keyGroup, std::string_view entryKey) const;
  // Reads the first timers of key group `g` after entry key `after` (all, when empty).
  void refill(int g, std::string_view after);
  void requeue(int g);

  RocksDBColumn& column_;
  KeyGroupRange range_;
  std::vector<Group> groups_;
  std::set<std::pair<int64_t, int>> heads_;  // (first timer, key group) of key groups with timers
};

template <class K, class Hash = KeyHasher<K>>
class TimerQueue {
 public:
  // Sets the queue up as the timers of state `name` (kTimersState or
  // kProcessingTimersState) of a subtask owning key groups `range`, after `store` took
  // what a checkpoint holds: with RocksDB the timers live in the instance's column of
  // that name, restored ones included; on the heap the restored ones are taken from the
  // store. `keyGroupOf` gives a timer's key group.
  void open(KeyedStateBackendBase& store, std::string name, KeyGroupRange range, std::function<int(const K&)> keyGroupOf) {
    name_ = std::move(name);
    keyGroupOf_ = std::move(keyGroupOf);
    if constexpr (Serializable<K>) {
      if (RocksDBInstance* db = store.rocksdb()) {
        rocksdb_ = std::make_unique<RocksDBTimers>(*db, name_, range);
        return;
      }
      store.takeRestored(name_, [&](const StateEntry& e) { restore(e); });
    }
  }
  // Lets go of RocksDB's column before the store closes the instance.
  void close() { rocksdb_.reset(); }
  // Whether the timers are in RocksDB, which checkpoints with the rest of the keyed state.
  bool onRocksDB() const { return rocksdb_ != nullptr; }

  // Registering a timer that exists does nothing (on the heap it returns false; RocksDB
  // does not look it up and returns true).
  bool add(const K& key, int64_t time) {
    if (rocksdb_) {
      rocksdb_->add(keyGroupOf_(key), time, encode(key));
      return true;
    }
    if (!live_.insert(std::pair<K, int64_t>{key, time}).second) return false;
    queue_.push({time, key});
    return true;
  }
  // The queue keeps a removed timer until it comes up; once those outnumber the live
  // ones, it is rebuilt from them, so a timer moved on every record (a growing session)
  // costs no memory for long.
  void remove(const K& key, int64_t time) {
    if (rocksdb_) {
      rocksdb_->remove(keyGroupOf_(key), time, encode(key));
      return;
    }
    if (live_.erase(std::pair<K, int64_t>{key, time}) == 0) return;
    if (queue_.size() > 2 * live_.size() + 1024) rebuild();
  }
  // Heap: calls f(key, time) for every live timer, in no particular order.
  template <class F>
  void forEach(F&& f) const {
    for (const auto& [key, time] : live_) f(key, time);
  }

  // Heap: entries in the queue, removed ones not yet dropped included.
  size_t queued() const { return queue_.size(); }

  // The time of the earliest live timer, if any.
  std::optional<int64_t> earliest() {
    if (rocksdb_) return rocksdb_->earliest();
    while (!queue_.empty() && !live_.contains(std::pair<K, int64_t>{queue_.top().second, queue_.top().first}))
      queue_.pop();  // deleted
    if (queue_.empty()) return std::nullopt;
    return queue_.top().first;
  }

  // Takes the earliest live timer at or before `upTo`; false when there is none.
  bool pop(int64_t upTo, K& key, int64_t& time) {
    if (rocksdb_) {
      int keyGroup;
      if (!rocksdb_->pop(upTo, keyGroup, time, bytes_)) return false;
      if constexpr (Serializable<K>) key = decodeState<K>(bytes_, name_, keyGroup);
      return true;
    }
    while (!queue_.empty() && queue_.top().first <= upTo) {
      auto [t, k] = queue_.top();
      queue_.pop();
      if (live_.erase(std::pair<K, int64_t>{k, t}) == 0) continue;  // deleted
      key = std::move(k);
      time = t;
      return true;
    }
    return false;
  }

  // Heap: the timers into `out` as the entries of their state (see the top of this
  // file). RocksDB's are in the instance, which the store checkpoints.
  void snapshot(OperatorSnapshot& out) const {
    if (rocksdb_) return;
    std::vector<OwnedStateEntry> entries;
    if constexpr (Serializable<K>) {
      DataOutput bytes;
      forEach([&](const K& key, int64_t time) {
        bytes.clear();
        writeTimerTime(time, bytes);
        Serializer<K>::serialize(key, bytes);
        entries.push_back({keyGroupOf_(key), bytes.data(), {}});
      });
    }
    out.keyed[name_] = std::make_unique<MaterializedSnapshot>(std::move(entries));
  }

 private:
  struct Later {
    bool operator()(const std::pair<int64_t, K>& a, const std::pair<int64_t, K>& b) const { return a.first > b.first; }
  };
  struct TimerHash {
    size_t operator()(const std::pair<K, int64_t>& t) const {
      return Hash{}(t.first) * 31 + static_cast<size_t>(t.second);
    }
  };

  void restore(const StateEntry& e) {
    const int64_t time = checkpointedTimerTime(e, name_);
    add(decodeState<K>(e.key.substr(8), name_, e.keyGroup), time);
  }

  void rebuild() {
    std::vector<std::pair<int64_t, K>> timers;
    timers.reserve(live_.size());
    for (const auto& [key, time] : live_) timers.emplace_back(time, key);
    queue_ = decltype(queue_)(Later{}, std::move(timers));
  }
  std::string_view encode(const K& key) {
    out_.clear();
    if constexpr (Serializable<K>) Serializer<K>::serialize(key, out_);
    return out_.data();
  }

  absl::flat_hash_set<std::pair<K, int64_t>, TimerHash> live_;
  std::priority_queue<std::pair<int64_t, K>, std::vector<std::pair<int64_t, K>>, Later> queue_;  // by time
  std::string name_;
  std::function<int(const K&)> keyGroupOf_;
  std::unique_ptr<RocksDBTimers> rocksdb_;  // RocksDB: the timers
  DataOutput out_;
  std::string bytes_;
};

}  // namespace weir::detail
