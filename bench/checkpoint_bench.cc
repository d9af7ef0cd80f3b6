#include "checkpoint_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.h"
#include "weir/weir.h"

namespace weir::bench {

namespace {

using namespace std::chrono_literals;

struct Write {
  int64_t key;
  int64_t version;
};

// Subtasks of Keep open so far (their state restored), and when the last one did.
std::atomic<int> gKeepOpened{0};
std::atomic<int64_t> gKeepOpenedAtNanos{0};

// Keeps a 100-byte value per key, rewritten by every record of the key.
struct Keep : KeyedProcessFunction<int64_t, Write, int64_t> {
  void open() override {
    value_ = &getRuntimeContext().getState(ValueStateDescriptor<std::string>("value"));
    gKeepOpenedAtNanos = std::chrono::steady_clock::now().time_since_epoch().count();
    ++gKeepOpened;
  }
  void processElement(const Write& w, Context&, Collector<int64_t>&) override {
    std::string v(100, static_cast<char>('a' + w.version % 26));
    value_->update(std::move(v));
  }
  ValueState<std::string>* value_ = nullptr;
};

// Throws once, at the first record after `armed` is set.
struct FailOnce : RichMapFunction<Write, Write> {
  explicit FailOnce(std::shared_ptr<std::atomic<bool>> a) : armed(std::move(a)) {}
  std::shared_ptr<std::atomic<bool>> armed;
  Write map(const Write& w) override {
    if (armed->exchange(false)) throw std::runtime_error("injected failure");
    return w;
  }
};

struct Figures {
  double sync = 0, syncMax = 0, async = 0, alignment = 0, total = 0, size = 0, fullSize = 0, rate = 0;
};

// "heap", "rocksdb", or "rocksdb_incremental" (RocksDB with incremental checkpoints).
std::shared_ptr<StateBackend> backendNamed(const std::string& name) {
  if (name == "rocksdb_incremental") return std::make_shared<EmbeddedRocksDBStateBackend>(true);
  return stateBackendFromName(name);
}

// The job of startFilled: writes to `keys` keys, then to the first 1% of them again and again.
void addWrites(StreamExecutionEnvironment& env, int64_t keys, std::shared_ptr<std::atomic<bool>> armed) {
  const int64_t hot = std::max<int64_t>(1, keys / 100);
  env.fromSource(DataGeneratorSource(
                     [keys, hot](int64_t i) { return i < keys ? Write{i, 0} : Write{(i - keys) % hot, i / hot}; },
                     kUnboundedCount, RateLimiterStrategy::perSecond(2'000'000)),
                 WatermarkStrategy<Write>::noWatermarks(), "writes")
      .map(FailOnce(std::move(armed)))
      .keyBy([](const Write& w) { return w.key; })
      .process(Keep{})
      .sinkTo(DiscardingSink<int64_t>());
}

// Starts a job that fills `keys` keys and then keeps rewriting the first 1% of them (so
// 1% of the keys change between checkpoints), with a checkpoint every 500 ms (the map
// throws once when `armed` is set); returns once every key was written and
// `checkpoints` more checkpoints completed.
JobClient startFilled(const std::string& backend, int64_t keys, int checkpoints,
                      std::shared_ptr<std::atomic<bool>> armed, RestartStrategy restart,
                      const std::string& retainIn = "", std::chrono::milliseconds interval = 500ms) {
  StreamExecutionEnvironment env;
  env.setParallelism(1).setStateBackend(backendNamed(backend));
  env.enableCheckpointing(interval);
  env.setRestartStrategy(restart);
  if (!retainIn.empty()) {
    env.getCheckpointConfig().setCheckpointStorage(retainIn);
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
  }
  addWrites(env, keys, std::move(armed));
  auto client = env.executeAsync("checkpointed writes");
  auto written = [&] {
    uint64_t n = 0;
    for (const auto& v : client.getMetrics().vertices) n += v.numSourceRecords;
    return static_cast<int64_t>(n);
  };
  while (written() < keys) std::this_thread::sleep_for(20ms);
  int64_t start = client.getMetrics().numberOfCompletedCheckpoints;
  while (client.getMetrics().numberOfCompletedCheckpoints < start + checkpoints) std::this_thread::sleep_for(20ms);
  return client;
}

// The figures of the third checkpoint after the state was filled, but the size and the
// synchronous part: the mean size the 3rd to the 10th checkpoints wrote (incremental
// checkpoints write more when a compaction rewrote files, so one checkpoint says
// little), and the median and the slowest of their synchronous parts.
Figures measure(const std::string& backend, int64_t keys) {
  auto client = startFilled(backend, keys, 3, std::make_shared<std::atomic<bool>>(false), RestartStrategy::noRestart());
  auto m = client.getMetrics();
  Figures f{0, 0, static_cast<double>(m.lastCheckpointAsyncDuration), static_cast<double>(m.lastCheckpointAlignmentTime),
            static_cast<double>(m.lastCheckpointDuration), 0, static_cast<double>(m.lastCheckpointFullSize)};
  constexpr int kCheckpoints = 8;
  int64_t seen = m.numberOfCompletedCheckpoints;
  double size = static_cast<double>(m.lastCheckpointSize);
  std::vector<double> syncs{static_cast<double>(m.lastCheckpointSyncDuration)};
  auto written = [&](const JobMetrics& metrics) {
    uint64_t n = 0;
    for (const auto& v : metrics.vertices) n += v.numSourceRecords;
    return static_cast<double>(n);
  };
  const double writesBefore = written(m);
  const auto start = std::chrono::steady_clock::now();
  while (syncs.size() < kCheckpoints) {
    std::this_thread::sleep_for(2ms);
    auto now = client.getMetrics();
    if (now.numberOfCompletedCheckpoints == seen) continue;
    seen = now.numberOfCompletedCheckpoints;
    size += static_cast<double>(now.lastCheckpointSize);
    syncs.push_back(static_cast<double>(now.lastCheckpointSyncDuration));
    f.rate = (written(now) - writesBefore) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  f.size = size / kCheckpoints;
  std::sort(syncs.begin(), syncs.end());
  f.sync = syncs[syncs.size() / 2];
  f.syncMax = syncs.back();
  client.cancel();
  client.wait();
  return f;
}

}  // namespace

void checkpointSize(int runs) {
  std::vector<int64_t> sizes = {100'000, 1'000'000};  // x ~100 bytes: 10 MB, 100 MB
  if (std::getenv("WEIR_BENCH_LARGE")) sizes.push_back(10'000'000);
  const char* only = std::getenv("WEIR_BENCH_BACKEND");
  for (int64_t keys : sizes) {
    double rocksdbFull = 0;  // size of the RocksDB full checkpoint, for the incremental ratio
    for (std::string backend : {"heap", "rocksdb", "rocksdb_incremental"}) {
      if (only && backend.rfind(only, 0) != 0) continue;
      std::vector<Figures> all;
      for (int r = 0; r < std::max(1, runs / 2); ++r) all.push_back(measure(backend, keys));
      auto median = [&](double Figures::*f) {
        std::vector<double> v;
        for (auto& x : all) v.push_back(x.*f);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const bool incremental = backend == "rocksdb_incremental";
      std::vector<std::pair<std::string, double>> figures{
          {"keys", static_cast<double>(keys)},          {"state_bytes", 100.0 * static_cast<double>(keys)},
          {"size_bytes", median(&Figures::size)},       {"full_size_bytes", median(&Figures::fullSize)},
          {"sync_ms", median(&Figures::sync)},          {"sync_max_ms", median(&Figures::syncMax)},
          {"async_ms", median(&Figures::async)},
          {"alignment_ms", median(&Figures::alignment)}, {"duration_ms", median(&Figures::total)},
          {"records_per_s", median(&Figures::rate)}};
      if (backend == "rocksdb") rocksdbFull = median(&Figures::size);
      // Incremental: what a checkpoint wrote against what a full RocksDB one writes.
      if (incremental && rocksdbFull > 0) figures.emplace_back("ratio", median(&Figures::size) / rocksdbFull);
      printFigure("checkpoint_size",
                  {{"backend", incremental ? "rocksdb" : backend}, {"kind", incremental ? "incremental" : "full"}},
                  figures);
    }
  }
}

void recovery(int runs) {
  std::vector<int64_t> sizes = {1'000'000};  // x ~100 bytes: 100 MB
  if (std::getenv("WEIR_BENCH_LARGE")) sizes.push_back(10'000'000);
  const char* only = std::getenv("WEIR_BENCH_BACKEND");
  for (int64_t keys : sizes) {
    for (std::string backend : {"heap", "rocksdb", "rocksdb_incremental"}) {
      if (only && backend.rfind(only, 0) != 0) continue;
      std::vector<double> seconds;
      double size = 0;
      for (int r = 0; r < std::max(1, runs / 2); ++r) {
        auto armed = std::make_shared<std::atomic<bool>>(false);
        auto client = startFilled(backend, keys, 2, armed, RestartStrategy::fixedDelayRestart(1, 0ms));
        size = static_cast<double>(client.getMetrics().lastCheckpointFullSize);
        armed->store(true);
        while (client.getMetrics().lastRecoveryDuration < 0) std::this_thread::sleep_for(5ms);
        seconds.push_back(static_cast<double>(client.getMetrics().lastRecoveryDuration) / 1000.0);
        client.cancel();
        client.wait();
      }
      std::sort(seconds.begin(), seconds.end());
      printFigure("recovery", {{"backend", backend == "rocksdb_incremental" ? "rocksdb" : backend},
                               {"kind", backend == "rocksdb_incremental" ? "incremental" : "full"}},
                  {{"keys", static_cast<double>(keys)}, {"checkpoint_bytes", size},
                   {"recovery_s", seconds[seconds.size() / 2]}});
    }
  }
}

namespace {

// This process's resident set (VmRSS) or its peak since the last resetPeakRss (VmHWM), in bytes.
double residentBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(std::strlen(field))) * 1024.0;
  return 0;
}
void resetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

void rescale(int runs) {
  std::vector<int64_t> sizes = {1'000'000};  // x ~100 bytes: 100 MB
  if (std::getenv("WEIR_BENCH_LARGE")) sizes.push_back(10'000'000);
  const char* only = std::getenv("WEIR_BENCH_BACKEND");
  const auto folder = std::filesystem::temp_directory_path() / ("weir-bench-rescale-" + std::to_string(::getpid()));
  for (int64_t keys : sizes) {
    for (std::string backend : {"heap", "rocksdb", "rocksdb_incremental"}) {
      if (only && backend.rfind(only, 0) != 0) continue;
      std::vector<double> seconds, added;
      double size = 0;
      for (int r = 0; r < std::max(1, runs / 2); ++r) {
        std::filesystem::remove_all(folder);
        std::filesystem::create_directories(folder);
        auto filled = startFilled(backend, keys, 2, std::make_shared<std::atomic<bool>>(false),
                                  RestartStrategy::noRestart(), folder.string());
        filled.cancel();
        filled.wait();  // the latest checkpoint, after any that completed while cancelling
        size = static_cast<double>(filled.getMetrics().lastCheckpointFullSize);
        const std::string latest = filled.getMetrics().latestCompletedCheckpointPath;

        StreamExecutionEnvironment env;
        env.setParallelism(2).setStateBackend(backendNamed(backend)).setRestorePath(latest);
        addWrites(env, keys, std::make_shared<std::atomic<bool>>(false));
        gKeepOpened = 0;
        const double rssBefore = residentBytes("VmRSS:");
        resetPeakRss();
        const auto start = std::chrono::steady_clock::now();
        auto client = env.executeAsync("rescaled");
        while (gKeepOpened < 2 && client.getJobStatus() == JobStatus::RUNNING) std::this_thread::sleep_for(1ms);
        if (gKeepOpened < 2) client.wait();  // it failed: throws, naming why
        const auto opened = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(gKeepOpenedAtNanos.load()));
        seconds.push_back(std::chrono::duration<double>(opened - start).count());
        added.push_back(residentBytes("VmHWM:") - rssBefore);
        client.cancel();
        client.wait();
      }
      std::filesystem::remove_all(folder);
      std::sort(seconds.begin(), seconds.end());
      std::sort(added.begin(), added.end());
      printFigure("rescale", {{"backend", backend == "rocksdb_incremental" ? "rocksdb" : backend},
                              {"kind", backend == "rocksdb_incremental" ? "incremental" : "full"}},
                  {{"keys", static_cast<double>(keys)}, {"checkpoint_bytes", size}, {"from_parallelism", 1},
                   {"to_parallelism", 2}, {"restore_s", seconds[seconds.size() / 2]},
                   {"peak_rss_added_bytes", added[added.size() / 2]}});
    }
  }
}

namespace {

double folderBytes(const std::filesystem::path& folder) {
  double bytes = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(folder))
    if (f.is_regular_file()) bytes += static_cast<double>(f.file_size());
  return bytes;
}

// Resumes the writes job from `path` at `parallelism`: seconds until every keyed subtask
// is open with its state.
double restoreSeconds(const std::string& backend, int64_t keys, const std::string& path, int parallelism) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(backendNamed(backend)).setRestorePath(path);
  addWrites(env, keys, std::make_shared<std::atomic<bool>>(false));
  gKeepOpened = 0;
  const auto start = std::chrono::steady_clock::now();
  auto client = env.executeAsync("resumed");
  while (gKeepOpened < parallelism && client.getJobStatus() == JobStatus::RUNNING) std::this_thread::sleep_for(1ms);
  if (gKeepOpened < parallelism) client.wait();  // it failed: throws, naming why
  const auto opened = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(gKeepOpenedAtNanos.load()));
  client.cancel();
  client.wait();
  return std::chrono::duration<double>(opened - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void savepoint(int runs) {
  std::vector<int64_t> sizes = {1'000'000};  // x ~100 bytes: 100 MB
  if (std::getenv("WEIR_BENCH_LARGE")) sizes.push_back(10'000'000);
  const char* only = std::getenv("WEIR_BENCH_BACKEND");
  const auto folder = std::filesystem::temp_directory_path() / ("weir-bench-savepoint-" + std::to_string(::getpid()));
  struct Case {
    std::string backend;
    SavepointFormatType type;
  };
  for (int64_t keys : sizes) {
    for (const Case& c : {Case{"heap", SavepointFormatType::CANONICAL}, Case{"rocksdb", SavepointFormatType::CANONICAL},
                          Case{"rocksdb", SavepointFormatType::NATIVE}}) {
      if (only && c.backend.rfind(only, 0) != 0) continue;
      std::vector<double> checkpointS, savepointS, restore1, restore2;
      double checkpointBytes = 0, savepointBytes = 0;
      for (int r = 0; r < std::max(1, runs / 2); ++r) {
        std::filesystem::remove_all(folder);
        std::filesystem::create_directories(folder);
        // A full checkpoint of the filled state, then a savepoint of the same state, in the
        // same run (the job goes on rewriting 1% of the keys meanwhile). Checkpoints 3 s
        // apart, and the savepoint right after one completed: it does not wait for one.
        auto job = startFilled(c.backend, keys, 2, std::make_shared<std::atomic<bool>>(false),
                               RestartStrategy::noRestart(), "", 3s);
        const JobMetrics m = job.getMetrics();
        checkpointS.push_back(static_cast<double>(m.lastCheckpointDuration) / 1000.0);
        checkpointBytes = static_cast<double>(m.lastCheckpointFullSize);
        const auto start = std::chrono::steady_clock::now();
        const std::string path = job.stopWithSavepoint(false, folder.string(), c.type).get();
        savepointS.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        job.wait();
        savepointBytes = folderBytes(path);
        restore1.push_back(restoreSeconds(c.backend, keys, path, 1));
        restore2.push_back(restoreSeconds(c.backend, keys, path, 2));
      }
      std::filesystem::remove_all(folder);
      const double ratio = median(savepointS) / median(checkpointS);
      printFigure("savepoint", {{"backend", c.backend}, {"format", toString(c.type)}},
                  {{"keys", static_cast<double>(keys)}, {"checkpoint_s", median(checkpointS)},
                   {"checkpoint_bytes", checkpointBytes}, {"savepoint_s", median(savepointS)},
                   {"savepoint_bytes", savepointBytes}, {"restore_p1_s", median(restore1)},
                   {"restore_p2_s", median(restore2)}, {"ratio", ratio}});
    }
  }
}

void checkpointOverhead(int runs) {
  // ~8 s a run at p = 1, so a run pays some eight checkpoints, not one or two.
  const int64_t n = 240'000'000, keys = 100'000;
  for (int p : {1, 2}) {
    auto job = [&](bool checkpoints) {
      return [&, checkpoints, p] {
        StreamExecutionEnvironment env;
        env.setParallelism(p);
        if (checkpoints) env.enableCheckpointing(1s);
        env.fromSource(DataGeneratorSource([](int64_t i) { return keyedRecord(i, keys); }, n),
                       WatermarkStrategy<KeyedRecord>::noWatermarks(), "gen")
            .keyBy([](const KeyedRecord& r) { return r.first; })
            .sum<1>()
            .sinkTo(DiscardingSink<KeyedRecord>());
        auto client = env.executeAsync("checkpoint_overhead");
        client.wait();
      };
    };
    auto [with, without] = medianSecondsInterleaved(runs, job(true), job(false));
    double e = static_cast<double>(n) / with, b = static_cast<double>(n) / without;
    printFigure("checkpoint_overhead", {{"parallelism", p}, {"records", static_cast<double>(n)},
                                        {"keys", static_cast<double>(keys)}, {"interval_ms", 1000},
                                        {"records_per_s", e}, {"baseline_records_per_s", b}, {"ratio", b / e}});
  }
}

namespace {

// A sink that spends `nanosPerRecord` of CPU on each record: the job's bottleneck.
class SlowSink final : public Sink<KeyedRecord> {
 public:
  explicit SlowSink(int64_t nanosPerRecord) : nanos_(nanosPerRecord) {}
  std::unique_ptr<SinkWriter<KeyedRecord>> createWriter(RuntimeContext&) const override {
    struct Writer final : SinkWriter<KeyedRecord> {
      int64_t nanos = 0;
      int64_t checksum = 0;
      void write(const KeyedRecord& r) override {
        auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(nanos);
        while (std::chrono::steady_clock::now() < until) checksum += r.second;
      }
    };
    auto w = std::make_unique<Writer>();
    w->nanos = nanos_;
    return w;
  }

 private:
  int64_t nanos_;
};

}  // namespace

void alignment(int runs) {
  const int64_t keys = 10'000, nanosPerRecord = 20'000;
  const int checkpoints = std::max(5, runs * 2);
  double alignedMedian = 0;
  for (bool unaligned : {false, true}) {
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    env.enableCheckpointing(200ms);
    env.getCheckpointConfig().enableUnalignedCheckpoints(unaligned);
    env.fromSource(DataGeneratorSource([](int64_t i) { return keyedRecord(i, keys); }, kUnboundedCount),
                   WatermarkStrategy<KeyedRecord>::noWatermarks(), "gen")
        .keyBy([](const KeyedRecord& r) { return r.first; })
        .sum<1>()
        .sinkTo(SlowSink(nanosPerRecord))
        .setParallelism(1);
    auto client = env.executeAsync("alignment");
    // Every completed checkpoint's duration, after the queues filled (the first two).
    std::vector<double> durations;
    double persisted = 0, alignmentMs = 0;
    int64_t seen = 0;
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (static_cast<int>(durations.size()) < checkpoints && std::chrono::steady_clock::now() < deadline) {
      JobMetrics m = client.getMetrics();
      if (m.latestCompletedCheckpointId != seen) {
        seen = m.latestCompletedCheckpointId;
        if (seen > 2) {
          durations.push_back(static_cast<double>(m.lastCheckpointDuration));
          persisted += static_cast<double>(std::max<int64_t>(0, m.lastCheckpointPersistedData));
          alignmentMs += static_cast<double>(m.lastCheckpointAlignmentTime);
        }
      }
      std::this_thread::sleep_for(1ms);
    }
    client.cancel();
    client.wait();
    if (durations.empty()) continue;
    std::sort(durations.begin(), durations.end());
    double n = static_cast<double>(durations.size());
    double median = durations[durations.size() / 2];
    std::vector<std::pair<std::string, double>> fields = {
        {"checkpoints", n}, {"sink_ns_per_record", static_cast<double>(nanosPerRecord)},
        {"duration_ms_median", median}, {"duration_ms_max", durations.back()},
        {"alignment_ms_mean", alignmentMs / n}, {"persisted_bytes_mean", persisted / n}};
    // The unaligned line holds the ratio against the aligned run before it.
    if (unaligned && alignedMedian > 0 && median > 0) fields.push_back({"ratio", alignedMedian / median});
    if (!unaligned) alignedMedian = median;
    printFigure("alignment", {{"mode", unaligned ? "unaligned" : "aligned"}}, fields);
  }
}

}  // namespace weir::bench
