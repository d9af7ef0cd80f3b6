// Savepoints of whole jobs: stop-with-savepoint and resume at other parallelisms and on
// other state backends, with and without drain, intermediate savepoints, operators
// matched by uid, and damaged savepoints. Each output is checked against a brute force
// over the input (tests/support/recovery_job.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <future>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_storage.h"
#include "savepoint/state_reader.h"
#include "support/fresh_folder.h"
#include "support/job_end.h"
#include "support/recovery_job.h"
#include "support/slow_sink.h"
#include "weir/savepoint_reader.h"
#include "weir/weir.h"

// A record type as two versions of a job declare it (its windows' contents migrate).
namespace v1 {
struct Reading {
  int64_t sensor = 0;
  int64_t time = 0;
  int64_t value = 0;
  std::string note;  // gone in v2
};
WEIR_STRUCT(Reading, sensor, time, value, note);
}  // namespace v1
namespace v2 {
struct Reading {
  int64_t value = 0;  // reordered
  int64_t sensor = 0;
  int64_t time = 0;
  int32_t weight = 1;  // new: records of the first run count once
};
WEIR_STRUCT(Reading, value, sensor, time, weight);
}  // namespace v2

namespace weir {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using namespace weir::test;

// A fresh folder of the test's own with an empty checkpoints/ in it.
fs::path testFolder(const std::string& name) {
  fs::path dir = freshFolder("savepoint-" + name);
  fs::create_directories(dir / "checkpoints");
  return dir;
}

// The recovery job (keyed counts with event-time timers, tumbling, sliding and session
// windows, a rolling reduce, broadcast rules, a two-phase-commit sink with union state)
// at `parallelism` on `backend`, a checkpoint every 20 ms.
void configure(StreamExecutionEnvironment& env, int parallelism, const std::string& backend, const fs::path& dir) {
  env.setParallelism(parallelism).setAutoWatermarkInterval(5ms).setStateBackend(backendNamed(backend));
  env.setMaxParallelism(128);
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  env.setRestartStrategy(RestartStrategy::noRestart());
}

// Runs the job until it completed two checkpoints and committed output, then stops it
// with a savepoint in `dir`/savepoints; returns the savepoint's folder.
std::string runThenStopWithSavepoint(const fs::path& dir, int64_t n, int parallelism, const std::string& backend,
                                     std::shared_ptr<Committed> committed, bool drain = false,
                                     SavepointFormatType format = SavepointFormatType::CANONICAL) {
  StreamExecutionEnvironment env;
  configure(env, parallelism, backend, dir);
  addJob(env, n, 4000.0 * parallelism, TransactionalSink(committed), Extra::kBroadcastRules);
  auto client = env.executeAsync("first");
  bool ok = waitWhileRunning(client, [&](const JobMetrics& m) {
    std::lock_guard lock(committed->mutex);
    return m.numberOfCompletedCheckpoints >= 2 && !committed->out.empty();
  });
  EXPECT_TRUE(ok) << "the job ended before it completed two checkpoints";
  if (!ok) return "";
  std::string path = client.stopWithSavepoint(drain, (dir / "savepoints").string(), format).get();
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  return path;
}

// Resumes the job from `savepoint` at `parallelism` on `backend` and runs it to the end
// of its input at full speed.
void resume(const fs::path& dir, const std::string& savepoint, int64_t n, int parallelism, const std::string& backend,
            std::shared_ptr<Committed> committed) {
  StreamExecutionEnvironment env;
  configure(env, parallelism, backend, dir);
  env.setRestorePath(savepoint);
  addJob(env, n, 1e9, TransactionalSink(committed), Extra::kBroadcastRules);
  env.execute("resumed");
}

// Stop-with-savepoint, resumed at another parallelism: keyed state, timers and window
// contents move by key group, the rules' broadcast state and the sink's union state go
// to every subtask, the source's splits are shared out again, and the two runs' output
// together is exactly a failure-free run's.
TEST(StopWithSavepoint, ResumesExactlyAtAnyParallelism) {
  const int64_t n = 30000;
  for (auto [from, to] : std::vector<std::pair<int, int>>{{1, 4}, {4, 2}, {3, 5}, {2, 1}, {2, 2}}) {
    Failures::reset({});
    fs::path dir = testFolder("rescale");
    auto committed = std::make_shared<Committed>();
    std::string savepoint = runThenStopWithSavepoint(dir, n, from, "heap", committed);
    ASSERT_FALSE(savepoint.empty());
    EXPECT_EQ(fs::path(savepoint).parent_path(), fs::canonical(dir / "savepoints"));
    EXPECT_EQ(fs::path(savepoint).filename().string().rfind("savepoint-", 0), 0u) << savepoint;
    auto metadata = checkpoint::readMetadata(savepoint);
    EXPECT_EQ(metadata.savepointFormat, "CANONICAL");
    EXPECT_EQ(metadata.stateBackend, "hashmap");
    const size_t before = committed->out.size();
    const int64_t counted = std::count_if(committed->out.begin(), committed->out.end(),
                                          [](const Out& o) { return o.kind == kCount; });
    EXPECT_LT(counted, n) << "the first run read its whole input: the savepoint was taken at its end";
    resume(dir, savepoint, n, to, "heap", committed);
    Verdict v = check(committed->out, n);
    EXPECT_TRUE(v.exact()) << from << " to " << to << ", resumed from " << savepoint << " after " << before
                           << " records committed: " << v;
    EXPECT_TRUE(fs::exists(fs::path(savepoint) / "_metadata")) << "weir never removes a savepoint";
    fs::remove_all(dir);
  }
}

// Window contents follow a changed record type: a job stopped with a savepoint while its
// one-hour windows hold v1 readings resumes with v2 readings (a field added, one
// removed, the others reordered), and each window's sum and weighted count at the end
// cover the records of both runs, exactly.
struct SensorTotal {
  int64_t sensor = 0;
  int64_t sum = 0;
  int64_t weights = 0;
  bool operator==(const SensorTotal&) const = default;
};
WEIR_STRUCT(SensorTotal, sensor, sum, weights);

template <class Reading>
struct Total : ProcessWindowFunction<Reading, SensorTotal, int64_t> {
  void process(const int64_t& sensor, typename ProcessWindowFunction<Reading, SensorTotal, int64_t>::Context&,
               std::span<const Reading> elements, Collector<SensorTotal>& out) override {
    SensorTotal t{sensor, 0, 0};
    for (const Reading& r : elements) {
      t.sum += r.value;
      if constexpr (requires { r.weight; }) t.weights += r.weight;
      else t.weights += 1;
    }
    out.collect(t);
  }
};

// Reading i: sensor i % 5 at time i, of value 3i + 1.
template <class Reading>
Reading readingAt(int64_t i) {
  Reading r;
  r.sensor = i % 5;
  r.time = i;
  r.value = i * 3 + 1;
  return r;
}

template <class Reading>
void addReadings(StreamExecutionEnvironment& env, int64_t n, double rate, CollectSink<SensorTotal> sink) {
  env.fromSource(DataGeneratorSource(readingAt<Reading>, n, RateLimiterStrategy::perSecond(rate)),
                 WatermarkStrategy<Reading>::forMonotonousTimestamps().withTimestampAssigner(
                     [](const Reading& r, int64_t) { return r.time; }),
                 "readings")
      .uid("readings")
      .keyBy([](const Reading& r) { return r.sensor; })
      .window(TumblingEventTimeWindows::of(std::chrono::hours(1)))
      .process(Total<Reading>{})
      .uid("totals")
      .sinkTo(std::move(sink))
      .uid("sink");
}

TEST(StopWithSavepoint, WindowContentsMigrateToAChangedRecordType) {
  const int64_t n = 20000;
  std::map<int64_t, SensorTotal> expected;
  for (int64_t i = 0; i < n; ++i) {
    auto& t = expected[i % 5];
    t.sensor = i % 5;
    t.sum += i * 3 + 1;
    t.weights += 1;
  }
  for (std::string backend : {"heap", "rocksdb"}) {
    fs::path dir = testFolder("window-migration-" + backend);
    StreamExecutionEnvironment first;
    configure(first, 2, backend, dir);
    CollectSink<SensorTotal> early;
    addReadings<v1::Reading>(first, n, 8000, early);
    auto client = first.executeAsync("v1");
    ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 2; }));
    std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
    client.wait();
    EXPECT_TRUE(early.getResults().empty()) << "a one-hour window fired before the end";

    StreamExecutionEnvironment second;
    configure(second, 3, backend, dir);
    second.setRestorePath(savepoint);
    CollectSink<SensorTotal> totals;
    ::testing::internal::CaptureStderr();
    addReadings<v2::Reading>(second, n, 1e9, totals);
    second.execute("v2");
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("state '_windows' of '"), std::string::npos) << log;
    std::vector<SensorTotal> got = totals.getResults();
    std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.sensor < b.sensor; });
    std::vector<SensorTotal> want;
    for (const auto& [sensor, t] : expected) want.push_back(t);
    EXPECT_EQ(got, want) << backend;
    fs::remove_all(dir);
  }
}

// A rolling reduce's running values follow a changed record type too: each sensor's last
// running sum after the resume covers the records of both runs.
template <class Reading>
void addRunningSums(StreamExecutionEnvironment& env, int64_t n, double rate, CollectSink<Reading> sink) {
  env.fromSource(DataGeneratorSource(readingAt<Reading>, n, RateLimiterStrategy::perSecond(rate)),
                 WatermarkStrategy<Reading>::noWatermarks(), "readings")
      .uid("readings")
      .keyBy([](const Reading& r) { return r.sensor; })
      .reduce([](const Reading& a, const Reading& b) {
        Reading r = a;
        r.value += b.value;
        return r;
      })
      .uid("sums")
      .sinkTo(std::move(sink))
      .uid("sink");
}

TEST(StopWithSavepoint, RollingReduceValuesMigrateToAChangedRecordType) {
  const int64_t n = 20000;
  std::map<int64_t, int64_t> expected;
  for (int64_t i = 0; i < n; ++i) expected[i % 5] += i * 3 + 1;
  for (std::string backend : {"heap", "rocksdb"}) {
    fs::path dir = testFolder("reduce-migration-" + backend);
    StreamExecutionEnvironment first;
    configure(first, 2, backend, dir);
    CollectSink<v1::Reading> early;
    addRunningSums<v1::Reading>(first, n, 8000, early);
    auto client = first.executeAsync("v1");
    ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 2; }));
    std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
    client.wait();
    ASSERT_LT(early.getResults().size(), static_cast<size_t>(n)) << "the first run read its whole input";

    StreamExecutionEnvironment second;
    configure(second, 3, backend, dir);
    second.setRestorePath(savepoint);
    CollectSink<v2::Reading> sums;
    addRunningSums<v2::Reading>(second, n, 1e9, sums);
    second.execute("v2");
    std::map<int64_t, int64_t> last;
    for (const v2::Reading& r : sums.getResults()) last[r.sensor] = std::max(last[r.sensor], r.value);
    EXPECT_EQ(last, expected) << backend;
    fs::remove_all(dir);
  }
}

// Canonical savepoints are independent of the state backend: heap to RocksDB to heap,
// each leg stopped with a savepoint, and a moved savepoint restores as well.
TEST(StopWithSavepoint, CanonicalSavepointsMoveBetweenStateBackendsAndFolders) {
  const int64_t n = 60000;
  Failures::reset({});
  fs::path dir = testFolder("backends");
  auto committed = std::make_shared<Committed>();
  std::string first = runThenStopWithSavepoint(dir, n, 2, "heap", committed);
  ASSERT_FALSE(first.empty());
  // Moved to another folder, it still restores: its files are named relative to it.
  fs::path moved = dir / "moved" / fs::path(first).filename();
  fs::create_directories(moved.parent_path());
  fs::rename(first, moved);
  // The second leg on RocksDB (incremental checkpoints) stops with a savepoint too.
  StreamExecutionEnvironment env;
  configure(env, 3, "rocksdb_incremental", dir);
  env.setRestorePath(moved.string());
  addJob(env, n, 12000, TransactionalSink(committed), Extra::kBroadcastRules);
  auto client = env.executeAsync("rocksdb");
  const size_t before = committed->out.size();
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics& m) {
    std::lock_guard lock(committed->mutex);
    return m.numberOfCompletedCheckpoints >= 2 && committed->out.size() > before;
  }));
  std::string second = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  auto metadata = checkpoint::readMetadata(second);
  EXPECT_EQ(metadata.stateBackend, "rocksdb");
  for (const auto& f : metadata.files) EXPECT_TRUE(f.rocksdb.empty()) << "a canonical savepoint holds entries only";
  resume(dir, second, n, 2, "heap", committed);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

// A NATIVE savepoint holds RocksDB's own files, in its folder (none in shared/); it
// restores into RocksDB, and any other state backend refuses it before the job runs.
TEST(StopWithSavepoint, NativeSavepointsRestoreIntoTheirStateBackendOnly) {
  const int64_t n = 30000;
  Failures::reset({});
  fs::path dir = testFolder("native");
  auto committed = std::make_shared<Committed>();
  std::string savepoint = runThenStopWithSavepoint(dir, n, 2, "rocksdb", committed, false, SavepointFormatType::NATIVE);
  ASSERT_FALSE(savepoint.empty());
  auto metadata = checkpoint::readMetadata(savepoint);
  EXPECT_EQ(metadata.savepointFormat, "NATIVE");
  int withFiles = 0;
  for (const auto& f : metadata.files) {
    withFiles += f.rocksdb.empty() ? 0 : 1;
    for (const auto& r : f.rocksdb) EXPECT_FALSE(r.shared) << r.name;
  }
  EXPECT_GT(withFiles, 0) << "a native savepoint of RocksDB holds its files";
  try {
    resume(dir, savepoint, n, 2, "heap", std::make_shared<Committed>());
    ADD_FAILURE() << "a native RocksDB savepoint restored into the heap";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NATIVE format of the 'rocksdb' state backend"), std::string::npos)
        << e.what();
  }
  resume(dir, savepoint, n, 3, "rocksdb", committed);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

// Processing-time timers pending at a stop-with-savepoint go into it and fire once after
// a resume at another parallelism: each key registers one timer 2 s after its first
// record, the job stops well before any is due, and over both runs every key's timer
// fires exactly once (committed by the two-phase-commit sink).
struct OneTimerPerKey : KeyedProcessFunction<int64_t, Event, Out> {
  void open() override { registered_ = &getRuntimeContext().getState(ValueStateDescriptor<bool>("registered", false)); }
  void processElement(const Event&, Context& ctx, Collector<Out>&) override {
    if (*registered_->value()) return;
    registered_->update(true);
    ctx.timerService().registerProcessingTimeTimer(ctx.timerService().currentProcessingTime() + 2000);
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<Out>& out) override {
    out.collect({ctx.getCurrentKey(), 1, kTimer, 0});
  }
  ValueState<bool>* registered_ = nullptr;
};

TEST(StopWithSavepoint, ProcessingTimeTimersFireOnceAfterAResumeAtAnotherParallelism) {
  fs::path dir = testFolder("processing-timers");
  auto committed = std::make_shared<Committed>();
  auto run = [&](int parallelism, double rate, const std::string& from) {
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism).enableCheckpointing(20ms);
    env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    env.setRestartStrategy(RestartStrategy::noRestart());
    if (!from.empty()) env.setRestorePath(from);
    env.fromSource(DataGeneratorSource(eventAt, 40000, RateLimiterStrategy::perSecond(rate)),
                   WatermarkStrategy<Event>::noWatermarks(), "events")
        .uid("events")
        .keyBy([](const Event& e) { return e.key; })
        .process(OneTimerPerKey{})
        .uid("timers")
        .sinkTo(TransactionalSink(committed))
        .uid("sink");
    return env.executeAsync("processing-time timers");
  };
  const auto start = std::chrono::steady_clock::now();
  auto first = run(2, 10000, "");
  ASSERT_TRUE(waitWhileRunning(first, [](const JobMetrics& m) {
    uint64_t read = 0;
    for (const auto& v : m.vertices) read += v.numSourceRecords;
    return m.numberOfCompletedCheckpoints >= 2 && read >= static_cast<uint64_t>(kKeys);
  }));
  std::string savepoint = first.stopWithSavepoint(false, (dir / "savepoints").string()).get();
  first.wait();
  // Stopped before any timer was due (on a machine that got there in time): all of them
  // are in the savepoint.
  if (std::chrono::steady_clock::now() - start < 1500ms) {
    EXPECT_TRUE(committed->out.empty()) << "a timer fired early";
  }
  // The rest of the input at 12,000 a second: about 3 s, past every timer.
  run(3, 12000, savepoint).wait();
  std::map<int64_t, int> fired;
  for (const Out& o : committed->out) ++fired[o.key];
  EXPECT_EQ(fired.size(), static_cast<size_t>(kKeys)) << "every key's timer fired";
  for (const auto& [key, times] : fired) EXPECT_EQ(times, 1) << "key " << key;
  fs::remove_all(dir);
}

// With drain, event time advances to its end before the savepoint: every timer and
// window of the records read so far fires exactly once, before the job finishes. At
// parallelism 1 the records read are the first m, m being the counts the job emitted.
TEST(StopWithSavepoint, DrainFiresEveryWindowOnceBeforeTheEnd) {
  const int64_t n = 1'000'000;
  Failures::reset({});
  fs::path dir = testFolder("drain");
  auto committed = std::make_shared<Committed>();
  std::string savepoint = runThenStopWithSavepoint(dir, n, 1, "heap", committed, true);
  ASSERT_FALSE(savepoint.empty());
  const int64_t m = std::count_if(committed->out.begin(), committed->out.end(), [](const Out& o) { return o.kind == kCount; });
  ASSERT_GT(m, 0);
  ASSERT_LT(m, n);
  Verdict v = check(committed->out, m);
  EXPECT_TRUE(v.exact()) << "drained after " << m << " records: " << v;
  fs::remove_all(dir);
}

// An intermediate savepoint leaves the job running, and its output exact: what the sink
// prepared for it is committed by the next checkpoint (the savepoint commits nothing).
TEST(Savepoint, AnIntermediateSavepointLeavesTheJobRunningAndItsOutputExact) {
  const int64_t n = 40000;
  Failures::reset({});
  fs::path dir = testFolder("intermediate");
  auto committed = std::make_shared<Committed>();
  StreamExecutionEnvironment env;
  configure(env, 2, "rocksdb", dir);
  env.getCheckpointConfig().setDefaultSavepointDirectory((dir / "default").string());
  addJob(env, n, 10000, TransactionalSink(committed), Extra::kBroadcastRules);
  auto client = env.executeAsync("intermediate");
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  std::string savepoint = client.triggerSavepoint().get();  // into the default folder
  EXPECT_EQ(fs::path(savepoint).parent_path(), fs::canonical(dir / "default"));
  auto metadata = checkpoint::readMetadata(savepoint);
  EXPECT_NO_THROW(checkpoint::verifyCheckpoint(savepoint, metadata));
  EXPECT_EQ(client.getJobStatus(), JobStatus::RUNNING);
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

// A small job whose operators have uids: a keyed count ("count"), optionally a keyed
// sum after it ("sum"), into a collecting sink.
struct Keyed {
  int64_t key = 0;
  int64_t value = 0;
};
WEIR_STRUCT(Keyed, key, value);

struct RunningCount : KeyedProcessFunction<int64_t, int64_t, Keyed> {
  void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement(const int64_t& v, Context&, Collector<Keyed>& out) override {
    count_->update(*count_->value() + 1);
    out.collect({v % 10, *count_->value()});
  }
  ValueState<int64_t>* count_ = nullptr;
};

void addUidJob(StreamExecutionEnvironment& env, int64_t n, double rate, bool withSum, CollectSink<Keyed> sink) {
  auto source = env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                               WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
                    .uid("numbers");
  DataStream<Keyed> counts =
      source.keyBy([](const int64_t& v) { return v % 10; }).process(RunningCount{}).uid("count");
  if (withSum) counts = counts.keyBy([](const Keyed& k) { return k.key; }).sum(&Keyed::value).uid("sum");
  counts.sinkTo(std::move(sink)).uid("sink");
}

// State of an operator the job no longer has is refused, naming its uid, unless
// non-restored state is allowed; then the rest restores and the job runs on.
TEST(Savepoint, StateOfARemovedOperatorIsRefusedUnlessAllowed) {
  fs::path dir = testFolder("uids");
  const int64_t n = 200000;
  StreamExecutionEnvironment env;
  env.setParallelism(2).enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  CollectSink<Keyed> first;
  addUidJob(env, n, 20000, true, first);
  auto client = env.executeAsync("with sum");
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
  client.wait();
  auto without = [&](bool allow) {
    StreamExecutionEnvironment resumed;
    resumed.setParallelism(3).enableCheckpointing(20ms);
    resumed.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    resumed.setSavepointRestoreSettings(SavepointRestoreSettings::forPath(savepoint, allow));
    CollectSink<Keyed> sink;
    addUidJob(resumed, n, 1e9, false, sink);
    resumed.execute("without sum");
    return sink.getResults();
  };
  try {
    without(false);
    ADD_FAILURE() << "state of the removed operator 'sum' was dropped silently";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sum'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-non-restored-state"), std::string::npos) << e.what();
  }
  auto results = without(true);
  // The counts go on from the savepoint: each key's last count is its number of records.
  std::map<int64_t, int64_t> last;
  for (const auto& k : results) last[k.key] = std::max(last[k.key], k.value);
  ASSERT_EQ(last.size(), 10u);
  for (const auto& [key, count] : last) EXPECT_EQ(count, n / 10) << "key " << key;
  fs::remove_all(dir);
}

// Flink's advice as a warning when a job with checkpoints starts: the stateful operators
// (sources, keyed operators, sinks) that have no uid, by name; none when they all have one.
TEST(Savepoint, StatefulOperatorsWithoutAUidAreNamedWhenTheJobStarts) {
  auto run = [](bool uids) {
    StreamExecutionEnvironment env;
    env.enableCheckpointing(1000ms);
    auto numbers = env.fromElements(int64_t{1}, int64_t{2}, int64_t{3});
    auto counts = numbers.map([](int64_t v) { return v; }).name("plain map")
                      .keyBy([](const int64_t& v) { return v % 2; }).process(RunningCount{}).name("running count");
    auto sink = counts.sinkTo(DiscardingSink<Keyed>());
    if (uids) {
      numbers.uid("numbers");
      counts.uid("count");
      sink.uid("sink");
    }
    ::testing::internal::CaptureStderr();
    env.execute("uids");
    return ::testing::internal::GetCapturedStderr();
  };
  std::string without = run(false);
  EXPECT_NE(without.find("stateful operators without a uid: 'Collection Source', 'running count', 'Sink'"),
            std::string::npos) << without;
  EXPECT_EQ(without.find("plain map"), std::string::npos) << "a map has no state of its own: " << without;
  EXPECT_EQ(run(true), "");
}

// With auto-generated uids disabled (Flink's getConfig().disableAutoGeneratedUIDs()),
// a job with any operator without a uid is refused at execute(), naming them all; one
// whose operators all have one runs.
TEST(Savepoint, DisabledAutoGeneratedUidsRefuseEveryOperatorWithoutOne) {
  auto run = [](bool uids) {
    StreamExecutionEnvironment env;
    env.getConfig().disableAutoGeneratedUIDs();
    EXPECT_FALSE(env.getConfig().hasAutoGeneratedUIDsEnabled());
    auto numbers = env.fromElements(int64_t{1}, int64_t{2}, int64_t{3});
    auto mapped = numbers.map([](int64_t v) { return v; }).name("plain map");
    auto counts = mapped.keyBy([](const int64_t& v) { return v % 2; }).process(RunningCount{}).name("running count");
    auto sink = counts.sinkTo(DiscardingSink<Keyed>());
    if (uids) {
      numbers.uid("numbers");
      mapped.uid("map");
      counts.uid("count");
      sink.uid("sink");
    }
    try {
      env.execute("uids");
      return std::string();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidJob);
      return std::string(e.what());
    }
  };
  EXPECT_EQ(run(false),
            "auto-generated uids are disabled (getConfig().disableAutoGeneratedUIDs()), but operators "
            "'Collection Source', 'plain map', 'running count', 'Sink' have no uid; set uid(...) on each");
  EXPECT_EQ(run(true), "");
}

// `weir savepoint dump`'s reader: every entry of a value, list and map state, each
// decoded by the schema the savepoint recorded, equal to what the records the job
// processed before the savepoint make of them (its sink saw exactly those).
struct Summary {
  int64_t last = 0;
  int64_t count = 0;
  std::string tag;
};
WEIR_STRUCT(Summary, last, count, tag);

struct Collecting : KeyedProcessFunction<int64_t, int64_t, int64_t> {
  void open() override {
    summary_ = &getRuntimeContext().getState(ValueStateDescriptor<Summary>("summary"));
    seen_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("seen"));
    byResidue_ = &getRuntimeContext().getMapState(MapStateDescriptor<std::string, int64_t>("byResidue"));
  }
  void processElement(const int64_t& v, Context& ctx, Collector<int64_t>& out) override {
    Summary s = summary_->value().value_or(Summary{});
    summary_->update(Summary{v, s.count + 1, "key " + std::to_string(ctx.getCurrentKey())});
    seen_->add(v);
    byResidue_->put(std::to_string(v % 3), v);
    out.collect(v);
  }
  ValueState<Summary>* summary_ = nullptr;
  ListState<int64_t>* seen_ = nullptr;
  MapState<std::string, int64_t>* byResidue_ = nullptr;
};

// What the State Processor API's reader makes of each key of Collecting's state.
struct ReadBack {
  int64_t key = 0;
  int64_t count = 0;
  std::vector<int64_t> seen;
  int64_t residues = 0;
};
WEIR_STRUCT(ReadBack, key, count, seen, residues);

struct ReadAll : KeyedStateReaderFunction<int64_t, ReadBack> {
  void open() override {
    summary_ = &getRuntimeContext().getState(ValueStateDescriptor<Summary>("summary"));
    seen_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("seen"));
    byResidue_ = &getRuntimeContext().getMapState(MapStateDescriptor<std::string, int64_t>("byResidue"));
  }
  void readKey(const int64_t& key, Context&, Collector<ReadBack>& out) override {
    int64_t residues = 0;
    for (const auto& entry : byResidue_->entries()) residues += entry.first.empty() ? 0 : 1;
    out.collect({key, summary_->value()->count, seen_->get(), residues});
  }
  ValueState<Summary>* summary_ = nullptr;
  ListState<int64_t>* seen_ = nullptr;
  MapState<std::string, int64_t>* byResidue_ = nullptr;
};

TEST(Savepoint, DumpWritesEveryEntryOfAStateByItsSchema) {
  for (std::string backend : {"heap", "rocksdb"}) {
    fs::path dir = testFolder("dump-" + backend);
    StreamExecutionEnvironment env;
    env.setParallelism(2).enableCheckpointing(20ms).setStateBackend(backendNamed(backend));
    env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    CollectSink<int64_t> sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1'000'000, RateLimiterStrategy::perSecond(20000)),
                   WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
        .uid("numbers")
        .setParallelism(1)
        .keyBy([](const int64_t& v) { return v % 7; })
        .process(Collecting{})
        .uid("collect")
        .sinkTo(sink)
        .uid("sink");
    auto client = env.executeAsync("dumped");
    ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
    std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string(),
                                                     backend == "rocksdb" ? SavepointFormatType::NATIVE
                                                                          : SavepointFormatType::CANONICAL).get();
    client.wait();
    std::vector<int64_t> processed = sink.getResults();
    std::sort(processed.begin(), processed.end());
    ASSERT_FALSE(processed.empty());
    std::map<int64_t, std::vector<int64_t>> seen;  // by key, in order (one source subtask)
    for (int64_t v : processed) seen[v % 7].push_back(v);

    auto dump = [&](const std::string& state) {
      std::stringstream out;
      uint64_t n = savepoint::dumpKeyedState(savepoint, "collect", state, out);
      std::vector<nlohmann::json> lines;
      for (std::string line; std::getline(out, line);) lines.push_back(nlohmann::json::parse(line));
      EXPECT_EQ(lines.size(), n);
      return lines;
    };
    auto summaries = dump("summary");
    ASSERT_EQ(summaries.size(), seen.size()) << backend;
    for (const auto& line : summaries) {
      const auto& values = seen.at(line["key"].get<int64_t>());
      EXPECT_EQ(line["value"], (nlohmann::json{{"last", values.back()},
                                               {"count", static_cast<int64_t>(values.size())},
                                               {"tag", "key " + std::to_string(line["key"].get<int64_t>())}}))
          << backend;
      EXPECT_FALSE(line.contains("namespace"));
    }
    auto lists = dump("seen");
    ASSERT_EQ(lists.size(), seen.size()) << backend;
    for (const auto& line : lists) EXPECT_EQ(line["value"], nlohmann::json(seen.at(line["key"].get<int64_t>())));
    std::map<std::pair<int64_t, std::string>, int64_t> expectedMap;
    for (const auto& [key, values] : seen)
      for (int64_t v : values) expectedMap[{key, std::to_string(v % 3)}] = v;
    auto maps = dump("byResidue");
    ASSERT_EQ(maps.size(), expectedMap.size()) << backend;
    for (const auto& line : maps)
      EXPECT_EQ(line["value"].get<int64_t>(),
                expectedMap.at({line["key"].get<int64_t>(), line["userKey"].get<std::string>()}));
    try {
      dump("nope");
      ADD_FAILURE() << "a state that does not exist was dumped";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'byResidue', 'seen', 'summary'"), std::string::npos) << e.what();
    }
    // The State Processor API reads the same state as a stream, key by key, at any
    // parallelism up to the savepoint's.
    for (int parallelism : {1, 2}) {
      StreamExecutionEnvironment reading;
      reading.setParallelism(parallelism);
      CollectSink<ReadBack> read;
      SavepointReader::read(reading, savepoint).readKeyedState("collect", ReadAll{}).sinkTo(read);
      reading.execute("read");
      std::vector<ReadBack> got = read.getResults();
      std::sort(got.begin(), got.end(), [](const ReadBack& a, const ReadBack& b) { return a.key < b.key; });
      ASSERT_EQ(got.size(), seen.size()) << backend << " p" << parallelism;
      auto it = seen.begin();
      for (const ReadBack& r : got) {
        const auto& [key, values] = *it++;
        EXPECT_EQ(r.key, key);
        EXPECT_EQ(r.seen, values);
        EXPECT_EQ(r.count, static_cast<int64_t>(values.size()));
        EXPECT_EQ(r.residues, std::min<int64_t>(3, static_cast<int64_t>(values.size())));
      }
    }
    try {
      StreamExecutionEnvironment reading;
      SavepointReader::read(reading, savepoint).readKeyedState("nope", ReadAll{});
      ADD_FAILURE() << "an operator the savepoint does not hold was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("holds no state of operator 'nope'; its operators are: 'collect'"),
                std::string::npos)
          << e.what();
    }
    fs::remove_all(dir);
  }
}

// Requests that cannot start are refused at once, and the job is not disturbed.
TEST(Savepoint, RequestsThatCannotStartAreRefused) {
  fs::path dir = testFolder("refused");
  {
    StreamExecutionEnvironment env;  // no checkpointing
    CollectSink<Keyed> sink;
    addUidJob(env, 100000, 20000, false, sink);
    auto client = env.executeAsync("unchecked");
    try {
      client.triggerSavepoint(dir.string());
      ADD_FAILURE() << "a savepoint of a job without checkpointing";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("without checkpointing"), std::string::npos) << e.what();
    }
    client.cancel();
    client.wait();
  }
  StreamExecutionEnvironment env;
  env.setParallelism(2).enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  CollectSink<Keyed> sink;
  addUidJob(env, 20000, 10000, false, sink);
  auto client = env.executeAsync("refusing");
  try {
    client.triggerSavepoint();
    ADD_FAILURE() << "a savepoint without a folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no savepoint directory"), std::string::npos) << e.what();
  }
  // Until its first attempt runs, a job refuses savepoints ("the job is not running").
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  auto stopping = client.stopWithSavepoint(true, (dir / "savepoints").string());
  try {
    client.triggerSavepoint((dir / "savepoints").string());
    ADD_FAILURE() << "a savepoint while the job is being stopped with one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("being stopped with a savepoint"), std::string::npos) << e.what();
  }
  std::string path = stopping.get();
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  EXPECT_TRUE(fs::exists(fs::path(path) / "_metadata"));
  // The drained job's every record reached the sink: its counts are complete up to where
  // the sources stopped, and the job ended.
  try {
    client.triggerSavepoint((dir / "savepoints").string());
    ADD_FAILURE() << "a savepoint of a finished job";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has ended"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A job cancelled while its sources drain for a stop-with-savepoint: the savepoint's
// future fails at once rather than never, and nothing of the stop is left behind.
TEST(Savepoint, ACancelWhileDrainingForASavepointFailsItsFuture) {
  fs::path dir = testFolder("cancel-drain");
  StreamExecutionEnvironment env;
  env.setParallelism(2).enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  // A sink at ~20,000 records/s behind full buffers: draining takes seconds.
  auto client = weir::testing::startSlowJob(env);
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  auto stopping = client.stopWithSavepoint(true, (dir / "savepoints").string());
  client.cancel();
  ASSERT_EQ(stopping.wait_for(10s), std::future_status::ready);
  try {
    stopping.get();
    ADD_FAILURE() << "the savepoint completed although the job was cancelled while draining";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cancelled"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.wait().status, JobStatus::CANCELED);
  fs::remove_all(dir);
}

// A flipped byte, a truncated or a deleted file: found before any state is used, with
// an error naming the file, and the job does not run.
TEST(Savepoint, DamagedSavepointsAreRefusedBeforeUse) {
  fs::path dir = testFolder("damaged");
  StreamExecutionEnvironment env;
  env.setParallelism(2).enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  CollectSink<Keyed> sink;
  addUidJob(env, 100000, 20000, true, sink);
  auto client = env.executeAsync("to damage");
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
  client.wait();
  std::vector<fs::path> stateFiles;
  for (const auto& f : fs::directory_iterator(savepoint))
    if (f.path().filename() != "_metadata") stateFiles.push_back(f.path());
  std::sort(stateFiles.begin(), stateFiles.end());
  ASSERT_FALSE(stateFiles.empty());
  enum class Damage { kFlip, kTruncate, kDelete };
  int trial = 0;
  for (Damage damage : {Damage::kFlip, Damage::kTruncate, Damage::kDelete}) {
    for (const fs::path& victim : stateFiles) {
      fs::path copy = dir / ("copy-" + std::to_string(trial++));
      fs::copy(savepoint, copy);
      fs::path file = copy / victim.filename();
      if (damage == Damage::kDelete) {
        fs::remove(file);
      } else if (damage == Damage::kTruncate) {
        fs::resize_file(file, fs::file_size(file) / 2);
      } else {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(fs::file_size(file) / 2));
        char c = 0;
        f.read(&c, 1);
        f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
        c = static_cast<char>(c ^ 0x10);
        f.write(&c, 1);
      }
      StreamExecutionEnvironment resumed;
      resumed.setParallelism(2).enableCheckpointing(20ms);
      resumed.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
      resumed.setRestorePath(copy.string());
      CollectSink<Keyed> out;
      addUidJob(resumed, 100000, 1e9, true, out);
      try {
        resumed.execute("damaged");
        ADD_FAILURE() << "a damaged savepoint restored: " << file;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(file.filename().string()), std::string::npos) << e.what();
      }
      EXPECT_TRUE(out.getResults().empty()) << "the job ran from a damaged savepoint";
      fs::remove_all(copy);
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
