// RedisSink against a real redis-server (tests/support/redis_server.h): commands that are
// not idempotent (INCRBY) counted through failures, exactly once and at least once (the
// control must count some twice), each step of the commit interrupted, a fresh start
// over an old fence, a server restarted under a running job, and one-line errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/sync_point.h"
#include "support/error_of.h"
#include "support/redis_server.h"
#include "weir/data_generator_source.h"
#include "weir/redis_sink.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using test::errorOf;
using test::RedisClient;
using test::RedisServer;

constexpr int64_t kKeys = 10;

RedisServer& server() {
  static RedisServer instance;
  return instance;
}

int64_t integer(const std::string& key) {
  RedisClient client(server().port());
  test::RedisValue v = client.command({"GET", key});
  return v.type == test::RedisValue::kNil ? 0 : std::stoll(v.text);
}

DataStream<int64_t> numbers(StreamExecutionEnvironment& env, int64_t n, double rate) {
  return env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                        WatermarkStrategy<int64_t>::noWatermarks(), "numbers");
}

struct FailOnce : RichMapFunction<int64_t, int64_t> {
  FailOnce(int64_t at, std::shared_ptr<std::atomic<int>> failures) : at_(at), failures_(std::move(failures)) {}
  int64_t map(const int64_t& n) override {
    if (n == at_ && failures_->fetch_add(1) == 0) throw std::runtime_error("injected failure");
    return n;
  }
  int64_t at_;
  std::shared_ptr<std::atomic<int>> failures_;
};

// Counts under `prefix`: <prefix>:count:<n % 10> and <prefix>:sum, by INCRBY (not
// idempotent: a command applied twice shows).
RedisSink<int64_t>::Builder counting(const std::string& prefix) {
  return RedisSink<int64_t>::builder()
      .setAddress(server().address())
      .setCommandBuilder([prefix](const int64_t& n, RedisCommands& out) {
        out.add({"INCRBY", prefix + ":count:" + std::to_string(n % kKeys), "1"});
        out.add({"INCRBY", prefix + ":sum", std::to_string(n)});
      })
      .setTransactionIdPrefix(prefix);
}

// What the counts should be after numbers 0..n-1, each once.
void expectCountedOnce(const std::string& prefix, int64_t n) {
  EXPECT_EQ(integer(prefix + ":sum"), n * (n - 1) / 2) << prefix;
  for (int64_t k = 0; k < kKeys; ++k) EXPECT_EQ(integer(prefix + ":count:" + std::to_string(k)), n / kKeys) << k;
}

TEST(RedisSink, AtLeastOnceAppliesEveryCommandOfEveryRecord) {
  constexpr int64_t kRecords = 20000;
  RedisClient(server().port()).command({"DEL", "plain:stream", "plain:hash"});
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  numbers(env, kRecords, 1e9)
      .sinkTo(RedisSink<int64_t>::builder()
                  .setAddress(server().address())
                  .setCommandBuilder([](const int64_t& n, RedisCommands& out) {
                    out.add({"XADD", "plain:stream", "*", "n", std::to_string(n)});
                    out.add({"HSET", "plain:hash", std::to_string(n), std::to_string(n * 10)});
                  })
                  .setBatchSize(300)
                  .build());
  env.execute("plain");
  RedisClient client(server().port());
  EXPECT_EQ(client.xlen("plain:stream"), kRecords);
  EXPECT_EQ(client.command({"HLEN", "plain:hash"}).text, std::to_string(kRecords));
  EXPECT_EQ(client.command({"HGET", "plain:hash", "12345"}).text, "123450");
}

// The same job with one failure a second in and checkpoints every `interval`.
int runWithAFailure(const std::string& prefix, DeliveryGuarantee guarantee, std::chrono::milliseconds interval = 200ms) {
  constexpr int64_t kRecords = 20000;
  auto failures = std::make_shared<std::atomic<int>>(0);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.enableCheckpointing(interval);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  numbers(env, kRecords, 10000)
      .map(FailOnce(kRecords / 4, failures))
      .sinkTo(counting(prefix).setDeliveryGuarantee(guarantee).setBatchSize(10).build());
  EXPECT_EQ(env.execute(prefix).status, JobStatus::FINISHED);
  return failures->load();
}

TEST(RedisSink, ExactlyOnceAppliesEachRecordOnceThroughAFailure) {
  EXPECT_GE(runWithAFailure("once", DeliveryGuarantee::EXACTLY_ONCE), 1) << "the failure was never injected";
  expectCountedOnce("once", 20000);
}

// The control: at least once under the same failure counts some records twice, so the
// test above can tell. No checkpoint comes before the failure here: with one every 200 ms,
// one can come just before it (the failure is 1 s in) and leave nothing to replay.
TEST(RedisSink, AtLeastOnceControlCountsSomeRecordsTwiceThroughAFailure) {
  EXPECT_GE(runWithAFailure("control", DeliveryGuarantee::AT_LEAST_ONCE, 30s), 1);
  EXPECT_GT(integer("control:sum"), int64_t{20000} * 19999 / 2) << "nothing was replayed: the control cannot tell";
}

// ---- each step of the commit interrupted (cold sync points)

struct FailurePoint {
  std::string name;
  std::string syncPoint;  // where the job fails, at its 3rd hit
  friend void PrintTo(const FailurePoint& f, std::ostream* os) { *os << f.name; }
};
class RedisSinkFailure : public ::testing::TestWithParam<FailurePoint> {};

TEST_P(RedisSinkFailure, TheInterruptedCommitIsAppliedOnce) {
  constexpr int64_t kRecords = 20000;
  const FailurePoint& point = GetParam();
  const std::string prefix = "steps" + point.name;
  std::mutex mutex;
  std::string interrupted;
  int hits = 0;
  core::ScopedSyncPoint fail(point.syncPoint, [&](void* arg) {
    std::lock_guard lock(mutex);
    if (++hits != 3) return;
    interrupted = *static_cast<std::string*>(arg);
    throw std::runtime_error("injected failure at " + point.syncPoint);
  });
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  numbers(env, kRecords, 10000).sinkTo(counting(prefix).setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).build());
  EXPECT_EQ(env.execute(prefix).status, JobStatus::FINISHED);
  std::lock_guard lock(mutex);
  ASSERT_FALSE(interrupted.empty()) << "the failure was never injected";
  expectCountedOnce(prefix, kRecords);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, RedisSinkFailure,
    ::testing::Values(
        // Prepared, its checkpoint not complete: its commands are taken again from the source.
        FailurePoint{"AfterPrepare", "RedisSink::AfterPrepare"},
        // Its checkpoint completed, nothing sent: the restore applies it.
        FailurePoint{"BeforeCommit", "RedisSink::BeforeCommit"},
        // Half its commands queued in a MULTI that never reaches EXEC: none applied; the
        // restore applies them all.
        FailurePoint{"InMulti", "RedisSink::InMulti"},
        // Applied, the committer not told: the restore finds the fence at its number.
        FailurePoint{"AfterCommit", "RedisSink::AfterCommit"}),
    [](const auto& info) { return info.param.name; });

// A job that starts afresh with the prefix of one that ran before: the old fence must
// not swallow the new job's first commits.
TEST(RedisSink, AFreshStartIsNotHeldBackByAnOldFence) {
  for (int run = 1; run <= 2; ++run) {
    StreamExecutionEnvironment env;
    env.enableCheckpointing(50ms);
    numbers(env, 2000, 10000).sinkTo(counting("again").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).build());
    env.execute("again");
    EXPECT_EQ(integer("again:sum"), run * int64_t{2000} * 1999 / 2) << "run " << run;
  }
}

// A server that stops under a running at-least-once job and comes back: what was not
// acknowledged is sent again, and nothing is lost.
TEST(RedisSink, AtLeastOnceRidesOutAServerRestart) {
  constexpr int64_t kRecords = 6000;
  RedisClient(server().port()).command({"DEL", "restarted"});
  std::thread restart;
  std::atomic<bool> stopped{false};
  StreamExecutionEnvironment env;
  env.setRestartStrategy(RestartStrategy::noRestart());
  numbers(env, kRecords, 3000)
      .map([&](const int64_t& n) {
        if (n == kRecords / 2 && !stopped.exchange(true)) {
          server().stop();
          restart = std::thread([] {
            std::this_thread::sleep_for(1500ms);
            server().start();
          });
        }
        return n;
      })
      .sinkTo(RedisSink<int64_t>::builder()
                  .setAddress(server().address())
                  .setCommandBuilder([](const int64_t& n, RedisCommands& out) {
                    out.add({"HSET", "restarted", std::to_string(n), "1"});
                  })
                  .setBatchSize(50)
                  .setMaxRetries(5)
                  .build());
  JobStatus status = JobStatus::FAILED;
  std::string error;
  try {
    status = env.execute("restarted").status;
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (restart.joinable()) restart.join();
  if (!server().running()) server().start();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(status, JobStatus::FINISHED) << error;
  EXPECT_EQ(RedisClient(server().port()).command({"HLEN", "restarted"}).text, std::to_string(kRecords));
}

// ---- bad input: one line naming the server, the object and the reason

std::string executeError(RedisSink<int64_t> sink, bool checkpoints = false,
                         RuntimeExecutionMode mode = RuntimeExecutionMode::STREAMING) {
  StreamExecutionEnvironment env;
  env.setRuntimeMode(mode);
  if (checkpoints) env.enableCheckpointing(100ms);
  env.setRestartStrategy(RestartStrategy::noRestart());
  env.fromCollection(std::vector<int64_t>{1, 2, 3}).sinkTo(sink);
  return errorOf([&] { env.execute("bad input"); });
}

RedisSink<int64_t>::Builder hset(const std::string& key) {
  return RedisSink<int64_t>::builder()
      .setAddress(server().address())
      .setCommandBuilder([key](const int64_t& n, RedisCommands& out) { out.add({"HSET", key, std::to_string(n), "1"}); });
}

TEST(RedisSink, BadInputIsAOneLineErrorNamingTheServerAndTheReason) {
  const std::string who = "redis sink (" + server().address() + "): ";
  EXPECT_EQ(executeError(hset("h").setAddress("127.0.0.1:1").build()),
            "redis sink (127.0.0.1:1): cannot connect: Connection refused");

  RedisClient(server().port()).command({"SET", "a-string", "x"});
  EXPECT_EQ(executeError(hset("a-string").build()),
            "job 'bad input' failed: operator 'Sink' (subtask 1/1) failed: " + who + "record 1 of Sink (1/1): 'HSET a-string 1 1' was refused: WRONGTYPE Operation against a key holding "
                  "the wrong kind of value");

  RedisServer locked(RedisServer::Options{.password = "secret"});
  const std::string lockedWho = "redis sink (" + locked.address() + "): ";
  EXPECT_EQ(executeError(hset("h").setAddress(locked.address()).build()),
            lockedWho + "PING failed: NOAUTH Authentication required.");
  EXPECT_EQ(executeError(hset("h").setAddress(locked.address()).setPassword("wrong").build()),
            lockedWho + "authentication at '" + locked.address() +
                "' failed: WRONGPASS invalid username-password pair or user is disabled.");

  EXPECT_EQ(executeError(hset("h").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).setTransactionIdPrefix("p").build()),
            who + "EXACTLY_ONCE applies its commands when checkpoints complete, and the job takes none: enable "
                  "checkpointing (execution.checkpointing.interval) in a STREAMING job, or use AT_LEAST_ONCE");
  // A batch stage would hold every command until its end: refused, however it was chosen.
  for (auto mode : {RuntimeExecutionMode::BATCH, RuntimeExecutionMode::AUTOMATIC})
    EXPECT_EQ(executeError(hset("h").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).setTransactionIdPrefix("p").build(),
                           false, mode),
              who + "EXACTLY_ONCE applies a subtask's commands in one MULTI/EXEC when its checkpoint completes, and in "
                    "BATCH that is the end of its stage: the stage would hold every command it sends in memory; use "
                    "AT_LEAST_ONCE (a re-run stage sends its commands again) or STREAMING");
  EXPECT_EQ(errorOf([] { hset("h").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).build(); }),
            "redis sink: EXACTLY_ONCE needs setTransactionIdPrefix(...): the fence keys are named from it");
  EXPECT_EQ(errorOf([] { hset("h").setAddress("nowhere"); }), "redis sink: the address 'nowhere' is not host:port");
  EXPECT_EQ(errorOf([] { RedisSink<int64_t>::builder().build(); }), "redis sink: setCommandBuilder(...) is required");
}

}  // namespace
}  // namespace weir
