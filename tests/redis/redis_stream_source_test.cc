// RedisStreamSource against a real redis-server (support/redis_server.h), started by
// each test on a free port: what a job reads is checked against what the test added
// with XADD, whose replies (the IDs) are the expectation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "support/error_of.h"
#include "support/fresh_folder.h"
#include "support/operator_metrics.h"
#include "support/recovery_job.h"
#include "support/redis_server.h"
#include "weir/redis_stream_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using namespace weir::test;
namespace fs = std::filesystem;
using Fields = std::vector<std::pair<std::string, std::string>>;

std::vector<Fields> values(int64_t from, int64_t to) {
  std::vector<Fields> out;
  for (int64_t i = from; i < to; ++i) out.push_back({{"value", std::to_string(i)}});
  return out;
}

// What a job reads, as the tests expect it: "<stream>/<id>/<value>".
std::string line(const std::string& stream, const std::string& id, const std::string& value) {
  return stream + "/" + id + "/" + value;
}

// Adds values [from, to) to `stream` and appends what reading them must give to `want`.
void add(RedisClient& redis, const std::string& stream, int64_t from, int64_t to, std::vector<std::string>& want) {
  std::vector<std::string> ids = redis.xaddMany(stream, values(from, to));
  for (int64_t i = from; i < to; ++i) want.push_back(line(stream, ids[static_cast<size_t>(i - from)], std::to_string(i)));
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

RedisStreamSource<std::string>::Builder strings(const RedisServer& server, std::vector<std::string> streams) {
  return RedisStreamSource<std::string>::builder()
      .setAddress(server.address())
      .setStreams(std::move(streams))
      .setDeserializer([](const RedisStreamEntry& e) {
        const std::string* value = e.field("value");
        return line(e.stream, e.id, value != nullptr ? *value : "?");
      });
}

// Cancels the job when the test leaves, however it leaves (a failed ASSERT included).
struct CancelOnExit {
  JobClient& client;
  ~CancelOnExit() {
    if (client.getJobStatus() == JobStatus::RUNNING) client.cancel();
  }
};

// client.wait(), but a job still running after 60 s is cancelled (and the test fails)
// rather than left to hang.
JobExecutionResult waitWithin(JobClient& client) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto ended = [&] {
    const JobStatus s = client.getJobStatus();
    return s == JobStatus::FINISHED || s == JobStatus::CANCELED || s == JobStatus::FAILED;
  };
  while (!ended() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  if (!ended()) {
    ADD_FAILURE() << "the job still runs after 60 s: cancelled";
    client.cancel();
  }
  return client.wait();
}

JobExecutionResult executeWithin(StreamExecutionEnvironment& env, const std::string& name) {
  JobClient client = env.executeAsync(name);
  return waitWithin(client);
}

// Polls until `reached` holds; false when the job stopped first or 30 s passed.
template <class Reached>
bool waitFor(JobClient& client, Reached reached) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!reached(client.getMetrics())) {
    if (client.getJobStatus() != JobStatus::RUNNING || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Polls `reader` (outside a job) until `done` holds or 20 s passed.
template <class T, class Done>
InputStatus pollUntil(SourceReader<T>& reader, std::vector<T>& out, Done done, size_t maxRecords = 100) {
  InputStatus status = InputStatus::MORE_AVAILABLE;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!done(status) && std::chrono::steady_clock::now() < deadline) {
    status = reader.pollNext(out, maxRecords);
    if (status == InputStatus::NOTHING_AVAILABLE) std::this_thread::sleep_for(2ms);
  }
  return status;
}

TEST(RedisStreamSource, ABoundedSourceReadsEveryStreamToItsLastEntryAtAnyParallelism) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<std::string> want;
  add(redis, "a", 0, 3000, want);
  add(redis, "b", 3000, 4500, want);
  add(redis, "c", 4500, 4501, want);
  for (int parallelism : {1, 2, 5}) {  // 5: readers with no stream, and one that never existed
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism);
    CollectSink<std::string> sink;
    env.fromSource(strings(server, {"a", "b", "c", "never-added"}).setBounded().setBatchSize(256).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "streams")
        .sinkTo(sink);
    executeWithin(env, "bounded");
    EXPECT_EQ(sorted(sink.getResults()), sorted(want)) << "parallelism " << parallelism;
  }
}

// Each stream is read in its order, and records carry the time of their ID, or of a
// field, which event time uses without a timestamp assigner.
struct Stamped {
  std::string value;
  int64_t timestamp = 0;
};
WEIR_STRUCT(Stamped, value, timestamp);

struct StampOf : ProcessFunction<std::string, Stamped> {
  void processElement(const std::string& value, Context& ctx, Collector<Stamped>& out) override {
    out.collect({value, ctx.timestamp().value_or(-1)});
  }
};

TEST(RedisStreamSource, RecordsCarryTheTimeOfTheirIdOrOfAField) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<Fields> entries;
  std::vector<std::string> ids;
  for (int i = 0; i < 300; ++i) {
    entries.push_back({{"value", std::to_string(i)}, {"ts", std::to_string(1'600'000'000'000 + i)}});
    ids.push_back(std::to_string(1'700'000'000'000 + i * 7) + "-" + std::to_string(i % 3));
  }
  redis.xaddMany("stamped", entries, ids);
  for (bool fromField : {false, true}) {
    StreamExecutionEnvironment env;
    CollectSink<Stamped> sink;
    auto source = RedisStreamSource<std::string>::builder()
                      .setAddress(server.address())
                      .setStreams({"stamped"})
                      .setBounded()
                      .setValueOnlyDeserializer("value", SimpleStringSchema());
    if (fromField) source.setTimestampField("ts");
    env.fromSource(source.build(), WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms), "stamped")
        .process(StampOf{})
        .sinkTo(sink);
    executeWithin(env, "stamped");
    std::vector<Stamped> got = sink.getResults();
    ASSERT_EQ(got.size(), entries.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t n = std::stoll(got[i].value);
      EXPECT_EQ(n, static_cast<int64_t>(i)) << "in the stream's order";
      EXPECT_EQ(got[i].timestamp, fromField ? 1'600'000'000'000 + n : 1'700'000'000'000 + n * 7) << got[i].value;
    }
  }
}

// Watermarks are per stream: one reader reads three streams whose times interleave
// however the XREADs fall, and no record is late for the windows; the counts equal a
// brute force over what was added.
struct CountWindow : ProcessAllWindowFunction<std::string, std::pair<int64_t, int64_t>, TimeWindow> {
  void process(Context& ctx, std::span<const std::string> values, Collector<std::pair<int64_t, int64_t>>& out) override {
    out.collect({ctx.window().start, static_cast<int64_t>(values.size())});
  }
};

TEST(RedisStreamSource, WatermarksArePerStreamSoNoStreamsRecordsTurnLate) {
  RedisServer server;
  RedisClient redis(server.port());
  std::map<int64_t, int64_t> want;  // window start -> records
  for (int s = 0; s < 3; ++s) {
    std::vector<Fields> entries;
    std::vector<std::string> ids;
    for (int i = 0; i < 4000; ++i) {
      const int64_t time = 1'000'000 + i * 5 + s;
      entries.push_back({{"value", std::to_string(time)}});
      ids.push_back(std::to_string(time) + "-0");
      ++want[time - time % 1000];
    }
    redis.xaddMany("times-" + std::to_string(s), entries, ids);
  }
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  CollectSink<std::pair<int64_t, int64_t>> sink;
  env.fromSource(strings(server, {"times-0", "times-1", "times-2"}).setBounded().setBatchSize(100).build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms), "times")
      .windowAll(TumblingEventTimeWindows::of(1000ms))
      .process(CountWindow{})
      .sinkTo(sink);
  executeWithin(env, "times");
  std::map<int64_t, int64_t> got;
  for (const auto& [start, count] : sink.getResults()) got[start] += count;
  EXPECT_EQ(got, want);
}

TEST(RedisStreamSource, StartingAndStoppingIdsAreHonoured) {
  RedisServer server;
  RedisClient redis(server.port());
  std::map<std::string, std::vector<std::string>> all;  // by stream, in order
  for (const std::string stream : {"s", "t"}) {
    std::vector<Fields> entries;
    std::vector<std::string> ids;
    for (int i = 0; i < 100; ++i) {
      entries.push_back({{"value", std::to_string(i)}});
      ids.push_back(std::to_string(1000 + i) + "-" + std::to_string(i % 2));
    }
    ids = redis.xaddMany(stream, entries, ids);
    for (int i = 0; i < 100; ++i) all[stream].push_back(line(stream, ids[static_cast<size_t>(i)], std::to_string(i)));
  }
  auto slice = [&](const std::string& stream, int from, int to) {
    return std::vector<std::string>(all[stream].begin() + from, all[stream].begin() + to);
  };
  auto read = [&](RedisStreamSource<std::string>::Builder builder) {
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    CollectSink<std::string> sink;
    env.fromSource(builder.build(), WatermarkStrategy<std::string>::noWatermarks(), "ids").sinkTo(sink);
    executeWithin(env, "ids");
    return sorted(sink.getResults());
  };
  auto both = [&](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return sorted(a);
  };
  // An ID is inclusive; "<ms>" is its first entry; a stream's own overrides the default.
  EXPECT_EQ(read(strings(server, {"s", "t"}).setStartingId("1050").setStartingId("t", "1090-0").setBounded()),
            both(slice("s", 50, 100), slice("t", 90, 100)));
  EXPECT_EQ(read(strings(server, {"s", "t"}).setStartingId("1051-1").setBounded()),
            both(slice("s", 51, 100), slice("t", 51, 100)));
  // Stopping IDs are inclusive too; "<ms>" takes every entry of that millisecond.
  EXPECT_EQ(read(strings(server, {"s", "t"}).setBounded({{"s", "1060"}, {"t", "1010-0"}})),
            both(slice("s", 0, 61), slice("t", 0, 11)));
  // "$": only what comes after the start; bounded, that is nothing.
  EXPECT_EQ(read(strings(server, {"s", "t"}).setStartingId("$").setBounded()), std::vector<std::string>{});
}

// "$" unbounded: what is added once the reader started, and nothing before.
TEST(RedisStreamSource, DollarReadsOnlyWhatIsAddedAfterTheStart) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<std::string> before, after;
  add(redis, "live", 0, 50, before);
  auto source = strings(server, {"live"}).setStartingId("$").build();
  auto enumerator = source.createEnumerator(1);
  auto reader = source.createReader(SourceReaderContext{0, 1, enumerator.get(), OperatorMetricGroup(), nullptr, {}});
  std::vector<std::string> out;
  // Once its snapshot holds a position, the start is decided.
  auto decided = [&] {
    std::vector<std::string> state = reader->snapshotState(1);
    return state.size() == 1 && state[0][0] != '?';
  };
  pollUntil(*reader, out, [&](InputStatus) { return decided(); });
  ASSERT_TRUE(decided()) << "the starting ID was never decided";
  add(redis, "live", 50, 60, after);
  pollUntil(*reader, out, [&](InputStatus) { return out.size() >= 10; });
  EXPECT_EQ(out, after);
  reader->close();
}

// An idle reader waits to be woken by its reading thread (Flink's isAvailable future)
// rather than polling, and is woken when an entry arrives.
TEST(RedisStreamSource, AnIdleReaderIsWokenWhenAnEntryArrives) {
  RedisServer server;
  RedisClient redis(server.port());
  auto source = strings(server, {"quiet"}).build();
  auto enumerator = source.createEnumerator(1);
  std::atomic<int> wakes{0};
  auto reader = source.createReader(
      SourceReaderContext{0, 1, enumerator.get(), OperatorMetricGroup(), nullptr, [&] { wakes.fetch_add(1); }});
  std::vector<std::string> out;
  InputStatus status = InputStatus::MORE_AVAILABLE;
  for (int i = 0; i < 10; ++i) {  // takes its stream, finds nothing there
    status = reader->pollNext(out, 100);
    std::this_thread::sleep_for(30ms);
  }
  ASSERT_EQ(status, InputStatus::NOTHING_AVAILABLE);
  ASSERT_TRUE(out.empty());
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_GE(reader->nextPollTime() - asked, 50ms);  // it need not poll soon
  reader->pollNext(out, 100);
  const int before = wakes.load();
  const std::string id = redis.xadd("quiet", {{"value", "hello"}});
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (wakes.load() == before && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_GT(wakes.load(), before) << "no wake-up for an entry that arrived";
  EXPECT_EQ(reader->pollNext(out, 100), InputStatus::MORE_AVAILABLE);
  EXPECT_EQ(out, std::vector<std::string>{line("quiet", id, "hello")});
  reader->close();
}

// A reader restored from another's snapshot (a checkpoint) reads on right after the
// last entry that snapshot covers: what the first one read after its snapshot is read
// again, nothing before it. The stop the first decided stays: entries added later are
// not read by the bounded source.
TEST(RedisStreamSource, ARestoredReaderResumesRightAfterItsSnapshot) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<std::string> want;
  add(redis, "x", 0, 1000, want);
  add(redis, "y", 1000, 1700, want);
  auto source = strings(server, {"x", "y"}).setBounded().setBatchSize(64).build();
  auto enumerator = source.createEnumerator(1);
  auto first = source.createReader(SourceReaderContext{0, 1, enumerator.get(), OperatorMetricGroup(), nullptr, {}});
  std::vector<std::string> beforeSnapshot, afterSnapshot, restored;
  pollUntil(*first, beforeSnapshot, [&](InputStatus) { return beforeSnapshot.size() >= 500; }, 50);
  ASSERT_GE(beforeSnapshot.size(), 500u);
  std::vector<std::string> snapshot = first->snapshotState(7);
  ASSERT_EQ(snapshot.size(), 2u);
  pollUntil(*first, afterSnapshot, [&](InputStatus) { return afterSnapshot.size() >= 300; }, 50);
  first->close();  // the "crash": what it read after the snapshot is not covered
  std::vector<std::string> later;
  add(redis, "x", 5000, 5100, later);  // after the stop was decided
  auto second = source.createReader(SourceReaderContext{0, 1, nullptr, OperatorMetricGroup(), nullptr, {}});
  second->addSplits(snapshot);
  EXPECT_EQ(pollUntil(*second, restored, [](InputStatus s) { return s == InputStatus::END_OF_INPUT; }),
            InputStatus::END_OF_INPUT);
  second->close();
  std::vector<std::string> got = beforeSnapshot;
  got.insert(got.end(), restored.begin(), restored.end());
  EXPECT_EQ(sorted(got), sorted(want)) << "each entry once: " << beforeSnapshot.size() << " before the snapshot, "
                                       << restored.size() << " after the restore";
  // The restored reader began with exactly what the first read after its snapshot.
  for (size_t i = 0; i < afterSnapshot.size(); ++i) {
    auto it = std::find(restored.begin(), restored.end(), afterSnapshot[i]);
    EXPECT_NE(it, restored.end()) << afterSnapshot[i] << " read after the snapshot is not read again";
  }
}

// Whole jobs whose task fails at several records, restarting from their checkpoints,
// into an exactly-once sink: the committed output is every entry once.
struct Numbered : RichMapFunction<std::string, Out> {
  Out map(const std::string& s) override {
    Failures::maybeThrow();
    if (++seen_ % 16 == 0) std::this_thread::sleep_for(1ms);  // room for checkpoints meanwhile
    const size_t slash = s.rfind('/');
    return Out{s[0] == 'a' ? 0 : 1, std::stoll(s.substr(slash + 1)), kCount, 0};
  }
  int64_t seen_ = 0;
};

std::vector<Out> expectedOuts(int64_t perStream) {
  std::vector<Out> out;
  for (int64_t key : {0, 1})
    for (int64_t i = 0; i < perStream; ++i) out.push_back(Out{key, key * 100000 + i, kCount, 0});
  return out;
}

// What differs between two sorted lists of Outs, in words.
std::string differences(const std::vector<Out>& got, const std::vector<Out>& want) {
  std::map<std::pair<int64_t, int64_t>, int> count;
  for (const Out& o : got) ++count[{o.key, o.value}];
  for (const Out& o : want) --count[{o.key, o.value}];
  std::string out = std::to_string(got.size()) + " records, " + std::to_string(want.size()) + " expected";
  int shown = 0;
  for (const auto& [what, n] : count) {
    if (n == 0 || ++shown > 10) continue;
    out += "; (" + std::to_string(what.first) + ", " + std::to_string(what.second) + ") " +
           (n > 0 ? std::to_string(n) + " too many" : std::to_string(-n) + " missing");
  }
  return out;
}

std::vector<Out> sortedOuts(std::vector<Out> v) {
  std::sort(v.begin(), v.end(), [](const Out& x, const Out& y) { return std::tie(x.key, x.value) < std::tie(y.key, y.value); });
  return v;
}

void addNumbered(RedisClient& redis, int64_t perStream) {
  redis.xaddMany("a", values(0, perStream));
  redis.xaddMany("b", values(100000, 100000 + perStream));
}

TEST(RedisStreamSource, AJobThatFailsResumesFromItsCheckpointsWithEachEntryOnce) {
  constexpr int64_t kPerStream = 3000;
  RedisServer server;
  RedisClient redis(server.port());
  addNumbered(redis, kPerStream);
  Failures::reset({700, 2100, 3500, 4900});
  fs::path dir = freshFolder("redis-failures");
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(dir.string());
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 5ms));
  auto committed = std::make_shared<Committed>();
  env.fromSource(strings(server, {"a", "b"}).setBounded().setBatchSize(50).build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "numbers")
      .map(Numbered{})
      .sinkTo(TransactionalSink(committed));
  auto client = env.executeAsync("failures");
  CancelOnExit cancel{client};
  waitWithin(client);
  EXPECT_EQ(Failures::thrown.load(), 4);
  EXPECT_EQ(client.getMetrics().numRestarts, 4);
  EXPECT_GE(client.getMetrics().numberOfCompletedCheckpoints, 1);
  EXPECT_TRUE(sortedOuts(committed->out) == expectedOuts(kPerStream))
      << differences(sortedOuts(committed->out), expectedOuts(kPerStream));
  fs::remove_all(dir);
}

// A job cancelled with its checkpoints retained (as a killed one leaves them) and
// resumed from the newest at another parallelism reads on from the IDs that checkpoint
// holds, up to the stops the first run decided: entries added in between are not read.
TEST(RedisStreamSource, AJobResumedFromARetainedCheckpointReadsOnExactly) {
  constexpr int64_t kPerStream = 5000;
  RedisServer server;
  RedisClient redis(server.port());
  addNumbered(redis, kPerStream);
  Failures::reset({});
  fs::path dir = freshFolder("redis-resume");
  auto committed = std::make_shared<Committed>();
  auto source = strings(server, {"a", "b"}).setBounded().setBatchSize(50).build();
  // The job of both runs, its checkpoints under `dir`.
  auto build = [&](StreamExecutionEnvironment& env) {
    env.enableCheckpointing(20ms);
    env.getCheckpointConfig().setCheckpointStorage(dir.string());
    env.fromSource(source, WatermarkStrategy<std::string>::noWatermarks(), "numbers")
        .uid("numbers")
        .map(Numbered{})
        .uid("map")
        .sinkTo(TransactionalSink(committed))
        .uid("sink");
  };
  {
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    build(env);
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
    auto client = env.executeAsync("first");
    CancelOnExit cancel{client};
    ASSERT_TRUE(waitFor(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 3; }));
    client.cancel();
    ASSERT_EQ(client.wait().status, JobStatus::CANCELED);
  }
  const std::string latest = checkpoint::findLatestCheckpoint(dir.string());
  ASSERT_FALSE(latest.empty());
  const size_t before = committed->out.size();
  EXPECT_LT(before, static_cast<size_t>(2 * kPerStream)) << "the first run read everything before the cancel";
  redis.xaddMany("a", values(kPerStream, kPerStream + 500));  // after the first run decided the stops
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  env.setRestorePath(latest);  // its checkpoints go on from there, and so do the sink's transactions
  build(env);
  auto client = env.executeAsync("resumed");
  CancelOnExit cancel{client};
  EXPECT_EQ(waitWithin(client).status, JobStatus::FINISHED);
  EXPECT_TRUE(sortedOuts(committed->out) == expectedOuts(kPerStream))
      << differences(sortedOuts(committed->out), expectedOuts(kPerStream)) << "; " << before << " committed before the cancel, resumed from " << latest;
  fs::remove_all(dir);
}

// The server stopped and started again, and killed with -9 and started again, while a
// job reads: the reader reconnects and reads on after the last entry it fetched; every
// entry is read once, and the job never restarts.
TEST(RedisStreamSource, AServerThatStopsAndComesBackLosesAndDuplicatesNothing) {
  RedisServer server;
  std::vector<std::string> want;
  {
    RedisClient redis(server.port());
    for (const char* s : {"a", "b", "c"}) add(redis, s, 0, 2000, want);
  }
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(restOnAnyPort());
  env.setParallelism(2);
  CollectSink<std::string> sink;
  env.fromSource(strings(server, {"a", "b", "c"}).setBatchSize(100).build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "streams")
      .sinkTo(sink);
  auto client = env.executeAsync("restarts");
  CancelOnExit cancel{client};
  ASSERT_TRUE(waitFor(client, [&](const JobMetrics&) { return sink.getResults().size() >= want.size(); }));
  server.stop();
  std::this_thread::sleep_for(300ms);  // the readers try again meanwhile
  server.start();
  {
    RedisClient redis(server.port());
    for (const char* s : {"a", "b", "c"}) add(redis, s, 2000, 4000, want);
  }
  ASSERT_TRUE(waitFor(client, [&](const JobMetrics&) { return sink.getResults().size() >= want.size(); }));
  // Killed while the readers are in the middle of a backlog.
  {
    RedisClient redis(server.port());
    for (const char* s : {"a", "b", "c"}) add(redis, s, 4000, 14000, want);
  }
  server.kill9();
  server.start();
  ASSERT_TRUE(waitFor(client, [&](const JobMetrics&) { return sink.getResults().size() >= want.size(); }));
  std::this_thread::sleep_for(100ms);  // a duplicate would arrive now
  EXPECT_EQ(client.getMetrics().numRestarts, 0);
  // Both readers (one has a and c, the other b) reconnected after each fault.
  std::map<std::string, double> m;
  for (int i = 0; i < 50 && sumOf(m = operatorMetrics(client), ".RedisStreamSourceReader.reconnects").sum < 4; ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sumOf(m, ".RedisStreamSourceReader.reconnects").sum, 4) << ::testing::PrintToString(m);
  client.cancel();
  client.wait();
  EXPECT_EQ(sorted(sink.getResults()), sorted(want));
}

bool oneLine(const std::string& s) { return s.find('\n') == std::string::npos; }

TEST(RedisStreamSource, AnUnreachableServerWrongCredentialsAndAWrongKeyAreOneLineErrors) {
  RedisServer server({.password = "secret"});
  RedisClient redis(server.port(), "secret");
  redis.command({"SET", "plain", "x"});
  redis.xadd("events", {{"value", "1"}});
  auto run = [&](RedisStreamSource<std::string>::Builder builder) {
    return errorOf([&] {
      StreamExecutionEnvironment env;
      env.setRestartStrategy(RestartStrategy::noRestart());
      CollectSink<std::string> sink;
      env.fromSource(builder.setBounded().build(), WatermarkStrategy<std::string>::noWatermarks(), "in").sinkTo(sink);
      executeWithin(env, "bad");
    });
  };
  const std::string at = "'" + server.address() + "'";
  std::string e = run(strings(server, {"events"}).setPassword("wrong"));
  EXPECT_NE(e.find("redis stream source: authentication at " + at + " failed: WRONGPASS"), std::string::npos) << e;
  EXPECT_TRUE(oneLine(e)) << e;
  e = run(strings(server, {"events"}));
  EXPECT_NE(e.find("cannot read stream 'events' on " + at + ": NOAUTH Authentication required"), std::string::npos) << e;
  EXPECT_TRUE(oneLine(e)) << e;
  e = run(strings(server, {"events", "plain"}).setPassword("secret"));
  EXPECT_EQ(e, "redis stream source: key 'plain' on " + at + " holds a string, not a stream");
  // The password right, everything reads.
  EXPECT_EQ(run(strings(server, {"events"}).setPassword("secret")), "(no error)");

  // Nothing listens there: an error after the connect timeout, not a hang.
  RedisServer gone;
  const int port = gone.port();
  gone.stop();
  const auto started = std::chrono::steady_clock::now();
  e = run(RedisStreamSource<std::string>::builder()
              .setHost("127.0.0.1")
              .setPort(port)
              .setStreams({"events"})
              .setConnectTimeout(1500ms)
              .setValueOnlyDeserializer("value", SimpleStringSchema()));
  EXPECT_NE(e.find("redis stream source: cannot reach '127.0.0.1:" + std::to_string(port) + "' within 1500 ms: "),
            std::string::npos)
      << e;
  EXPECT_TRUE(oneLine(e)) << e;
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1400ms) << "tried again for the connect timeout";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);

  // Bad settings, before anything runs.
  EXPECT_EQ(errorOf([&] { strings(server, {}).build(); }), "redis stream source: setStreams({...}) is required");
  EXPECT_EQ(errorOf([&] { strings(server, {"a"}).setStartingId("soon").build(); }),
            "redis stream source: the starting ID 'soon' is not 0, $ or an ID (<ms>-<seq> or <ms>)");
  EXPECT_EQ(errorOf([&] { strings(server, {"a"}).setStartingId("b", "0").build(); }),
            "redis stream source: a starting ID names stream 'b', which is not read");
  EXPECT_EQ(errorOf([&] { RedisStreamSource<std::string>::builder().setStreams({"a"}).build(); }),
            "redis stream source: setDeserializer(...) or setValueOnlyDeserializer(...) is required");
  EXPECT_EQ(errorOf([&] { RedisStreamSource<std::string>::builder().setAddress("localhost"); }),
            "redis stream source: the address 'localhost' is not host:port");
}

// While a job runs: a stream replaced by a key of another type fails it naming the key;
// a server gone for longer than the reconnect timeout fails it naming the server.
TEST(RedisStreamSource, AKeyThatStopsBeingAStreamOrAServerGoneForGoodFailTheJob) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<std::string> want;
  add(redis, "flip", 0, 100, want);
  auto runUntilFailure = [&](std::function<void()> fault, std::chrono::milliseconds reconnect) {
    StreamExecutionEnvironment env;
    env.setRestartStrategy(RestartStrategy::noRestart());
    CollectSink<std::string> sink;
    env.fromSource(strings(server, {"flip"}).setReconnectTimeout(reconnect).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "flip")
        .sinkTo(sink);
    auto client = env.executeAsync("faults");
    CancelOnExit cancel{client};
    if (!waitFor(client, [&](const JobMetrics&) { return sink.getResults().size() >= want.size(); }))
      return std::string("never read the stream");
    fault();
    return errorOf([&] { waitWithin(client); });
  };
  const std::string at = "'" + server.address() + "'";
  std::string e = runUntilFailure(
      [&] {
        redis.command({"DEL", "flip"});
        redis.command({"SET", "flip", "not a stream"});
      },
      60s);
  EXPECT_NE(e.find("redis stream source: key 'flip' on " + at + " holds a string, not a stream"), std::string::npos)
      << e;
  redis.command({"DEL", "flip"});
  want.clear();
  add(redis, "flip", 0, 100, want);
  const auto started = std::chrono::steady_clock::now();
  e = runUntilFailure([&] { server.stop(); }, 500ms);
  EXPECT_NE(e.find("redis stream source: lost the connection to " + at + " and could not connect again within 500 ms"),
            std::string::npos)
      << e;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 15s);
}

// An entry that does not decode, or lacks the field, follows the source's bad-record
// policy; the others flow.
struct Number : DeserializationSchema<int64_t> {
  void deserialize(std::string_view message, int64_t& out) override {
    try {
      size_t used = 0;
      out = std::stoll(std::string(message), &used);
      if (used != message.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw SerializationError("'" + std::string(message) + "' is not a number");
    }
  }
};

TEST(RedisStreamSource, ABadRecordFollowsThePolicy) {
  RedisServer server;
  RedisClient redis(server.port());
  std::vector<Fields> entries = values(0, 1000);
  entries[500] = {{"value", "five hundred"}};
  entries[700] = {{"other", "700"}};
  const std::vector<std::string> ids = redis.xaddMany("mixed", entries);
  std::vector<int64_t> good;
  for (int64_t i = 0; i < 1000; ++i)
    if (i != 500 && i != 700) good.push_back(i);
  auto source = [&](BadRecordPolicy policy) {
    return RedisStreamSource<int64_t>::builder()
        .setAddress(server.address())
        .setStreams({"mixed"})
        .setBounded()
        .setValueOnlyDeserializer("value", Number())
        .setBadRecordPolicy(policy)
        .build();
  };
  {
    StreamExecutionEnvironment env;
    CollectSink<int64_t> sink;
    CollectSink<BadRecord> deadLetters;
    auto stream = env.fromSource(source(BadRecordPolicy::DEAD_LETTER), WatermarkStrategy<int64_t>::noWatermarks(), "mixed");
    stream.sinkTo(sink);
    stream.getSideOutput(deadLetterOutput()).sinkTo(deadLetters);
    executeWithin(env, "dead letters");
    std::vector<int64_t> got = sink.getResults();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, good);
    std::vector<BadRecord> letters = deadLetters.getResults();
    ASSERT_EQ(letters.size(), 2u);
    std::map<std::string, BadRecord> byReason;  // the reason names the entry
    for (const BadRecord& letter : letters) byReason[letter.reason] = letter;
    const std::string notANumber = "entry " + ids[500] + ": 'five hundred' is not a number";
    const std::string noField = "entry " + ids[700] + ": the entry has no field 'value'";
    ASSERT_EQ(byReason.count(notANumber), 1u) << ::testing::PrintToString(letters);
    ASSERT_EQ(byReason.count(noField), 1u) << ::testing::PrintToString(letters);
    EXPECT_EQ(byReason[notANumber].split, "mixed");
    EXPECT_EQ(byReason[notANumber].bytes, "value=five hundred");
    EXPECT_EQ(byReason[notANumber].position, std::stoll(ids[500]));  // the ID's millisecond part
    EXPECT_EQ(byReason[noField].bytes, "other=700");
  }
  {
    StreamExecutionEnvironment env;
    CollectSink<int64_t> sink;
    env.fromSource(source(BadRecordPolicy::SKIP), WatermarkStrategy<int64_t>::noWatermarks(), "mixed").sinkTo(sink);
    executeWithin(env, "skip");
    std::vector<int64_t> got = sink.getResults();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, good);
  }
  StreamExecutionEnvironment env;
  env.setRestartStrategy(RestartStrategy::noRestart());
  CollectSink<int64_t> sink;
  env.fromSource(source(BadRecordPolicy::FAIL), WatermarkStrategy<int64_t>::noWatermarks(), "mixed").sinkTo(sink);
  std::string failed = errorOf([&] { executeWithin(env, "fail"); });
  EXPECT_NE(failed.find("bad record in 'mixed' at position " + std::to_string(std::stoll(ids[500])) + ": entry " +
                        ids[500] + ": 'five hundred' is not a number"),
            std::string::npos)
      << failed;
}

// A function deserializer that throws (std::stoll here) makes a bad record too, and one
// that emits through a Collector may emit several records per entry.
TEST(RedisStreamSource, FunctionDeserializersEmitAnyNumberAndTheirExceptionsAreBadRecords) {
  RedisServer server;
  RedisClient redis(server.port());
  redis.xaddMany("pairs", {{{"a", "1"}, {"b", "2"}}, {{"a", "x"}}, {{"a", "3"}}});
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromSource(RedisStreamSource<int64_t>::builder()
                     .setAddress(server.address())
                     .setStreams({"pairs"})
                     .setBounded()
                     .setDeserializer([](const RedisStreamEntry& e, Collector<int64_t>& out) {
                       for (const auto& [name, value] : e.fields) out.collect(std::stoll(value));
                     })
                     .setBadRecordPolicy(BadRecordPolicy::SKIP)
                     .build(),
                 WatermarkStrategy<int64_t>::noWatermarks(), "pairs")
      .sinkTo(sink);
  executeWithin(env, "pairs");
  EXPECT_EQ(sink.getResults(), (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace weir
