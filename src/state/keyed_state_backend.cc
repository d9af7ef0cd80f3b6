#include "weir/detail/state/keyed_state_backend.h"

#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/detail/state/state_factory.h"

#include <algorithm>
#include <cstring>
#include <cstdio>

#include "core/schema_migration.h"

namespace weir {

std::shared_ptr<StateBackend> stateBackendFromName(std::string_view name) {
  if (name == "heap" || name == "hashmap") return std::make_shared<HashMapStateBackend>();
  if (name == "rocksdb") return std::make_shared<EmbeddedRocksDBStateBackend>();
  throw Error(ErrorCode::kInvalidArgument,
              "unknown state backend '" + std::string(name) + "': use heap (or hashmap) or rocksdb");
}

const std::vector<std::string>& EmbeddedRocksDBStateBackend::nativeMetricNames() {
  // Flink's RocksDBProperty values with an integer value, as its option keys name them.
  static const std::vector<std::string> names{
      "num-immutable-mem-table", "mem-table-flush-pending", "compaction-pending", "background-errors",
      "cur-size-active-mem-table", "cur-size-all-mem-tables", "size-all-mem-tables", "num-entries-active-mem-table",
      "num-entries-imm-mem-tables", "num-deletes-active-mem-table", "num-deletes-imm-mem-tables", "estimate-num-keys",
      "estimate-table-readers-mem", "num-snapshots", "num-live-versions", "estimate-live-data-size",
      "total-sst-files-size", "live-sst-files-size", "estimate-pending-compaction-bytes", "num-running-compactions",
      "num-running-flushes", "actual-delayed-write-rate", "is-write-stopped", "block-cache-capacity",
      "block-cache-usage", "block-cache-pinned-usage"};
  return names;
}

EmbeddedRocksDBStateBackend::EmbeddedRocksDBStateBackend(Options options) : options_(std::move(options)) {
  const auto& known = nativeMetricNames();
  for (const auto& name : options_.nativeMetrics)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(ErrorCode::kInvalidArgument, "RocksDB native metric '" + name +
                                                   "' is not one weir shows (docs/configuration.md lists "
                                                   "state.backend.rocksdb.metrics.*)");
}

}  // namespace weir

namespace weir::detail {

KeyedStateBackendBase::KeyedStateBackendBase(const StateBackend& backend, int maxParallelism, const std::string& owner,
                                 std::shared_ptr<const Clock> clock, const MetricGroup& metrics)
    : maxParallelism_(maxParallelism), owner_(owner), clock_(std::move(clock)) {
  if (auto* rocks = dynamic_cast<const EmbeddedRocksDBStateBackend*>(&backend)) {
    rocksdb_ = openRocksDB(*rocks, owner, metrics);
    localDirectory_ = rocks->options().localDirectory;
  }
}

KeyedStateBackendBase::~KeyedStateBackendBase() {
  states_.clear();  // states refer to the RocksDB instance: they go first
}

SnapshotContext KeyedStateBackendBase::snapshotContext() const {
  SnapshotContext context;
  if (heapKeys_ != nullptr) context.keys = heapKeys_->snapshotKeys();
  if (rocksdb_) context.rocksdb = rocksdb_->readView();
  return context;
}

void KeyedStateBackendBase::dropCurrentKeyState() {
  if (heapKeys_ == nullptr) throw Error(ErrorCode::kInternal, "only heap state drops a key's state at once");
  if (keyContext_.keyGroup < 0) return;  // no current key
  for (auto& [name, registered] : states_) registered.state->eraseSlot(keyContext_.slot);
}

void KeyedStateBackendBase::readEntries(const std::string& name, KeyGroupRange range, const StateEntryVisitor& visit) {
  auto it = states_.find(name);
  if (it == states_.end()) throw Error(ErrorCode::kState, "no state named '" + name + "' is registered");
  it->second.state->snapshot(snapshotContext())->readEntries(range, visit);
}

std::map<std::string, std::unique_ptr<StateSnapshot>> KeyedStateBackendBase::snapshot() {
  SnapshotContext context = snapshotContext();  // one moment for every state
  std::map<std::string, std::unique_ptr<StateSnapshot>> out;
  for (auto& [name, registered] : states_) out.emplace(name, registered.state->snapshot(context));
  for (auto& [name, entries] : restored_) out.emplace(name, std::make_unique<MaterializedSnapshot>(entries.copy()));
  // Restored columns whose state did not register (again) stay in the checkpoint.
  if (rocksdb_) {
    for (const auto& name : rocksdb_->columnNames())
      if (!out.contains(name))
        out.emplace(name, std::make_unique<RocksDBColumnSnapshot>(rocksdb_->column(name), context.rocksdb));
  }
  return out;
}

void KeyedStateBackendBase::recordSchema(const std::string& name, const char* kind,
                                         const std::optional<TypeSchema>& layout) {
  if (!layout || !keySchema_) return;  // a type without a Serializer: nothing to check it by
  TypeSchema schema{kind, 1, {{"key", *keySchema_}}};
  schema.fields.insert(schema.fields.end(), layout->fields.begin(), layout->fields.end());
  if (auto it = schemas_.find(name); it != schemas_.end() && !(it->second == schema))
    migrateRestored(name, it->second, schema);
  schemas_[name] = std::move(schema);
}

void KeyedStateBackendBase::migrateRestored(const std::string& name, const TypeSchema& old, const TypeSchema& now) {
  auto refuse = [&](const std::string& difference) {
    throw Error(ErrorCode::kState, "state '" + name + "' of '" + owner_ +
                                       "' does not have the type the restored checkpoint recorded for it: " + difference +
                                       " (its old type: " + old.toString() + "); weir migrates added, removed and " +
                                       "reordered WEIR_STRUCT fields, and other changes through WEIR_STRUCT_UPGRADE");
  };
  if (old.typeName != now.typeName) refuse("it was a " + old.typeName + ", it is now a " + now.typeName);
  if (old.fields.size() != now.fields.size()) refuse(old.firstDifference(now, "state"));
  // The entries' keys (key, namespace, map key) stay as they are; the value migrates.
  std::optional<detail::SchemaMigration> migration;
  for (size_t i = 0; i < now.fields.size(); ++i) {
    const TypeSchema::Field& was = old.fields[i];
    const TypeSchema::Field& is = now.fields[i];
    if (was.name != is.name) refuse(old.firstDifference(now, "state"));
    if (i + 1 < now.fields.size()) {
      if (!(was.type == is.type))
        refuse(was.type.firstDifference(is.type, "state." + is.name) + ", and the keys of entries cannot migrate");
      continue;
    }
    try {
      migration.emplace(was.type, is.type, "state." + is.name);
    } catch (const Error& e) {
      refuse(e.what());
    }
  }
  if (!migration || migration->identity()) return;
  const bool list = now.typeName == "ListState";
  auto migrated = [&](const StateEntry& e) {
    try {
      if (!list) return migration->migrate(e.value);
      DataInput in(e.value);
      DataOutput out;
      while (!in.atEnd()) out.writeString(migration->migrate(in.readStringView()));
      return out.release();
    } catch (const SerializationError& error) {
      throw Error(ErrorCode::kSerialization, "state '" + name + "' of '" + owner_ + "', key group " +
                                                 std::to_string(e.keyGroup) + ": a restored value does not decode as " +
                                                 old.toString() + ": " + error.what());
    }
  };
  uint64_t entries = 0;
  if (auto it = restored_.find(name); it != restored_.end()) {
    PackedEntries rewritten;
    it->second.take([&](const StateEntry& e) {
      rewritten.add(StateEntry{e.keyGroup, e.key, migrated(e)});
      ++entries;
    });
    it->second = std::move(rewritten);
  }
  if (rocksdb_) {
    const auto columns = rocksdb_->columnNames();
    if (std::find(columns.begin(), columns.end(), name) != columns.end()) {
      RocksDBColumn& column = rocksdb_->column(name);
      auto view = rocksdb_->readView();  // the entries as restored, while they are rewritten
      for (auto scan = column.scan("", "", view.get()); scan->valid(); scan->next()) {
        column.put(scan->key(), migrated(StateEntry{keyGroupOfPrefix(scan->key()), scan->key(), scan->value()}));
        ++entries;
      }
    }
  }
  const std::string line = "weir: state '" + name + "' of '" + owner_ + "': migrated " + std::to_string(entries) +
                           " restored entries from " + old.toString() + " to " + now.toString() + "\n";
  std::fputs(line.c_str(), stderr);  // one write, so that subtasks' lines do not interleave
}

void KeyedStateBackendBase::snapshot(int64_t checkpointId, OperatorSnapshot& out) {
  out.keyedSchemas = schemas_;
  const bool files = out.savepoint ? *out.savepoint == SavepointFormatType::NATIVE : rocksdb_ && rocksdb_->incrementalCheckpoints();
  if (!rocksdb_ || !files) {
    out.keyed = snapshot();
    return;
  }
  out.rocksdb = rocksdb_->checkpoint(checkpointId);  // restored entries are in its columns
  out.rocksdb->fallback = snapshot();                 // the same moment: nothing was written since
}

void KeyedStateBackendBase::setRestored(RestoredOperatorState& restored) {
  for (auto& [name, schema] : restored.keyedSchemas) schemas_.insert_or_assign(name, std::move(schema));
  restored.keyedSchemas.clear();
  auto rocksdb = std::move(restored.rocksdb);
  restored.rocksdb.clear();
  const KeyGroupRange mine = restored.keyGroups;
  auto overlap = [&](const RestoredRocksDB& from) {
    return KeyGroupRange{std::max(from.keyGroups.start, mine.start), std::min(from.keyGroups.end, mine.end)};
  };
  if (rocksdb_) {
    if (!rocksdb.empty()) {
      // As Flink rescales RocksDB: the predecessor with the most of this instance's key
      // groups becomes its database as it was, less what it does not own (without
      // reading an entry); the others' entries are copied in. Restarting at the same
      // parallelism is the first step alone.
      auto base = std::max_element(rocksdb.begin(), rocksdb.end(), [&](const auto& a, const auto& b) {
        return overlap(a).size() < overlap(b).size();
      });
      rocksdb_->restore(*base, mine);
      for (auto it = rocksdb.begin(); it != rocksdb.end(); ++it)
        if (it != base) rocksdb_->insert(*it, overlap(*it));
    }
    // Entries of a full checkpoint stream from their files into their columns now, in
    // write batches, rather than wait in memory until their state registers.
    rocksdb_->insert(restored);
    return;
  }
  auto keep = [&](const std::string& state, const StateEntry& e) { restored_[state].add(e); };
  restored.takeAllKeyed(keep);
  for (const auto& from : rocksdb) readRocksDBCheckpoint(from, restored.keyGroups, localDirectory_, keep);
}

void KeyedStateBackendBase::takeRestored(const std::string& name, const StateEntryVisitor& visit) {
  auto it = restored_.find(name);
  if (it == restored_.end()) return;
  it->second.take(visit);
  restored_.erase(it);
}

void KeyedStateBackendBase::restoreInto(const std::string& name, KeyedStateBase& state) {
  if (!restored_.contains(name)) return;
  takeRestored(name, [&](const StateEntry& e) { state.restoreEntry(e); });
  clearKeyAfterRestore();
}

// A packed entry: key group, key length and value length (4 bytes each, native order),
// then the key and value bytes.
void KeyedStateBackendBase::PackedEntries::add(const StateEntry& e) {
  constexpr size_t kChunk = 4u << 20;
  if (e.key.size() > UINT32_MAX || e.value.size() > UINT32_MAX)
    throw Error(ErrorCode::kState, "a restored entry of 4 GiB or more cannot be kept for its state");
  const size_t size = 12 + e.key.size() + e.value.size();
  if (chunks_.empty() || chunks_.back().size() + size > chunks_.back().capacity()) {
    chunks_.emplace_back();
    chunks_.back().reserve(std::max(kChunk, size));
  }
  std::string& chunk = chunks_.back();
  const uint32_t head[3] = {static_cast<uint32_t>(e.keyGroup), static_cast<uint32_t>(e.key.size()),
                            static_cast<uint32_t>(e.value.size())};
  chunk.append(reinterpret_cast<const char*>(head), sizeof(head));
  chunk.append(e.key);
  chunk.append(e.value);
}

template <class Visit>
void KeyedStateBackendBase::PackedEntries::forEach(const std::string& chunk, Visit visit) {
  for (size_t at = 0; at < chunk.size();) {
    uint32_t head[3];
    std::memcpy(head, chunk.data() + at, sizeof(head));
    at += sizeof(head);
    std::string_view key(chunk.data() + at, head[1]);
    std::string_view value(chunk.data() + at + head[1], head[2]);
    at += head[1] + head[2];
    visit(StateEntry{static_cast<int>(head[0]), key, value});
  }
}

void KeyedStateBackendBase::PackedEntries::take(const StateEntryVisitor& visit) {
  for (std::string& chunk : chunks_) {
    forEach(chunk, visit);
    std::string().swap(chunk);
  }
  chunks_.clear();
}

std::vector<OwnedStateEntry> KeyedStateBackendBase::PackedEntries::copy() const {
  std::vector<OwnedStateEntry> out;
  for (const std::string& chunk : chunks_)
    forEach(chunk, [&](const StateEntry& e) { out.push_back({e.keyGroup, std::string(e.key), std::string(e.value)}); });
  return out;
}

MaterializedSnapshot::MaterializedSnapshot(std::vector<OwnedStateEntry> entries) : entries_(std::move(entries)) {
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const OwnedStateEntry& a, const OwnedStateEntry& b) { return a.keyGroup < b.keyGroup; });
}

void MaterializedSnapshot::readEntries(KeyGroupRange range, const StateEntryVisitor& visit) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), range.start,
                             [](const OwnedStateEntry& e, int group) { return e.keyGroup < group; });
  for (; it != entries_.end() && it->keyGroup <= range.end; ++it) visit(StateEntry{it->keyGroup, it->key, it->value});
}

void throwOutsideKeyedContext(const std::string& state) {
  throw Error(ErrorCode::kState, "state '" + state +
                                     "' was used outside a keyed context: keyed state exists only while a keyed "
                                     "stream's record or timer is processed");
}

void throwNotSerializableForRocksDB(const std::string& state, const std::type_info& type) {
  throw Error(ErrorCode::kState, "state '" + state + "' holds " + demangledTypeName(type) +
                                     ", which has no weir::Serializer; the RocksDB backend stores bytes, so "
                                     "declare the type with WEIR_STRUCT (or use the heap backend)");
}

void throwTtlOnWindowState(const std::string& state) {
  throw Error(ErrorCode::kState, "state '" + state + "' is per window (a trigger's state), where TTL is not available");
}

std::string prefixSuccessor(std::string_view prefix) {
  std::string next(prefix);
  while (!next.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(next.back());
    if (last != 0xff) {
      ++last;
      return next;
    }
    next.pop_back();
  }
  return next;
}

std::string keyGroupPrefix(int keyGroup) {
  return std::string{static_cast<char>(keyGroup >> 8), static_cast<char>(keyGroup & 0xff)};
}
int keyGroupOfPrefix(std::string_view key) {
  if (key.size() < 2) return -1;
  return (static_cast<uint8_t>(key[0]) << 8) | static_cast<uint8_t>(key[1]);
}

}  // namespace weir::detail
