// Broadcast state: a map every parallel instance of an operator holds the same copy of,
// written only from the broadcast side (Flink's BroadcastState). The other side sees it
// read-only, so a write there does not compile.
#pragma once

#include <map>
#include <optional>
#include <utility>

namespace weir {

template <class K, class V>
class ReadOnlyBroadcastState {
 public:
  virtual ~ReadOnlyBroadcastState() = default;
  std::optional<V> get(const K& key) const {
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  bool contains(const K& key) const { return entries_.contains(key); }
  bool isEmpty() const { return entries_.empty(); }
  // Every entry, in key order.
  const std::map<K, V>& immutableEntries() const { return entries_; }

 protected:
  std::map<K, V> entries_;
};

template <class K, class V>
class BroadcastState : public ReadOnlyBroadcastState<K, V> {
 public:
  void put(K key, V value) { this->entries_.insert_or_assign(std::move(key), std::move(value)); }
  void putAll(std::map<K, V> entries) {
    for (auto& [k, v] : entries) put(k, std::move(v));
  }
  void remove(const K& key) { this->entries_.erase(key); }
  void clear() { this->entries_.clear(); }
};

}  // namespace weir
