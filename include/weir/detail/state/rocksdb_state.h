// Keyed state in RocksDB (EmbeddedRocksDBStateBackend). One column family per state;
// a RocksDB key is the canonical entry key behind a 2-byte big-endian key group, so a
// key group (and a range of them) is a contiguous range of keys. Values are canonical
// bytes; a list is its elements, each as varint length + bytes, so add() is a RocksDB
// merge that appends without reading.
//
// The templates here only serialize; RocksDB itself stays in src/state, behind
// RocksDBInstance, so a job's translation units never include RocksDB's headers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/clock.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

// Keys of one column in order, from a lower bound (inclusive) to an upper (exclusive).
class RocksDBScan {
 public:
  virtual ~RocksDBScan() = default;
  virtual bool valid() = 0;
  virtual void next() = 0;
  virtual std::string_view key() = 0;
  virtual std::string_view value() = 0;
};

// A consistent view of a whole database at one moment (a RocksDB snapshot); scans given
// it read that moment. Must be destroyed before its instance.
class RocksDBReadView {
 public:
  virtual ~RocksDBReadView() = default;
};

// One state's column family. Every failure throws weir::Error naming the state and the
// key group of the key involved.
class RocksDBColumn {
 public:
  virtual ~RocksDBColumn() = default;
  // Whether `key` exists; if so its value is in `value`.
  virtual bool get(std::string_view key, std::string& value) = 0;
  virtual void put(std::string_view key, std::string_view value) = 0;
  // Appends `bytes` to the value of `key` (creating it).
  virtual void append(std::string_view key, std::string_view bytes) = 0;
  virtual void remove(std::string_view key) = 0;
  // Removes every key in [lower, upper).
  virtual void removeRange(std::string_view lower, std::string_view upper) = 0;
  // Keys in [lower, upper) (an empty upper: no bound), as of `view` if given, else now.
  virtual std::unique_ptr<RocksDBScan> scan(std::string_view lower, std::string_view upper,
                                            const RocksDBReadView* view = nullptr) = 0;
  const std::string& stateName() const { return stateName_; }

 protected:
  explicit RocksDBColumn(std::string stateName) : stateName_(std::move(stateName)) {}

 private:
  std::string stateName_;
};

// A compaction filter that drops expired TTL entries: values (and list elements) begin
// with the 8-byte time they were last written.
struct RocksDBTtlFilter {
  int64_t ttlMillis;
  bool list;                         // values are varint-framed elements
  int64_t queryTimeAfterNumEntries;  // how often a compaction reads the clock
  std::shared_ptr<const Clock> clock;
};

struct RocksDBCheckpoint;
struct RestoredRocksDB;

// One RocksDB database: the state of one keyed operator subtask.
class RocksDBInstance {
 public:
  virtual ~RocksDBInstance() = default;
  // The column family of state `name`, created on first use (with `ttl`'s compaction
  // filter, if given).
  virtual RocksDBColumn& column(const std::string& name, const RocksDBTtlFilter* ttl = nullptr) = 0;
  // Entries in the state's SST files, as RocksDB's table properties count them.
  virtual uint64_t entriesInFiles(const std::string& name) = 0;
  // The folder the database lives in (removed with the instance).
  virtual const std::string& directory() const = 0;
  // A view of every column as it is now.
  virtual std::shared_ptr<const RocksDBReadView> readView() = 0;
  // Every column (restored ones whose state has not registered included), by state name.
  virtual std::vector<std::string> columnNames() const = 0;
  // Flushes write buffers and compacts every column (tests and benchmarks use it).
  virtual void compactAll() = 0;

  // Whether checkpoints of this instance are incremental (RocksDB's own files).
  virtual bool incrementalCheckpoints() const = 0;
  // RocksDB's own checkpoint of every column as it is now, for checkpoint `checkpointId`:
  // the write buffers are closed here, and a thread of its own links the files into a
  // new local folder once they are flushed (RocksDBCheckpoint::take waits for it).
  virtual std::unique_ptr<RocksDBCheckpoint> checkpoint(int64_t checkpointId) = 0;
  // Replaces this instance's database, which must have no column yet, by the one a
  // checkpoint holds, and drops (range deletes, as Flink clips a database) every key
  // group outside `keep` that the checkpoint had. Its columns are there at once; a state
  // registered later finds its entries in its column.
  virtual void restore(const RestoredRocksDB& from, KeyGroupRange keep) = 0;
  // Writes the entries of checkpoint `from` whose key group is in `range` into this
  // instance's columns (made when missing), read from a read-only copy of its files
  // a write batch at a time: how a rescaled instance takes in its other predecessors.
  virtual void insert(const RestoredRocksDB& from, KeyGroupRange range) = 0;
  // Takes every keyed entry still in `restored` (a full checkpoint's, streamed from its
  // files) into the columns of their states (made when missing), a write batch at a time.
  virtual void insert(RestoredOperatorState& restored) = 0;
};

// Whether RocksDB file `name` is an SST file: immutable once written, so checkpoints
// share it and restores may hard-link it.
bool isSstFile(std::string_view name);

// Calls `visit` with every entry of the checkpointed instance `from` whose key group is
// in `range`, and the name of its state: how RocksDB files are read at another
// parallelism or into the heap. Works on a read-only copy under `localDirectory` ("":
// $TMPDIR), removed before it returns. Throws weir::Error naming the problem.
void readRocksDBCheckpoint(const RestoredRocksDB& from, KeyGroupRange range, const std::string& localDirectory,
                           const std::function<void(const std::string& state, const StateEntry&)>& visit);

// The smallest key greater than every key that starts with `prefix`; empty if none.
std::string prefixSuccessor(std::string_view prefix);
// A key group as the 2-byte big-endian prefix of its keys.
std::string keyGroupPrefix(int keyGroup);
// The key group whose prefix `key` starts with; -1 for a key shorter than a prefix.
int keyGroupOfPrefix(std::string_view key);

// A column's entries through a RocksDB view: a registered state's snapshot, or that of
// a restored column whose state has not registered (again).
class RocksDBColumnSnapshot final : public StateSnapshot {
 public:
  RocksDBColumnSnapshot(RocksDBColumn& column, std::shared_ptr<const RocksDBReadView> view)
      : column_(column), view_(std::move(view)) {}
  void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) override {
    if (range.size() == 0) return;
    for (auto scan = column_.scan(keyGroupPrefix(range.start), keyGroupPrefix(range.end + 1), view_.get());
         scan->valid(); scan->next()) {
      std::string_view key = scan->key();
      visit(StateEntry{keyGroupOfPrefix(key), key.substr(2), scan->value()});
    }
  }

 private:
  RocksDBColumn& column_;
  std::shared_ptr<const RocksDBReadView> view_;
};

// What every RocksDB state shares: its column, the current key and namespace.
template <class N>
class RocksDBState : public KeyedStateBase, public NamespacedState<N> {
 public:
  // `list`: the state stores varint-framed elements (for the TTL compaction filter).
  RocksDBState(KeyedStateBackendBase& store, const StateDescriptor& d, bool list = false)
      : ctx_(store.keyContext()), column_(openColumn(store, d, list)) {
    setCurrentNamespace(N{});
  }

  void setCurrentNamespace(N ns) final {
    DataOutput out;
    Serializer<N>::serialize(ns, out);
    nsBytes_ = out.data();
  }

  std::unique_ptr<StateSnapshot> snapshot(const SnapshotContext& context) override {
    return std::make_unique<RocksDBColumnSnapshot>(column_, context.rocksdb);
  }
  // Canonical entries are what RocksDB stores, behind the key-group prefix.
  void restoreEntry(const StateEntry& entry) override {
    std::string key = keyGroupPrefix(entry.keyGroup);
    key += entry.key;
    column_.put(key, entry.value);
  }

 protected:
  const std::string& name() const { return column_.stateName(); }
  // The RocksDB key of the current key and namespace.
  const std::string& currentKey() {
    if (ctx_.keyGroup < 0) [[unlikely]] throwOutsideKeyedContext(name());
    key_.assign(ctx_.keyBytes);
    key_ += nsBytes_;
    return key_;
  }
  template <class T>
  std::string_view encode(const T& value) {
    out_.clear();
    Serializer<T>::serialize(value, out_);
    return out_.data();
  }
  template <class T>
  std::optional<T> read(const std::string& key) {
    if (!column_.get(key, value_)) return std::nullopt;
    return decodeState<T>(value_, name(), ctx_.keyGroup);
  }

  KeyContext& ctx_;
  RocksDBColumn& column_;
  std::string nsBytes_;

  std::string key_;
  std::string value_;
  DataOutput out_;

 private:
  static RocksDBColumn& openColumn(KeyedStateBackendBase& store, const StateDescriptor& d, bool list) {
    const auto& ttl = d.getTtlConfig();
    if (!ttl || !ttl->isCleanupInRocksdbCompactFilter()) return store.rocksdb()->column(d.getName());
    RocksDBTtlFilter filter{ttl->getTtl().count(), list, ttl->getCompactionFilterQueryTimeAfterNumEntries(),
                            store.clockPtr()};
    return store.rocksdb()->column(d.getName(), &filter);
  }
};

template <class N, class T>
class RocksDBValueState final : public RocksDBState<N>, public ValueState<T> {
 public:
  RocksDBValueState(KeyedStateBackendBase& store, const ValueStateDescriptor<T>& d)
      : RocksDBState<N>(store, d), default_(d.getDefaultValue()) {}

  std::optional<T> value() override {
    auto v = this->template read<T>(this->currentKey());
    return v ? v : default_;
  }
  using ValueState<T>::update;  // and update(std::optional<T>), which clears when empty
  void update(T value) override {
    const std::string& key = this->currentKey();
    this->column_.put(key, this->encode(value));
  }
  void clear() override { this->column_.remove(this->currentKey()); }

 private:
  std::optional<T> default_;
};

template <class N, class T>
class RocksDBListState final : public RocksDBState<N>, public ListState<T> {
 public:
  RocksDBListState(KeyedStateBackendBase& store, const ListStateDescriptor<T>& d) : RocksDBState<N>(store, d, true) {}

  std::vector<T> get() override {
    std::vector<T> list;
    if (!this->column_.get(this->currentKey(), this->value_)) return list;
    DataInput in(this->value_);
    while (!in.atEnd()) {
      std::string_view element;
      try {
        element = in.readStringView();
      } catch (const SerializationError& e) {
        throw Error(ErrorCode::kSerialization, "state '" + this->name() + "', key group " +
                                                   std::to_string(this->ctx_.keyGroup) +
                                                   ": a stored list is cut short: " + e.what());
      }
      list.push_back(decodeState<T>(element, this->name(), this->ctx_.keyGroup));
    }
    return list;
  }
  void add(T value) override {
    const std::string& key = this->currentKey();
    this->column_.append(key, encodeElements(std::span<const T>(&value, 1)));
  }
  void addAll(std::vector<T> values) override {
    if (values.empty()) return;
    const std::string& key = this->currentKey();
    this->column_.append(key, encodeElements(values));
  }
  void update(std::vector<T> values) override {
    const std::string& key = this->currentKey();
    if (values.empty()) {
      this->column_.remove(key);
    } else {
      this->column_.put(key, encodeElements(values));
    }
  }
  void clear() override { this->column_.remove(this->currentKey()); }

 private:
  std::string_view encodeElements(std::span<const T> values) {
    elements_.clear();
    for (const T& v : values) elements_.writeString(this->encode(v));
    return elements_.data();
  }
  DataOutput elements_;
};

template <class N, class UK, class UV>
class RocksDBMapState final : public RocksDBState<N>, public MapState<UK, UV> {
 public:
  RocksDBMapState(KeyedStateBackendBase& store, const MapStateDescriptor<UK, UV>& d) : RocksDBState<N>(store, d) {}

  std::optional<UV> get(const UK& key) override { return this->template read<UV>(userKey(key)); }
  void put(UK key, UV value) override {
    const std::string& k = userKey(key);
    this->column_.put(k, this->encode(value));
  }
  void putAll(std::vector<std::pair<UK, UV>> entries) override {
    for (auto& [k, v] : entries) put(std::move(k), std::move(v));
  }
  void remove(const UK& key) override { this->column_.remove(userKey(key)); }
  bool contains(const UK& key) override { return this->column_.get(userKey(key), this->value_); }
  bool isEmpty() override {
    const std::string& prefix = this->currentKey();
    return !this->column_.scan(prefix, prefixSuccessor(prefix))->valid();
  }
  void clear() override {
    const std::string& prefix = this->currentKey();
    this->column_.removeRange(prefix, prefixSuccessor(prefix));
  }

  StateIterable<std::pair<UK, UV>> entries() override {
    return iterate<std::pair<UK, UV>>([this](std::string_view k, std::string_view v) {
      return std::pair<UK, UV>(decodeUserKey(k), decodeState<UV>(v, this->name(), this->ctx_.keyGroup));
    });
  }
  StateIterable<UK> keys() override {
    return iterate<UK>([this](std::string_view k, std::string_view) { return decodeUserKey(k); });
  }
  StateIterable<UV> values() override {
    return iterate<UV>([this](std::string_view, std::string_view v) {
      return decodeState<UV>(v, this->name(), this->ctx_.keyGroup);
    });
  }

 private:
  const std::string& userKey(const UK& key) {
    const std::string& prefix = this->currentKey();
    this->out_.clear();
    Serializer<UK>::serialize(key, this->out_);
    this->key_ = prefix;  // currentKey() returned key_ itself; append in place
    this->key_ += this->out_.data();
    return this->key_;
  }
  UK decodeUserKey(std::string_view key) { return decodeState<UK>(key, this->name(), this->ctx_.keyGroup); }

  // Iterates the RocksDB view of one moment: changes to any key, this one included, do
  // not disturb it.
  template <class E, class Decode>
  StateIterable<E> iterate(Decode decode) {
    class Cursor final : public StateIterable<E>::Cursor {
     public:
      Cursor(std::unique_ptr<RocksDBScan> scan, size_t prefixSize, Decode decode)
          : scan_(std::move(scan)), prefixSize_(prefixSize), decode_(decode) {}
      bool next(E& element) override {
        if (!scan_->valid()) return false;
        element = decode_(scan_->key().substr(prefixSize_), scan_->value());
        scan_->next();
        return true;
      }

     private:
      std::unique_ptr<RocksDBScan> scan_;
      size_t prefixSize_;
      Decode decode_;
    };
    std::string prefix = this->currentKey();
    auto scan = this->column_.scan(prefix, prefixSuccessor(prefix));
    return StateIterable<E>(std::make_unique<Cursor>(std::move(scan), prefix.size(), decode));
  }
};

template <class N, class T>
class RocksDBReducingState final : public RocksDBState<N>, public ReducingState<T> {
 public:
  RocksDBReducingState(KeyedStateBackendBase& store, const ReducingStateDescriptor<T>& d)
      : RocksDBState<N>(store, d), reduce_(d.getReduceFunction()) {}

  std::optional<T> get() override { return this->template read<T>(this->currentKey()); }
  void add(T value) override {
    const std::string& key = this->currentKey();
    auto old = this->template read<T>(key);
    this->column_.put(key, this->encode(old ? reduce_(*old, value) : value));
  }
  void clear() override { this->column_.remove(this->currentKey()); }

 private:
  typename ReducingStateDescriptor<T>::ReduceFn reduce_;
};

template <class N, class IN, class ACC, class OUT>
class RocksDBAggregatingState final : public RocksDBState<N>, public AggregatingState<IN, OUT> {
 public:
  RocksDBAggregatingState(KeyedStateBackendBase& store, const AggregatingStateDescriptor<IN, ACC, OUT>& d)
      : RocksDBState<N>(store, d), fn_(d.getAggregateFunction()) {}

  std::optional<OUT> get() override {
    auto acc = this->template read<ACC>(this->currentKey());
    if (!acc) return std::nullopt;
    return fn_->getResult(*acc);
  }
  void add(const IN& value) override {
    const std::string& key = this->currentKey();
    auto acc = this->template read<ACC>(key);
    ACC next = fn_->add(value, acc ? std::move(*acc) : fn_->createAccumulator());
    this->column_.put(key, this->encode(next));
  }
  void clear() override { this->column_.remove(this->currentKey()); }

 private:
  std::shared_ptr<AggregateFunction<IN, ACC, OUT>> fn_;
};

}  // namespace weir::detail
