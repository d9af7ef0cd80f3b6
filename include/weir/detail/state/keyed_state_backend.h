// The keyed state of one operator subtask: the registry of its states by name, the
// current key they are scoped to, and the backend they live in (heap or RocksDB).
//
// Every state entry is identified, whatever the backend, by its key group and canonical
// bytes: serialized key + serialized namespace (+ serialized map key), with the value
// serialized (a list: each element as varint length + bytes). Snapshots and rescaling
// read and write that form, so it is the same for both backends.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/hash/hash.h>

#include "weir/clock.h"
#include "weir/detail/core/chunked_vector.h"
#include "weir/detail/core/type_name.h"
#include "weir/error.h"
#include "weir/key_group.h"
#include "weir/metrics.h"
#include "weir/serializer.h"
#include "weir/state_backend.h"

namespace weir::detail {

// The namespace of state that is not scoped to a window.
struct VoidNamespace {
  bool operator==(const VoidNamespace&) const = default;
};

}  // namespace weir::detail

namespace weir {
template <>
struct Serializer<detail::VoidNamespace> {
  static constexpr std::size_t kMinEncodedSize = 0;
  static void serialize(const detail::VoidNamespace&, DataOutput&) {}
  static detail::VoidNamespace deserialize(DataInput&) { return {}; }
  static TypeSchema schema() { return {"void", 1, {}}; }
};
}  // namespace weir

namespace weir::detail {

// The key the operator is processing now; every keyed state call reads it.
struct KeyContext {
  int keyGroup = -1;     // -1 while there is no current key
  uint32_t slot = 0;     // heap: the key's index in the key table
  std::string keyBytes;  // RocksDB: key group (2 bytes, big-endian) + serialized key
};

// One entry of a state in canonical form (see the top of this file).
struct StateEntry {
  int keyGroup;
  std::string_view key;
  std::string_view value;
};
using StateEntryVisitor = std::function<void(const StateEntry&)>;

// One entry in canonical form that owns its bytes (as a checkpoint file holds it).
struct OwnedStateEntry {
  int keyGroup;
  std::string key;
  std::string value;
};

inline std::string stateWhere(const std::string& state, int keyGroup) {
  return "state '" + state + "'" + (keyGroup >= 0 ? ", key group " + std::to_string(keyGroup) : std::string());
}

// Decodes a stored value; bytes that do not decode are an error naming the state.
template <class T>
T decodeState(DataInput& in, const std::string& state, int keyGroup) {
  try {
    return Serializer<T>::deserialize(in);
  } catch (const SerializationError& e) {
    throw Error(ErrorCode::kSerialization, stateWhere(state, keyGroup) + ": stored bytes do not decode as " +
                                               demangledTypeName(typeid(T)) + ": " + e.what());
  }
}
template <class T>
T decodeState(std::string_view bytes, const std::string& state, int keyGroup) {
  DataInput in(bytes);
  T value = decodeState<T>(in, state, keyGroup);
  if (!in.atEnd()) {
    throw Error(ErrorCode::kSerialization, stateWhere(state, keyGroup) + ": " + std::to_string(in.remaining()) +
                                               " stray bytes after a " + demangledTypeName(typeid(T)));
  }
  return value;
}

// The error of a state used while no key is current.
[[noreturn]] void throwOutsideKeyedContext(const std::string& state);

// The entries of one state at one moment. Readable from any thread while the task goes
// on changing the state; it must be destroyed before the store.
class StateSnapshot {
 public:
  virtual ~StateSnapshot() = default;
  // Calls `visit` for every entry whose key group is in `range`, grouped by key group.
  virtual void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) = 0;
};

// Entries copied out at snapshot time (timers, or restored state nobody registered
// again), sorted by key group.
class MaterializedSnapshot final : public StateSnapshot {
 public:
  explicit MaterializedSnapshot(std::vector<OwnedStateEntry> entries);
  void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) override;

 private:
  std::vector<OwnedStateEntry> entries_;
};

// The heap's keys at one moment: what heap state snapshots need to write key bytes.
class KeyTableSnapshot {
 public:
  virtual ~KeyTableSnapshot() = default;
  int keyGroupOf(uint32_t slot) const { return keyGroups_[slot]; }
  virtual void serializeKey(uint32_t slot, DataOutput& out) const = 0;

 protected:
  explicit KeyTableSnapshot(ChunkedVector<uint16_t>::Snapshot keyGroups) : keyGroups_(std::move(keyGroups)) {}

 private:
  ChunkedVector<uint16_t>::Snapshot keyGroups_;
};

class RocksDBReadView;

// What the states of one store snapshot together: the heap's keys, or RocksDB's view.
struct SnapshotContext {
  std::shared_ptr<const KeyTableSnapshot> keys;
  std::shared_ptr<const RocksDBReadView> rocksdb;
};

// A state whose entries are scoped to a namespace besides the key (window state): the
// window operator sets the namespace before each use.
template <class N>
class NamespacedState {
 public:
  virtual ~NamespacedState() = default;
  virtual void setCurrentNamespace(N ns) = 0;
};

// What every registered state can do whatever its type.
class KeyedStateBase {
 public:
  virtual ~KeyedStateBase() = default;
  // Its entries now; cheap on the task thread (heap: copy on write, RocksDB: a RocksDB
  // snapshot), then readable from any thread.
  virtual std::unique_ptr<StateSnapshot> snapshot(const SnapshotContext& context) = 0;
  // Puts one entry read from a checkpoint back (the inverse of the snapshot's form).
  virtual void restoreEntry(const StateEntry& entry) = 0;
  // Heap: calls `visit(slot)` for every key slot with an entry (without serializing).
  virtual void forEachSlot(const std::function<void(uint32_t)>& visit) {
    throw Error(ErrorCode::kInternal, "only heap states are organised by key slot");
  }
  // Heap: erases every entry of key slot `slot`, in every namespace.
  virtual void eraseSlot(uint32_t slot) {
    throw Error(ErrorCode::kInternal, "only heap states are organised by key slot");
  }
};

// The heap backend's keys: each distinct key with live state holds a slot, an index
// that heap states use instead of hashing the key again. A slot is given back once no
// state holds an entry for it.
class HeapKeyTable {
 public:
  virtual ~HeapKeyTable() = default;
  // A state created (acquire) or removed (release) an entry of `slot`.
  void acquire(uint32_t slot) { ++liveEntries_[slot]; }
  void release(uint32_t slot) {
    if (--liveEntries_[slot] == 0) mayFree_.push_back(slot);
  }
  virtual std::shared_ptr<const KeyTableSnapshot> snapshotKeys() const = 0;

 protected:
  std::vector<uint32_t> liveEntries_;  // per slot: entries held by all states
  ChunkedVector<uint16_t> keyGroups_;  // per slot
  std::vector<uint32_t> mayFree_;      // slots that were made or emptied since the last key
  std::vector<uint8_t> inUse_;         // per slot
};

struct OperatorSnapshot;
struct RestoredOperatorState;
class RocksDBInstance;
// Opens a RocksDB instance in a fresh folder under the backend's local directory; the
// folder is removed when the instance is destroyed. The native metrics the backend asks
// for show in `metrics`, the operator's group.
std::unique_ptr<RocksDBInstance> openRocksDB(const EmbeddedRocksDBStateBackend& backend, const std::string& owner,
                                             const MetricGroup& metrics);

// The keyed state backend of one operator subtask (Flink's KeyedStateBackend): its
// states by name, the current key and namespace they are scoped to, and where they live
// (the heap or a RocksDB instance). KeyedStateBackend<K> adds the key type.
class KeyedStateBackendBase {
 public:
  virtual ~KeyedStateBackendBase();

  KeyContext& keyContext() { return keyContext_; }
  HeapKeyTable* heapKeys() { return heapKeys_; }
  RocksDBInstance* rocksdb() { return rocksdb_.get(); }
  int maxParallelism() const { return maxParallelism_; }
  // Processing time, for TTL.
  const Clock& clock() const { return *clock_; }
  const std::shared_ptr<const Clock>& clockPtr() const { return clock_; }
  // Runs `cleanup` before every record (TTL's runCleanupForEveryRecord).
  void addRecordCleanup(std::function<void()> cleanup) { recordCleanups_.push_back(std::move(cleanup)); }

  // The state registered under `name`, made by `make()` the first time; `make` returns
  // the new state as its owner and as a State. `kind` and `type` must match the first
  // registration. `layout` is the schema of what the state stores besides the key (its
  // namespace, map key and value, as stored: a TTL wraps the value), when it has one; the
  // restored values of a state whose checkpoint recorded another are migrated to it
  // (core/schema_migration.h), or the registration fails naming the field.
  template <class State, class Make>
  State& getOrCreate(const std::string& name, const char* kind, std::type_index type,
                     const std::optional<TypeSchema>& layout, Make&& make) {
    auto it = states_.find(name);
    if (it == states_.end()) {
      recordSchema(name, kind, layout);
      auto [owner, state] = make();
      KeyedStateBase* base = owner.get();
      states_.emplace(name, Registered{kind, type, std::move(owner), state});
      restoreInto(name, *base);
      resolveCurrentKey();
      return *state;
    }
    if (it->second.type != type) {
      throw Error(ErrorCode::kState, "state '" + name + "' is already registered as a " + it->second.kind +
                                         " of another type; use another name for this " + kind);
    }
    return *static_cast<State*>(it->second.typed);
  }

  // The state registered under `name`, or null.
  KeyedStateBase* registered(const std::string& name) {
    auto it = states_.find(name);
    return it == states_.end() ? nullptr : it->second.state.get();
  }
  // Entries of one state in a key-group range, as they are now.
  void readEntries(const std::string& name, KeyGroupRange range, const StateEntryVisitor& visit);
  // Every state as it is now, readable from another thread while this one goes on (the
  // synchronous part of a checkpoint). Destroy it before the store. Restored states that
  // were not registered again are part of it, so they survive to the next restore.
  std::map<std::string, std::unique_ptr<StateSnapshot>> snapshot();
  // The store's part of checkpoint `checkpointId`: snapshot() into `out.keyed`, or with
  // incremental RocksDB checkpoints and NATIVE savepoints (`out.savepoint`) RocksDB's
  // own checkpoint into `out.rocksdb` (and snapshot() as its fallback).
  void snapshot(int64_t checkpointId, OperatorSnapshot& out);

  // What a checkpoint holds for this store: keyed entries by state name, each state
  // taking its own when it is registered, and RocksDB instances' files. Call before any
  // state is registered.
  void setRestored(RestoredOperatorState& restored);
  // Heap: takes the restored entries of `name` out for an operator that keeps that state
  // itself rather than in a registered one (none once taken, or on RocksDB).
  void takeRestored(const std::string& name, const StateEntryVisitor& visit);
  // Records the schema of state `name` (its kind, the key's schema and `layout`, as
  // getOrCreate gives them), after migrating the restored entries of a checkpoint that
  // recorded another, or refusing. Registering a state does it; an operator that keeps a
  // state itself (heap windows' contents) calls it before takeRestored.
  void recordSchema(const std::string& name, const char* kind, const std::optional<TypeSchema>& layout);
  // Heap: the slot of the serialized key at the front of `in` (made if new).
  virtual uint32_t restoreHeapKey(DataInput& in, const std::string& state, int keyGroup) = 0;
  // The schemas of the states, by name: those registered, and those restored that did
  // not register (again), which every later checkpoint carries on.
  const std::map<std::string, TypeSchema>& stateSchemas() const { return schemas_; }

 protected:
  KeyedStateBackendBase(const StateBackend& backend, int maxParallelism, const std::string& owner,
                        std::shared_ptr<const Clock> clock, const MetricGroup& metrics);
  void setHeapKeys(HeapKeyTable* keys) { heapKeys_ = keys; }
  void setKeySchema(TypeSchema schema) { keySchema_ = std::move(schema); }
  SnapshotContext snapshotContext() const;
  // Heap: erases every state's entries of the current key.
  void dropCurrentKeyState();
  // Scopes a state created while a key was current (e.g. inside processElement) to it.
  virtual void resolveCurrentKey() = 0;
  bool hasStates() const { return !states_.empty(); }
  virtual void clearKeyAfterRestore() = 0;

  KeyContext keyContext_;
  std::vector<std::function<void()>> recordCleanups_;

 private:
  struct Registered {
    const char* kind;
    std::type_index type;
    std::unique_ptr<KeyedStateBase> state;
    void* typed;  // the same object as `state`, as the State type it was created as
  };

  // Restored entries of one state waiting for it to register, packed into chunks of a
  // few MB (about their size in the checkpoint, rather than two strings each); taking
  // them frees each chunk once read, so the heap tables grow as the chunks go.
  class PackedEntries {
   public:
    void add(const StateEntry& e);
    // Calls `visit` with every entry, in the order added, and frees them.
    void take(const StateEntryVisitor& visit);
    std::vector<OwnedStateEntry> copy() const;

   private:
    template <class Visit>
    static void forEach(const std::string& chunk, Visit visit);
    std::vector<std::string> chunks_;
  };

  void restoreInto(const std::string& name, KeyedStateBase& state);
  // Rewrites the restored entries of `name` (on the heap, waiting; in RocksDB, its column)
  // from schema `old` to `now`; throws Error(kState) for a change that cannot be made.
  void migrateRestored(const std::string& name, const TypeSchema& old, const TypeSchema& now);

  int maxParallelism_;
  std::string owner_;  // the operator subtask, for messages
  std::map<std::string, PackedEntries> restored_;
  std::shared_ptr<const Clock> clock_;
  HeapKeyTable* heapKeys_ = nullptr;
  std::unique_ptr<RocksDBInstance> rocksdb_;
  std::string localDirectory_;  // RocksDB's, for reading checkpointed RocksDB files
  std::map<std::string, Registered> states_;
  std::optional<TypeSchema> keySchema_;         // none: the key type has no Serializer
  std::map<std::string, TypeSchema> schemas_;  // see stateSchemas()
};

// The keyed state backend of an operator whose key type is K: the keyed operator calls
// setCurrentKey before each record or timer.
template <class K>
class KeyedStateBackend final : public KeyedStateBackendBase, private HeapKeyTable {
 public:
  // `metrics`: the operator's group, where a RocksDB backend's native metrics show.
  KeyedStateBackend(const StateBackend& backend, int maxParallelism, const std::string& owner,
                    std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>(),
                    const MetricGroup& metrics = MetricGroup())
      : KeyedStateBackendBase(backend, maxParallelism, owner, std::move(clock), metrics) {
    if (rocksdb() == nullptr) setHeapKeys(this);
    if constexpr (Serializable<K>) setKeySchema(Serializer<K>::schema());
    if constexpr (!Serializable<K>) {
      if (rocksdb() != nullptr) {
        throw Error(ErrorCode::kState, "the key type " + demangledTypeName(typeid(K)) +
                                           " has no weir::Serializer, which the RocksDB state backend needs; "
                                           "declare it with WEIR_STRUCT or use the heap backend");
      }
    }
  }

  // Scopes every state to `key`, which must stay alive until the next call.
  void setCurrentKey(const K& key) {
    current_ = &key;
    if (!hasStates()) {
      keyContext_.keyGroup = 0;  // nothing to scope yet: states created later set it up
      pending_ = &key;
      return;
    }
    pending_ = nullptr;
    if (heapKeys() != nullptr) {
      setHeapKey(key);
    } else {
      setRocksDBKey(key);
    }
    for (auto& cleanup : recordCleanups_) cleanup();
  }

  // Ends the scope of the current key: state used now is an error.
  void clearCurrentKey() {
    keyContext_.keyGroup = -1;
    pending_ = nullptr;
    current_ = nullptr;
  }

  // Heap: erases every state's entries of `key` (a batch job's key, once its input is
  // done); then no key is current.
  void dropStateOf(const K& key) {
    setCurrentKey(key);
    dropCurrentKeyState();
    clearCurrentKey();
  }

  // The keys that have an entry in state `name`, each once (none if no such state).
  std::vector<K> keysWithState(const std::string& name) {
    std::vector<K> keys;
    KeyedStateBase* state = registered(name);
    if (state == nullptr) return keys;
    if (heapKeys() != nullptr) {
      std::vector<bool> seen(keys_.size());
      state->forEachSlot([&](uint32_t slot) {
        if (!seen[slot]) keys.push_back(keys_[slot]);
        seen[slot] = true;
      });
    } else if constexpr (Serializable<K>) {
      absl::flat_hash_set<K, KeyHasher<K>> seen;
      readEntries(name, KeyGroupRange{0, maxParallelism() - 1}, [&](const StateEntry& e) {
        DataInput in(e.key);
        K key = Serializer<K>::deserialize(in);
        if (seen.insert(key).second) keys.push_back(std::move(key));
      });
    }
    return keys;
  }

  // Heap: keys holding a slot (those with state, and at most the current one besides).
  size_t keySlots() const { return slots_.size(); }

  // The key the states are scoped to. Valid while a record or timer is processed.
  const K& currentKey() const { return *current_; }

  uint32_t restoreHeapKey(DataInput& in, const std::string& state, int keyGroup) override {
    if constexpr (Serializable<K>) {
      restoringKey_ = decodeState<K>(in, state, keyGroup);
      setHeapKey(restoringKey_);
      return keyContext_.slot;
    } else {
      throw Error(ErrorCode::kState, "state '" + state + "' cannot be restored: the key type " +
                                         demangledTypeName(typeid(K)) + " has no weir::Serializer");
    }
  }

 private:
  void clearKeyAfterRestore() override {
    if (current_ == nullptr) keyContext_.keyGroup = -1;
    else setCurrentKey(*current_);
  }
  void resolveCurrentKey() override {
    if (pending_ != nullptr) setCurrentKey(*pending_);
  }

  void setHeapKey(const K& key) {
    // Only a slot that was just made, or lost its last entry, can need freeing: the
    // common record (a known key, no clear) reads nothing but the key's table entry.
    if (!mayFree_.empty()) [[unlikely]] freeEmptySlots();
    auto it = slots_.find(key);
    if (it == slots_.end()) [[unlikely]] {
      it = slots_.emplace(key, newSlot(key)).first;
      mayFree_.push_back(it->second.slot);
    }
    keyContext_.slot = it->second.slot;
    keyContext_.keyGroup = it->second.keyGroup;
  }

  struct SlotOf {
    uint32_t slot;
    int32_t keyGroup;
  };

  SlotOf newSlot(const K& key) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      keys_.mutableAt(slot) = key;
    } else {
      slot = static_cast<uint32_t>(keys_.size());
      keys_.push_back(key);
      liveEntries_.push_back(0);
      keyGroups_.push_back(0);
      inUse_.push_back(0);
    }
    int keyGroup = assignToKeyGroup(KeyHash<K>{}(key), maxParallelism());
    keyGroups_.mutableAt(slot) = static_cast<uint16_t>(keyGroup);
    inUse_[slot] = 1;
    return {slot, keyGroup};
  }

  void freeEmptySlots() {
    for (uint32_t slot : mayFree_) {
      if (inUse_[slot] == 0 || liveEntries_[slot] != 0) continue;
      slots_.erase(keys_[slot]);
      keys_.mutableAt(slot) = K{};
      inUse_[slot] = 0;
      free_.push_back(slot);
    }
    mayFree_.clear();
  }

  void setRocksDBKey(const K& key) {
    if constexpr (Serializable<K>) {
      int keyGroup = assignToKeyGroup(KeyHash<K>{}(key), maxParallelism());
      keyContext_.keyGroup = keyGroup;
      keyOut_.clear();
      keyOut_.write(static_cast<uint8_t>(keyGroup >> 8));
      keyOut_.write(static_cast<uint8_t>(keyGroup & 0xff));
      Serializer<K>::serialize(key, keyOut_);
      keyContext_.keyBytes.assign(keyOut_.data());
    }
  }

  class KeysSnapshot final : public KeyTableSnapshot {
   public:
    KeysSnapshot(ChunkedVector<uint16_t>::Snapshot groups, typename ChunkedVector<K>::Snapshot keys)
        : KeyTableSnapshot(std::move(groups)), keys_(std::move(keys)) {}
    void serializeKey(uint32_t slot, DataOutput& out) const override {
      if constexpr (Serializable<K>) {
        Serializer<K>::serialize(keys_[slot], out);
      } else {
        throw Error(ErrorCode::kState, "the key type " + demangledTypeName(typeid(K)) + " has no weir::Serializer");
      }
    }

   private:
    typename ChunkedVector<K>::Snapshot keys_;
  };
  std::shared_ptr<const KeyTableSnapshot> snapshotKeys() const override {
    return std::make_shared<KeysSnapshot>(keyGroups_.snapshot(), keys_.snapshot());
  }

  // (The key group is computed once, when a key gets its slot.)
  absl::flat_hash_map<K, SlotOf, KeyHasher<K>> slots_;
  ChunkedVector<K> keys_;  // per slot
  std::vector<uint32_t> free_;
  const K* pending_ = nullptr;  // set while no state exists: resolved when one is created
  const K* current_ = nullptr;
  K restoringKey_{};
  DataOutput keyOut_;
};

}  // namespace weir::detail
