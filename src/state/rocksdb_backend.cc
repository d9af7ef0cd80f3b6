// The RocksDB side of EmbeddedRocksDBStateBackend: one database per keyed operator
// subtask, one column family per state, one block cache per process.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include "core/thread_name.h"
#include "state/rocksdb_options.h"
#include "state/local_folder.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/detail/state/ttl_state.h"

namespace weir::detail {

using state::RocksDBOptions;

namespace {

namespace fs = std::filesystem;

// The memory every instance in the process draws from: one block cache, which the
// write buffers are charged to as well, so its capacity bounds both.
struct SharedMemory {
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> writeBuffers;
};

// Shared by all task threads: guarded by its mutex. Checks the options first.
std::shared_ptr<SharedMemory> sharedMemory(const EmbeddedRocksDBStateBackend::Options& options) {
  if (options.blockCacheSize <= 0 || options.writeBufferSize <= 0 || options.maxWriteBufferNumber < 1 ||
      !(options.writeBufferRatio > 0 && options.writeBufferRatio <= 1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "RocksDB options: blockCacheSize and writeBufferSize must be positive, maxWriteBufferNumber at "
                "least 1, writeBufferRatio in (0, 1]");
  }
  static std::mutex mutex;
  static std::weak_ptr<SharedMemory> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto memory = current.lock()) return memory;
  auto memory = std::make_shared<SharedMemory>();
  auto capacity = static_cast<size_t>(options.blockCacheSize);
  memory->cache = rocksdb::NewLRUCache(capacity);
  memory->writeBuffers = std::make_shared<rocksdb::WriteBufferManager>(
      static_cast<size_t>(static_cast<double>(capacity) * options.writeBufferRatio), memory->cache);
  current = memory;
  return memory;
}

// Appends an operand to the value: how ListState::add avoids a read.
class AppendOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* merged, rocksdb::Logger*) const override {
    merged->clear();
    if (existing != nullptr) merged->assign(existing->data(), existing->size());
    merged->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "weir.append"; }
};

// Drops expired TTL entries (and list elements) while RocksDB compacts.
class TtlCompactionFilter final : public rocksdb::CompactionFilter {
 public:
  explicit TtlCompactionFilter(const RocksDBTtlFilter& config)
      : config_(config), policy_(config.ttlMillis, *config.clock) {}

  Decision FilterV2(int, const rocksdb::Slice&, ValueType type, const rocksdb::Slice& value, std::string* newValue,
                    std::string*) const override {
    if (type != ValueType::kValue && type != ValueType::kMergeOperand) return Decision::kKeep;
    if (config_.queryTimeAfterNumEntries <= 1 || seen_ % config_.queryTimeAfterNumEntries == 0) now_ = policy_.now();
    ++seen_;
    try {
      auto kept = unexpiredBytes({value.data(), value.size()}, config_.list, policy_, now_);
      if (!kept) return Decision::kRemove;
      if (kept->size() == value.size()) return Decision::kKeep;
      *newValue = std::move(*kept);
      return Decision::kChangeValue;
    } catch (const SerializationError&) {
      return Decision::kKeep;  // never drop what cannot be read; reading it reports it
    }
  }
  const char* Name() const override { return "weir.ttl"; }

 private:
  RocksDBTtlFilter config_;
  TtlPolicy policy_;
  mutable int64_t seen_ = 0;  // one filter serves one compaction, on one thread
  mutable int64_t now_ = 0;
};

// Every column has one; it filters once its state registers with a TTL configuration.
// A restored column exists before its state registers again, and RocksDB takes a
// column's filter factory only when the column is opened: hence the late setting.
class TtlCompactionFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  void set(const RocksDBTtlFilter& config) {
    std::lock_guard lock(mutex_);
    config_ = config;
  }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(const rocksdb::CompactionFilter::Context&) override {
    std::lock_guard lock(mutex_);  // compactions run on RocksDB's threads
    if (!config_) return nullptr;
    return std::make_unique<TtlCompactionFilter>(*config_);
  }
  const char* Name() const override { return "weir.ttl"; }

 private:
  std::mutex mutex_;
  std::optional<RocksDBTtlFilter> config_;
};

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }
std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

class ReadView final : public RocksDBReadView {
 public:
  explicit ReadView(rocksdb::DB* db) : db_(db), snapshot_(db->GetSnapshot()) {}
  ~ReadView() override { db_->ReleaseSnapshot(snapshot_); }
  const rocksdb::Snapshot* get() const { return snapshot_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snapshot_;
};

class Scan final : public RocksDBScan {
 public:
  Scan(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string_view lower, std::string_view upper,
       const RocksDBReadView* view = nullptr)
      : upper_(upper), upperSlice_(upper_) {
    rocksdb::ReadOptions options;
    if (view != nullptr) {
      options.snapshot = static_cast<const ReadView*>(view)->get();
      // A checkpoint reads every entry once: it must not evict the blocks the task
      // thread is working on from the shared block cache.
      options.fill_cache = false;
    }
    if (!upper_.empty()) options.iterate_upper_bound = &upperSlice_;
    it_.reset(db->NewIterator(options, cf));
    it_->Seek(slice(lower));
  }
  bool valid() override { return it_->Valid(); }
  void next() override { it_->Next(); }
  std::string_view key() override { return view(it_->key()); }
  std::string_view value() override { return view(it_->value()); }

 private:
  std::string upper_;
  rocksdb::Slice upperSlice_;  // refers to upper_, which the iterator reads
  std::unique_ptr<rocksdb::Iterator> it_;
};

class Column final : public RocksDBColumn {
 public:
  Column(std::string name, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf)
      : RocksDBColumn(std::move(name)), db_(db), cf_(cf) {
    writeOptions_.disableWAL = true;  // checkpoints, not the WAL, make state durable
  }
  ~Column() override { db_->DestroyColumnFamilyHandle(cf_); }

  bool get(std::string_view key, std::string& value) override {
    rocksdb::Status s = db_->Get(readOptions_, cf_, slice(key), &value);
    if (s.IsNotFound()) return false;
    check(s, "read", key);
    return true;
  }
  void put(std::string_view key, std::string_view value) override {
    check(db_->Put(writeOptions_, cf_, slice(key), slice(value)), "write", key);
  }
  void append(std::string_view key, std::string_view bytes) override {
    check(db_->Merge(writeOptions_, cf_, slice(key), slice(bytes)), "append to", key);
  }
  void remove(std::string_view key) override { check(db_->Delete(writeOptions_, cf_, slice(key)), "delete", key); }
  void removeRange(std::string_view lower, std::string_view upper) override {
    rocksdb::WriteBatch batch;
    for (Scan scan(db_, cf_, lower, upper); scan.valid(); scan.next()) batch.Delete(cf_, slice(scan.key()));
    check(db_->Write(writeOptions_, &batch), "delete", lower);
  }
  std::unique_ptr<RocksDBScan> scan(std::string_view lower, std::string_view upper,
                                    const RocksDBReadView* view) override {
    return std::make_unique<Scan>(db_, cf_, lower, upper, view);
  }
  rocksdb::ColumnFamilyHandle* handle() { return cf_; }

 private:
  void check(const rocksdb::Status& s, const char* what, std::string_view key) const {
    if (s.ok()) return;
    throw Error(ErrorCode::kIo, "RocksDB could not " + std::string(what) + " state '" + stateName() +
                                    "' (key group " + std::to_string(keyGroupOfPrefix(key)) + "): " + s.ToString());
  }

  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  rocksdb::ReadOptions readOptions_;
  rocksdb::WriteOptions writeOptions_;
};


RocksDBOptions rocksDBOptions(const EmbeddedRocksDBStateBackend::Options& options, const SharedMemory& memory) {
  RocksDBOptions out;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = memory.cache;
  table.cache_index_and_filter_blocks = true;  // index and filters count in the budget
  out.column.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  out.column.write_buffer_size = static_cast<size_t>(options.writeBufferSize);
  out.column.max_write_buffer_number = options.maxWriteBufferNumber;
  out.column.compaction_style = options.compactionStyle == EmbeddedRocksDBStateBackend::CompactionStyle::LEVEL
                                    ? rocksdb::kCompactionStyleLevel
                                    : rocksdb::kCompactionStyleUniversal;
  out.column.merge_operator = std::make_shared<AppendOperator>();
  out.db.create_if_missing = true;
  out.db.write_buffer_manager = memory.writeBuffers;
  out.db.info_log_level = rocksdb::WARN_LEVEL;
  out.db.keep_log_file_num = 1;
  out.db.avoid_flush_during_shutdown = true;  // the folder is deleted on close anyway
  return out;
}

}  // namespace


namespace {

// Puts a checkpoint's files into `folder` under RocksDB's names: SST files, which
// RocksDB never changes, hard-linked when the file system allows, the rest copied.
void placeCheckpointFiles(const RestoredRocksDB& from, const std::string& folder) {
  for (const auto& f : from.files) {
    const fs::path to = fs::path(folder) / f.name;
    std::error_code ec;
    if (isSstFile(f.name)) fs::create_hard_link(f.path, to, ec);
    if (!isSstFile(f.name) || ec) {
      ec.clear();
      fs::copy_file(f.path, to, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) throw Error(ErrorCode::kIo, "cannot restore RocksDB file '" + f.path + "' into '" + folder + "': " + ec.message());
  }
}

// The column families of the database in `folder`, the default one first.
std::vector<std::string> columnFamiliesIn(const std::string& folder, const rocksdb::DBOptions& options) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options, folder, &names);
  if (!s.ok()) throw Error(ErrorCode::kCheckpoint, "the checkpoint's RocksDB files do not open: " + s.ToString());
  return names;
}

// Calls `visit` with every entry (its column, its key with the key-group prefix, its
// value) of checkpoint `from` in the key groups `range`, read from a read-only copy of
// its files under `localDirectory`, removed before it returns.
void scanCheckpoint(const RestoredRocksDB& from, KeyGroupRange range, const std::string& localDirectory,
                    const std::function<void(const std::string& column, std::string_view key, std::string_view value)>&
                        visit) {
  if (range.size() == 0) return;
  const state::LocalFolder local(localDirectory, "restore");
  const std::string& folder = local.path();
  struct Cleanup {
    std::string folder;
    std::unique_ptr<rocksdb::DB> db;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    ~Cleanup() {
      for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
      if (db) db->Close();
      db.reset();
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } cleanup{folder, nullptr, {}};
  placeCheckpointFiles(from, folder);
  RocksDBOptions options = state::rocksDBOptions(EmbeddedRocksDBStateBackend::Options{});
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const auto& name : columnFamiliesIn(folder, options.db)) families.emplace_back(name, options.column);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(options.db, folder, families, &cleanup.handles, &raw);
  if (!s.ok()) throw Error(ErrorCode::kCheckpoint, "the checkpoint's RocksDB files do not open: " + s.ToString());
  cleanup.db.reset(raw);
  const std::string lower = keyGroupPrefix(range.start), upper = keyGroupPrefix(range.end + 1);
  for (size_t i = 0; i < families.size(); ++i) {
    if (families[i].name == rocksdb::kDefaultColumnFamilyName) continue;
    for (Scan scan(raw, cleanup.handles[i], lower, upper); scan.valid(); scan.next())
      visit(families[i].name, scan.key(), scan.value());
  }
}

class Instance final : public RocksDBInstance {
 public:
  Instance(const EmbeddedRocksDBStateBackend::Options& options, const std::string& owner, MetricGroup metrics)
      : memory_(sharedMemory(options)), localDirectory_(options.localDirectory),
        local_(options.localDirectory, owner), directory_(local_.path()),
        incremental_(options.incrementalCheckpoints), metrics_(std::move(metrics)),
        nativeMetrics_(options.nativeMetrics), columnFamilyAsVariable_(options.metricsColumnFamilyAsVariable) {
    writeOptions_.disableWAL = true;  // as for the columns' writes
    RocksDBOptions opened = rocksDBOptions(options, *memory_);
    columnOptions_ = opened.column;
    dbOptions_ = opened.db;
    open({rocksdb::kDefaultColumnFamilyName});  // (local_ removes the folder if it throws)
  }

  ~Instance() override {
    properties_->instance = nullptr;  // a gauge read later shows no value
    close();                          // then local_ removes the folder
  }

  RocksDBColumn& column(const std::string& name, const RocksDBTtlFilter* ttl) override {
    auto it = columns_.find(name);
    if (it == columns_.end()) {
      auto filter = std::make_shared<TtlCompactionFilterFactory>();
      rocksdb::ColumnFamilyOptions options = columnOptions_;
      options.compaction_filter_factory = filter;
      rocksdb::ColumnFamilyHandle* handle = nullptr;
      rocksdb::Status s = db_->CreateColumnFamily(options, name, &handle);
      if (!s.ok()) {
        throw Error(ErrorCode::kIo, "RocksDB could not create the column family of state '" + name + "' in '" +
                                        directory_ + "': " + s.ToString());
      }
      it = columns_.emplace(name, Open{std::make_unique<Column>(name, db_.get(), handle), filter}).first;
      showNativeMetrics(name);
    }
    if (ttl != nullptr) it->second.ttl->set(*ttl);
    return *it->second.column;
  }

  const std::string& directory() const override { return directory_; }

  std::shared_ptr<const RocksDBReadView> readView() override { return std::make_shared<ReadView>(db_.get()); }

  uint64_t entriesInFiles(const std::string& name) override {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(dynamic_cast<Column&>(column(name, nullptr)).handle(), &meta);
    uint64_t entries = 0;
    for (const auto& level : meta.levels)
      for (const auto& file : level.files) entries += file.num_entries;
    return entries;
  }

  std::vector<std::string> columnNames() const override {
    std::vector<std::string> names;
    for (const auto& [name, open] : columns_) names.push_back(name);
    return names;
  }

  void compactAll() override {
    takePending();
    for (auto& [name, open] : columns_) {
      rocksdb::ColumnFamilyHandle* handle = open.column->handle();
      rocksdb::Status s = db_->Flush(rocksdb::FlushOptions(), handle);
      if (s.ok()) s = db_->CompactRange(rocksdb::CompactRangeOptions(), handle, nullptr, nullptr);
      if (!s.ok()) throw Error(ErrorCode::kIo, "RocksDB could not compact state '" + name + "': " + s.ToString());
    }
  }

  bool incrementalCheckpoints() const override { return incremental_; }

  std::unique_ptr<RocksDBCheckpoint> checkpoint(int64_t checkpointId) override {
    takePending();
    auto out = std::make_unique<RocksDBCheckpoint>();
    out->folder = directory_ + "-chk-" + std::to_string(checkpointId);
    out->uploads = uploads_;
    out->columns = columnNames();
    std::error_code ec;
    fs::remove_all(out->folder, ec);  // of an attempt that failed before uploading it
    auto capture = std::make_shared<Capture>(*this, out->folder);
    pending_ = capture;
    out->take = [capture](RocksDBCheckpoint& c) {
      const Capture::Linked& linked = capture->take();
      c.files = linked.files;
      return linked.exact;
    };
    return out;
  }

  // One checkpoint's files, from the moment its write buffers closed. A thread of its own
  // links them as soon as those are flushed, so that later writes have the least time
  // to reach files first; take() waits for it.
  class Capture {
   public:
    struct Linked {
      std::vector<std::string> files;  // names in the folder
      bool exact = false;              // no file holds a write made after the barrier
    };

    // Closes every column's write buffer without waiting for its flush: the task thread
    // goes on writing into new ones. Not stalling writes: RocksDB would otherwise wait
    // here for compactions to catch up (seconds when they lag). When writes are stopped
    // (a column has maxWriteBufferNumber write buffers waiting for their flush, or too
    // many files in level 0), RocksDB refuses to close a buffer without waiting: the task
    // thread then waits here for the flushes, as its next write would.
    Capture(Instance& instance, std::string folder) : instance_(instance), folder_(std::move(folder)) {
      handles_.push_back(instance.defaultColumn_);
      for (auto& [name, open] : instance.columns_) handles_.push_back(open.column->handle());
      rocksdb::DB& db = *instance.db_;
      rocksdb::FlushOptions flush;
      flush.wait = false;
      flush.allow_write_stall = true;
      rocksdb::Status s = db.Flush(flush, handles_);
      if (s.IsTryAgain()) {
        flush.wait = true;
        s = db.Flush(flush, handles_);
      }
      if (!s.ok()) fail("flush the write buffers of", s);
      barrierSequence_ = db.GetLatestSequenceNumber();  // the task thread is the only writer
      for (auto* handle : handles_) immutableAtBarrier_.push_back(property(handle, "rocksdb.num-immutable-mem-table"));
      errorsAtBarrier_ = property(handles_.front(), "rocksdb.background-errors");
      // Keeps writes made after the barrier from losing their sequence numbers (RocksDB
      // zeroes those older than every snapshot) and from hiding older values in the
      // files compactions write meanwhile, for link() to tell them.
      snapshot_ = db.GetSnapshot();
      try {
        worker_ = std::thread([this] {
          core::nameThisThread("weir rocksdb");
          try {
            linked_.exact = waitForFlushes() && linkExactly();
          } catch (...) {
            error_ = std::current_exception();
          }
          instance_.db_->ReleaseSnapshot(snapshot_);
        });
      } catch (...) {
        db.ReleaseSnapshot(snapshot_);
        throw;
      }
    }
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    ~Capture() {
      abandon();
      std::error_code ec;
      fs::remove_all(folder_, ec);  // linked for a checkpoint that did not upload them
    }

    // The files; throws what kept the thread from linking them.
    const Linked& take() {
      join();
      if (error_) std::rethrow_exception(error_);
      return linked_;
    }

    // Stops waiting for flushes (the database closes): take() then throws.
    void abandon() {
      abandoned_ = true;
      join();
    }

   private:
    void join() {
      std::lock_guard lock(joinMutex_);
      if (worker_.joinable()) worker_.join();
    }

    uint64_t property(rocksdb::ColumnFamilyHandle* handle, const char* name) const {
      uint64_t value = 0;
      if (!instance_.db_->GetIntProperty(handle, name, &value))
        throw Error(ErrorCode::kInternal, std::string("RocksDB has no property ") + name);
      return value;
    }

    [[noreturn]] void fail(const std::string& what, const rocksdb::Status& s) const {
      throw Error(ErrorCode::kIo,
                  "RocksDB could not " + what + " '" + instance_.directory_ + "' for a checkpoint: " + s.ToString());
    }

    // True once the write buffers closed at the barrier are flushed; false as soon as one
    // closed after it (it holds later writes): only flushes lower a column's count, so a
    // count above the lowest seen is a write buffer closed since.
    bool waitForFlushes() {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
      std::vector<uint64_t> lowest = immutableAtBarrier_;
      for (;;) {
        bool flushed = true;
        for (size_t i = 0; i < handles_.size(); ++i) {
          const uint64_t waiting = property(handles_[i], "rocksdb.num-immutable-mem-table");
          if (waiting > lowest[i]) return false;
          lowest[i] = waiting;
          flushed = flushed && waiting == 0;
        }
        if (flushed) return true;
        if (property(handles_.front(), "rocksdb.background-errors") > errorsAtBarrier_)
          fail("flush the write buffers of", rocksdb::Status::IOError("a background error (see its LOG file)"));
        if (abandoned_) throw Error(ErrorCode::kCancelled, "the RocksDB instance closed before its checkpoint was taken");
        if (std::chrono::steady_clock::now() > deadline)
          fail("flush the write buffers of", rocksdb::Status::TimedOut("no flush in 10 minutes"));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }

    // Links the files; false when one holds a write made after the barrier. A file that a
    // compaction wrote and removed again while they were linked has no sequence numbers
    // to check: the files are linked again (a few times, then it counts as later).
    bool linkExactly() {
      for (int attempt = 0; attempt < 3; ++attempt) {
        if (auto exact = link()) return *exact;
        std::error_code ec;
        fs::remove_all(folder_, ec);
        linked_.files.clear();
      }
      return false;
    }

    // Hard-links the files without a flush (they hold every write up to the barrier, and
    // the write-ahead log is off); false when one holds a later write, nothing when a
    // file's sequence numbers are unknown.
    std::optional<bool> link() {
      std::map<std::string, uint64_t> newest;  // SST file name to its newest write's sequence number
      auto list = [&] {
        std::vector<rocksdb::LiveFileMetaData> files;
        instance_.db_->GetLiveFilesMetaData(&files);
        for (const auto& f : files) newest[fs::path(f.name).filename().string()] = f.largest_seqno;
      };
      list();
      rocksdb::Checkpoint* raw = nullptr;
      rocksdb::Status s = rocksdb::Checkpoint::Create(instance_.db_.get(), &raw);
      std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
      if (s.ok()) s = checkpoint->CreateCheckpoint(folder_, std::numeric_limits<uint64_t>::max());
      if (!s.ok()) fail("link into '" + folder_ + "' the files of", s);
      list();  // and the files compactions wrote meanwhile
      bool unknown = false;
      for (const auto& entry : fs::directory_iterator(folder_)) {
        const std::string name = entry.path().filename().string();
        linked_.files.push_back(name);
        if (!isSstFile(name)) continue;
        auto it = newest.find(name);
        if (it == newest.end()) unknown = true;
        else if (it->second > barrierSequence_) return false;
      }
      std::sort(linked_.files.begin(), linked_.files.end());
      if (unknown) return std::nullopt;
      return true;
    }

    Instance& instance_;
    const std::string folder_;
    std::vector<rocksdb::ColumnFamilyHandle*> handles_;
    std::vector<uint64_t> immutableAtBarrier_;  // per handle: write buffers not flushed yet
    uint64_t barrierSequence_ = 0;              // of the last write before the barrier
    uint64_t errorsAtBarrier_ = 0;
    const rocksdb::Snapshot* snapshot_ = nullptr;
    std::atomic<bool> abandoned_{false};
    Linked linked_;            // written by the worker, read after join()
    std::exception_ptr error_;  // the same
    std::mutex joinMutex_;
    std::thread worker_;
  };

  // An earlier checkpoint's files come before any flush: closing the write buffers again
  // would let writes made after its barrier reach files before they are linked. Its own
  // take() reports its errors.
  void takePending() {
    if (pending_) {
      try {
        pending_->take();
      } catch (...) {
      }
    }
    pending_.reset();
  }

  void restore(const RestoredRocksDB& from, KeyGroupRange keep) override {
    if (!columns_.empty())
      throw Error(ErrorCode::kInternal, "a RocksDB instance is restored only before any state is registered");
    close();
    std::error_code ec;
    fs::remove_all(directory_, ec);
    fs::create_directory(directory_, ec);
    if (ec) throw Error(ErrorCode::kIo, "cannot make the RocksDB folder '" + directory_ + "': " + ec.message());
    placeCheckpointFiles(from, directory_);
    open(columnFamiliesIn(directory_, dbOptions_));
    // Later checkpoints refer to the files the restored one stored, while it keeps them.
    for (const auto& f : from.files)
      if (f.shared) uploads_->set(f.name, f.path);
    // What the instance does not own any more goes with range deletions: no entry read.
    auto drop = [&](int first, int last) {
      if (first > last) return;
      const std::string lower = keyGroupPrefix(first), upper = keyGroupPrefix(last + 1);
      for (auto& [name, open] : columns_) {
        rocksdb::Status s = db_->DeleteRange(writeOptions_, open.column->handle(), slice(lower), slice(upper));
        if (!s.ok()) throw Error(ErrorCode::kIo, "RocksDB could not drop the key groups " + std::to_string(first) + "-" +
                                                     std::to_string(last) + " of state '" + name + "': " + s.ToString());
      }
    };
    drop(from.keyGroups.start, std::min(from.keyGroups.end, keep.start - 1));
    drop(std::max(from.keyGroups.start, keep.end + 1), from.keyGroups.end);
  }

  void insert(const RestoredRocksDB& from, KeyGroupRange range) override {
    Restorer restorer(*this);
    scanCheckpoint(from, range, localDirectory_, [&](const std::string& state, std::string_view key, std::string_view value) {
      restorer.put(state, key, value);
    });
    restorer.flush();
  }

  void insert(RestoredOperatorState& restored) override {
    Restorer restorer(*this);
    std::string key;
    restored.takeAllKeyed([&](const std::string& state, const StateEntry& e) {
      key = keyGroupPrefix(e.keyGroup);
      key += e.key;
      restorer.put(state, key, e.value);
    });
    restorer.flush();
  }

 private:
  // Opens the database of directory_ with the column families `names` (the default one
  // first); the others become columns whose states register later.
  void open(const std::vector<std::string>& names) {
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    std::vector<std::shared_ptr<TtlCompactionFilterFactory>> filters;
    for (const auto& name : names) {
      rocksdb::ColumnFamilyOptions options = columnOptions_;
      filters.push_back(std::make_shared<TtlCompactionFilterFactory>());
      if (name != rocksdb::kDefaultColumnFamilyName) options.compaction_filter_factory = filters.back();
      families.emplace_back(name, options);
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(dbOptions_, directory_, families, &handles, &raw);
    if (!s.ok()) throw Error(ErrorCode::kIo, "cannot open RocksDB in '" + directory_ + "': " + s.ToString());
    db_.reset(raw);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == rocksdb::kDefaultColumnFamilyName) {
        defaultColumn_ = handles[i];
      } else {
        columns_.emplace(names[i], Open{std::make_unique<Column>(names[i], db_.get(), handles[i]), filters[i]});
        showNativeMetrics(names[i]);
      }
    }
  }

  // RocksDB's own figures as gauges of the operator (Flink's RocksDBNativeMetricMonitor):
  // one per column family and property asked for, "<state>.rocksdb.<property>" (or with
  // the state as the column_family variable). Read on the subtask's thread when sampled,
  // from whichever database the instance has open then (a restore reopens it).
  struct PropertyReader {
    Instance* instance = nullptr;  // null once the instance is gone
    double read(const std::string& column, const std::string& property) const {
      if (instance == nullptr || !instance->db_) return std::nan("");
      auto it = instance->columns_.find(column);
      if (it == instance->columns_.end()) return std::nan("");
      uint64_t value = 0;
      if (!instance->db_->GetIntProperty(it->second.column->handle(), property, &value)) return std::nan("");
      return static_cast<double>(value);
    }
  };
  void showNativeMetrics(const std::string& column) {
    if (nativeMetrics_.empty() || !shownColumns_.insert(column).second) return;
    const MetricGroup group = columnFamilyAsVariable_ ? metrics_.addGroup("column_family", column) : metrics_.addGroup(column);
    for (const auto& name : nativeMetrics_) {
      const std::string property = "rocksdb." + name;
      group.gauge(property, [reader = properties_, column, property] { return reader->read(column, property); });
    }
  }

  void close() {
    if (pending_) pending_->abandon();  // its thread uses the database
    pending_.reset();
    columns_.clear();
    if (db_) {
      db_->DestroyColumnFamilyHandle(defaultColumn_);
      db_->Close();
      db_.reset();
    }
  }

  struct Open {
    std::unique_ptr<Column> column;
    std::shared_ptr<TtlCompactionFilterFactory> ttl;
  };

  // Writes restored entries into their columns, 4 MB write batches at a time.
  class Restorer {
   public:
    explicit Restorer(Instance& db) : db_(db) {}
    void put(const std::string& state, std::string_view key, std::string_view value) {
      if (state != lastState_) {
        column_ = dynamic_cast<Column&>(db_.column(state, nullptr)).handle();
        lastState_ = state;
      }
      rocksdb::Status s = batch_.Put(column_, slice(key), slice(value));
      if (!s.ok()) throw Error(ErrorCode::kIo, "RocksDB could not restore state '" + state + "': " + s.ToString());
      if (batch_.GetDataSize() >= (4u << 20)) flush();
    }
    void flush() {
      rocksdb::Status s = db_.db_->Write(db_.writeOptions_, &batch_);
      if (!s.ok())
        throw Error(ErrorCode::kIo, "RocksDB could not write restored state into '" + db_.directory_ + "': " + s.ToString());
      batch_.Clear();
    }

   private:
    Instance& db_;
    rocksdb::WriteBatch batch_;
    std::string lastState_;
    rocksdb::ColumnFamilyHandle* column_ = nullptr;
  };

  std::shared_ptr<SharedMemory> memory_;
  std::string localDirectory_;  // the backend's, where restores make read-only copies
  state::LocalFolder local_;    // the instance's folder, removed with it
  const std::string directory_;
  bool incremental_;
  rocksdb::WriteOptions writeOptions_;
  rocksdb::ColumnFamilyOptions columnOptions_;
  rocksdb::DBOptions dbOptions_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* defaultColumn_ = nullptr;
  // The last checkpoint's, held until the next one or close() (its thread uses the
  // database, so it must not end elsewhere while the database closes).
  std::shared_ptr<Capture> pending_;
  std::map<std::string, Open> columns_;
  std::shared_ptr<RocksDBUploads> uploads_ = std::make_shared<RocksDBUploads>();
  MetricGroup metrics_;                       // the operator's, where the native metrics show
  std::vector<std::string> nativeMetrics_;    // the properties shown, without "rocksdb."
  bool columnFamilyAsVariable_ = false;
  std::set<std::string> shownColumns_;        // columns whose gauges are registered
  std::shared_ptr<PropertyReader> properties_ = std::make_shared<PropertyReader>(PropertyReader{this});
};

}  // namespace

bool isSstFile(std::string_view name) { return name.ends_with(".sst"); }

RocksDBCheckpoint::~RocksDBCheckpoint() {
  if (folder.empty()) return;
  std::error_code ec;
  fs::remove_all(folder, ec);
}

void readRocksDBCheckpoint(const RestoredRocksDB& from, KeyGroupRange range, const std::string& localDirectory,
                           const std::function<void(const std::string& state, const StateEntry&)>& visit) {
  scanCheckpoint(from, range, localDirectory, [&](const std::string& state, std::string_view key, std::string_view value) {
    visit(state, StateEntry{keyGroupOfPrefix(key), key.substr(2), value});
  });
}

std::unique_ptr<RocksDBInstance> openRocksDB(const EmbeddedRocksDBStateBackend& backend, const std::string& owner,
                                             const MetricGroup& metrics) {
  return std::make_unique<Instance>(backend.options(), owner, metrics);
}

}  // namespace weir::detail

namespace weir::state {

RocksDBOptions rocksDBOptions(const EmbeddedRocksDBStateBackend::Options& options) {
  return detail::rocksDBOptions(options, *detail::sharedMemory(options));
}

}  // namespace weir::state
