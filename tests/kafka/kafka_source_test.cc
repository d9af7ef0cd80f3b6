// KafkaSource against librdkafka's mock cluster, a process of its own reached over the
// Kafka protocol: what a job reads is checked against what the test produced.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/error_of.h"
#include "support/fresh_folder.h"
#include "support/gated_map.h"
#include "support/job_end.h"
#include "support/kafka_cluster.h"
#include "support/operator_metrics.h"
#include "weir/kafka_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using namespace weir::test;
namespace fs = std::filesystem;

std::vector<KafkaTestRecord> numbered(int64_t from, int64_t to) {
  std::vector<KafkaTestRecord> out;
  for (int64_t i = from; i < to; ++i) out.push_back({"key-" + std::to_string(i % 37), std::to_string(i), -1, 0});
  return out;
}

std::vector<int64_t> sortedNumbers(const std::vector<std::string>& values) {
  std::vector<int64_t> out;
  for (const auto& v : values) out.push_back(std::stoll(v));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

int64_t nowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

KafkaSource<std::string>::Builder strings(const KafkaCluster& cluster, const std::string& topic) {
  return KafkaSource<std::string>::builder()
      .setBootstrapServers(cluster.bootstrapServers())
      .setTopics({topic})
      .setValueOnlyDeserializer(SimpleStringSchema());
}

TEST(KafkaSource, ABoundedSourceReadsEveryPartitionToItsEndAtAnyParallelism) {
  KafkaCluster cluster;
  cluster.createTopic("numbers", 4);
  produce(cluster.bootstrapServers(), "numbers", numbered(0, 10000));
  for (int parallelism : {1, 3, 6}) {  // 6: two readers get no partition
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism);
    CollectSink<std::string> sink;
    env.fromSource(strings(cluster, "numbers").setBounded(OffsetsInitializer::latest()).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "numbers")
        .sinkTo(sink);
    env.execute("read numbers");
    EXPECT_EQ(sortedNumbers(sink.getResults()), range(0, 10000)) << "parallelism " << parallelism;
  }
}

// Each partition is read in its order; records keep the timestamps Kafka holds for
// them, which event time uses without a timestamp assigner.
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

TEST(KafkaSource, RecordsCarryTheirKafkaTimestamps) {
  KafkaCluster cluster;
  cluster.createTopic("stamped", 3);
  std::vector<KafkaTestRecord> records;
  for (int i = 0; i < 3000; ++i) records.push_back({"", std::to_string(i), i % 3, 1'700'000'000'000 + i * 7});
  produce(cluster.bootstrapServers(), "stamped", records);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Stamped> sink;
  env.fromSource(strings(cluster, "stamped").setBounded(OffsetsInitializer::latest()).build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms), "stamped")
      .process(StampOf{})
      .sinkTo(sink);
  env.execute("stamped");
  std::vector<Stamped> got = sink.getResults();
  ASSERT_EQ(got.size(), records.size());
  for (const Stamped& s : got) EXPECT_EQ(s.timestamp, 1'700'000'000'000 + std::stoll(s.value) * 7) << s.value;
}

// Watermarks are per partition: one reader reads three partitions whose times
// interleave however the fetches fall, and no record is late for the windows; the
// counts equal a brute force over what was produced.
struct CountWindow : ProcessAllWindowFunction<std::string, std::pair<int64_t, int64_t>, TimeWindow> {
  void process(Context& ctx, std::span<const std::string> values, Collector<std::pair<int64_t, int64_t>>& out) override {
    out.collect({ctx.window().start, static_cast<int64_t>(values.size())});
  }
};

TEST(KafkaSource, WatermarksArePerPartitionSoNoPartitionsRecordsTurnLate) {
  KafkaCluster cluster;
  cluster.createTopic("times", 3);
  std::vector<KafkaTestRecord> records;
  std::map<int64_t, int64_t> want;  // window start -> records
  for (int32_t p = 0; p < 3; ++p)
    for (int i = 0; i < 4000; ++i) {
      const int64_t time = 1'000'000 + i * 5 + p;
      records.push_back({"", std::to_string(time), p, time});
      ++want[time - time % 1000];
    }
  produce(cluster.bootstrapServers(), "times", records);
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  CollectSink<std::pair<int64_t, int64_t>> sink;
  env.fromSource(strings(cluster, "times").setBounded(OffsetsInitializer::latest()).build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms), "times")
      .windowAll(TumblingEventTimeWindows::of(1000ms))
      .process(CountWindow{})
      .sinkTo(sink);
  env.execute("times");
  std::map<int64_t, int64_t> got;
  for (const auto& [start, count] : sink.getResults()) got[start] += count;
  EXPECT_EQ(got, want);
}

// (OffsetsInitializer::timestamp is not checked here: librdkafka 2.0.2's mock cluster
// answers every lookup by time with "no such offset", docs/kafka.md.)
TEST(KafkaSource, GivenStartingAndStoppingOffsetsAreHonoured) {
  KafkaCluster cluster;
  cluster.createTopic("ordered", 1);
  std::vector<KafkaTestRecord> records;
  for (int i = 0; i < 100; ++i) records.push_back({"", std::to_string(i), 0, 1'000'000 + i * 10});
  produce(cluster.bootstrapServers(), "ordered", records);
  auto read = [&](OffsetsInitializer starting, OffsetsInitializer stopping) {
    StreamExecutionEnvironment env;
    env.setParallelism(1);
    CollectSink<std::string> sink;
    env.fromSource(strings(cluster, "ordered").setStartingOffsets(starting).setBounded(stopping).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "ordered")
        .sinkTo(sink);
    env.execute("ordered");
    return sortedNumbers(sink.getResults());
  };
  EXPECT_EQ(read(OffsetsInitializer::earliest(), OffsetsInitializer::latest()), range(0, 100));
  EXPECT_EQ(read(OffsetsInitializer::offsets({{{"ordered", 0}, 40}}), OffsetsInitializer::offsets({{{"ordered", 0}, 45}})),
            range(40, 45));
  EXPECT_EQ(read(OffsetsInitializer::latest(), OffsetsInitializer::latest()), std::vector<int64_t>{});
}

// Offsets live in the checkpoint: a job stopped with a savepoint and resumed at another
// parallelism (3 -> 2 -> 4) reads on exactly where it stopped, records produced
// meanwhile included.
TEST(KafkaSource, AResumedJobReadsOnFromTheOffsetsOfItsSavepoint) {
  KafkaCluster cluster;
  cluster.createTopic("events", 4);
  produce(cluster.bootstrapServers(), "events", numbered(0, 20000));
  fs::path dir = freshFolder("kafka-resume");
  fs::create_directories(dir / "checkpoints");
  const int parallelism[] = {3, 2, 4};
  const size_t stopAt[] = {5000, 25000, 40000};  // records read by the end of each run
  std::vector<std::string> all;
  std::string savepoint;
  for (int run = 0; run < 3; ++run) {
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism[run]);
    env.enableCheckpointing(50ms);
    env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    if (!savepoint.empty()) env.setSavepointRestoreSettings(SavepointRestoreSettings::forPath(savepoint));
    CollectSink<std::string> sink;
    env.fromSource(strings(cluster, "events").setProperty("partition.discovery.interval.ms", "0").build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "events")
        .uid("events")
        .sinkTo(sink)
        .uid("sink");
    auto client = env.executeAsync("events");
    const size_t want = stopAt[run] - all.size();
    if (run > 0) produce(cluster.bootstrapServers(), "events", numbered(10000 + 10000 * run, 20000 + 10000 * run));
    ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return sink.getResults().size() >= want; }));
    savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
    client.wait();
    std::vector<std::string> got = sink.getResults();
    all.insert(all.end(), got.begin(), got.end());
  }
  EXPECT_EQ(sortedNumbers(all), range(0, 40000)) << "each record once, across the resumes";
  fs::remove_all(dir);
}

// New partitions are read while the job runs: a topic that matches the source's pattern,
// created after the start, is found at the next discovery and read from its beginning.
TEST(KafkaSource, PartitionsThatAppearWhileRunningAreRead) {
  KafkaCluster cluster;
  cluster.createTopic("events-a", 2);
  produce(cluster.bootstrapServers(), "events-a", numbered(0, 5000));
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::string> sink;
  env.fromSource(KafkaSource<std::string>::builder()
                     .setBootstrapServers(cluster.bootstrapServers())
                     .setTopicPattern("events-.*")
                     .setValueOnlyDeserializer(SimpleStringSchema())
                     .setProperty("partition.discovery.interval.ms", "100")
                     .build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "events")
      .sinkTo(sink);
  auto client = env.executeAsync("discovery");
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return sink.getResults().size() >= 5000; }));
  cluster.createTopic("events-b", 3);
  produce(cluster.bootstrapServers(), "events-b", numbered(5000, 10000));
  EXPECT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return sink.getResults().size() >= 10000; }));
  client.cancel();
  client.wait();
  EXPECT_EQ(sortedNumbers(sink.getResults()), range(0, 10000));
}

// An idle reader waits to be woken by librdkafka (Flink's isAvailable future) rather
// than polling an empty queue, and is woken when a record arrives.
TEST(KafkaSource, AnIdleReaderIsWokenWhenARecordArrives) {
  KafkaCluster cluster;
  cluster.createTopic("quiet", 1);
  auto source = strings(cluster, "quiet").build();
  auto enumerator = source.createEnumerator(1);
  std::atomic<int> wakes{0};
  auto reader = source.createReader(
      SourceReaderContext{0, 1, enumerator.get(), OperatorMetricGroup(), nullptr, [&] { wakes.fetch_add(1); }});
  std::vector<std::string> out;
  // The reader takes its partition (a poll that says so) and fetches from it: nothing there.
  InputStatus status = InputStatus::MORE_AVAILABLE;
  for (int i = 0; i < 20; ++i) {
    status = reader->pollNext(out, 100);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(status, InputStatus::NOTHING_AVAILABLE);
  ASSERT_TRUE(out.empty());
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_GE(reader->nextPollTime() - asked, 50ms);  // it need not poll soon
  const int before = wakes.load();
  reader->pollNext(out, 100);  // whatever came meanwhile: the queue is empty now
  produce(cluster.bootstrapServers(), "quiet", {{"k", "hello", 0, 0}});
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (wakes.load() == before && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_GT(wakes.load(), before) << "no wake-up for a record that arrived";
  deadline = std::chrono::steady_clock::now() + 10s;
  while (out.empty() && std::chrono::steady_clock::now() < deadline) reader->pollNext(out, 100);
  EXPECT_EQ(out, std::vector<std::string>{"hello"});
  reader->close();
}

// A broker that goes down mid-run and comes back, and fetches that fail, are retried
// (librdkafka's own retries, reported on stderr): every record is read once, the job
// never restarts.
TEST(KafkaSource, ABrokerDownAndUpAndFailingFetchesLoseNothing) {
  constexpr int kFetch = 1, kNotLeaderOrFollower = 6;
  KafkaCluster cluster(3);
  if (!cluster.isMock()) GTEST_SKIP() << "sets brokers of the mock cluster down";
  cluster.createTopic("events", 6);  // two partitions led by each broker
  produce(cluster.bootstrapServers(), "events", numbered(0, 10000));
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::string> sink;
  env.fromSource(strings(cluster, "events").build(), WatermarkStrategy<std::string>::noWatermarks(), "events")
      .sinkTo(sink);
  auto client = env.executeAsync("brokers");
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return sink.getResults().size() >= 10000; }));
  cluster.setBrokerDown(2);
  // Produced while broker 2 is down: its partitions' records wait in the producer.
  std::thread more([&] { produce(cluster.bootstrapServers(), "events", numbered(10000, 20000)); });
  std::this_thread::sleep_for(1s);
  cluster.pushRequestErrors(kFetch, kNotLeaderOrFollower, 5);
  cluster.setBrokerUp(2);
  more.join();
  EXPECT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return sink.getResults().size() >= 20000; }));
  EXPECT_EQ(client.getMetrics().numRestarts, 0);
  client.cancel();
  client.wait();
  EXPECT_EQ(sortedNumbers(sink.getResults()), range(0, 20000));
}

// Flink's commit.offsets.on.checkpoint: with a group id (and unless turned off), the
// offsets a completed checkpoint holds are committed to the group, where lag monitors
// read them; once the job has read everything and checkpointed since, they are the
// topic's end offsets.
TEST(KafkaSource, CompletedCheckpointsCommitTheirOffsetsToTheGroupUnlessTurnedOff) {
  constexpr int64_t kRecords = 20000;
  KafkaCluster cluster;
  cluster.createTopic("events", 4);
  produce(cluster.bootstrapServers(), "events", numbered(0, kRecords));
  std::map<int32_t, int64_t> ends;
  for (const auto& r : readAll(cluster.bootstrapServers(), "events"))
    ends[r.partition] = std::max(ends[r.partition], r.offset + 1);
  const std::map<int32_t, int64_t> none{{0, -1}, {1, -1}, {2, -1}, {3, -1}};
  fs::path dir = freshFolder("kafka-commit-offsets");
  fs::create_directories(dir / "checkpoints");
  for (const bool commits : {true, false}) {
    const std::string group = commits ? "watchers" : "quiet";
    ASSERT_EQ(committedOffsets(cluster.bootstrapServers(), group, "events", 4), none);
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    env.enableCheckpointing(50ms);
    env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    CollectSink<std::string> sink;
    auto source = strings(cluster, "events").setGroupId(group);
    if (!commits) source.setProperty("commit.offsets.on.checkpoint", "false");
    env.fromSource(source.build(), WatermarkStrategy<std::string>::noWatermarks(), "events").sinkTo(sink);
    auto client = env.executeAsync("commits");
    int64_t checkpointsWhenRead = -1;
    ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics& m) {
      if (checkpointsWhenRead < 0 && sink.getResults().size() >= static_cast<size_t>(kRecords))
        checkpointsWhenRead = m.numberOfCompletedCheckpoints;
      // The first checkpoint after that may have begun before the last read.
      return checkpointsWhenRead >= 0 && m.numberOfCompletedCheckpoints >= checkpointsWhenRead + 2;
    }));
    std::map<int32_t, int64_t> committed;
    auto deadline = std::chrono::steady_clock::now() + 10s;  // the commits are asynchronous
    while ((committed = committedOffsets(cluster.bootstrapServers(), group, "events", 4)) != ends && commits &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100ms);
    EXPECT_EQ(committed, commits ? ends : none) << group;
    client.cancel();
    client.wait();
  }
  // A bounded job commits the offsets it ended at when it finishes (Flink's final
  // checkpoint), however few checkpoints completed before.
  {
    auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(restOnAnyPort());
    env.setParallelism(3);
    env.enableCheckpointing(10s);  // none completes while it runs
    env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
    CollectSink<std::string> sink;
    env.fromSource(strings(cluster, "events").setGroupId("bounded").setBounded(OffsetsInitializer::latest()).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "events")
        .sinkTo(sink);
    auto client = env.executeAsync("bounded commits");
    client.wait();
    EXPECT_EQ(committedOffsets(cluster.bootstrapServers(), "bounded", "events", 4), ends);
    // The metrics show that final commit: one per subtask that read a partition.
    std::set<int> readers;
    for (int32_t p = 0; p < 4; ++p) readers.insert(detail::kafkaPartitionOwner("events", p, 3));
    std::map<std::string, double> m;
    auto shown = [&] {
      m = operatorMetrics(client);
      for (int32_t p = 0; p < 4; ++p)
        if (sumOf(m, ".partition." + std::to_string(p) + ".committedOffset").sum != ends[p]) return false;
      return true;
    };
    for (int i = 0; i < 50 && !shown(); ++i) std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(shown()) << ::testing::PrintToString(m);
    EXPECT_EQ(sumOf(m, ".KafkaSourceReader.commitsSucceeded").sum, static_cast<double>(readers.size()));
    EXPECT_EQ(sumOf(m, ".KafkaSourceReader.commitsFailed").sum, 0);
  }
  fs::remove_all(dir);
}

TEST(KafkaSource, MetricsShowEachPartitionsOffsetLagCommitsAndFetchLag) {
  constexpr int64_t kRecords = 60000;
  constexpr int kPartitions = 4;
  KafkaCluster cluster;
  cluster.createTopic("watched", kPartitions);
  const int64_t producedFrom = nowMillis();
  produce(cluster.bootstrapServers(), "watched", numbered(0, kRecords));
  std::map<int32_t, int64_t> ends;
  for (const auto& r : readAll(cluster.bootstrapServers(), "watched"))
    ends[r.partition] = std::max(ends[r.partition], r.offset + 1);
  fs::path dir = freshFolder("kafka-source-metrics");
  fs::create_directories(dir / "checkpoints");
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(restOnAnyPort());
  env.setParallelism(2);
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  auto open = std::make_shared<std::atomic<bool>>(false);
  env.fromSource(strings(cluster, "watched").setGroupId("watchers").build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "watched")
      .rebalance()
      .map(GatedMap<std::string>(open))
      .sinkTo(DiscardingSink<std::string>());
  auto client = env.executeAsync("source metrics");
  struct Release {  // a failed assertion below must not leave the job running
    std::shared_ptr<std::atomic<bool>> open;
    JobClient& client;
    ~Release() {
      open->store(true);
      client.cancel();
    }
  } release{open, client};
  auto partition = [](int32_t p) { return ".KafkaSourceReader.topic.watched.partition." + std::to_string(p) + "."; };

  // Back-pressured: every partition's lag is what lies between its offset and its end.
  std::map<std::string, double> m;
  auto lagIsTheRest = [&] {
    m = operatorMetrics(client);
    double pending = 0;
    for (int32_t p = 0; p < kPartitions; ++p) {
      const MetricSum offset = sumOf(m, partition(p) + "currentOffset");
      const MetricSum lag = sumOf(m, partition(p) + "pendingRecords");
      if (offset.count != 1 || lag.count != 1 || offset.sum + lag.sum != ends[p]) return false;
      pending += lag.sum;
    }
    // ".pendingRecords" also ends each partition's: the readers' totals are the rest.
    // Both readers fetched records (a reader that fetched none has no fetch lag yet).
    return pending > 0 && sumOf(m, ".pendingRecords").sum - pending == pending &&
           sumOf(m, ".currentFetchEventTimeLag").count == 2;
  };
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!lagIsTheRest() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(lagIsTheRest()) << ::testing::PrintToString(m);
  // The records were fetched after they were produced, and not long after.
  const MetricSum fetchLag = sumOf(m, ".currentFetchEventTimeLag");
  ASSERT_EQ(fetchLag.count, 2);
  EXPECT_GE(fetchLag.sum, 0);
  EXPECT_LE(fetchLag.sum, 2.0 * static_cast<double>(nowMillis() - producedFrom));

  // Released: each partition is read to its end, and checkpoints commit those offsets.
  open->store(true);
  auto caughtUp = [&] {
    m = operatorMetrics(client);
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (sumOf(m, partition(p) + "currentOffset").sum != ends[p] || sumOf(m, partition(p) + "pendingRecords").sum != 0 ||
          sumOf(m, partition(p) + "committedOffset").sum != ends[p])
        return false;
    }
    return true;
  };
  deadline = std::chrono::steady_clock::now() + 30s;
  while (!caughtUp() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(caughtUp()) << ::testing::PrintToString(m);
  EXPECT_GE(sumOf(m, ".KafkaSourceReader.commitsSucceeded").sum, 1);
  EXPECT_EQ(sumOf(m, ".KafkaSourceReader.commitsFailed").sum, 0);
  EXPECT_EQ(committedOffsets(cluster.bootstrapServers(), "watchers", "watched", kPartitions), ends);
  client.cancel();
  client.wait();
  fs::remove_all(dir);
}

TEST(KafkaSource, BadConfigurationIsAClearErrorBeforeTheJobRuns) {
  KafkaCluster cluster;
  cluster.createTopic("present", 1);
  auto run = [&](KafkaSource<std::string>::Builder builder) {
    return errorOf([&] {
      StreamExecutionEnvironment env;
      CollectSink<std::string> sink;
      env.fromSource(builder.build(), WatermarkStrategy<std::string>::noWatermarks(), "in").sinkTo(sink);
      env.execute("bad");
    });
  };
  EXPECT_NE(run(strings(cluster, "absent").setBounded(OffsetsInitializer::latest())).find(
                "topic 'absent' does not exist on '" + cluster.bootstrapServers() + "'"),
            std::string::npos);
  EXPECT_NE(run(strings(cluster, "present").setProperty("no.such.property", "1")).find(
                "property 'no.such.property' = '1': No such configuration property"),
            std::string::npos);
  EXPECT_NE(run(KafkaSource<std::string>::builder().setBootstrapServers(cluster.bootstrapServers()).setTopics({"present"}))
                .find("setDeserializer(...) or setValueOnlyDeserializer(...) is required"),
            std::string::npos);
  EXPECT_NE(run(strings(cluster, "present").setStartingOffsets(OffsetsInitializer::committedOffsets()))
                .find("committedOffsets() needs setGroupId(...)"),
            std::string::npos);
  EXPECT_EQ(run(strings(cluster, "present").setProperty("commit.offsets.on.checkpoint", "true")),
            "kafka source: commit.offsets.on.checkpoint needs setGroupId(...)");
  EXPECT_EQ(errorOf([&] { strings(cluster, "present").setProperty("commit.offsets.on.checkpoint", "yes"); }),
            "kafka source: commit.offsets.on.checkpoint must be true or false, got 'yes'");
  // Nothing listens there: an error after the timeout, not a hang.
  auto started = std::chrono::steady_clock::now();
  std::string unreachable = run(KafkaSource<std::string>::builder()
                                    .setBootstrapServers("127.0.0.1:1")
                                    .setTopics({"present"})
                                    .setProperty("socket.timeout.ms", "1500")
                                    .setValueOnlyDeserializer(SimpleStringSchema()));
  EXPECT_NE(unreachable.find("no metadata from '127.0.0.1:1' within 1500 ms"), std::string::npos) << unreachable;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
}

// A value that does not decode follows the source's bad-record policy; the others flow.
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

TEST(KafkaSource, ABadRecordFollowsThePolicy) {
  KafkaCluster cluster;
  cluster.createTopic("mixed", 2);
  std::vector<KafkaTestRecord> records = numbered(0, 1000);
  records[500].value = "five hundred";
  produce(cluster.bootstrapServers(), "mixed", records);
  auto source = [&](BadRecordPolicy policy) {
    return KafkaSource<int64_t>::builder()
        .setBootstrapServers(cluster.bootstrapServers())
        .setTopics({"mixed"})
        .setBounded(OffsetsInitializer::latest())
        .setValueOnlyDeserializer(Number())
        .setBadRecordPolicy(policy)
        .build();
  };
  {
    StreamExecutionEnvironment env;
    CollectSink<int64_t> sink;
    env.fromSource(source(BadRecordPolicy::SKIP), WatermarkStrategy<int64_t>::noWatermarks(), "mixed").sinkTo(sink);
    env.execute("skip");
    std::vector<int64_t> got = sink.getResults(), want = range(0, 1000);
    std::sort(got.begin(), got.end());
    want.erase(want.begin() + 500);
    EXPECT_EQ(got, want);
  }
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromSource(source(BadRecordPolicy::FAIL), WatermarkStrategy<int64_t>::noWatermarks(), "mixed").sinkTo(sink);
  std::string failed = errorOf([&] { env.execute("fail"); });
  EXPECT_NE(failed.find("'five hundred' is not a number"), std::string::npos) << failed;
  EXPECT_NE(failed.find("bad record in 'mixed-"), std::string::npos) << failed;
}

// kcat, a separate client, produces; the source reads what it wrote, keys and all.
TEST(KafkaSource, ReadsWhatKcatProduced) {
  KafkaCluster cluster;
  cluster.createTopic("lines", 2);
  const std::string command = "kcat -q -P -b " + cluster.bootstrapServers() + " -t lines -K:";
  FILE* kcat = popen(command.c_str(), "w");
  ASSERT_NE(kcat, nullptr);
  for (int i = 0; i < 500; ++i) std::fprintf(kcat, "k%d:%d\n", i % 5, i);
  ASSERT_EQ(pclose(kcat), 0) << command;
  struct KeyAndValue : KafkaRecordDeserializationSchema<std::string> {
    void deserialize(const ConsumerRecord& r, Collector<std::string>& out) override {
      out.collect(std::string(r.key.value_or("?")) + "=" + std::string(r.value.value_or("?")));
    }
  };
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::string> sink;
  env.fromSource(KafkaSource<std::string>::builder()
                     .setBootstrapServers(cluster.bootstrapServers())
                     .setTopics({"lines"})
                     .setBounded(OffsetsInitializer::latest())
                     .setDeserializer(KeyAndValue())
                     .build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "lines")
      .sinkTo(sink);
  env.execute("lines");
  std::vector<std::string> got = sink.getResults(), want;
  for (int i = 0; i < 500; ++i) want.push_back("k" + std::to_string(i % 5) + "=" + std::to_string(i));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// Records "<tag>:<i>" for i in [from, to) into partition 0, at times start + i.
std::vector<KafkaTestRecord> tagged(char tag, int from, int to, int64_t start) {
  std::vector<KafkaTestRecord> out;
  for (int i = from; i < to; ++i) out.push_back({"", std::string(1, tag) + ":" + std::to_string(i), 0, start + i});
  return out;
}

// The values "<tag>:<i>" of `got` with that tag, without it, in their order.
std::vector<std::string> taggedValues(const std::vector<std::string>& got, char tag) {
  std::vector<std::string> out;
  for (const auto& v : got)
    if (v[0] == tag) out.push_back(v.substr(2));
  return out;
}

// "<from>" to "<to - 1>": each record of a partition once, in order.
std::vector<std::string> inOrder(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(std::to_string(i));
  return out;
}

// How many records tagged `ahead` come between the first and the last tagged `behind`.
int64_t readWhileBehindRead(const std::vector<std::string>& got, char ahead, char behind) {
  auto isOf = [](char tag) { return [tag](const std::string& v) { return v[0] == tag; }; };
  const auto first = std::find_if(got.begin(), got.end(), isOf(behind));
  const auto last = std::find_if(got.rbegin(), got.rend(), isOf(behind)).base();
  return first == got.end() ? 0 : std::count_if(first, last, isOf(ahead));
}

// Split-level watermark alignment reaches Kafka as pauseOrResumeSplits: a paused
// partition's records stop (those already fetched are dropped and fetched again), the
// other partition reads on, and after the resume the paused one goes on from where it
// stopped: each partition's records arrive once, in order, and a checkpoint taken while
// it is paused holds its next offset.
TEST(KafkaSource, APausedPartitionStopsAndResumesWhereItStopped) {
  KafkaCluster cluster;
  cluster.createTopic("aligned", 2);
  const int n = 5000;
  std::vector<KafkaTestRecord> records;
  for (int i = 0; i < n; ++i) {
    records.push_back({"", "0:" + std::to_string(i), 0, 0});
    records.push_back({"", "1:" + std::to_string(i), 1, 0});
  }
  produce(cluster.bootstrapServers(), "aligned", records);
  auto source = strings(cluster, "aligned").setBounded(OffsetsInitializer::latest()).build();
  auto enumerator = source.createEnumerator(1);
  auto reader = source.createReader(SourceReaderContext{0, 1, enumerator.get(), OperatorMetricGroup(), nullptr, {}});
  std::vector<std::string> out;
  auto seen = [&](char partition) {
    return std::count_if(out.begin(), out.end(), [&](const std::string& v) { return v[0] == partition; });
  };
  auto pollUntil = [&](auto done) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done() && std::chrono::steady_clock::now() < deadline) reader->pollNext(out, 100);
    return done();
  };
  ASSERT_TRUE(pollUntil([&] { return seen('0') > 0; }));
  ASSERT_TRUE(reader->pauseOrResumeSplits({"aligned-0"}, {}));
  const auto atPause = seen('0');
  ASSERT_TRUE(pollUntil([&] { return seen('1') == n; })) << seen('1') << " of partition 1 read";
  EXPECT_EQ(seen('0'), atPause) << "records of the paused partition kept coming";
  bool holdsItsOffset = false;
  for (const auto& split : reader->snapshotState(1))
    holdsItsOffset = holdsItsOffset || split.find("0 " + std::to_string(atPause) + " ") == 0;
  EXPECT_TRUE(holdsItsOffset) << "the checkpoint does not hold the paused partition at offset " << atPause;
  // Resuming one that was never paused changes nothing for it.
  ASSERT_TRUE(reader->pauseOrResumeSplits({}, {"aligned-0", "aligned-1"}));
  ASSERT_TRUE(pollUntil([&] { return seen('0') == n; })) << seen('0') << " of partition 0 read";
  for (char p : {'0', '1'}) EXPECT_EQ(taggedValues(out, p), inOrder(0, n)) << "partition " << p;
  reader->close();
}

// In a job: partition 0 is an hour of event time ahead of partition 1, and both are in
// one reader's group with a drift of 30 s. A split holds no one back before its first
// records (as in Flink), and librdkafka may deliver thousands of partition 0's first;
// but from partition 1's first record on, partition 0 is paused until partition 1 has
// finished, so next to none of it comes between the first and the last of partition 1.
// Each partition's records arrive once, in order.
TEST(KafkaSource, WatermarkAlignmentHoldsBackThePartitionAhead) {
  KafkaCluster cluster;
  cluster.createTopic("ahead", 2);
  const int n = 20000;
  const int64_t base = 1'700'000'000'000;
  std::vector<KafkaTestRecord> records;
  for (int i = 0; i < n; ++i) {
    records.push_back({"", "0:" + std::to_string(i), 0, base + 3'600'000 + i});
    records.push_back({"", "1:" + std::to_string(i), 1, base + i});
  }
  produce(cluster.bootstrapServers(), "ahead", records);
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(1ms);
  CollectSink<std::string> sink;
  env.fromSource(strings(cluster, "ahead").setBounded(OffsetsInitializer::latest()).build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms).withWatermarkAlignment("kafka", 30s, 1ms),
                 "ahead")
      .map([](const std::string& v) {  // 5 us a record: updates fall between batches
        for (auto until = std::chrono::steady_clock::now() + 5us; std::chrono::steady_clock::now() < until;) {
        }
        return v;
      })
      .sinkTo(sink);
  env.execute("aligned partitions");
  const std::vector<std::string> got = sink.getResults();
  ASSERT_EQ(taggedValues(got, '1').size(), static_cast<size_t>(n));
  EXPECT_LT(readWhileBehindRead(got, '0', '1'), n / 4)
      << "records of the partition ahead read while the one behind was read";
  for (char p : {'0', '1'}) EXPECT_EQ(taggedValues(got, p), inOrder(0, n)) << "partition " << p;
}

// A partition that appears while the job runs pulls its group back: the subtask
// reports the smallest watermark of its splits now, not the one it emitted (which the
// partition ahead had already moved an hour on, and which never moves back). Partition
// b comes an hour behind a; a's new records, fetched while b is being read, then wait
// until b has gone idle.
TEST(KafkaSource, APartitionThatAppearsLatePullsItsGroupBack) {
  KafkaCluster cluster;
  const int n = 20000;
  const int64_t base = 1'700'000'000'000;
  cluster.createTopic("late-a", 1);
  produce(cluster.bootstrapServers(), "late-a", tagged('a', 0, 1000, base + 3'600'000));
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(1ms);
  CollectSink<std::string> sink;
  auto open = std::make_shared<std::atomic<bool>>(false), held = std::make_shared<std::atomic<bool>>(false);
  env.fromSource(KafkaSource<std::string>::builder()
                     .setBootstrapServers(cluster.bootstrapServers())
                     .setTopicPattern("late-.*")
                     .setValueOnlyDeserializer(SimpleStringSchema())
                     .setProperty("partition.discovery.interval.ms", "50")
                     // A small prefetch, so that b's and a's records interleave as fetched.
                     .setProperty("queued.min.messages", "200")
                     .setProperty("max.partition.fetch.bytes", "8192")
                     .build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms)
                     .withIdleness(2s)  // well above the time b's 100th record is held
                     .withWatermarkAlignment("kafka", 30s, 1ms),
                 "late")
      .map([open, held](const std::string& v) {  // holds b's 100th record until a's new ones are fetched
        if (v == "b:100") held->store(true);
        while (v == "b:100" && !open->load()) std::this_thread::sleep_for(1ms);
        return v;
      })
      .sinkTo(sink);
  auto client = env.executeAsync("late partition");
  struct Opener {  // however the test ends, the map lets go before the job is cancelled
    std::shared_ptr<std::atomic<bool>> gate;
    ~Opener() { gate->store(true); }
  } opener{open};
  auto count = [&](char topic) {
    const auto got = sink.getResults();
    return std::count_if(got.begin(), got.end(), [&](const std::string& v) { return v[0] == topic; });
  };
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return count('a') == 1000; }));
  cluster.createTopic("late-b", 1);
  produce(cluster.bootstrapServers(), "late-b", tagged('b', 0, n, base));
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return held->load(); }));
  produce(cluster.bootstrapServers(), "late-a", tagged('a', 1000, 1000 + n, base + 3'600'000));
  std::this_thread::sleep_for(300ms);  // librdkafka fetches them meanwhile
  open->store(true);
  EXPECT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return count('a') == 1000 + n && count('b') == n; }));
  client.cancel();
  client.wait();
  const std::vector<std::string> got = sink.getResults();
  EXPECT_LT(readWhileBehindRead(got, 'a', 'b'), n / 4)
      << "records of the partition ahead read while the late one was read";
  EXPECT_EQ(taggedValues(got, 'a'), inOrder(0, 1000 + n));
  EXPECT_EQ(taggedValues(got, 'b'), inOrder(0, n));
}

// A source whose partition went idle still reads what comes later, while another
// source of its group holds a real watermark: an idle source waits for no one.
TEST(KafkaSource, AnIdlePartitionOfAnAlignedGroupReadsWhatComesLater) {
  KafkaCluster cluster;
  const int64_t base = 1'700'000'000'000;
  cluster.createTopic("idle-a", 1);
  cluster.createTopic("steady", 1);
  produce(cluster.bootstrapServers(), "idle-a", tagged('a', 0, 10, base));
  produce(cluster.bootstrapServers(), "steady", tagged('s', 0, 1, base));
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(1ms);
  CollectSink<std::string> sink;
  auto aligned = WatermarkStrategy<std::string>::forBoundedOutOfOrderness(0ms).withWatermarkAlignment("g", 1s, 1ms);
  env.fromSource(strings(cluster, "idle-a").build(), aligned.withIdleness(100ms), "idle")
      .unionWith(env.fromSource(strings(cluster, "steady").build(), aligned, "steady"))
      .sinkTo(sink);
  auto client = env.executeAsync("idle in a group");
  auto count = [&](char tag) { return taggedValues(sink.getResults(), tag).size(); };
  ASSERT_TRUE(waitWhileRunning(client, [&](const JobMetrics&) { return count('a') == 10 && count('s') == 1; }));
  std::this_thread::sleep_for(500ms);  // idle-a goes idle; steady holds its watermark
  produce(cluster.bootstrapServers(), "idle-a", tagged('a', 10, 20, base));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (count('a') < 20 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  client.cancel();
  client.wait();
  EXPECT_EQ(taggedValues(sink.getResults(), 'a'), inOrder(0, 20)) << "the idle partition's new records were not read";
}

}  // namespace
}  // namespace weir
