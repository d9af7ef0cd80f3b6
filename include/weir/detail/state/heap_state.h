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

#include "weir/detail/core/chunked_vector.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

// The entries of one state: one S per (key slot, namespace). A snapshot is a copy
// (window state; the namespace-free tables below snapshot without copying).
template <class N, class S>
class HeapTable {
  struct SlotNsHash {
    size_t operator()(const std::pair<uint32_t, N>& p) const {
      return KeyHasher<N>{}(p.second) * 0x9E3779B97F4A7C15ull + p.first;
    }
  };
  using Map = absl::node_hash_map<std::pair<uint32_t, N>, S, SlotNsHash>;

 public:
  using Snapshot = std::shared_ptr<const Map>;

  const S* find(uint32_t slot, const N& ns) const {
    auto it = map_.find(std::pair<uint32_t, N>{slot, ns});
    return it == map_.end() ? nullptr : &it->second;
  }
  S* findMutable(uint32_t slot, const N& ns) { return const_cast<S*>(find(slot, ns)); }
  // The entry, and whether it was created now.
  std::pair<S*, bool> findOrCreate(uint32_t slot, const N& ns) {
    auto [it, inserted] = map_.try_emplace(std::pair<uint32_t, N>{slot, ns});
    return {&it->second, inserted};
  }
  void erase(uint32_t slot, const N& ns) { map_.erase(std::pair<uint32_t, N>{slot, ns}); }
  // Erases the slot's entries in every namespace (a scan: for a table of few keys);
  // returns how many.
  size_t eraseSlot(uint32_t slot) { return absl::erase_if(map_, [&](const auto& e) { return e.first.first == slot; }); }

  Snapshot snapshot() const { return std::make_shared<const Map>(map_); }
  template <class F>
  static void forEach(const Snapshot& snapshot, F&& f) {
    for (const auto& [k, s] : *snapshot) f(k.first, k.second, s);
  }

 private:
  Map map_;  // nodes never move
};

// Without a namespace, entries sit in chunks indexed by slot: a lookup is two loads, and
// a snapshot shares the chunks (copy on write).
template <class S>
class HeapTable<VoidNamespace, S> {
  using Entries = ChunkedVector<std::optional<S>>;

 public:
  using Snapshot = typename Entries::Snapshot;

  const S* find(uint32_t slot, const VoidNamespace&) const {
    if (slot >= entries_.size()) return nullptr;
    const auto& entry = entries_[slot];
    return entry ? &*entry : nullptr;
  }
  S* findMutable(uint32_t slot, const VoidNamespace&) {
    if (slot >= entries_.size() || !entries_[slot]) return nullptr;
    return &*entries_.mutableAt(slot);
  }
  std::pair<S*, bool> findOrCreate(uint32_t slot, const VoidNamespace&) {
    entries_.growTo(size_t{slot} + 1);
    auto& entry = entries_.mutableAt(slot);
    bool created = !entry.has_value();
    if (created) entry.emplace();
    return {&*entry, created};
  }
  void erase(uint32_t slot, const VoidNamespace&) {
    if (slot < entries_.size() && entries_[slot]) entries_.mutableAt(slot).reset();
  }
  size_t eraseSlot(uint32_t slot) {
    if (slot >= entries_.size() || !entries_[slot]) return 0;
    entries_.mutableAt(slot).reset();
    return 1;
  }
  // Slots the table has room for.
  uint32_t capacity() const { return static_cast<uint32_t>(entries_.size()); }

  Snapshot snapshot() const { return entries_.snapshot(); }
  template <class F>
  static void forEach(const Snapshot& snapshot, F&& f) {
    static const VoidNamespace ns;
    for (size_t i = 0; i < snapshot.size(); ++i) {
      if (snapshot[i]) f(static_cast<uint32_t>(i), ns, *snapshot[i]);
    }
  }

 private:
  Entries entries_;
};

// Reads a value a checkpoint holds for `state`; types without a Serializer cannot be
// in a checkpoint, so meeting one is a clear error.
template <class T>
T decodeForState(std::string_view bytes, const std::string& state, int keyGroup) {
  if constexpr (Serializable<T>) {
    return decodeState<T>(bytes, state, keyGroup);
  } else {
    throw Error(ErrorCode::kState, "state '" + state + "' holds " + demangledTypeName(typeid(T)) +
                                       ", which has no weir::Serializer to restore it with");
  }
}

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
class HeapState : public KeyedStateBase, public NamespacedState<N> {
 public:
  HeapState(KeyedStateBackendBase& store, std::string name)
      : store_(store), ctx_(store.keyContext()), keys_(*store.heapKeys()), name_(std::move(name)) {}

  void setCurrentNamespace(N ns) final { ns_ = std::move(ns); }

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
      if (table_.find(slot, ns_) == nullptr) continue;
      ++checked;
      if (shouldErase(*table_.findMutable(slot, ns_))) {
        table_.erase(slot, ns_);
        keys_.release(slot);
      }
    }
  }

  std::unique_ptr<StateSnapshot> snapshot(const SnapshotContext& context) override {
    return std::make_unique<Snapshot>(this, table_.snapshot(), context.keys);
  }
  void forEachSlot(const std::function<void(uint32_t)>& visit) override {
    HeapTable<N, S>::forEach(table_.snapshot(), [&](uint32_t slot, const N&, const S&) { visit(slot); });
  }
  void eraseSlot(uint32_t slot) override {
    for (size_t n = table_.eraseSlot(slot); n > 0; --n) keys_.release(slot);
  }
  void restoreEntry(const StateEntry& entry) override {
    DataInput in(entry.key);
    uint32_t slot = store_.restoreHeapKey(in, name_, entry.keyGroup);
    N ns{};
    if constexpr (!std::is_same_v<N, VoidNamespace>) ns = decodeState<N>(in, name_, entry.keyGroup);
    std::string_view rest = entry.key.substr(in.position());
    auto [s, created] = table_.findOrCreate(slot, ns);
    if (created) keys_.acquire(slot);
    restoreValue(*s, rest, entry.value, entry.keyGroup);
  }

 protected:
  // The state's entries at one moment: the table's snapshot and the keys' snapshot.
  class Snapshot final : public StateSnapshot {
   public:
    Snapshot(HeapState* state, typename HeapTable<N, S>::Snapshot table, std::shared_ptr<const KeyTableSnapshot> keys)
        : state_(state), table_(std::move(table)), keys_(std::move(keys)) {}

    void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) override {
      struct Item {
        uint32_t slot;
        const N* ns;
        const S* value;
      };
      std::vector<std::vector<Item>> byGroup(static_cast<size_t>(range.size()));
      HeapTable<N, S>::forEach(table_, [&](uint32_t slot, const N& ns, const S& s) {
        int group = keys_->keyGroupOf(slot);
        if (range.contains(group)) byGroup[static_cast<size_t>(group - range.start)].push_back({slot, &ns, &s});
      });
      DataOutput key;
      for (size_t g = 0; g < byGroup.size(); ++g) {
        for (const Item& item : byGroup[g]) {
          key.clear();
          keys_->serializeKey(item.slot, key);
          serializeForState(*item.ns, key);
          state_->writeEntries(range.start + static_cast<int>(g), key, *item.value, visit);
        }
      }
    }

   private:
    HeapState* state_;
    typename HeapTable<N, S>::Snapshot table_;
    std::shared_ptr<const KeyTableSnapshot> keys_;
  };

  // Emits the canonical entries of one (key, namespace) whose key bytes are `key`. Pure:
  // snapshots call it from other threads.
  virtual void writeEntries(int keyGroup, DataOutput& key, const S& value, const StateEntryVisitor& visit) const {
    DataOutput out;
    serializeForState(value, out);
    visit(StateEntry{keyGroup, key.data(), out.data()});
  }

  // Fills `s` from a canonical entry whose key continues with `keyRest` (map: the user
  // key).
  virtual void restoreValue(S& s, std::string_view keyRest, std::string_view value, int keyGroup) {
    s = decodeForState<S>(value, name_, keyGroup);
  }

  void checkKey() const {
    if (ctx_.keyGroup < 0) [[unlikely]] throwOutsideKeyedContext(name_);
  }
  const S* current() const {
    checkKey();
    return table_.find(ctx_.slot, ns_);
  }
  S* currentMutable() {
    checkKey();
    return table_.findMutable(ctx_.slot, ns_);
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

  KeyedStateBackendBase& store_;
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
  HeapValueState(KeyedStateBackendBase& store, const ValueStateDescriptor<T>& d)
      : HeapState<N, T>(store, d.getName()), default_(d.getDefaultValue()) {}

  std::optional<T> value() override {
    if (const T* v = this->current()) return *v;
    return default_;
  }
  using ValueState<T>::update;  // and update(std::optional<T>), which clears when empty
  void update(T value) override {
    if (T* v = this->currentMutable()) [[likely]] {
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

// The elements writeListElements wrote; a list cut short is an error naming the state.
template <class T>
std::vector<T> readListElements(std::string_view bytes, const std::string& state, int keyGroup) {
  std::vector<T> list;
  DataInput in(bytes);
  try {
    while (!in.atEnd()) list.push_back(decodeForState<T>(in.readStringView(), state, keyGroup));
  } catch (const SerializationError& e) {
    throw Error(ErrorCode::kSerialization, stateWhere(state, keyGroup) + ": a stored list is cut short: " + e.what());
  }
  return list;
}

template <class N, class T>
class HeapListState final : public HeapState<N, std::vector<T>>, public ListState<T> {
 public:
  HeapListState(KeyedStateBackendBase& store, const ListStateDescriptor<T>& d) : HeapState<N, std::vector<T>>(store, d.getName()) {}

  std::vector<T> get() override {
    if (const auto* list = this->current()) return *list;
    return {};
  }
  // A new key's entry is made only once its list is complete, so a throwing copy or
  // allocation leaves no empty entry behind.
  void add(T value) override {
    if (auto* list = this->currentMutable()) {
      list->push_back(std::move(value));
    } else {
      std::vector<T> fresh;
      fresh.push_back(std::move(value));
      this->currentOrCreate() = std::move(fresh);
    }
  }
  void addAll(std::vector<T> values) override {
    if (values.empty()) return;
    if (auto* list = this->currentMutable()) {
      for (auto& v : values) list->push_back(std::move(v));
    } else {
      this->currentOrCreate() = std::move(values);
    }
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
  void writeEntries(int keyGroup, DataOutput& key, const std::vector<T>& list,
                    const StateEntryVisitor& visit) const override {
    DataOutput out;
    writeListElements(list, out);
    visit(StateEntry{keyGroup, key.data(), out.data()});
  }
  void restoreValue(std::vector<T>& list, std::string_view, std::string_view value, int keyGroup) override {
    std::vector<T> restored = readListElements<T>(value, this->name_, keyGroup);
    list.insert(list.end(), std::make_move_iterator(restored.begin()), std::make_move_iterator(restored.end()));
  }
};

template <class UK, class UV>
using HeapMap = absl::flat_hash_map<UK, UV, KeyHasher<UK>>;

template <class N, class UK, class UV>
class HeapMapState final : public HeapState<N, HeapMap<UK, UV>>, public MapState<UK, UV> {
  using Base = HeapState<N, HeapMap<UK, UV>>;

 public:
  HeapMapState(KeyedStateBackendBase& store, const MapStateDescriptor<UK, UV>& d) : Base(store, d.getName()) {}

  std::optional<UV> get(const UK& key) override {
    if (const auto* m = this->current()) {
      auto it = m->find(key);
      if (it != m->end()) return it->second;
    }
    return std::nullopt;
  }
  void put(UK key, UV value) override {
    if (auto* m = this->currentMutable()) {
      m->insert_or_assign(std::move(key), std::move(value));
    } else {
      HeapMap<UK, UV> fresh;
      fresh.insert_or_assign(std::move(key), std::move(value));
      this->currentOrCreate() = std::move(fresh);
    }
  }
  void putAll(std::vector<std::pair<UK, UV>> entries) override {
    for (auto& [k, v] : entries) put(std::move(k), std::move(v));
  }
  void remove(const UK& key) override {
    const auto* m = this->current();
    if (m == nullptr || !m->contains(key)) return;
    auto* mutableMap = this->currentMutable();
    mutableMap->erase(key);
    if (mutableMap->empty()) this->eraseCurrent();
  }
  bool contains(const UK& key) override {
    const auto* m = this->current();
    return m != nullptr && m->contains(key);
  }
  bool isEmpty() override { return this->current() == nullptr; }
  void clear() override { this->eraseCurrent(); }

  // Incremental cleanup: removes the entries `expired(value)` says, in up to `n` maps.
  template <class P>
  void sweepEntries(size_t n, P expired) {
    this->sweep(n, [&](HeapMap<UK, UV>& m) {
      absl::erase_if(m, [&](const auto& kv) { return expired(kv.second); });
      return m.empty();
    });
  }

  StateIterable<std::pair<UK, UV>> entries() override {
    return iterate<std::pair<UK, UV>>([](const UK& k, const UV& v) { return std::pair<UK, UV>(k, v); });
  }
  StateIterable<UK> keys() override {
    return iterate<UK>([](const UK& k, const UV&) { return k; });
  }
  StateIterable<UV> values() override {
    return iterate<UV>([](const UK&, const UV& v) { return v; });
  }

 protected:
  void writeEntries(int keyGroup, DataOutput& key, const HeapMap<UK, UV>& m,
                    const StateEntryVisitor& visit) const override {
    size_t prefix = key.size();
    DataOutput out;
    for (const auto& [k, v] : m) {
      std::string entryKey = key.data().substr(0, prefix);
      DataOutput userKey;
      serializeForState(k, userKey);
      entryKey += userKey.data();
      out.clear();
      serializeForState(v, out);
      visit(StateEntry{keyGroup, entryKey, out.data()});
    }
  }
  void restoreValue(HeapMap<UK, UV>& m, std::string_view keyRest, std::string_view value, int keyGroup) override {
    m.insert_or_assign(decodeForState<UK>(keyRest, this->name_, keyGroup),
                       decodeForState<UV>(value, this->name_, keyGroup));
  }

 private:
  // Walks the map keys present when the iteration began, looking each up again as it
  // goes: changes to this or any other key never invalidate it (a key removed meanwhile
  // is skipped, one added meanwhile is not seen).
  template <class E, class Project>
  StateIterable<E> iterate(Project project) {
    class Cursor final : public StateIterable<E>::Cursor {
     public:
      Cursor(HeapMapState* state, uint32_t slot, N ns, std::vector<UK> keys, Project project)
          : state_(state), slot_(slot), ns_(std::move(ns)), keys_(std::move(keys)), project_(project) {}
      bool next(E& element) override {
        while (next_ < keys_.size()) {
          const UK& key = keys_[next_++];
          const auto* m = state_->table_.find(slot_, ns_);
          if (m == nullptr) return false;
          auto it = m->find(key);
          if (it == m->end()) continue;
          element = project_(it->first, it->second);
          return true;
        }
        return false;
      }

     private:
      HeapMapState* state_;
      uint32_t slot_;
      N ns_;
      std::vector<UK> keys_;
      size_t next_ = 0;
      Project project_;
    };
    std::vector<UK> keys;
    if (const auto* m = this->current()) {
      keys.reserve(m->size());
      for (const auto& kv : *m) keys.push_back(kv.first);
    }
    return StateIterable<E>(std::make_unique<Cursor>(this, this->ctx_.slot, this->ns_, std::move(keys), project));
  }
};

template <class N, class T>
class HeapReducingState final : public HeapState<N, T>, public ReducingState<T> {
 public:
  HeapReducingState(KeyedStateBackendBase& store, const ReducingStateDescriptor<T>& d)
      : HeapState<N, T>(store, d.getName()), reduce_(d.getReduceFunction()) {}

  std::optional<T> get() override {
    if (const T* v = this->current()) return *v;
    return std::nullopt;
  }
  void add(T value) override {
    if (T* v = this->currentMutable()) {
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
  HeapAggregatingState(KeyedStateBackendBase& store, const AggregatingStateDescriptor<IN, ACC, OUT>& d)
      : HeapState<N, ACC>(store, d.getName()), fn_(d.getAggregateFunction()) {}

  std::optional<OUT> get() override {
    if (const ACC* acc = this->current()) return fn_->getResult(*acc);
    return std::nullopt;
  }
  void add(const IN& value) override {
    if (ACC* acc = this->currentMutable()) {
      *acc = fn_->add(value, std::move(*acc));
    } else {
      ACC next = fn_->add(value, fn_->createAccumulator());  // no entry unless add succeeds
      this->currentOrCreate() = std::move(next);
    }
  }
  void clear() override { this->eraseCurrent(); }

 private:
  std::shared_ptr<AggregateFunction<IN, ACC, OUT>> fn_;
};

}  // namespace weir::detail
