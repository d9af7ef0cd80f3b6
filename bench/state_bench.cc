// State benchmarks: keyed state operations per record on both backends, beside the same
// work done on a std::unordered_map and on raw RocksDB with the same options.
#include "state_bench.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

#include <rocksdb/db.h>

#include "harness.h"
#include "state/rocksdb_options.h"
#include "weir/runtime_context.h"

namespace weir::bench {
namespace {

inline uint64_t mixKey(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of record i: spread evenly over `keys` keys.
inline int64_t keyOf(int64_t i, int64_t keys) { return static_cast<int64_t>(mixKey(static_cast<uint64_t>(i)) % static_cast<uint64_t>(keys)); }

// One keyed operator's state on `backend`, driven the way a keyed operator drives it.
class Harness {
 public:
  explicit Harness(const std::string& backend)
      : backend_(stateBackendFromName(backend)),
        store_(std::make_unique<detail::KeyedStateBackend<int64_t>>(*backend_, 128, "bench")) {
    context_.setKeyedStateStore(store_.get());
  }
  RuntimeContext& context() { return context_; }
  void setKey(int64_t key) {
    key_ = key;
    store_->setCurrentKey(key_);
  }

 private:
  std::shared_ptr<StateBackend> backend_;
  RuntimeContext context_{"bench", 0, 1, 128};
  std::unique_ptr<detail::KeyedStateBackend<int64_t>> store_;
  int64_t key_ = 0;
};

// Raw RocksDB with the backend's options: key = 2-byte key group + 8-byte key (the
// same sizes as the backend's keys), no WAL.
class RawRocksDB {
 public:
  RawRocksDB() {
    auto options = detail::rocksDBOptions(EmbeddedRocksDBStateBackend::Options{});
    rocksdb::Options all(options.db, options.column);
    dir_ = (std::filesystem::temp_directory_path() / ("weir-bench-raw-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    rocksdb::DB* db = nullptr;
    auto s = rocksdb::DB::Open(all, dir_, &db);
    if (!s.ok()) throw std::runtime_error("raw RocksDB: " + s.ToString());
    db_.reset(db);
    write_.disableWAL = true;
  }
  ~RawRocksDB() {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  rocksdb::DB& db() { return *db_; }
  const rocksdb::WriteOptions& write() const { return write_; }
  const rocksdb::ReadOptions& read() const { return read_; }

 private:
  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_;
  rocksdb::ReadOptions read_;
};

struct Case {
  const char* backend;
  int64_t keys;
  int64_t records;  // per run
};

void valueStateCase(const Case& c, int runs) {
  Harness h(c.backend);
  auto& state = h.context().getState(ValueStateDescriptor<int64_t>("v"));
  std::unordered_map<int64_t, int64_t> map;
  std::unique_ptr<RawRocksDB> raw;
  bool rocks = std::string(c.backend) == "rocksdb";
  if (rocks) raw = std::make_unique<RawRocksDB>();
  int64_t engineNext = 0, baselineNext = 0;  // both see the same keys in the same order
  int64_t engineSum = 0, baselineSum = 0;

  auto engine = [&] {
    for (int64_t i = 0; i < c.records; ++i, ++engineNext) {
      h.setKey(keyOf(engineNext, c.keys));
      int64_t v = state.value().value_or(0) + 1;
      state.update(v);
      engineSum += v;
    }
  };
  auto baseline = [&] {
    if (!rocks) {
      for (int64_t i = 0; i < c.records; ++i, ++baselineNext) {
        int64_t v = ++map[keyOf(baselineNext, c.keys)];
        baselineSum += v;
      }
      return;
    }
    char key[10];
    std::string value;
    for (int64_t i = 0; i < c.records; ++i, ++baselineNext) {
      int64_t k = keyOf(baselineNext, c.keys);
      int group = assignToKeyGroup(KeyHash<int64_t>{}(k), 128);
      key[0] = static_cast<char>(group >> 8);
      key[1] = static_cast<char>(group);
      std::memcpy(key + 2, &k, 8);
      int64_t v = 1;
      if (raw->db().Get(raw->read(), rocksdb::Slice(key, 10), &value).ok()) {
        std::memcpy(&v, value.data(), 8);
        ++v;
      }
      raw->db().Put(raw->write(), rocksdb::Slice(key, 10), rocksdb::Slice(reinterpret_cast<const char*>(&v), 8));
      baselineSum += v;
    }
  };
  auto [e, b] = medianSecondsInterleaved(runs, engine, baseline);
  if (engineSum != baselineSum) {
    std::fprintf(stderr, "value_state: engine and baseline disagree (%lld vs %lld)\n",
                 static_cast<long long>(engineSum), static_cast<long long>(baselineSum));
  }
  double er = static_cast<double>(c.records) / e, br = static_cast<double>(c.records) / b;
  printFigure("value_state", {{"backend", c.backend}}, {{"keys", static_cast<double>(c.keys)},
                              {"records", static_cast<double>(c.records)}, {"records_per_s", er},
                              {"baseline_records_per_s", br}, {"ratio", br / er}});
}

}  // namespace

void valueState(int runs) {
  const char* only = std::getenv("WEIR_BENCH_BACKEND");  // e.g. heap, to profile one backend
  for (const Case& c : {Case{"heap", 1000, 20'000'000}, Case{"heap", 10'000'000, 10'000'000},
                        Case{"rocksdb", 1000, 500'000}, Case{"rocksdb", 10'000'000, 500'000}}) {
    if (only == nullptr || std::string(only) == c.backend) valueStateCase(c, runs);
  }
}

}  // namespace weir::bench
