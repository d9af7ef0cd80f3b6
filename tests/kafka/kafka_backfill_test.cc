// A backfill, as a Flink user runs one: the live pipeline (Kafka in, event-time windows
// per key, Kafka out exactly once) over a bounded range of its topic, in BATCH
// (docs/batch.md). Against librdkafka's mock cluster in a process of its own; the output
// is read back and checked against a brute force over what the test produced.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/kafka_cluster.h"
#include "weir/kafka_sink.h"
#include "weir/kafka_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using namespace weir::test;

constexpr int64_t kClicks = 30000, kUsers = 101, kStart = 1'700'000'000'000, kWindow = 1000;

struct UserCount {
  std::string user;
  int64_t count = 0;
};
WEIR_STRUCT(UserCount, user, count);

// "user,window end,count".
struct AsLine : ProcessWindowFunction<UserCount, std::string, std::string, TimeWindow> {
  void process(const std::string& user, Context& ctx, std::span<const UserCount> counts,
               Collector<std::string>& out) override {
    for (const UserCount& c : counts) out.collect(user + "," + std::to_string(ctx.window().maxTimestamp()) + "," +
                                                  std::to_string(c.count));
  }
};

// Fails once, when its `at`-th record passes (in the source's stage).
struct FailOnce : RichMapFunction<std::string, std::string> {
  std::shared_ptr<std::atomic<int64_t>> seen;
  std::shared_ptr<std::atomic<bool>> failed;
  int64_t at = 0;
  std::string map(const std::string& user) override {
    if (seen->fetch_add(1) + 1 == at && !failed->exchange(true)) throw std::runtime_error("a flaky reader");
    return user;
  }
};

// Clicks of 101 users over 5 minutes of event time, their Kafka timestamps out of
// order within each partition, read in BATCH from the earliest to the latest offsets and
// counted per user and second, the counts written to Kafka exactly once. The source's
// stage fails once halfway: it is re-run, reading its bounded range again, and the
// window and sink stage runs once, so every count is the brute force's, once.
TEST(KafkaBackfill, ABoundedTopicCountedInBatchGivesTheBruteForcesWindowsOnceThroughAFailure) {
  KafkaCluster cluster;
  cluster.createTopic("clicks", 4);
  cluster.createTopic("counts", 2);
  std::vector<KafkaTestRecord> clicks;
  std::map<std::tuple<std::string, int64_t>, int64_t> expected;  // (user, window end) -> clicks
  for (int64_t i = 0; i < kClicks; ++i) {
    const std::string user = "user-" + std::to_string((i * 7919) % kUsers);
    const int64_t time = kStart + i * 10 - (i % 17) * 40;  // up to 640 ms early
    clicks.push_back({user, user, -1, time});
    ++expected[{user, time - time % kWindow + kWindow - 1}];
  }
  produce(cluster.bootstrapServers(), "clicks", clicks);

  auto seen = std::make_shared<std::atomic<int64_t>>(0);
  auto failed = std::make_shared<std::atomic<bool>>(false);
  FailOnce flaky;
  flaky.seen = seen;
  flaky.failed = failed;
  flaky.at = kClicks / 2;
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(1, 0ms));
  env.fromSource(KafkaSource<std::string>::builder()
                     .setBootstrapServers(cluster.bootstrapServers())
                     .setTopics({"clicks"})
                     .setStartingOffsets(OffsetsInitializer::earliest())
                     .setBounded(OffsetsInitializer::latest())
                     .setValueOnlyDeserializer(SimpleStringSchema())
                     .build(),
                 WatermarkStrategy<std::string>::forBoundedOutOfOrderness(1s), "clicks")
      .map(flaky)
      .name("flaky")
      .map([](const std::string& user) { return UserCount{user, 1}; })
      .keyBy([](const UserCount& c) { return c.user; })
      .window(TumblingEventTimeWindows::of(std::chrono::milliseconds(kWindow)))
      .reduce([](const UserCount& a, const UserCount& b) { return UserCount{a.user, a.count + b.count}; }, AsLine{})
      .name("per second")
      .sinkTo(KafkaSink<std::string>::builder()
                  .setBootstrapServers(cluster.bootstrapServers())
                  .setRecordSerializer(KafkaRecordSerializationSchema<std::string>::builder()
                                           .setTopic("counts")
                                           .setValueSerializationSchema(SimpleStringSchema())
                                           .build())
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionalIdPrefix("backfill")
                  .build());
  testing::internal::CaptureStderr();
  JobClient client = env.executeAsync("backfill");
  const JobStatus status = client.wait().status;
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(status, JobStatus::FINISHED) << err;
  EXPECT_TRUE(failed->load());
  EXPECT_EQ(client.getMetrics().numRestarts, 1);
  EXPECT_NE(err.find("stage 1/2 ('Source: clicks -> flaky -> Map') attempt 1 failed"), std::string::npos) << err;
  // The source's stage read its range once and then again, the second time whole.
  EXPECT_GE(seen->load(), kClicks + kClicks / 2);
  EXPECT_LE(seen->load(), 2 * kClicks);

  std::map<std::tuple<std::string, int64_t>, int64_t> got;
  int64_t lines = 0;
  for (const auto& r : readAll(cluster.bootstrapServers(), "counts")) {
    ++lines;
    const size_t a = r.value.find(','), b = r.value.rfind(',');
    ASSERT_NE(a, b) << r.value;
    const auto key = std::tuple<std::string, int64_t>{r.value.substr(0, a), std::stoll(r.value.substr(a + 1, b - a - 1))};
    EXPECT_TRUE(got.emplace(key, std::stoll(r.value.substr(b + 1))).second) << "twice: " << r.value;
  }
  EXPECT_EQ(lines, static_cast<int64_t>(expected.size()));
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace weir
