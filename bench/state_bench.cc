// State benchmarks: keyed state operations per record on both backends, beside the same
// work done on a std::unordered_map and on raw RocksDB with the same options.
#include "state_bench.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

#include <rocksdb/db.h>

#include "harness.h"
#include "state/rocksdb_options.h"
#include "weir/weir.h"

namespace weir::bench {
namespace {


// The key of record i: spread evenly over `keys` keys.
inline int64_t keyOf(int64_t i, int64_t keys) { return static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % static_cast<uint64_t>(keys)); }

// One keyed operator's state on `backend`, driven the way a keyed operator drives it.
class Harness {
 public:
  explicit Harness(const std::string& backend)
      : backend_(stateBackendFromName(backend)),
        store_(std::make_unique<detail::KeyedStateBackend<int64_t>>(*backend_, 128, "bench")) {
    context_.setKeyedStateBackend(store_.get());
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
    auto options = state::rocksDBOptions(EmbeddedRocksDBStateBackend::Options{});
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
  if (!rocks) {
    // Every key has a value before the clock starts, so every run measures the steady
    // state (a read and a write of an existing entry), not the first run's inserts.
    for (int64_t k = 0; k < c.keys; ++k) {
      h.setKey(k);
      state.update(0);
      map[k] = 0;
    }
  }

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

namespace weir::bench {
namespace {

// MapState put + get per record: 10,000 keys with up to 100 map keys each.
void mapStateCase(const char* backend, int64_t records, int runs) {
  Harness h(backend);
  auto& map = h.context().getMapState(MapStateDescriptor<int64_t, int64_t>("m"));
  int64_t next = 0, sum = 0;
  double s = medianSeconds(runs, [&] {
    for (int64_t i = 0; i < records; ++i, ++next) {
      uint64_t r = mix(static_cast<uint64_t>(next));
      h.setKey(static_cast<int64_t>(r % 10'000));
      int64_t userKey = static_cast<int64_t>((r >> 32) % 100);
      map.put(userKey, next);
      sum += *map.get(userKey);
    }
  });
  doNotOptimize(sum);
  printFigure("map_state", {{"backend", backend}},
              {{"keys", 10'000}, {"map_keys_per_key", 100}, {"records", static_cast<double>(records)},
               {"put_get_per_s", static_cast<double>(records) / s}});
}

// ListState: 100 adds per key over 10,000 keys, then one get() of every list.
void listStateCase(const char* backend, int runs) {
  constexpr int64_t kKeys = 10'000, kPerKey = 100;
  double add = 0, get = 0;
  std::vector<double> adds, gets;
  for (int run = 0; run < runs; ++run) {
    Harness h(backend);
    auto& list = h.context().getListState(ListStateDescriptor<int64_t>("l"));
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kKeys * kPerKey; ++i) {
      h.setKey(i % kKeys);
      list.add(i);
    }
    auto t1 = std::chrono::steady_clock::now();
    size_t elements = 0;
    for (int64_t k = 0; k < kKeys; ++k) {
      h.setKey(k);
      elements += list.get().size();
    }
    auto t2 = std::chrono::steady_clock::now();
    if (elements != static_cast<size_t>(kKeys * kPerKey)) std::fprintf(stderr, "list_state: lost elements\n");
    adds.push_back(std::chrono::duration<double>(t1 - t0).count());
    gets.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  std::sort(adds.begin(), adds.end());
  std::sort(gets.begin(), gets.end());
  add = adds[adds.size() / 2];
  get = gets[gets.size() / 2];
  const double n = static_cast<double>(kKeys * kPerKey);
  printFigure("list_state", {{"backend", backend}},
              {{"keys", kKeys}, {"elements_per_key", kPerKey}, {"adds_per_s", n / add},
               {"elements_read_per_s", n / get}});
}

}  // namespace

void mapState(int runs) {
  mapStateCase("heap", 10'000'000, runs);
  mapStateCase("rocksdb", 300'000, runs);
}

void listState(int runs) {
  listStateCase("heap", runs);
  listStateCase("rocksdb", runs);
}

}  // namespace weir::bench

namespace weir::bench {
namespace {

// Writes a 100-byte value for each of `keys` distinct keys, in a job; with `timers`,
// also registers an event-time timer per key, which fire at the end of the input.
struct Remember : KeyedProcessFunction<int64_t, int64_t, int64_t> {
  explicit Remember(bool timers) : timers_(timers) {}
  void open() override { value_ = &getRuntimeContext().getState(ValueStateDescriptor<std::string>("v")); }
  void processElement(const int64_t& key, Context& ctx, Collector<int64_t>&) override {
    std::string v(100, static_cast<char>('a' + key % 26));
    std::memcpy(v.data(), &key, sizeof key);
    value_->update(std::move(v));
    if (timers_) ctx.timerService().registerEventTimeTimer(key & 0xffffff);
  }
  void onTimer(int64_t, OnTimerContext&, Collector<int64_t>& out) override { out.collect(1); }
  bool timers_;
  ValueState<std::string>* value_ = nullptr;
};

// Runs the job in a child process and returns {seconds, peak RSS in bytes} of it.
std::pair<double, double> stateMemoryRun(std::shared_ptr<StateBackend> backend, int64_t keys, bool timers) {
  return secondsAndPeakRssInChild([&] {
    StreamExecutionEnvironment env;
    env.setStateBackend(std::move(backend));
    env.fromSource(DataGeneratorSource([](int64_t i) { return static_cast<int64_t>(mix(static_cast<uint64_t>(i))); }, keys),
                   WatermarkStrategy<int64_t>::noWatermarks(), "keys")
        .keyBy([](int64_t k) { return k; })
        .process(Remember{timers})
        .sinkTo(DiscardingSink<int64_t>());
    env.execute("state memory");
  });
}

}  // namespace

void stateMemory(int) {
  constexpr int64_t kKeys = 10'000'000;
  EmbeddedRocksDBStateBackend::Options options;  // block cache 256 MiB: the budget
  for (bool timers : {false, true}) {
    auto [rs, rrss] = stateMemoryRun(std::make_shared<EmbeddedRocksDBStateBackend>(options), kKeys, timers);
    printFigure("state_memory", {{"backend", "rocksdb"}, {"timers", timers ? "one per key" : "none"}},
                {{"keys", kKeys}, {"value_bytes", 100}, {"seconds", rs}, {"records_per_s", kKeys / rs},
                 {"block_cache_bytes", static_cast<double>(options.blockCacheSize)}, {"peak_rss_bytes", rrss}});
    auto [hs, hrss] = stateMemoryRun(std::make_shared<HashMapStateBackend>(), kKeys, timers);
    printFigure("state_memory", {{"backend", "heap"}, {"timers", timers ? "one per key" : "none"}},
                {{"keys", kKeys}, {"value_bytes", 100}, {"seconds", hs}, {"records_per_s", kKeys / hs},
                 {"peak_rss_bytes", hrss}});
  }
}

}  // namespace weir::bench
