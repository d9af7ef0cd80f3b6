// Keyed state on the heap (HashMapStateBackend): live C++ objects, found through the
// current key's slot so a state access costs no second hash of the key.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/node_hash_map.h>

#include "weir/detail/keyed_state_store.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

// The entries of one state: one S per (key slot, namespace).
template <class N, class S>
class HeapTable {
  struct SlotNsHash {
    size_t operator()(const std::pair<uint32_t, N>& p) const {
      return KeyHasher<N>{}(p.second) * 0x9E3779B97F4A7C15ull + p.first;
    }
  };

 public:
  S* find(uint32_t slot, const N& ns) {
    auto it = map_.find(std::pair<uint32_t, N>{slot, ns});
    return it == map_.end() ? nullptr : &it->second;
  }
  // The entry, and whether it was created now.
  std::pair<S*, bool> findOrCreate(uint32_t slot, const N& ns) {
    auto [it, inserted] = map_.try_emplace(std::pair<uint32_t, N>{slot, ns});
    return {&it->second, inserted};
  }
  void erase(uint32_t slot, const N& ns) { map_.erase(std::pair<uint32_t, N>{slot, ns}); }
  template <class F>
  void forEach(F&& f) {
    for (auto& [k, s] : map_) f(k.first, k.second, s);
  }

 private:
  absl::node_hash_map<std::pair<uint32_t, N>, S, SlotNsHash> map_;  // nodes never move
};

// Without a namespace, entries sit in chunks indexed by slot: a lookup is two loads.
template <class S>
class HeapTable<VoidNamespace, S> {
  static constexpr uint32_t kShift = 10;
  static constexpr uint32_t kChunk = 1u << kShift;
  using Chunk = std::array<std::optional<S>, kChunk>;

 public:
  S* find(uint32_t slot, const VoidNamespace&) {
    uint32_t c = slot >> kShift;
    if (c >= chunks_.size()) return nullptr;
    auto& entry = (*chunks_[c])[slot & (kChunk - 1)];
    return entry ? &*entry : nullptr;
  }
  std::pair<S*, bool> findOrCreate(uint32_t slot, const VoidNamespace&) {
    uint32_t c = slot >> kShift;
    while (c >= chunks_.size()) chunks_.push_back(std::make_unique<Chunk>());
    auto& entry = (*chunks_[c])[slot & (kChunk - 1)];
    bool created = !entry.has_value();
    if (created) entry.emplace();
    return {&*entry, created};
  }
  void erase(uint32_t slot, const VoidNamespace&) {
    uint32_t c = slot >> kShift;
    if (c < chunks_.size()) (*chunks_[c])[slot & (kChunk - 1)].reset();
  }
  // Slots the table has room for; at(slot) is the entry of a slot below that, or null.
  uint32_t capacity() const { return static_cast<uint32_t>(chunks_.size()) * kChunk; }
  S* at(uint32_t slot) {
    auto& entry = (*chunks_[slot >> kShift])[slot & (kChunk - 1)];
    return entry ? &*entry : nullptr;
  }
  template <class F>
  void forEach(F&& f) {
    static const VoidNamespace ns;
    for (uint32_t c = 0; c < chunks_.size(); ++c) {
      for (uint32_t i = 0; i < kChunk; ++i) {
        auto& entry = (*chunks_[c])[i];
        if (entry) f((c << kShift) | i, ns, *entry);
      }
    }
  }

 private:
  std::vector<std::unique_ptr<Chunk>> chunks_;  // chunks never move, so neither do entries
};

template <class T>
void serializeForState(const T& value, DataOutput& out) {
  if constexpr (Serializable<T>) {
    Serializer<T>::serialize(value, out);
  } else {
    throw Error(ErrorCode::kState, "the type " + demangledTypeName(typeid(T)) +
                                       " has no weir::Serializer; declare it with WEIR_STRUCT to snapshot it");
  }
}

// What every heap state shares: its table, the current key and namespace.
template <class N, class S>
class HeapState : public KeyedStateBase {
 public:
  HeapState(KeyedStateStore& store, std::string name)
      : ctx_(store.keyContext()), keys_(*store.heapKeys()), name_(std::move(name)) {}

  void setCurrentNamespace(N ns) { ns_ = std::move(ns); }

  // Checks up to `n` entries, going on from where the last call stopped, and erases
  // those for which `shouldErase(entry)` is true (TTL's incremental cleanup).
  template <class F>
  void sweep(size_t n, F&& shouldErase)
    requires std::is_same_v<N, VoidNamespace>
  {
    uint32_t capacity = table_.capacity();
    if (capacity == 0) return;
    size_t checked = 0;
    for (uint32_t scanned = 0; scanned < capacity && checked < n; ++scanned) {
      uint32_t slot = sweepCursor_;
      sweepCursor_ = sweepCursor_ + 1 == capacity ? 0 : sweepCursor_ + 1;
      S* entry = table_.at(slot);
      if (entry == nullptr) continue;
      ++checked;
      if (shouldErase(*entry)) {
        table_.erase(slot, ns_);
        keys_.release(slot);
      }
    }
  }

  void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) override {
    struct Item {
      uint32_t slot;
      const N* ns;
      S* value;
    };
    std::vector<std::vector<Item>> byGroup(static_cast<size_t>(range.size()));
    table_.forEach([&](uint32_t slot, const N& ns, S& s) {
      int group = keys_.keyGroupOf(slot);
      if (range.contains(group)) byGroup[static_cast<size_t>(group - range.start)].push_back({slot, &ns, &s});
    });
    DataOutput key;
    for (size_t g = 0; g < byGroup.size(); ++g) {
      for (const Item& item : byGroup[g]) {
        key.clear();
        keys_.serializeKey(item.slot, key);
        serializeForState(*item.ns, key);
        writeEntries(range.start + static_cast<int>(g), key, *item.value, visit);
      }
    }
  }

 protected:
  // Emits the canonical entries of one (key, namespace) whose key bytes are `key`.
  virtual void writeEntries(int keyGroup, DataOutput& key, const S& value, const StateEntryVisitor& visit) {
    DataOutput out;
    serializeForState(value, out);
    visit(StateEntry{keyGroup, key.data(), out.data()});
  }

  void checkKey() const {
    if (ctx_.keyGroup < 0) [[unlikely]] throwOutsideKeyedContext(name_);
  }
  S* current() {
    checkKey();
    return table_.find(ctx_.slot, ns_);
  }
  S& currentOrCreate() {
    checkKey();
    auto [s, created] = table_.findOrCreate(ctx_.slot, ns_);
    if (created) keys_.acquire(ctx_.slot);
    return *s;
  }
  void eraseCurrent() {
    checkKey();
    if (table_.find(ctx_.slot, ns_) == nullptr) return;
    table_.erase(ctx_.slot, ns_);
    keys_.release(ctx_.slot);
  }

  KeyContext& ctx_;
  HeapKeyTable& keys_;
  std::string name_;
  N ns_{};
  HeapTable<N, S> table_;
  uint32_t sweepCursor_ = 0;
};

template <class N, class T>
class HeapValueState final : public HeapState<N, T>, public ValueState<T> {
 public:
  HeapValueState(KeyedStateStore& store, const ValueStateDescriptor<T>& d)
      : HeapState<N, T>(store, d.getName()), default_(d.getDefaultValue()) {}

  std::optional<T> value() override {
    if (T* v = this->current()) return *v;
    return default_;
  }
  void update(T value) override {
    if (T* v = this->current()) [[likely]] {
      *v = std::move(value);
    } else {
      this->currentOrCreate() = std::move(value);
    }
  }
  void clear() override { this->eraseCurrent(); }

 private:
  std::optional<T> default_;
};

template <class T>
void writeListElements(const std::vector<T>& list, DataOutput& out) {
  DataOutput element;
  for (const T& v : list) {
    element.clear();
    serializeForState(v, element);
    out.writeString(element.data());
  }
}

template <class N, class T>
class HeapListState final : public HeapState<N, std::vector<T>>, public ListState<T> {
 public:
  HeapListState(KeyedStateStore& store, const ListStateDescriptor<T>& d) : HeapState<N, std::vector<T>>(store, d.getName()) {}

  std::vector<T> get() override {
    if (auto* list = this->current()) return *list;
    return {};
  }
  void add(T value) override { this->currentOrCreate().push_back(std::move(value)); }
  void addAll(std::vector<T> values) override {
    if (values.empty()) return;
    auto& list = this->currentOrCreate();
    for (auto& v : values) list.push_back(std::move(v));
  }
  void update(std::vector<T> values) override {
    if (values.empty()) {
      this->eraseCurrent();
    } else {
      this->currentOrCreate() = std::move(values);
    }
  }
  void clear() override { this->eraseCurrent(); }

 protected:
  void writeEntries(int keyGroup, DataOutput& key, const std::vector<T>& list, const StateEntryVisitor& visit) override {
    DataOutput out;
    writeListElements(list, out);
    visit(StateEntry{keyGroup, key.data(), out.data()});
  }
};

// One key's map, with a stamp that changes whenever an entry is added or removed (so
// an iteration over it notices).
template <class UK, class UV>
struct HeapMap {
  absl::flat_hash_map<UK, UV, KeyHasher<UK>> map;
  uint64_t stamp = 0;
};

template <class N, class UK, class UV>
class HeapMapState final : public HeapState<N, HeapMap<UK, UV>>, public MapState<UK, UV> {
  using Base = HeapState<N, HeapMap<UK, UV>>;

 public:
  HeapMapState(KeyedStateStore& store, const MapStateDescriptor<UK, UV>& d) : Base(store, d.getName()) {}

  std::optional<UV> get(const UK& key) override {
    if (auto* m = this->current()) {
      auto it = m->map.find(key);
      if (it != m->map.end()) return it->second;
    }
    return std::nullopt;
  }
  void put(UK key, UV value) override {
    auto& m = this->currentOrCreate();
    auto [it, inserted] = m.map.insert_or_assign(std::move(key), std::move(value));
    if (inserted) m.stamp = ++stamps_;
  }
  void putAll(std::vector<std::pair<UK, UV>> entries) override {
    for (auto& [k, v] : entries) put(std::move(k), std::move(v));
  }
  void remove(const UK& key) override {
    auto* m = this->current();
    if (m == nullptr || m->map.erase(key) == 0) return;
    m->stamp = ++stamps_;
    if (m->map.empty()) this->eraseCurrent();
  }
  bool contains(const UK& key) override {
    auto* m = this->current();
    return m != nullptr && m->map.contains(key);
  }
  bool isEmpty() override { return this->current() == nullptr; }
  void clear() override { this->eraseCurrent(); }

  // Incremental cleanup: removes the entries `expired(value)` says, in up to `n` maps.
  template <class P>
  void sweepEntries(size_t n, P expired) {
    this->sweep(n, [&](HeapMap<UK, UV>& m) {
      if (absl::erase_if(m.map, [&](const auto& kv) { return expired(kv.second); }) > 0) m.stamp = ++stamps_;
      return m.map.empty();
    });
  }

  StateIterable<std::pair<UK, UV>> entries() override {
    return iterate<std::pair<UK, UV>>([](const auto& kv) { return std::pair<UK, UV>(kv.first, kv.second); });
  }
  StateIterable<UK> keys() override {
    return iterate<UK>([](const auto& kv) { return kv.first; });
  }
  StateIterable<UV> values() override {
    return iterate<UV>([](const auto& kv) { return kv.second; });
  }

 protected:
  void writeEntries(int keyGroup, DataOutput& key, const HeapMap<UK, UV>& m, const StateEntryVisitor& visit) override {
    size_t prefix = key.size();
    DataOutput out;
    for (const auto& [k, v] : m.map) {
      std::string entryKey = key.data().substr(0, prefix);
      DataOutput userKey;
      serializeForState(k, userKey);
      entryKey += userKey.data();
      out.clear();
      serializeForState(v, out);
      visit(StateEntry{keyGroup, entryKey, out.data()});
    }
  }

 private:
  // Walks the current key's map; finds it again on each step, so a change to another
  // key cannot invalidate it, and a change to this map is reported, not undefined.
  template <class E, class Project>
  StateIterable<E> iterate(Project project) {
    class Cursor final : public StateIterable<E>::Cursor {
     public:
      Cursor(HeapMapState* state, uint32_t slot, N ns, Project project)
          : state_(state), slot_(slot), ns_(std::move(ns)), project_(project) {
        if (auto* m = state_->table_.find(slot_, ns_)) {
          stamp_ = m->stamp;
          it_ = m->map.begin();
          started_ = true;
        }
      }
      bool next(E& element) override {
        if (!started_) return false;
        auto* m = state_->table_.find(slot_, ns_);
        if (m == nullptr || m->stamp != stamp_) {
          throw Error(ErrorCode::kState, "MapState '" + state_->name_ +
                                             "' was changed while it was being iterated; collect the keys first, "
                                             "then change the map");
        }
        if (it_ == m->map.end()) return false;
        element = project_(*it_);
        ++it_;
        return true;
      }

     private:
      HeapMapState* state_;
      uint32_t slot_;
      N ns_;
      Project project_;
      uint64_t stamp_ = 0;
      typename absl::flat_hash_map<UK, UV, KeyHasher<UK>>::iterator it_;
      bool started_ = false;
    };
    this->checkKey();
    return StateIterable<E>(std::make_unique<Cursor>(this, this->ctx_.slot, this->ns_, project));
  }

  uint64_t stamps_ = 0;
};

template <class N, class T>
class HeapReducingState final : public HeapState<N, T>, public ReducingState<T> {
 public:
  HeapReducingState(KeyedStateStore& store, const ReducingStateDescriptor<T>& d)
      : HeapState<N, T>(store, d.getName()), reduce_(d.getReduceFunction()) {}

  std::optional<T> get() override {
    if (T* v = this->current()) return *v;
    return std::nullopt;
  }
  void add(T value) override {
    if (T* v = this->current()) {
      *v = reduce_(*v, value);
    } else {
      this->currentOrCreate() = std::move(value);
    }
  }
  void clear() override { this->eraseCurrent(); }

 private:
  typename ReducingStateDescriptor<T>::ReduceFn reduce_;
};

template <class N, class IN, class ACC, class OUT>
class HeapAggregatingState final : public HeapState<N, ACC>, public AggregatingState<IN, OUT> {
 public:
  HeapAggregatingState(KeyedStateStore& store, const AggregatingStateDescriptor<IN, ACC, OUT>& d)
      : HeapState<N, ACC>(store, d.getName()), fn_(d.getAggregateFunction()) {}

  std::optional<OUT> get() override {
    if (ACC* acc = this->current()) return fn_->getResult(*acc);
    return std::nullopt;
  }
  void add(const IN& value) override {
    ACC* acc = this->current();
    if (acc == nullptr) {
      ACC fresh = fn_->createAccumulator();
      acc = &this->currentOrCreate();
      *acc = std::move(fresh);
    }
    *acc = fn_->add(value, std::move(*acc));
  }
  void clear() override { this->eraseCurrent(); }

 private:
  std::shared_ptr<AggregateFunction<IN, ACC, OUT>> fn_;
};

}  // namespace weir::detail
