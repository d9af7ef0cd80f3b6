// Timers of a keyed operator in one time domain, on the heap for now: one timer per
// (key, time), fired in time order once the watermark (or the clock) reaches them. The
// window operator's "key" is a (key, window) pair, hashed by `Hash`.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "weir/key_group.h"

namespace weir::detail {

template <class K, class Hash = KeyHasher<K>>
class TimerQueue {
 public:
  // Registering a timer that exists does nothing (and returns false).
  bool add(const K& key, int64_t time) {
    if (!live_.insert(std::pair<K, int64_t>{key, time}).second) return false;
    queue_.push({time, key});
    return true;
  }
  // The queue keeps a removed timer until it comes up; once those outnumber the live
  // ones, it is rebuilt from them, so a timer moved on every record (a growing session)
  // costs no memory for long.
  void remove(const K& key, int64_t time) {
    if (live_.erase(std::pair<K, int64_t>{key, time}) == 0) return;
    if (queue_.size() > 2 * live_.size() + 1024) rebuild();
  }
  // Calls f(key, time) for every live timer, in no particular order.
  template <class F>
  void forEach(F&& f) const {
    for (const auto& [key, time] : live_) f(key, time);
  }

  // Entries in the queue, removed ones not yet dropped included.
  size_t queued() const { return queue_.size(); }

  // The time of the earliest live timer, if any.
  std::optional<int64_t> earliest() {
    while (!queue_.empty() && !live_.contains(std::pair<K, int64_t>{queue_.top().second, queue_.top().first}))
      queue_.pop();  // deleted
    if (queue_.empty()) return std::nullopt;
    return queue_.top().first;
  }

  // Takes the earliest live timer at or before `upTo`; false when there is none.
  bool pop(int64_t upTo, K& key, int64_t& time) {
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

 private:
  struct Later {
    bool operator()(const std::pair<int64_t, K>& a, const std::pair<int64_t, K>& b) const { return a.first > b.first; }
  };
  struct TimerHash {
    size_t operator()(const std::pair<K, int64_t>& t) const {
      return Hash{}(t.first) * 31 + static_cast<size_t>(t.second);
    }
  };

  void rebuild() {
    std::vector<std::pair<int64_t, K>> timers;
    timers.reserve(live_.size());
    for (const auto& [key, time] : live_) timers.emplace_back(time, key);
    queue_ = decltype(queue_)(Later{}, std::move(timers));
  }

  absl::flat_hash_set<std::pair<K, int64_t>, TimerHash> live_;
  std::priority_queue<std::pair<int64_t, K>, std::vector<std::pair<int64_t, K>>, Later> queue_;  // by time
};

}  // namespace weir::detail
