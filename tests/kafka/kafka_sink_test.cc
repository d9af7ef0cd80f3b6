// KafkaSink against librdkafka's mock cluster, a process of its own reached over the
// Kafka protocol: what a job wrote is read back and checked against its input. The mock
// shows what aborted transactions wrote (docs/kafka.md), so exactly-once is checked
// there as the protocol weir follows (which transaction is committed, aborted or
// produced again, seen through sync points); WEIR_KAFKA_BROKERS names a real cluster to
// check it end to end with a read_committed reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/sync_point.h"
#include "support/error_of.h"
#include "support/fails_once_when.h"
#include "support/fresh_folder.h"
#include "support/kafka_cluster.h"
#include "support/operator_metrics.h"
#include "weir/data_generator_source.h"
#include "weir/kafka_sink.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using namespace weir::test;
namespace fs = std::filesystem;

// Kafka's murmur2 partitioner (the Java client's default for keyed records), written
// from Kafka's Utils.murmur2 and Utils.toPositive: the partition a key must land on.
int32_t javaPartitionOf(const std::string& key, int32_t partitions) {
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  const size_t length = key.size();
  uint32_t h = 0x9747b28c ^ static_cast<uint32_t>(length);
  size_t i = 0;
  for (; i + 4 <= length; i += 4) {
    uint32_t k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (static_cast<uint32_t>(data[i + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (length % 4) {
    case 3: h ^= static_cast<uint32_t>(data[i + 2]) << 16; [[fallthrough]];
    case 2: h ^= static_cast<uint32_t>(data[i + 1]) << 8; [[fallthrough]];
    case 1: h ^= data[i]; h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>((h & 0x7fffffff) % static_cast<uint32_t>(partitions));
}

struct KeyOf : SerializationSchema<int64_t> {
  std::string serialize(const int64_t& n) override { return "key-" + std::to_string(n % 101); }
};
struct ValueOf : SerializationSchema<int64_t> {
  std::string serialize(const int64_t& n) override { return std::to_string(n); }
};

KafkaSink<int64_t>::Builder numbersInto(const KafkaCluster& cluster, const std::string& topic) {
  return KafkaSink<int64_t>::builder()
      .setBootstrapServers(cluster.bootstrapServers())
      .setRecordSerializer(KafkaRecordSerializationSchema<int64_t>::builder()
                               .setTopic(topic)
                               .setKeySerializationSchema(KeyOf())
                               .setValueSerializationSchema(ValueOf())
                               .build());
}

// How often each number of [0, n) is in `topic`, and the numbers outside it.
struct Tally {
  std::map<int64_t, int> copies;
  int64_t missing = 0, doubled = 0, foreign = 0;
  std::vector<int64_t> firstMissing;  // up to 10, for the failure message
};
Tally tally(const KafkaCluster& cluster, const std::string& topic, int64_t n) {
  Tally t;
  for (const auto& r : readAll(cluster.bootstrapServers(), topic)) {
    const int64_t v = std::stoll(r.value);
    if (v < 0 || v >= n) ++t.foreign;
    ++t.copies[v];
  }
  for (int64_t i = 0; i < n; ++i) {
    auto it = t.copies.find(i);
    if (it == t.copies.end()) {
      if (++t.missing <= 10) t.firstMissing.push_back(i);
    }
    else if (it->second > 1) ++t.doubled;
  }
  return t;
}

// Numbers 0..n-1 at `rate` per second over `parallelism` subtasks.
DataStream<int64_t> numbers(StreamExecutionEnvironment& env, int64_t n, double rate) {
  return env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                        WatermarkStrategy<int64_t>::noWatermarks(), "numbers");
}

// Fails the job once, when number `at` passes (at the source's rate, checkpoints have
// completed by then).
struct FailOnce : RichMapFunction<int64_t, int64_t> {
  explicit FailOnce(int64_t at, std::shared_ptr<std::atomic<int>> failures) : at_(at), failures_(std::move(failures)) {}
  int64_t map(const int64_t& n) override {
    if (n == at_ && failures_->fetch_add(1) == 0) throw std::runtime_error("injected failure");
    return n;
  }
  int64_t at_;
  std::shared_ptr<std::atomic<int>> failures_;
};

TEST(KafkaSink, NoneWritesEveryRecordWithItsTopicKeyHeadersAndTheJavaClientsPartition) {
  KafkaCluster cluster;
  cluster.createTopic("even", 4);
  cluster.createTopic("odd", 3);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  auto schema = KafkaRecordSerializationSchema<int64_t>::builder()
                    .setTopicSelector([](const int64_t& n) { return n % 2 == 0 ? "even" : "odd"; })
                    .setKeySerializationSchema(KeyOf())
                    .setValueSerializationSchema(ValueOf())
                    .setHeaderProvider([](const int64_t& n) {
                      return std::vector<std::pair<std::string, std::optional<std::string>>>{
                          {"square", std::to_string(n * n)}};
                    })
                    .build();
  numbers(env, 5000, 1e9).sinkTo(KafkaSink<int64_t>::builder()
                                     .setBootstrapServers(cluster.bootstrapServers())
                                     .setRecordSerializer(schema)
                                     .build());
  env.execute("none");
  for (auto [topic, partitions] : {std::pair{"even", 4}, std::pair{"odd", 3}}) {
    std::set<int64_t> seen;
    for (const auto& r : readAll(cluster.bootstrapServers(), topic)) {
      const int64_t n = std::stoll(r.value);
      EXPECT_EQ(n % 2 == 0, std::string(topic) == "even") << n;
      EXPECT_EQ(r.key, "key-" + std::to_string(n % 101));
      EXPECT_EQ(r.partition, javaPartitionOf(r.key, partitions)) << "key " << r.key;
      ASSERT_EQ(r.headers.size(), 1u);
      EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"square", std::to_string(n * n)}));
      EXPECT_TRUE(seen.insert(n).second) << n << " written twice";
    }
    EXPECT_EQ(seen.size(), 2500u) << topic;
  }
}

// Every record a completed checkpoint covers was acknowledged by the broker before the
// checkpoint completed: a failure after it loses nothing (the rest is written again).
TEST(KafkaSink, AtLeastOnceLosesNothingAcrossAFailure) {
  constexpr int64_t kRecords = 40000;
  KafkaCluster cluster;
  cluster.createTopic("out", 4);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.enableCheckpointing(50ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  auto failures = std::make_shared<std::atomic<int>>(0);
  numbers(env, kRecords, 40000)
      .map(FailOnce(kRecords / 2, failures))
      .sinkTo(numbersInto(cluster, "out").setDeliveryGuarantee(DeliveryGuarantee::AT_LEAST_ONCE).build());
  EXPECT_EQ(env.execute("at least once").status, JobStatus::FINISHED);
  EXPECT_EQ(failures->load(), 2) << "the failing record is seen once before the failure and once replayed";
  Tally t = tally(cluster, "out", kRecords);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.foreign, 0);
}

// Produce requests that fail: retriable errors are retried by the producer; others fail
// the checkpoint and the job, which resumes and writes again: nothing is lost.
TEST(KafkaSink, ProduceErrorsAreRetriedOrFailTheJobButLoseNothing) {
  constexpr int64_t kRecords = 20000;
  constexpr int kProduce = 0;
  // Retried, then refused outright.
  for (auto [code, name] : {std::pair{7, "REQUEST_TIMED_OUT"}, std::pair{87, "INVALID_RECORD"}}) {
    KafkaCluster cluster;
    if (!cluster.isMock()) GTEST_SKIP() << "injects errors into the mock cluster";
    cluster.createTopic("out", 2);
    cluster.pushRequestErrors(kProduce, code, 3);
    StreamExecutionEnvironment env;
    env.enableCheckpointing(50ms);
    env.setRestartStrategy(RestartStrategy::fixedDelayRestart(5, 0ms));
    numbers(env, kRecords, 40000)
        .sinkTo(numbersInto(cluster, "out")
                    .setDeliveryGuarantee(DeliveryGuarantee::AT_LEAST_ONCE)
                    // One request in flight: Debian's mock cluster (librdkafka 2.0.2)
                    // does not check the idempotent producer's sequence numbers, so it
                    // accepts a batch sent behind a failed one, which librdkafka then
                    // takes as proof that the failed one was written ("implicitly
                    // acked"); a real broker refuses such a batch (docs/kafka.md).
                    .setProperty("max.in.flight.requests.per.connection", "1")
                    .build());
    EXPECT_EQ(env.execute("produce errors").status, JobStatus::FINISHED) << name;
    Tally t = tally(cluster, "out", kRecords);
    EXPECT_EQ(t.missing, 0) << name << ": missing " << ::testing::PrintToString(t.firstMissing);
  }
}

TEST(KafkaSink, ExactlyOnceWithoutFailuresWritesEachRecordOnce) {
  constexpr int64_t kRecords = 30000;
  KafkaCluster cluster;
  cluster.createTopic("out", 4);
  fs::path dir = freshFolder("kafka-sink-exactly-once");
  fs::create_directories(dir / "checkpoints");
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(restOnAnyPort());
  env.setParallelism(3);
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  numbers(env, kRecords, 40000)
      .sinkTo(numbersInto(cluster, "out")
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionalIdPrefix("once")
                  .build());
  auto client = env.executeAsync("exactly once");
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  Tally t = tally(cluster, "out", kRecords);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.doubled, 0);
  EXPECT_EQ(t.foreign, 0);
  // The sink's metrics agree with what its transaction markers say happened.
  int committed = 0, aborted = 0;
  for (const auto& marker : detail::findKafkaTransactions((dir / "checkpoints").string())) {
    committed += marker.state == "committed" ? 1 : 0;
    aborted += marker.state == "aborted" ? 1 : 0;
  }
  EXPECT_GE(committed, 3);
  EXPECT_EQ(aborted, 0);
  std::map<std::string, double> m;
  auto settled = [&] {
    m = operatorMetrics(client);
    // The last sample of a finished job comes up to an interval after its end.
    return sumOf(m, ".numRecordsSend").sum == kRecords && sumOf(m, ".KafkaSink.transactionsCommitted").sum == committed;
  };
  for (int i = 0; i < 50 && !settled(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sumOf(m, ".numRecordsSend").count, 3) << ::testing::PrintToString(m);
  EXPECT_EQ(sumOf(m, ".numRecordsSend").sum, kRecords);
  EXPECT_EQ(sumOf(m, ".numRecordsSendErrors").sum, 0);
  EXPECT_EQ(sumOf(m, ".KafkaSink.transactionsCommitted").sum, committed);
  EXPECT_EQ(sumOf(m, ".KafkaSink.transactionsAborted").sum, 0);
  fs::remove_all(dir);
}

// EXACTLY_ONCE in BATCH (docs/kafka.md, "In a batch job"): each subtask's transaction
// spans the sink's stage and is committed once every subtask of the stage has ended its
// input. Subtask 2 fails once subtask 1 has pre-committed: nothing is committed by the
// failed run, the re-run stage commits each subtask's transaction once, and no record is
// missing (a real cluster, read_committed, shows none twice; the mock also shows what
// the aborted transaction wrote). No transaction marker is written: a batch job
// restores nothing.
TEST(KafkaSink, ExactlyOnceInBatchCommitsOnceAtTheEndOfTheStageThroughAReRun) {
  constexpr int64_t kRecords = 20000;
  KafkaCluster cluster;
  cluster.createTopic("out", 2);
  const fs::path cwd = freshFolder("kafka-sink-batch");
  // Where a marker folder relative to no checkpoint directory would go.
  struct InFolder {
    fs::path before = fs::current_path();
    explicit InFolder(const fs::path& folder) { fs::current_path(folder); }
    ~InFolder() { fs::current_path(before); }
  };
  std::optional<InFolder> inCwd(std::in_place, cwd);
  struct Shared {
    std::mutex mutex;
    std::vector<std::string> events;  // "precommit <id>", "fail", "commit <id>"
  };
  auto shared = std::make_shared<Shared>();
  auto log = [shared](const std::string& event) {
    std::lock_guard lock(shared->mutex);
    shared->events.push_back(event);
  };
  core::ScopedSyncPoint precommit("KafkaSink::AfterPreCommit",
                                  [&](void* arg) { log("precommit " + *static_cast<std::string*>(arg)); });
  core::ScopedSyncPoint commit("KafkaSink::AfterCommit", [&](void* arg) { log("commit " + *static_cast<std::string*>(arg)); });
  FailsOnceWhen<int64_t> failing;
  failing.ready = [shared] {
    std::lock_guard lock(shared->mutex);
    return std::find(shared->events.begin(), shared->events.end(), "precommit batch-0-1") != shared->events.end();
  };
  failing.onFailure = [log] { log("fail"); };
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(1, 0ms));
  numbers(env, kRecords, 1e9)
      .rebalance()
      .map(failing)
      .name("failing")
      .sinkTo(numbersInto(cluster, "out")
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionalIdPrefix("batch")
                  .build());
  testing::internal::CaptureStderr();
  const JobStatus status = env.execute("batch").status;
  const std::string stderrText = testing::internal::GetCapturedStderr();
  inCwd.reset();
  EXPECT_EQ(status, JobStatus::FINISHED) << stderrText;
  std::vector<std::string> events;
  {
    std::lock_guard lock(shared->mutex);
    events = shared->events;
  }
  const auto failedAt = std::find(events.begin(), events.end(), "fail");
  ASSERT_NE(failedAt, events.end()) << "the failure was never injected";
  ASSERT_NE(std::find(events.begin(), failedAt, "precommit batch-0-1"), failedAt)
      << "subtask 1 had not pre-committed when subtask 2 failed: " << ::testing::PrintToString(events);
  std::multiset<std::string> commits, commitsBeforeTheFailure;
  for (auto e = events.begin(); e != events.end(); ++e)
    if (e->rfind("commit ", 0) == 0) (e < failedAt ? commitsBeforeTheFailure : commits).insert(e->substr(7));
  EXPECT_TRUE(commitsBeforeTheFailure.empty()) << "the failed run committed " << ::testing::PrintToString(commitsBeforeTheFailure);
  EXPECT_EQ(commits, (std::multiset<std::string>{"batch-0-1", "batch-1-1"}));
  EXPECT_NE(stderrText.find("re-running stage 2/2"), std::string::npos) << stderrText;
  Tally t = tally(cluster, "out", kRecords);
  EXPECT_EQ(t.missing, 0) << ::testing::PrintToString(t.firstMissing);
  EXPECT_EQ(t.foreign, 0);
  if (!cluster.isMock()) EXPECT_EQ(t.doubled, 0);
  EXPECT_TRUE(fs::is_empty(cwd)) << "a batch job wrote transaction markers";
  fs::remove_all(cwd);
}

TEST(KafkaSink, RecordsTheBrokerRefusesAreCountedAsSendErrors) {
  KafkaCluster cluster;
  if (!cluster.isMock()) GTEST_SKIP() << "injects errors into the mock cluster";
  cluster.createTopic("out", 1);
  cluster.pushRequestErrors(0, 87, 50);  // Produce: INVALID_RECORD, not retried
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(restOnAnyPort());
  env.setRestartStrategy(RestartStrategy::noRestart());
  numbers(env, 1000, 1e9).sinkTo(numbersInto(cluster, "out").setDeliveryGuarantee(DeliveryGuarantee::AT_LEAST_ONCE).build());
  auto client = env.executeAsync("send errors");
  // The failure says how many records the delivery reports had refused by then.
  const std::string failure = errorOf([&] { client.wait(); });
  std::smatch said;
  ASSERT_TRUE(std::regex_search(failure, said, std::regex("([0-9]+) records? (was|were) not delivered"))) << failure;
  const double refused = std::stod(said[1]);
  std::map<std::string, double> m;
  for (int i = 0; i < 50 && sumOf(m = operatorMetrics(client), ".numRecordsSendErrors").sum < refused; ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_GE(sumOf(m, ".numRecordsSendErrors").sum, refused) << ::testing::PrintToString(m);
  EXPECT_LE(sumOf(m, ".numRecordsSendErrors").sum, sumOf(m, ".numRecordsSend").sum);
  EXPECT_EQ(client.getJobStatus(), JobStatus::FAILED);
}

TEST(KafkaSink, BadConfigurationIsAOneLineError) {
  KafkaCluster cluster;
  cluster.createTopic("out", 1);
  EXPECT_EQ(errorOf([&] { numbersInto(cluster, "out").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).build(); }),
            "kafka sink: EXACTLY_ONCE needs setTransactionalIdPrefix(...): the transactional ids are made from it");
  EXPECT_EQ(errorOf([&] { KafkaSink<int64_t>::builder().setBootstrapServers("x:1").build(); }),
            "kafka sink: setRecordSerializer(...) is required");
  EXPECT_EQ(errorOf([&] { numbersInto(cluster, "out").setProperty("linger.ms", "soon").build(); })
                .rfind("kafka sink: property 'linger.ms' = 'soon': Invalid value for configuration property", 0),
            0u);
  EXPECT_EQ(errorOf([&] { numbersInto(cluster, "out").setProperty("transactional.id", "t").build(); }),
            "kafka sink: property 'transactional.id' is weir's to set: use setTransactionalIdPrefix(...)");
  EXPECT_EQ(errorOf([&] { KafkaRecordSerializationSchema<int64_t>::builder().setTopic("t").build(); }),
            "kafka record serialization schema: setValueSerializationSchema(...) is required");

  auto exactlyOnce = [&](StreamExecutionEnvironment& env, const char* timeout) {
    numbers(env, 10, 1e9).sinkTo(numbersInto(cluster, "out")
                                     .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                                     .setTransactionalIdPrefix("p")
                                     .setProperty("transaction.timeout.ms", timeout)
                                     .build());
  };
  {
    StreamExecutionEnvironment env;
    exactlyOnce(env, "60000");
    EXPECT_EQ(errorOf([&] { env.execute("no checkpoints"); }),
              "kafka sink: EXACTLY_ONCE commits its transactions when checkpoints complete, and the job takes none: "
              "enable checkpointing (execution.checkpointing.interval), run the bounded job in BATCH, or use "
              "AT_LEAST_ONCE");
  }
  {
    StreamExecutionEnvironment env;
    env.enableCheckpointing(50000ms);
    env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 20000ms));
    exactlyOnce(env, "60000");
    EXPECT_EQ(errorOf([&] { env.execute("short transactions"); }),
              "kafka sink: transaction.timeout.ms (60000 ms) is shorter than the checkpoint interval (50000 ms) plus "
              "the restart delay (20000 ms): a transaction could expire before the checkpoint that commits it; raise it");
  }
}

// ---- exactly once through failures at each step of the protocol (sync points)

// What the sink did while a job ran, as its sync points told.
struct Protocol {
  std::mutex mutex;
  std::vector<std::string> recovered;          // "<id> <branch>"
  std::vector<std::string> abortedLingering;   // ids
};

struct FailurePoint {
  std::string name;
  std::string syncPoint;  // where the job fails, at its 3rd hit
  // What the restore does with the transaction the failure interrupted.
  std::string expectedBranch;  // "" none: it was aborted (its checkpoint never completed)
  friend void PrintTo(const FailurePoint& f, std::ostream* os) { *os << f.name; }
};
class KafkaSinkFailure : public ::testing::TestWithParam<FailurePoint> {};

TEST_P(KafkaSinkFailure, TheInterruptedTransactionIsAbortedCommittedOrProducedAgain) {
  constexpr int64_t kRecords = 40000;  // 2 s: the failure comes while the input flows
  const FailurePoint& point = GetParam();
  KafkaCluster cluster;
  cluster.createTopic("out", 2);
  fs::path dir = freshFolder("kafka-sink-failure-" + point.name);
  fs::create_directories(dir / "checkpoints");
  Protocol protocol;
  std::string interrupted;  // the transaction the failure hit; guarded by protocol.mutex
  int hits = 0;
  core::ScopedSyncPoint fail(point.syncPoint, [&](void* arg) {
    std::lock_guard lock(protocol.mutex);
    if (++hits != 3) return;
    interrupted = *static_cast<std::string*>(arg);
    throw std::runtime_error("injected failure at " + point.syncPoint);
  });
  core::ScopedSyncPoint recovered("KafkaSink::Recovered", [&](void* arg) {
    std::lock_guard lock(protocol.mutex);
    protocol.recovered.push_back(*static_cast<std::string*>(arg));
  });
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  numbers(env, kRecords, 20000)
      .sinkTo(numbersInto(cluster, "out")
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionalIdPrefix("steps")
                  .build());
  EXPECT_EQ(env.execute("failures").status, JobStatus::FINISHED);
  std::lock_guard lock(protocol.mutex);
  ASSERT_FALSE(interrupted.empty()) << "the failure was never injected";
  std::vector<std::string> ofInterrupted;
  for (const auto& r : protocol.recovered)
    if (r.rfind(interrupted + " ", 0) == 0) ofInterrupted.push_back(r.substr(interrupted.size() + 1));
  if (point.expectedBranch.empty()) {
    EXPECT_TRUE(ofInterrupted.empty()) << "a transaction whose checkpoint never completed was recovered";
  } else {
    EXPECT_EQ(ofInterrupted, std::vector<std::string>{point.expectedBranch});
  }
  Tally t = tally(cluster, "out", kRecords);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.foreign, 0);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, KafkaSinkFailure,
    ::testing::Values(
        // Pre-committed, its checkpoint not complete: aborted, its records written again
        // from the source by the next transaction.
        FailurePoint{"AfterPreCommit", "KafkaSink::AfterPreCommit", ""},
        // Its checkpoint completed, the commit not sent: the marker says so, and its
        // records from the checkpoint are produced again.
        FailurePoint{"BeforeCommit", "KafkaSink::BeforeCommit", "produced-again"},
        // Committed, but the marker not yet saying so: the broker decides. The mock never
        // shows offsets committed in a transaction, so there the records are produced
        // again; a real broker shows the commit.
        FailurePoint{"AfterCommit", "KafkaSink::AfterCommit",
                     std::getenv("WEIR_KAFKA_BROKERS") ? "committed-by-broker" : "produced-again"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace weir
