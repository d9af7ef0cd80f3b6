// Fault injection: a job with keyed counts and event-time timers whose user function
// throws at random records, restarted from its checkpoints, must commit exactly the
// output of a failure-free run (checked against a brute force over the input).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "checkpoint/checkpoint_storage.h"
#include "support/fresh_folder.h"
#include "support/job_end.h"
#include "support/recovery_job.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using namespace weir::test;

struct JobRun {
  std::vector<Out> out;
  std::optional<std::string> error;
  JobMetrics metrics;
};

struct Options {
  int parallelism = 1;
  std::string backend = "heap";
  bool checkpointing = true;
  CheckpointingMode mode = CheckpointingMode::EXACTLY_ONCE;
  bool transactional = true;
  RestartStrategy restart = RestartStrategy::fixedDelayRestart(100, 5ms);
  std::string checkpointDir;
  std::chrono::milliseconds interval = 20ms;
  int maxConcurrent = 1;
  bool unaligned = false;
  std::chrono::milliseconds alignedTimeout{0};
  bool slowSink = false;  // back-pressures the job
  int retained = 1;
  int sinkParallelism = 0;  // 0: the job's
  Extra extra = Extra::kNone;
};

JobRun runJob(const Options& o, int64_t n, double rate, std::shared_ptr<Committed> committed = nullptr,
              const std::string& restoreFrom = "") {
  StreamExecutionEnvironment env;
  if (!restoreFrom.empty()) env.setRestorePath(restoreFrom);
  env.setParallelism(o.parallelism).setStateBackend(backendNamed(o.backend));
  env.setAutoWatermarkInterval(5ms);
  env.setRestartStrategy(o.restart);
  if (o.checkpointing) {
    env.enableCheckpointing(o.interval, o.mode);
    auto& config = env.getCheckpointConfig();
    config.setMaxConcurrentCheckpoints(o.maxConcurrent);
    config.setNumRetainedCheckpoints(o.retained);
    if (!o.checkpointDir.empty()) config.setCheckpointStorage(o.checkpointDir);
    config.enableUnalignedCheckpoints(o.unaligned);
    config.setAlignedCheckpointTimeout(o.alignedTimeout);
  }
  if (!committed) committed = std::make_shared<Committed>();
  const Extra extra = o.extra != Extra::kNone ? o.extra : o.maxConcurrent > 1 ? Extra::kProbeOverlap : Extra::kNone;
  if (o.transactional)
    addJob(env, n, rate, TransactionalSink(committed, o.slowSink ? 32 : 0), extra, o.sinkParallelism);
  else addJob(env, n, rate, ImmediateSink(committed), extra);
  auto client = env.executeAsync("recovery");
  JobRun run;
  try {
    client.wait();
  } catch (const JobExecutionError& e) {
    run.error = e.what();
  }
  run.metrics = client.getMetrics();
  run.out = committed->out;
  return run;
}

// What ended a job that should still run: its error, or its status.
std::string whyStopped(JobClient& client) {
  if (client.getJobStatus() == JobStatus::RUNNING) return "the job still runs after two minutes";
  try {
    return "the job ended " + std::string(toString(client.wait().status));
  } catch (const JobExecutionError& e) {
    return e.what();
  }
}

// 5 to 20 failures at records spread over the input, from a seed per case.
std::vector<int64_t> failurePositions(uint64_t seed, int64_t n) {
  std::mt19937_64 rng(seed);
  int count = std::uniform_int_distribution<int>(5, 20)(rng);
  std::vector<int64_t> at;
  for (int i = 0; i < count; ++i) at.push_back(std::uniform_int_distribution<int64_t>(n / 20, n - 1)(rng));
  return at;
}

// Parallelism 2, a checkpoint every 20 ms into `dir`, retained when the job is cancelled.
void retainCheckpointsEvery20ms(StreamExecutionEnvironment& env, const fs::path& dir,
                                const std::string& backend = "heap") {
  env.setParallelism(2).setAutoWatermarkInterval(5ms).setStateBackend(backendNamed(backend));
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(dir.string());
  env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
}

// Runs the job at parallelism 2, a checkpoint every 20 ms retained in `dir`, until
// `reached` holds; then cancels it and returns its newest checkpoint ("" when the job
// stopped before). Unaligned, a slow sink at `sinkParallelism` back-pressures it.
template <class Reached>
std::string runThenCancel(const fs::path& dir, int64_t n, double rate, bool unaligned,
                          std::shared_ptr<Committed> committed, Reached reached, int sinkParallelism = 1,
                          const std::string& backend = "heap", Extra extra = Extra::kNone) {
  StreamExecutionEnvironment env;
  retainCheckpointsEvery20ms(env, dir, backend);
  env.getCheckpointConfig().enableUnalignedCheckpoints(unaligned);
  // Unaligned: back-pressured by slow sink subtasks, so records wait on the keyBy edges.
  addJob(env, n, rate, TransactionalSink(committed, unaligned ? 8 : 0), extra, unaligned ? sinkParallelism : 0);
  auto client = env.executeAsync("first");
  bool ok = waitWhileRunning(client, reached);
  client.cancel();
  // FINISHED when the input had run out before the cancel (which then does nothing):
  // there is no cancelled job to resume, and the test fails here.
  JobStatus status = client.wait().status;
  EXPECT_EQ(status, JobStatus::CANCELED);
  if (!ok || status != JobStatus::CANCELED) return "";
  // A transaction is committed only once its checkpoint completed: the newest one left
  // covers every committed transaction, or resuming from it would commit records twice.
  std::string latest = checkpoint::findLatestCheckpoint(dir.string());
  if (latest.empty()) {
    ADD_FAILURE() << "the cancelled job retained no checkpoint";
    return "";
  }
  const int64_t latestId = std::stoll(fs::path(latest).filename().string().substr(4));
  std::lock_guard lock(committed->mutex);
  for (const auto& t : committed->transactions)
    EXPECT_LE(checkpointOf(t), latestId) << "transaction " << t << ", resumed from " << latest;
  return latest;
}

class ExactlyOnceRecovery : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(ExactlyOnceRecovery, OutputEqualsAFailureFreeRun) {
  auto [backend, parallelism, unaligned] = GetParam();
  const int64_t n = 40000;
  uint64_t seed = std::hash<std::string>{}(backend) + static_cast<uint64_t>(parallelism) + (unaligned ? 100 : 0);
  auto failures = failurePositions(seed, n);
  Failures::reset(failures);
  Options o;
  o.parallelism = parallelism;
  o.backend = backend;
  o.unaligned = unaligned;
  JobRun run = runJob(o, n, 40000);
  ASSERT_FALSE(run.error) << *run.error;
  Verdict v = check(run.out, n);
  EXPECT_TRUE(v.exact()) << "seed " << seed << ": " << v;
  EXPECT_EQ(Failures::thrown.load(), static_cast<int>(failures.size()));
  // Two subtasks may fail in the same attempt: one restart covers both.
  EXPECT_GT(run.metrics.numRestarts, 0);
  EXPECT_LE(run.metrics.numRestarts, static_cast<int>(failures.size()));
  EXPECT_GT(run.metrics.numberOfCompletedCheckpoints, 0);
}

INSTANTIATE_TEST_SUITE_P(BackendsAndParallelism, ExactlyOnceRecovery,
                         ::testing::Combine(::testing::Values("heap", "rocksdb", "rocksdb_incremental"),
                                            ::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_p" + std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_unaligned" : "_aligned");
                         });

// Under back-pressure (a slow sink, a source without a rate limit) the barriers of
// unaligned checkpoints overtake the records queued ahead of them: the checkpoints hold
// those records, and restores replay them exactly once. With an aligned checkpoint
// timeout, checkpoints start aligned and turn unaligned when the barriers are slow.
TEST(UnalignedCheckpoints, UnderBackPressureHoldRecordsInFlightAndRecoverExactly) {
  struct Case {
    std::string backend;
    std::chrono::milliseconds alignedTimeout;
  };
  for (const Case& c :
       {Case{"heap", 0ms}, Case{"rocksdb", 0ms}, Case{"rocksdb_incremental", 0ms}, Case{"heap", 5ms}}) {
    const int64_t n = 40000;
    // Few failures, late enough and far enough apart that checkpoints holding records in
    // flight complete before each.
    std::vector<int64_t> failures = {n / 2, 3 * n / 4, 9 * n / 10};
    Failures::reset(failures);
    Options o;
    o.parallelism = 2;
    o.backend = c.backend;
    o.unaligned = true;
    o.alignedTimeout = c.alignedTimeout;
    o.slowSink = true;
    o.interval = 5ms;
    JobRun run = runJob(o, n, 1e9);
    std::string name = c.backend + " timeout " + std::to_string(c.alignedTimeout.count()) + " ms";
    ASSERT_FALSE(run.error) << name << ": " << *run.error;
    Verdict v = check(run.out, n);
    EXPECT_TRUE(v.exact()) << name << ": " << v;
    EXPECT_EQ(Failures::thrown.load(), static_cast<int>(failures.size())) << name;
    EXPECT_GT(run.metrics.numberOfCompletedCheckpoints, 0) << name;
    EXPECT_GT(run.metrics.totalCheckpointPersistedData, 0) << name << ": no checkpoint held records in flight";
  }
}

// The operators whose state in `checkpoint` holds records in flight.
std::set<std::string> holdingRecordsInFlight(const std::string& checkpoint) {
  std::set<std::string> holding;
  for (const auto& f : checkpoint::readMetadata(checkpoint).files)
    for (const auto& name : f.operatorStates)
      if (name == detail::kChannelState) holding.insert(f.operatorName);
  return holding;
}

// Resumes the job from `checkpoint` at `parallelism` (the sink at `sinkParallelism`, 0:
// the same) after a first run that committed `first`; expects the output to be exact.
void expectResumesExactly(const std::string& checkpoint, const Committed& first, int64_t n, int parallelism,
                          int sinkParallelism, Extra extra = Extra::kNone) {
  auto committed = std::make_shared<Committed>();  // what the first run committed, again
  committed->out = first.out;
  committed->transactions = first.transactions;
  Options o;
  o.parallelism = parallelism;
  o.unaligned = true;
  o.sinkParallelism = sinkParallelism;
  o.extra = extra;
  JobRun run = runJob(o, n, 1e9, committed, checkpoint);
  ASSERT_FALSE(run.error) << "p " << parallelism << ": " << *run.error;
  Verdict v = check(run.out, n);
  EXPECT_TRUE(v.exact()) << "p " << parallelism << ", resumed from " << checkpoint << " after "
                         << first.out.size() << " records committed: " << v;
}

// A retained unaligned checkpoint that holds records in flight resumes the job after it
// was cancelled, exactly, at its own parallelism and at others: each subtask replays the
// records in flight on keyBy edges of the key groups it now owns. (The sink keeps
// parallelism 1, so each key's counts stay in order from one producer.)
TEST(UnalignedCheckpoints, ResumeFromARetainedOneAtAnyParallelismReplaysItsRecordsInFlight) {
  const int64_t n = 20000;
  Failures::reset({});
  fs::path dir = freshFolder("unaligned");
  auto first = std::make_shared<Committed>();
  std::string latest = runThenCancel(dir, n, 1e9, true, first,
                                     [](const JobMetrics& m) { return m.lastCheckpointPersistedData > 0; });
  ASSERT_FALSE(latest.empty());
  ASSERT_FALSE(holdingRecordsInFlight(latest).empty())
      << "the job was back-pressured, yet its last checkpoint holds no records in flight";
  for (int parallelism : {2, 3, 1}) expectResumesExactly(latest, *first, n, parallelism, 1);
  fs::remove_all(dir);
}

// Barriers do not overtake records on forward edges (keyed operators into the sink
// subtasks of the same index) nor on broadcast edges (rules into every subtask of a
// keyed broadcast operator), as in Flink: forward records keep an order the records
// after them rely on, broadcast ones reach every subtask, and neither could be shared
// out at another parallelism. So the sink holds no records in flight, the keyed
// operators do, and a retained unaligned checkpoint resumes the job exactly at other
// parallelisms too.
TEST(UnalignedCheckpoints, ForwardAndBroadcastEdgesStayAlignedSoTheCheckpointResumesAtAnotherParallelism) {
  const int64_t n = 20000;
  Failures::reset({});
  fs::path dir = freshFolder("unaligned-forward");
  auto first = std::make_shared<Committed>();
  std::string latest = runThenCancel(
      dir, n, 1e9, true, first, [](const JobMetrics& m) { return m.lastCheckpointPersistedData > 0; }, 2, "heap",
      Extra::kBroadcastRules);
  ASSERT_FALSE(latest.empty());
  std::set<std::string> holding = holdingRecordsInFlight(latest);
  ASSERT_FALSE(holding.empty()) << "the job was back-pressured, yet its last checkpoint holds no records in flight";
  EXPECT_FALSE(holding.contains("Sink")) << "records in flight on the forward edges into the sink";
  for (int parallelism : {3, 1}) expectResumesExactly(latest, *first, n, parallelism, 0, Extra::kBroadcastRules);
  fs::remove_all(dir);
}

// The keyed broadcast operator's keyBy input is overtaken while its broadcast input
// (rules flowing all along) stays aligned; recovery is exact. Each of five failures comes
// up to a thousand records after a checkpoint that completed since the one before, so
// each restart restores a checkpoint the failed attempt took. (It checks the keyed side:
// the rules change no output, so this test would not see a lost rule; the test above
// would, through the refused restore.)
TEST(UnalignedCheckpoints, WithABroadcastInputRecoveryIsExact) {
  for (int parallelism : {2, 4}) {
    const int64_t n = 40000;
    std::mt19937_64 rng(static_cast<uint64_t>(parallelism));
    std::vector<int64_t> gaps(5);
    for (auto& g : gaps) g = std::uniform_int_distribution<int64_t>(0, 999)(rng);
    Failures::resetAfterCheckpoints(gaps);
    Options o;
    o.parallelism = parallelism;
    o.unaligned = true;
    o.extra = Extra::kBroadcastRules;
    // 10,000 records a second: the input outlasts five restarts and their first
    // checkpoints (about 2 s each under ThreadSanitizer at p = 4).
    JobRun run = runJob(o, n, 10000);
    ASSERT_FALSE(run.error) << *run.error;
    Verdict v = check(run.out, n);
    EXPECT_TRUE(v.exact()) << "p " << parallelism << ": " << v;
    EXPECT_EQ(Failures::thrown.load(), static_cast<int>(gaps.size())) << "p " << parallelism;
    EXPECT_GE(run.metrics.numberOfCompletedCheckpoints, Failures::thrown.load()) << "p " << parallelism;
  }
}

// Async I/O between the source and the keyed operators (unordered, answered out of order
// by a pool, near its capacity): the records waiting for answers at each checkpoint are
// part of it and are asked about again after each of 5 to 20 failures, and after a
// resume at other parallelisms. No result crosses a watermark: the windows would drop it
// as late, and the check would count a loss.
TEST(AsyncIoRecovery, RequestsInFlightAreCheckpointedAndRecoverExactly) {
  const int64_t n = 40000;
  auto failures = failurePositions(11, n);
  Failures::reset(failures);
  Options o;
  o.parallelism = 2;
  o.extra = Extra::kAsyncLookup;
  JobRun run = runJob(o, n, 40000);
  ASSERT_FALSE(run.error) << *run.error;
  Verdict v = check(run.out, n);
  EXPECT_TRUE(v.exact()) << v;
  EXPECT_EQ(Failures::thrown.load(), static_cast<int>(failures.size()));
  EXPECT_GT(run.metrics.numberOfCompletedCheckpoints, 0);

  Failures::reset({});
  fs::path dir = freshFolder("async-rescale");
  auto first = std::make_shared<Committed>();
  std::string latest = runThenCancel(
      dir, n, 4000, false, first, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 2; }, 1, "heap",
      Extra::kAsyncLookup);
  ASSERT_FALSE(latest.empty());
  for (int parallelism : {3, 1}) expectResumesExactly(latest, *first, n, parallelism, 0, Extra::kAsyncLookup);
  fs::remove_all(dir);
}

// Several checkpoints in progress at once (a new one every 2 ms while fewer than 4 are):
// they really overlap, a newer one that completes subsumes older ones, sinks commit on
// each, and recovery is as exact as with one at a time.
TEST(ConcurrentCheckpoints, OverlapAndRecoverExactly) {
  for (const std::string backend : {"heap", "rocksdb", "rocksdb_incremental"}) {
    const int64_t n = 40000;
    auto failures = failurePositions(11, n);
    Failures::reset(failures);
    OverlapProbe::overlapping = 0;
    Options o;
    o.parallelism = 2;
    o.backend = backend;
    o.interval = 2ms;
    o.maxConcurrent = 4;
    JobRun run = runJob(o, n, 40000);
    ASSERT_FALSE(run.error) << *run.error;
    Verdict v = check(run.out, n);
    EXPECT_TRUE(v.exact()) << backend << ": " << v;
    EXPECT_EQ(Failures::thrown.load(), static_cast<int>(failures.size()));
    EXPECT_GT(run.metrics.numberOfCompletedCheckpoints, 0) << backend;
    EXPECT_GT(OverlapProbe::overlapping.load(), 0) << backend << ": no checkpoint started before the last one ended";
  }
  // At least once, a subtask with two inputs takes a newer checkpoint when its barrier
  // comes first on one input, and never the older one: that one is subsumed when the
  // newer completes, which is no failure (the job tolerates none here).
  const int64_t n = 40000;
  Failures::reset(failurePositions(12, n));
  Options o;
  o.parallelism = 2;
  o.mode = CheckpointingMode::AT_LEAST_ONCE;
  o.interval = 2ms;
  o.maxConcurrent = 4;
  JobRun run = runJob(o, n, 40000);
  ASSERT_FALSE(run.error) << *run.error;
  EXPECT_EQ(check(run.out, n).losses, 0);
  EXPECT_GT(run.metrics.numberOfCompletedCheckpoints, 0);
}

// A retained checkpoint of a cancelled job, resumed at another parallelism: each key's
// state moves with its key group, and the two runs' output together is exact.
// With incremental RocksDB checkpoints each new subtask takes the old instance's files
// as its database, clipped to its key groups (and checkpoints incrementally on from
// them); resumed on the heap, the same files give the heap its entries.
TEST(RetainedCheckpoint, ResumesAtAnotherParallelism) {
  struct Case {
    std::string before, after;
  };
  for (const Case& c : {Case{"heap", "heap"}, Case{"rocksdb_incremental", "rocksdb"},
                        Case{"rocksdb_incremental", "rocksdb_incremental"}, Case{"rocksdb_incremental", "heap"},
                        Case{"heap", "rocksdb"}, Case{"rocksdb", "heap"}}) {
    const int64_t n = 60000;
    Failures::reset({});
    fs::path dir = freshFolder("rescale");
    auto committed = std::make_shared<Committed>();
    // About 40 s if never cancelled: room for two checkpoints under ThreadSanitizer too,
    // where two incremental ones of the job's ten RocksDB instances took 5-20 s.
    std::string latest = runThenCancel(
        dir, n, 1500, false, committed, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 2; }, 1,
        c.before);
    ASSERT_FALSE(latest.empty()) << c.before;
    // Window contents and timers of the 3 window operators' 2 subtasks each, and the
    // sessions' windows: on the heap in the state files; on RocksDB in RocksDB (a full
    // checkpoint writes its columns to the state files, an incremental one has its
    // files). Each is listed once per subtask. The window functions keep no state.
    int withWindows = 0, withSessions = 0, withTimers = 0, withRocksDB = 0;
    for (const auto& f : checkpoint::readMetadata(latest).files) {
      if (f.operatorName.find("Window") == std::string::npos) continue;
      withWindows += static_cast<int>(std::count(f.keyedStates.begin(), f.keyedStates.end(), "_windows"));
      withSessions += static_cast<int>(std::count(f.keyedStates.begin(), f.keyedStates.end(), "_sessions"));
      withTimers += static_cast<int>(std::count(f.keyedStates.begin(), f.keyedStates.end(), "_timers"));
      withRocksDB += f.rocksdb.empty() ? 0 : 1;
    }
    EXPECT_EQ(withWindows, 6) << c.before;
    EXPECT_EQ(withSessions, 2) << c.before;
    EXPECT_EQ(withTimers, 6) << c.before;  // once each: in the heap's files or RocksDB's column
    EXPECT_EQ(withRocksDB, c.before == "rocksdb_incremental" ? 6 : 0) << c.before;
    size_t before = committed->out.size();
    EXPECT_LT(before, static_cast<size_t>(n)) << c.before;
    Options o;
    o.parallelism = 3;
    o.backend = c.after;
    JobRun run = runJob(o, n, 1e9, committed, latest);
    ASSERT_FALSE(run.error) << *run.error;
    Verdict v = check(run.out, n);
    EXPECT_TRUE(v.exact()) << c.before << " to " << c.after << ", resumed from " << latest << " after " << before
                           << " records committed: " << v;
    fs::remove_all(dir);
  }
}

// Incremental RocksDB checkpoints of a running job, three retained: shared/ holds
// exactly the SST files the retained checkpoints use (none deleted too early, none
// left behind), each retained checkpoint verifies, later checkpoints write less than
// they hold, and discarding the checkpoints at the end removes shared/ with them.
TEST(IncrementalCheckpoints, SharedFilesAreExactlyThoseTheRetainedCheckpointsUse) {
  Failures::reset({});
  for (auto cleanup : {ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION,
                       ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION}) {
    fs::path dir = freshFolder("incremental");
    StreamExecutionEnvironment env;
    env.setParallelism(2).setAutoWatermarkInterval(5ms).setStateBackend(backendNamed("rocksdb_incremental"));
    env.enableCheckpointing(20ms);
    env.getCheckpointConfig().setCheckpointStorage(dir.string());
    env.getCheckpointConfig().setNumRetainedCheckpoints(3);
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(cleanup);
    env.setRestartStrategy(RestartStrategy::noRestart());  // nothing fails here: a failure ends the test
    addJob(env, 1'000'000, 20000, TransactionalSink(std::make_shared<Committed>()), Extra::kNone, 0);
    auto client = env.executeAsync("incremental");
    bool smaller = false;  // some checkpoint wrote less than it holds
    ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics& m) {
      smaller = smaller || (m.lastCheckpointSize > 0 && m.lastCheckpointSize < m.lastCheckpointFullSize);
      return m.numberOfCompletedCheckpoints >= 8 && smaller;
    })) << whyStopped(client);
    // While the job runs, cleaning leaves its folder alone.
    auto during = checkpoint::cleanCheckpoints(dir.string(), false);
    ASSERT_EQ(during.size(), 1u);
    EXPECT_TRUE(during[0].running);
    EXPECT_THROW(checkpoint::cleanCheckpoints(during[0].folder, false), Error);
    client.cancel();
    client.wait();
    if (cleanup == ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION) {
      EXPECT_TRUE(fs::is_empty(dir)) << "the job's folder, shared/ included, is removed";
      fs::remove_all(dir);
      continue;
    }
    std::set<std::string> used, stored;
    int retained = 0;
    fs::path shared;
    for (const auto& job : fs::directory_iterator(dir)) {
      shared = job.path() / "shared";
      for (const auto& chk : fs::directory_iterator(job.path())) {
        if (!fs::exists(chk.path() / "_metadata")) continue;
        ++retained;
        auto m = checkpoint::readMetadata(chk.path().string());
        EXPECT_NO_THROW(checkpoint::verifyCheckpoint(chk.path().string(), m)) << chk.path();
        for (const auto& f : m.files)
          for (const auto& r : f.rocksdb)
            if (r.shared) used.insert(r.stored);
      }
    }
    for (const auto& f : fs::directory_iterator(shared)) stored.insert(f.path().filename().string());
    EXPECT_EQ(retained, 3);
    EXPECT_FALSE(used.empty());
    EXPECT_EQ(stored, used);
    // Once it ended, what a killed upload would leave goes, and only that.
    std::ofstream(shared / "left-behind.sst") << "partial";
    auto cleaned = checkpoint::cleanCheckpoints(dir.string(), false);
    ASSERT_EQ(cleaned.size(), 1u);
    EXPECT_FALSE(cleaned[0].running);
    EXPECT_EQ(cleaned[0].sharedFiles, std::vector<std::string>{(shared / "left-behind.sst").string()});
    EXPECT_TRUE(cleaned[0].incomplete.empty());
    stored.clear();
    for (const auto& f : fs::directory_iterator(shared)) stored.insert(f.path().filename().string());
    EXPECT_EQ(stored, used);
    fs::remove_all(dir);
  }
}

TEST(RetainedCheckpoint, AMissingOrDamagedCheckpointStopsTheStartNamingTheFile) {
  fs::path dir = fs::temp_directory_path() / ("weir-badrestore-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "chk-3");
  StreamExecutionEnvironment env;
  env.setRestorePath((dir / "chk-3").string());
  env.fromElements<int64_t>(1, 2, 3).sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute();
    FAIL() << "a checkpoint without metadata was restored";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCheckpoint);
    EXPECT_NE(std::string(e.what()).find("_metadata"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// The checker can fail: with a plain sink in at-least-once mode it sees the records that
// were replayed after each restart, but never a loss.
TEST(RecoveryChecker, ReportsDuplicatesOfAtLeastOnceButNoLosses) {
  const int64_t n = 20000;
  Failures::reset(failurePositions(7, n));
  Options o;
  o.parallelism = 2;
  o.mode = CheckpointingMode::AT_LEAST_ONCE;
  o.transactional = false;
  JobRun run = runJob(o, n, 40000);
  ASSERT_FALSE(run.error) << *run.error;
  Verdict v = check(run.out, n);
  EXPECT_GT(v.duplicates, 0);
  EXPECT_EQ(v.losses, 0);
}

// ... and counts past a key's records (input read twice, as a source replaying from the
// start would), which no repeat shows: a failure-free run's output against one record
// fewer per key.
TEST(RecoveryChecker, ReportsCountsBeyondTheInput) {
  const int64_t n = 20000;
  Failures::reset({});
  JobRun run = runJob(Options{}, n, 1e9);
  ASSERT_FALSE(run.error) << *run.error;
  EXPECT_TRUE(check(run.out, n).exact()) << check(run.out, n);
  Verdict v = check(run.out, n - kKeys);
  EXPECT_EQ(v.duplicates, 0);
  EXPECT_GE(v.wrong, kKeys) << v;
}

// ... and without checkpoints a failure loses what the job had not yet emitted.
TEST(RecoveryChecker, ReportsLossesWithoutCheckpointing) {
  const int64_t n = 20000;
  Failures::reset({n / 2});
  Options o;
  o.checkpointing = false;
  o.restart = RestartStrategy::noRestart();
  JobRun run = runJob(o, n, 1e9);
  ASSERT_TRUE(run.error);
  EXPECT_NE(run.error->find("injected failure"), std::string::npos) << *run.error;
  EXPECT_GT(check(run.out, n).losses, 0);
}

// A refused snapshot declines the checkpoint; with no failure tolerated the job restarts
// from the last good one and still commits exactly once.
TEST(CheckpointFailures, AThrowingSnapshotFailsTheCheckpointAndTheJobRecovers) {
  const int64_t n = 20000;
  Failures::reset({});
  ThrowingSnapshot::snapshots = 0;
  StreamExecutionEnvironment env;
  env.setAutoWatermarkInterval(5ms);
  env.enableCheckpointing(20ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(100, 5ms));
  auto committed = std::make_shared<Committed>();
  addJob(env, n, 40000, TransactionalSink(committed), Extra::kRefuseSnapshots);
  auto client = env.executeAsync("snapshot failures");
  client.wait();
  auto m = client.getMetrics();
  EXPECT_GT(m.numberOfFailedCheckpoints, 0);
  EXPECT_GT(m.numRestarts, 0);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
}

TEST(CheckpointFailures, TolerableFailuresKeepTheJobRunningAndTheLastCheckpointIntact) {
  // About 100 s if never cancelled: under ThreadSanitizer the first two checkpoints
  // alone took most of 10 s.
  const int64_t n = 300000;
  Failures::reset({});
  fs::path dir = fs::temp_directory_path() / ("weir-recovery-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  StreamExecutionEnvironment env;
  env.setAutoWatermarkInterval(5ms);
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(dir.string());
  env.getCheckpointConfig().setTolerableCheckpointFailureNumber(1000);
  env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
  auto committed = std::make_shared<Committed>();
  addJob(env, n, 3000, TransactionalSink(committed));
  auto client = env.executeAsync("unwritable");
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 2; }));
  // The job's folder becomes a file: no checkpoint folder can be made in it any more.
  // Swapped in one step (RENAME_EXCHANGE): a checkpoint triggered while the folder was
  // missing would make it again, as Flink's storage does (mkdirs), and go on there.
  fs::path jobFolder = dir / client.getJobID();
  fs::path aside = dir / "aside";
  { std::ofstream(aside.string()) << "not a folder"; }
  auto swap = [&] {
    ASSERT_EQ(::renameat2(AT_FDCWD, aside.c_str(), AT_FDCWD, jobFolder.c_str(), RENAME_EXCHANGE), 0)
        << std::strerror(errno);
  };
  swap();
  ASSERT_TRUE(fs::is_regular_file(jobFolder));
  int64_t failedBefore = client.getMetrics().numberOfFailedCheckpoints;
  bool failedWhileRunning = waitWhileRunning(
      client, [&](const JobMetrics& m) { return m.numberOfFailedCheckpoints >= failedBefore + 3; });
  EXPECT_TRUE(failedWhileRunning) << toString(client.getJobStatus()) << ", "
                                  << client.getMetrics().numberOfFailedCheckpoints - failedBefore << " failed";
  swap();
  client.cancel();
  EXPECT_EQ(client.wait().status, JobStatus::CANCELED);
  // The newest completed checkpoint (retained on cancellation) is whole.
  std::string latest = client.getMetrics().latestCompletedCheckpointPath;
  auto metadata = checkpoint::readMetadata(latest);
  EXPECT_NO_THROW(checkpoint::verifyCheckpoint(latest, metadata));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// A function that cannot restore: every restart fails again, until the strategy gives up.
struct RefusesRestore : RichMapFunction<Event, Event>, CheckpointedFunction {
  Event map(const Event& e) override {
    Failures::maybeThrow();
    return e;
  }
  void initializeState(FunctionInitializationContext& context) override {
    context.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("nothing"));
    if (context.isRestored()) throw std::runtime_error("restore refused");
  }
  void snapshotState(const FunctionSnapshotContext&) override {}
};

// A map whose snapshot takes `snapshotMillis` (a slow state backend).
struct SlowSnapshot : RichMapFunction<int64_t, int64_t>, CheckpointedFunction {
  explicit SlowSnapshot(int snapshotMillis) : millis(snapshotMillis) {}
  int64_t map(const int64_t& v) override { return v; }
  void initializeState(FunctionInitializationContext& context) override {
    context.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("nothing"));
  }
  void snapshotState(const FunctionSnapshotContext&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(millis));
  }
  int millis;
};

// Checkpoint timeout and min pause in a running job (#35.15), not only as options: a
// checkpoint whose snapshot outlives the timeout expires, and with no failure tolerated
// the job fails naming the timeout (Flink's CheckpointFailureManager).
TEST(CheckpointFailures, ACheckpointThatOutlivesItsTimeoutFailsTheJobNamingIt) {
  StreamExecutionEnvironment env;
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointTimeout(50ms);
  env.setRestartStrategy(RestartStrategy::noRestart());
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1'000'000, RateLimiterStrategy::perSecond(2000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .map(SlowSnapshot(300))
      .sinkTo(sink);
  try {
    env.execute("slow snapshots");
    FAIL() << "the job outlived a checkpoint that expired";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint timeout 50 ms"), std::string::npos) << e.what();
  }
}

// Checkpoints every 5 ms with a min pause of 250 ms: a checkpoint starts no earlier than
// 250 ms after the previous one ended, so a run of E ms completes at most E / 250 + 1.
TEST(CheckpointFailures, TheMinPauseSpacesTheCheckpointsOfARunningJob) {
  StreamExecutionEnvironment env;
  env.enableCheckpointing(5ms);
  env.getCheckpointConfig().setMinPauseBetweenCheckpoints(250ms);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 3000, RateLimiterStrategy::perSecond(2000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .map(SlowSnapshot(0))
      .sinkTo(sink);
  auto start = std::chrono::steady_clock::now();
  auto client = env.executeAsync("paused checkpoints");
  client.wait();
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  const int64_t completed = client.getMetrics().numberOfCompletedCheckpoints;
  EXPECT_LE(completed, elapsed.count() / 250 + 1) << "in " << elapsed.count() << " ms";
  EXPECT_GE(completed, 2) << "in " << elapsed.count() << " ms (the source takes 1.5 s)";
  EXPECT_EQ(sink.getResults().size(), 3000u);
}

TEST(CheckpointFailures, AFailingRestoreFailsTheJobOnceTheRestartsAreUsedUp) {
  Failures::reset({3000});
  StreamExecutionEnvironment env;
  env.enableCheckpointing(10ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 5ms));
  env.fromSource(DataGeneratorSource(eventAt, 20000, RateLimiterStrategy::perSecond(20000)),
                 WatermarkStrategy<Event>::noWatermarks(), "events")
      .map(RefusesRestore{})
      .name("refuses")
      .sinkTo(DiscardingSink<Event>());
  auto client = env.executeAsync("restore fails");
  try {
    client.wait();
    FAIL() << "the job finished although it could not restore";
  } catch (const JobExecutionError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("restore refused"), std::string::npos) << what;
    EXPECT_NE(what.find("refuses"), std::string::npos) << what;
  }
  EXPECT_EQ(client.getMetrics().numRestarts, 3);
}

// close() throwing after a bounded job drained: the output is complete and committed
// once, and the job fails (a restart would replay committed output).
struct FailsToClose : RichMapFunction<Event, Event> {
  Event map(const Event& e) override { return e; }
  void close() override { throw std::runtime_error("close failed"); }
};

TEST(CheckpointFailures, ACloseThatThrowsAfterTheEndFailsTheJobWithoutDuplicates) {
  const int64_t n = 10000;
  Failures::reset({});
  StreamExecutionEnvironment env;
  env.setAutoWatermarkInterval(5ms);
  env.enableCheckpointing(20ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(100, 5ms));
  auto committed = std::make_shared<Committed>();
  auto source = env.fromSource(DataGeneratorSource(eventAt, n, RateLimiterStrategy::perSecond(40000)),
                               WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                                   [](const Event& e) { return e.time; }),
                               "events");
  source.map(FailsToClose{}).name("fails to close").sinkTo(DiscardingSink<Event>());
  addJob(env, n, 40000, TransactionalSink(committed));
  auto client = env.executeAsync("close fails");
  EXPECT_THROW(client.wait(), JobExecutionError);
  EXPECT_EQ(client.getMetrics().numRestarts, 0);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// A job cancelled once its output is final (every input ended and its sinks were told
// to commit) finishes instead, as a finished Flink job cannot be cancelled: every sink
// subtask commits the rest, and no checkpoint is kept, since each is older than the
// committed output (resuming from one would commit the records after it again). The
// first sink subtask told the output is final cancels the job.
TEST(Cancellation, OnceTheOutputIsFinalTheJobFinishesAndCommitsEverything) {
  const int64_t n = 20000;
  Failures::reset({});
  fs::path dir = freshFolder("cancel-final");
  StreamExecutionEnvironment env;
  retainCheckpointsEvery20ms(env, dir);
  auto committed = std::make_shared<Committed>();
  std::atomic<JobClient*> job{nullptr};
  std::atomic<int> finals{0}, cancelled{0};
  committed->onFinalNotification = [&] {
    if (finals++ > 0) return;
    if (JobClient* client = job.load()) {
      client->cancel();
      ++cancelled;
    }
  };
  // The input ends after a checkpoint completed.
  HoldUntilACheckpoint::checkpointCompleted = [&] {
    JobClient* client = job.load();
    return client && client->getMetrics().numberOfCompletedCheckpoints > 0;
  };
  addJob(env, n, 40000, TransactionalSink(committed), Extra::kHoldUntilACheckpoint, 0);  // half a second
  auto client = env.executeAsync("cancelled at the end");
  job = &client;
  JobExecutionResult result = client.wait();
  ASSERT_EQ(cancelled.load(), 1) << "the output was final before the job's handle was there";
  EXPECT_EQ(result.status, JobStatus::FINISHED);
  EXPECT_EQ(finals.load(), 2) << "each sink subtask is told";
  EXPECT_GT(client.getMetrics().numberOfCompletedCheckpoints, 0);
  Verdict v = check(committed->out, n);
  EXPECT_TRUE(v.exact()) << v;
  EXPECT_EQ(checkpoint::findLatestCheckpoint(dir.string()), "") << "a checkpoint older than the output was kept";
  fs::remove_all(dir);
}

// Checkpoints go on after a source finished: a short source ends within milliseconds,
// a long one runs ~1 s; checkpoints keep completing, and a failure late in the long one
// restores the finished source as finished — the output is still exact.
TEST(CheckpointsAfterASourceFinished, KeepCompletingAndRestoreExactly) {
  const int64_t shortN = 2000, longN = 30000;
  Failures::reset({shortN + 25000});
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.setAutoWatermarkInterval(5ms);
  env.enableCheckpointing(20ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 5ms));
  auto committed = std::make_shared<Committed>();
  // Event i of the long source is event shortN + i of eventAt: together they are eventAt(0..n).
  auto timestamps = WatermarkStrategy<Event>::forBoundedOutOfOrderness(std::chrono::milliseconds(longN))
                        .withTimestampAssigner([](const Event& e) { return e.time; });
  auto shortSource = env.fromSource(DataGeneratorSource(eventAt, shortN), timestamps, "short");
  auto longSource = env.fromSource(
      DataGeneratorSource([](int64_t i) { return eventAt(shortN + i); }, longN, RateLimiterStrategy::perSecond(30000)),
      timestamps, "long");
  shortSource.unionWith(longSource)
      .keyBy([](const Event& e) { return e.key; })
      .process(CountWithTimers{})
      .sinkTo(TransactionalSink(committed));
  auto client = env.executeAsync("uneven sources");
  client.wait();
  auto m = client.getMetrics();
  EXPECT_EQ(Failures::thrown.load(), 1);
  EXPECT_EQ(m.numRestarts, 1);
  // ~1 s of the long source at one checkpoint per 20 ms: several, where there could be
  // one at most if checkpoints stopped when the short source ended (within milliseconds).
  // Not more than 5: under a parallel ctest, fsyncs slow checkpoints down (8 were seen).
  EXPECT_GE(m.numberOfCompletedCheckpoints, 5);
  // Counts and timers (no window in this job: drop the window expectations).
  std::vector<Out> out;
  for (const Out& o : committed->out) out.push_back(o);
  const int64_t n = shortN + longN;
  std::map<int64_t, int64_t> expected, last;
  std::map<int64_t, std::set<int64_t>> seen;
  int64_t duplicates = 0;
  for (int64_t i = 0; i < n; ++i) ++expected[eventAt(i).key];
  for (const Out& o : out) {
    if (o.kind != kCount) continue;
    if (!seen[o.key].insert(o.value).second) ++duplicates;
    last[o.key] = std::max(last[o.key], o.value);
  }
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(last, expected);
}

// Late data across restores: every third record after the first 10,000 comes far behind
// the watermark, either within the window's allowed lateness (its window fires again)
// or beyond it (the late-data side output). A restore must judge a replayed record as
// the failure-free run did, so the watermark is part of the window operator's checkpoint.
// Count windows on the same stream (GlobalWindows, CountTrigger, CountEvictor) keep
// their contents and trigger state in keyed state; both backends must restore them.
Event lateAt(int64_t i) {
  int64_t time = i;
  if (i >= 10000 && i % 3 == 2) time = i % 2 == 0 ? i - 2000 : i - 8000;
  return Event{i % 7, time};
}

// After each batch: the highest timestamp so far − 1 (batches hold at most 1,024
// records, so a record 2,000 behind is late whatever the batching). The source and the
// map run as one subtask each, so a window subtask has a single input and sees every
// watermark at the same place among the records in every run; with two map subtasks
// its watermark would be the minimum of two threads' progress, which depends on timing.
struct HighestSoFar : WatermarkGenerator<Event> {
  int64_t highest = kMinWatermark + 1;
  void onEvent(const Event&, int64_t t, WatermarkOutput& out) override {
    highest = std::max(highest, t);
    out.emitWatermark(highest - 1);
  }
  void onPeriodicEmit(WatermarkOutput&) override {}
};

constexpr int32_t kLate = 5;
constexpr int32_t kCountWindow = 6;
constexpr int32_t kSlidingCountWindow = 7;
constexpr int32_t kTriggeredWindow = 8;  // the windows of kWindowResult, through a trigger
constexpr int32_t kTriggeredLate = 9;
constexpr int32_t kSession = 10;  // sessions on the specialised operator,
constexpr int32_t kSessionLate = 11;
constexpr int32_t kTriggeredSession = 12;  // and through a trigger
constexpr int32_t kTriggeredSessionLate = 13;

// Counts a window's records; StampCount gives the count its key and window.
struct CountEvents : AggregateFunction<Event, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const Event&, int64_t acc) override { return acc + 1; }
  int64_t getResult(const int64_t& acc) override { return acc; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};
// The function's own keyed state must be restored too: the value also says how often
// this window fired, kept in its windowState; sessions have none (their windows merge),
// so they keep it in the key's globalState, per session end.
struct StampCount : ProcessWindowFunction<int64_t, Out, int64_t> {
  int32_t kind = kWindowResult;
  bool sessions = false;
  static ValueStateDescriptor<int64_t> firings() { return ValueStateDescriptor<int64_t>("firings", 0); }
  static MapStateDescriptor<int64_t, int64_t> firingsByEnd() {
    return MapStateDescriptor<int64_t, int64_t>("firings by end");
  }
  void process(const int64_t& key, Context& ctx, std::span<const int64_t> counts, Collector<Out>& out) override {
    int64_t fired;
    if (sessions) {
      MapState<int64_t, int64_t>& byEnd = ctx.globalState().getMapState(firingsByEnd());
      fired = byEnd.get(ctx.window().end).value_or(0) + 1;
      byEnd.put(ctx.window().end, fired);
    } else {
      ValueState<int64_t>& state = ctx.windowState().getState(firings());
      fired = *state.value() + 1;
      state.update(fired);
    }
    out.collect({key, counts[0] + 1'000'000 * fired, kind, ctx.window().maxTimestamp()});
  }
  void clear(Context& ctx) override {
    if (sessions) ctx.globalState().getMapState(firingsByEnd()).remove(ctx.window().end);
    else ctx.windowState().getState(firings()).clear();
  }
};

std::vector<Out> runLateJob(int64_t n, std::vector<int64_t> failures, const std::string& backend = "heap") {
  Failures::reset(std::move(failures));
  StreamExecutionEnvironment env;
  env.setParallelism(2).setStateBackend(backendNamed(backend));
  env.enableCheckpointing(20ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(100, 5ms));
  auto committed = std::make_shared<Committed>();
  OutputTag<Event> lateTag("late");
  auto strategy = WatermarkStrategy<Event>::forGenerator([] { return std::make_unique<HighestSoFar>(); })
                      .withTimestampAssigner([](const Event& e) { return e.time; });
  auto events = env.fromSource(DataGeneratorSource(lateAt, n, RateLimiterStrategy::perSecond(60000)), strategy, "events")
                    .setParallelism(1)
                    .map([](const Event& e) {
                      Failures::maybeThrow();
                      return e;
                    })
                    .setParallelism(1);
  auto byKey = [](const Event& e) { return e.key; };
  auto windows = events.keyBy(byKey)
                     .window(TumblingEventTimeWindows::of(100ms))
                     .allowedLateness(5000ms)
                     .sideOutputLateData(lateTag)
                     .aggregate(CountEvents{}, StampCount{});
  auto late = windows.getSideOutput(lateTag).map([](const Event& e) { return Out{e.key, e.time, kLate, 0}; });
  // The same windows on the general operator (an explicit EventTimeTrigger): contents,
  // timers and cleanup in keyed state, restored from the checkpoints.
  OutputTag<Event> triggeredLateTag("triggered late");
  StampCount stampTriggered;
  stampTriggered.kind = kTriggeredWindow;
  auto triggered = events.keyBy(byKey)
                       .window(TumblingEventTimeWindows::of(100ms))
                       .trigger(EventTimeTrigger::create())
                       .allowedLateness(5000ms)
                       .sideOutputLateData(triggeredLateTag)
                       .aggregate(CountEvents{}, stampTriggered);
  auto triggeredLate = triggered.getSideOutput(triggeredLateTag).map([](const Event& e) {
    return Out{e.key, e.time, kTriggeredLate, 0};
  });
  // Count windows: their contents and the trigger's count live in keyed state, so a
  // restore must bring both back (the sum of times tells which records a window held).
  auto sumTimes = [](const Event& a, const Event& b) { return Event{a.key, a.time + b.time}; };
  auto counts = events.keyBy(byKey).countWindow(7).reduce(sumTimes).map([](const Event& e) {
    return Out{e.key, e.time, kCountWindow, 0};
  });
  auto slidingCounts = events.keyBy(byKey).countWindow(5, 2).reduce(sumTimes).map([](const Event& e) {
    return Out{e.key, e.time, kSlidingCountWindow, 0};
  });
  // Sessions that break where a record's gap is short; late records within the
  // lateness merge into (and may bridge) sessions that fired. Through a trigger, the
  // key's windows and where each keeps its contents are keyed state as well.
  auto gap = [](const Event& e) { return e.time % 300 < 280 ? 10 : 1; };
  auto sessionsOn = [&](bool viaTrigger, int32_t kind, int32_t lateKind) {
    OutputTag<Event> tag(viaTrigger ? "late triggered sessions" : "late sessions");
    StampCount stamp;
    stamp.kind = kind;
    stamp.sessions = true;
    auto windowed = events.keyBy(byKey).window(EventTimeSessionWindows::withDynamicGap(gap));
    windowed.allowedLateness(5000ms).sideOutputLateData(tag);
    auto result = viaTrigger ? windowed.trigger(EventTimeTrigger::create()).aggregate(CountEvents{}, stamp)
                             : windowed.aggregate(CountEvents{}, stamp);
    return result.unionWith(
        result.getSideOutput(tag).map([lateKind](const Event& e) { return Out{e.key, e.time, lateKind, 0}; }));
  };
  auto sessions = sessionsOn(false, kSession, kSessionLate);
  auto triggeredSessions = sessionsOn(true, kTriggeredSession, kTriggeredSessionLate);
  windows.unionWith(late, counts, slidingCounts, triggered, triggeredLate, sessions, triggeredSessions)
      .sinkTo(TransactionalSink(committed));
  env.execute("late data");
  auto out = committed->out;
  std::sort(out.begin(), out.end(), [](const Out& a, const Out& b) {
    return std::tie(a.kind, a.key, a.window, a.value) < std::tie(b.kind, b.key, b.window, b.value);
  });
  return out;
}

std::string firstDifference(const std::vector<Out>& got, const std::vector<Out>& expected) {
  auto describe = [](const Out& o) {
    return "{key " + std::to_string(o.key) + ", value " + std::to_string(o.value) + ", kind " + std::to_string(o.kind) +
           ", window " + std::to_string(o.window) + "}";
  };
  for (size_t i = 0; i < std::min(got.size(), expected.size()); ++i)
    if (!(got[i] == expected[i])) return "first difference at " + std::to_string(i) + ": " + describe(got[i]) +
                                         " instead of " + describe(expected[i]);
  return got.size() == expected.size() ? "no difference" : "one is a prefix of the other";
}

TEST(LateDataAcrossRestores, FiresAgainAndGoesAsideExactlyAsAFailureFreeRun) {
  const int64_t n = 30000;
  auto expected = runLateJob(n, {});
  int64_t refirings = 0, aside = 0, countWindows = 0;
  std::set<std::pair<int64_t, int64_t>> windows;
  for (const Out& o : expected) {
    if (o.kind == kLate) ++aside;
    else if (o.kind == kCountWindow) ++countWindows;
    else if (o.kind == kWindowResult && !windows.insert({o.key, o.window}).second) ++refirings;
  }
  ASSERT_GT(refirings, 1000);  // the stream really has both kinds of late records
  ASSERT_GT(aside, 1000);
  ASSERT_EQ(countWindows, n / 7 / 7 * 7);  // 7 keys take turns: each has n / 7 records
  // The general window operator gives what the specialised one gives.
  std::multiset<std::tuple<int64_t, int64_t, int64_t, bool>> specialised, general;
  for (const Out& o : expected) {
    if (o.kind == kWindowResult || o.kind == kLate) specialised.insert({o.key, o.value, o.window, o.kind == kLate});
    if (o.kind == kTriggeredWindow || o.kind == kTriggeredLate)
      general.insert({o.key, o.value, o.window, o.kind == kTriggeredLate});
  }
  EXPECT_TRUE(general == specialised) << general.size() << " results through the trigger, " << specialised.size()
                                      << " without";
  std::multiset<std::tuple<int64_t, int64_t, int64_t, bool>> sessions, triggeredSessions;
  int64_t sessionsAside = 0;
  for (const Out& o : expected) {
    if (o.kind == kSession || o.kind == kSessionLate) sessions.insert({o.key, o.value, o.window, o.kind == kSessionLate});
    if (o.kind == kTriggeredSession || o.kind == kTriggeredSessionLate)
      triggeredSessions.insert({o.key, o.value, o.window, o.kind == kTriggeredSessionLate});
    if (o.kind == kSessionLate) ++sessionsAside;
  }
  ASSERT_GT(sessions.size(), 1000u);
  ASSERT_GT(sessionsAside, 1000);
  EXPECT_TRUE(triggeredSessions == sessions) << triggeredSessions.size() << " session results through the trigger, "
                                             << sessions.size() << " without";
  for (const std::string backend : {"heap", "rocksdb", "rocksdb_incremental"}) {
    auto got = runLateJob(n, {12000, 15500, 19000, 23000, 27500}, backend);
    EXPECT_EQ(Failures::thrown.load(), 5);
    EXPECT_TRUE(got == expected) << backend << ": " << got.size() << " records committed, " << expected.size()
                                 << " without failures; " << firstDifference(got, expected);
  }
}

}  // namespace
}  // namespace weir

