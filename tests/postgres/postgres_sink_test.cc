// PostgresSink against a real PostgreSQL server (tests/support/postgres_server.h): both
// guarantees through failures (an at-least-once control that must show duplicates),
// each step of the two-phase commit interrupted, a server restarted under a running
// job, batches by size and by interval, and one-line errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/sync_point.h"
#include "support/error_of.h"
#include "support/fails_once_when.h"
#include "support/fresh_folder.h"
#include "support/gated_source.h"
#include "support/postgres_server.h"
#include "support/weir_process.h"
#include "weir/data_generator_source.h"
#include "weir/postgres_sink.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using test::errorOf;
using test::PostgresServer;

// One server for the whole binary; each test has tables of its own.
PostgresServer& server() {
  static PostgresServer instance;
  return instance;
}

// A fresh table `name` (id bigint, v bigint) with the given constraint.
void createTable(const std::string& name, const std::string& extra = "") {
  server().sql("DROP TABLE IF EXISTS " + name + "; CREATE TABLE " + name + " (id bigint, v bigint" + extra + ")");
}

int64_t count(const std::string& query) { return std::stoll(server().value(query)); }

// Numbers 0..n-1 at `rate` per second.
DataStream<int64_t> numbers(StreamExecutionEnvironment& env, int64_t n, double rate) {
  return env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                        WatermarkStrategy<int64_t>::noWatermarks(), "numbers");
}

// Numbers 0..n-1 from a collection.
DataStream<int64_t> sequence(StreamExecutionEnvironment& env, int64_t n) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  return env.fromCollection(std::move(all));
}

// Fails the job once, when number `at` passes.
struct FailOnce : RichMapFunction<int64_t, int64_t> {
  FailOnce(int64_t at, std::shared_ptr<std::atomic<int>> failures) : at_(at), failures_(std::move(failures)) {}
  int64_t map(const int64_t& n) override {
    if (n == at_ && failures_->fetch_add(1) == 0) throw std::runtime_error("injected failure");
    return n;
  }
  int64_t at_;
  std::shared_ptr<std::atomic<int>> failures_;
};

PostgresSink<int64_t>::Builder insertInto(const std::string& table, const std::string& database = "postgres") {
  return PostgresSink<int64_t>::builder()
      .setConnectionString(server().connectionString(database))
      .setSql("INSERT INTO " + table + " (id, v) VALUES (?, ?)")
      .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) {
        ps.setLong(1, n);
        ps.setLong(2, n * 10);
      });
}

int64_t preparedLeft(const std::string& prefix) {
  return count("SELECT count(*) FROM pg_prepared_xacts WHERE starts_with(gid, '" + prefix + "-')");
}

TEST(PostgresSink, QuestionMarksBecomeNumberedParametersOutsideQuotes) {
  detail::PostgresSinkConfig c;
  c.connectionString = "host=127.0.0.1";
  c.sql = "INSERT INTO t (a, b, \"c?\") VALUES (?, '?''?', ?)";
  c.validate();
  EXPECT_EQ(c.statement, "INSERT INTO t (a, b, \"c?\") VALUES ($1, '?''?', $2)");
  EXPECT_EQ(c.parameterCount, 2);
  c.sql = "SELECT $2::jsonb ? $1";  // PostgreSQL's own form keeps its ? (a jsonb operator)
  c.validate();
  EXPECT_EQ(c.statement, c.sql);
  EXPECT_EQ(c.parameterCount, 2);
}

TEST(PostgresSink, PreparedStatementSendsEachTypeAsTheServerReadsIt) {
  server().sql("DROP TABLE IF EXISTS typed; CREATE TABLE typed (s text, i int, l bigint, d double precision, "
               "b boolean, t timestamptz, n text)");
  StreamExecutionEnvironment env;
  env.fromElements<int>({1})
      .sinkTo(PostgresSink<int>::builder()
                  .setConnectionString(server().connectionString())
                  .setSql("INSERT INTO typed VALUES (?, ?, ?, ?, ?, ?, ?)")
                  .setStatementBuilder([](PreparedStatement& ps, const int&) {
                    ps.setString(1, "it's");
                    ps.setInt(2, -7);
                    ps.setLong(3, 9007199254740993);
                    ps.setDouble(4, 0.1);
                    ps.setBoolean(5, true);
                    ps.setTimestamp(6, 1765000000125);  // 2025-12-06 05:46:40.125 UTC
                    ps.setNull(7);
                  })
                  .build());
  env.execute("typed");
  auto rows = server().sql("SELECT s, i, l, d, b, (extract(epoch from t) * 1000)::bigint, n IS NULL FROM typed");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"it's", "-7", "9007199254740993", "0.1", "t", "1765000000125", "t"}));
}

TEST(PostgresSink, AtLeastOnceUpsertsLeaveTheLastValueOfEveryKey) {
  constexpr int64_t kRecords = 20000, kKeys = 100;
  server().sql("DROP TABLE IF EXISTS latest; CREATE TABLE latest (k bigint PRIMARY KEY, v bigint)");
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  sequence(env, kRecords)
      .keyBy([](const int64_t& n) { return n % kKeys; })
      .reduce([](const int64_t& a, const int64_t& b) { return std::max(a, b); })
      .sinkTo(PostgresSink<int64_t>::builder()
                  .setConnectionString(server().connectionString())
                  .setSql("INSERT INTO latest (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
                  .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) {
                    ps.setLong(1, n % kKeys);
                    ps.setLong(2, n);
                  })
                  .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(700).build())
                  .build());
  env.execute("upserts");
  std::map<int64_t, int64_t> expected;  // brute force: the largest number of each key
  for (int64_t n = 0; n < kRecords; ++n) expected[n % kKeys] = std::max(expected[n % kKeys], n);
  std::map<int64_t, int64_t> actual;
  for (auto& row : server().sql("SELECT k, v FROM latest")) actual[std::stoll(row[0])] = std::stoll(row[1]);
  EXPECT_EQ(actual, expected);
}

// The same job with one failure a second in, and its checkpoints every 200 ms: what each
// guarantee leaves in a table without a key.
struct FailureRun {
  int64_t rows = 0;
  int64_t distinct = 0;
  int failures = 0;  // how often the failing record passed: once, and again when replayed
};
// One failure a second in, checkpoints every `interval`.
FailureRun runWithAFailure(const std::string& table, DeliveryGuarantee guarantee, int batchSize,
                           std::chrono::milliseconds interval = 200ms) {
  constexpr int64_t kRecords = 20000;
  createTable(table);
  auto failures = std::make_shared<std::atomic<int>>(0);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.enableCheckpointing(interval);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  numbers(env, kRecords, 10000)
      .map(FailOnce(kRecords / 4, failures))  // a second into its subtask's share
      .sinkTo(insertInto(table)
                  .setDeliveryGuarantee(guarantee)
                  .setTransactionIdPrefix(table)
                  .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(batchSize).build())
                  .build());
  EXPECT_EQ(env.execute(table).status, JobStatus::FINISHED);
  FailureRun r;
  r.rows = count("SELECT count(*) FROM " + table);
  r.distinct = count("SELECT count(DISTINCT id) FROM " + table);
  r.failures = failures->load();
  EXPECT_EQ(count("SELECT count(*) FROM " + table + " WHERE v <> id * 10"), 0);
  return r;
}

TEST(PostgresSink, ExactlyOnceWritesEachRecordOnceThroughAFailure) {
  FailureRun r = runWithAFailure("exactly_once", DeliveryGuarantee::EXACTLY_ONCE, 10);
  EXPECT_GE(r.failures, 1) << "the failure was never injected";
  EXPECT_EQ(r.distinct, 20000);
  EXPECT_EQ(r.rows, 20000) << "records written twice";
  EXPECT_EQ(preparedLeft("exactly_once"), 0);
}

// The control: plain inserts at least once, under the same failure, write some records
// twice, so the exactly-once test above can tell. No checkpoint comes before the failure
// here: with one every 200 ms, one can come just before it (the failure is 1 s in) and
// leave nothing to replay.
TEST(PostgresSink, AtLeastOnceControlWritesSomeRecordsTwiceThroughAFailure) {
  FailureRun r = runWithAFailure("control", DeliveryGuarantee::AT_LEAST_ONCE, 10, 30s);
  EXPECT_GE(r.failures, 1) << "the failure was never injected";
  EXPECT_EQ(r.distinct, 20000);
  EXPECT_GT(r.rows, 20000) << "the failure replayed nothing: the control cannot tell";
}

// ---- in a batch job (docs/postgres.md, "In a batch job")

// A batch job whose sink stage (after a rebalance) fails once: subtask 2 fails once
// subtask 1 has sent all its rows (AT_LEAST_ONCE: half the records are in the table)
// or prepared its transaction (EXACTLY_ONCE). The stage is re-run alone, from what the
// first stage wrote.
struct BatchFailureRun {
  int64_t rows = 0;
  int64_t distinct = 0;
  bool subtaskOneWasDone = false;        // when subtask 2 failed: the test's premise
  std::vector<std::string> rolledBack;   // lingering transactions the re-run rolled back
};
BatchFailureRun runBatchWithAFailure(const std::string& table, DeliveryGuarantee guarantee) {
  constexpr int64_t kRecords = 20000;
  createTable(table);
  struct Shared {
    std::mutex mutex;
    bool prepared = false;  // subtask 1's transaction
    std::vector<std::string> rolledBack;
  };
  auto shared = std::make_shared<Shared>();
  core::ScopedSyncPoint prepared("PostgresSink::AfterPrepare", [&](void* arg) {
    std::lock_guard lock(shared->mutex);
    if (*static_cast<std::string*>(arg) == table + "-0-1") shared->prepared = true;
  });
  core::ScopedSyncPoint lingering("PostgresSink::RolledBackLingering", [&](void* arg) {
    std::lock_guard lock(shared->mutex);
    shared->rolledBack.push_back(*static_cast<std::string*>(arg));
  });
  test::FailsOnceWhen<int64_t> failing;
  failing.ready = [shared, table, guarantee] {
    if (guarantee == DeliveryGuarantee::EXACTLY_ONCE) {
      std::lock_guard lock(shared->mutex);
      return shared->prepared;
    }
    return count("SELECT count(*) FROM " + table) >= kRecords / 2;  // all of its half, sent in batches of 10
  };
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(1, 0ms));
  sequence(env, kRecords)
      .rebalance()
      .map(failing)
      .name("failing")
      .sinkTo(insertInto(table)
                  .setDeliveryGuarantee(guarantee)
                  .setTransactionIdPrefix(table)
                  .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(10).build())
                  .build());
  EXPECT_EQ(env.execute(table).status, JobStatus::FINISHED);
  BatchFailureRun r;
  r.rows = count("SELECT count(*) FROM " + table);
  r.distinct = count("SELECT count(DISTINCT id) FROM " + table);
  EXPECT_EQ(count("SELECT count(*) FROM " + table + " WHERE v <> id * 10"), 0);
  std::lock_guard lock(shared->mutex);
  EXPECT_TRUE(failing.outcome->failed.load()) << "the failure was never injected";
  r.subtaskOneWasDone = failing.outcome->wasReady.load();
  r.rolledBack = shared->rolledBack;
  return r;
}

// EXACTLY_ONCE in BATCH: each subtask's transaction spans the stage and is committed once
// every subtask of the stage has ended its input, so the re-run stage rolls back what
// the failed run prepared and writes every record once.
TEST(PostgresSink, ExactlyOnceInBatchCommitsAtTheEndOfTheStageAndOnceThroughAReRun) {
  BatchFailureRun r = runBatchWithAFailure("batch_once", DeliveryGuarantee::EXACTLY_ONCE);
  ASSERT_TRUE(r.subtaskOneWasDone) << "subtask 1 had not prepared its transaction when subtask 2 failed";
  EXPECT_EQ(r.rolledBack, std::vector<std::string>{"batch_once-0-1"});
  EXPECT_EQ(r.distinct, 20000);
  EXPECT_EQ(r.rows, 20000) << "records written twice";
  EXPECT_EQ(preparedLeft("batch_once"), 0);
}

// The control: AT_LEAST_ONCE under the same failure writes subtask 1's records twice, so
// the test above can tell.
TEST(PostgresSink, AtLeastOnceInBatchControlWritesSomeRecordsTwiceThroughAReRun) {
  BatchFailureRun r = runBatchWithAFailure("batch_control", DeliveryGuarantee::AT_LEAST_ONCE);
  ASSERT_TRUE(r.subtaskOneWasDone) << "subtask 1 had not sent its records when subtask 2 failed";
  EXPECT_EQ(r.distinct, 20000);
  EXPECT_EQ(r.rows, 20000 + 20000 / 2);
}

// ---- each step of the two-phase commit interrupted (cold sync points)

struct FailurePoint {
  std::string name;
  std::string syncPoint;  // where the job fails, at its 3rd hit
  bool rolledBack;        // whether the restore rolls the interrupted transaction back
  friend void PrintTo(const FailurePoint& f, std::ostream* os) { *os << f.name; }
};
class PostgresSinkFailure : public ::testing::TestWithParam<FailurePoint> {};

TEST_P(PostgresSinkFailure, TheInterruptedTransactionIsRolledBackOrCommittedOnce) {
  constexpr int64_t kRecords = 20000;
  const FailurePoint& point = GetParam();
  const std::string table = "steps_" + point.name;
  createTable(table);
  std::mutex mutex;
  std::string interrupted;
  std::vector<std::string> rolledBack;
  int hits = 0;
  core::ScopedSyncPoint fail(point.syncPoint, [&](void* arg) {
    std::lock_guard lock(mutex);
    if (++hits != 3) return;
    interrupted = *static_cast<std::string*>(arg);
    throw std::runtime_error("injected failure at " + point.syncPoint);
  });
  core::ScopedSyncPoint lingering("PostgresSink::RolledBackLingering", [&](void* arg) {
    std::lock_guard lock(mutex);
    rolledBack.push_back(*static_cast<std::string*>(arg));
  });
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  numbers(env, kRecords, 10000)
      .sinkTo(insertInto(table)
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionIdPrefix(table)
                  .build());
  EXPECT_EQ(env.execute(table).status, JobStatus::FINISHED);
  std::lock_guard lock(mutex);
  ASSERT_FALSE(interrupted.empty()) << "the failure was never injected";
  const bool wasRolledBack = std::find(rolledBack.begin(), rolledBack.end(), interrupted) != rolledBack.end();
  EXPECT_EQ(wasRolledBack, point.rolledBack) << interrupted;
  EXPECT_EQ(count("SELECT count(DISTINCT id) FROM " + table), kRecords);
  EXPECT_EQ(count("SELECT count(*) FROM " + table), kRecords) << "records written twice";
  EXPECT_EQ(preparedLeft(table), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Steps, PostgresSinkFailure,
    ::testing::Values(
        // Prepared, its checkpoint not complete: rolled back, its records written again.
        FailurePoint{"AfterPrepare", "PostgresSink::AfterPrepare", true},
        // Its checkpoint completed, COMMIT PREPARED not sent: the restore commits it.
        FailurePoint{"BeforeCommit", "PostgresSink::BeforeCommit", false},
        // Committed, the committer not told: the restore's commit finds it done.
        FailurePoint{"AfterCommit", "PostgresSink::AfterCommit", false}),
    [](const auto& info) { return info.param.name; });

// Checkpoints aborted after the sink prepared (their _metadata write fails): the next
// barrier comes while the transaction prepared before still holds its rows' locks, so
// the writer keeps the rows in the checkpoint rather than wait for those locks, which
// only its own thread would release. Every transaction touches the same ten rows.
TEST(PostgresSink, ExactlyOnceKeepsGoingThroughAbortedCheckpoints) {
  constexpr int64_t kRecords = 20000;
  server().sql("DROP TABLE IF EXISTS aborted; CREATE TABLE aborted (k bigint PRIMARY KEY, v bigint)");
  std::atomic<int> checkpoints{0}, aborted{0};
  core::ScopedSyncPoint failSome("CheckpointCoordinator::AfterMetadataWritten", [&](void*) {
    if (checkpoints.fetch_add(1) % 3 != 1) return;
    aborted.fetch_add(1);
    throw std::runtime_error("injected: the _metadata write failed");
  });
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setTolerableCheckpointFailureNumber(1000);
  env.setRestartStrategy(RestartStrategy::noRestart());
  numbers(env, kRecords, 10000)
      .keyBy([](const int64_t& n) { return n % 10; })
      .reduce([](const int64_t& a, const int64_t& b) { return std::max(a, b); })
      .sinkTo(PostgresSink<int64_t>::builder()
                  .setConnectionString(server().connectionString())
                  .setSql("INSERT INTO aborted (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
                  .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) {
                    ps.setLong(1, n % 10);
                    ps.setLong(2, n);
                  })
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionIdPrefix("aborted")
                  .build());
  EXPECT_EQ(env.execute("aborted checkpoints").status, JobStatus::FINISHED);
  EXPECT_GE(aborted.load(), 3) << "too few checkpoints were aborted to tell";
  for (auto& row : server().sql("SELECT k, v FROM aborted ORDER BY k"))
    EXPECT_EQ(std::stoll(row[1]), kRecords - 10 + std::stoll(row[0])) << "key " << row[0];
  EXPECT_EQ(count("SELECT count(*) FROM aborted"), 10);
  EXPECT_EQ(preparedLeft("aborted"), 0);
}

// A job that starts afresh at another parallelism than the one that left prepared
// transactions behind: the transactions of subtasks that are gone are rolled back by
// those that stand for them now, and no other prefix's are touched.
TEST(PostgresSink, AFreshStartRollsBackThePrefixsPreparedTransactionsAtAnyParallelism) {
  createTable("rescaled");
  // What a crashed job at parallelism 3 left, by subtasks 0 to 2.
  for (int subtask = 0; subtask < 3; ++subtask)
    for (int n : {4, 6})
      server().sql("BEGIN; INSERT INTO rescaled VALUES (" + std::to_string(subtask * 10 + n) +
                   ", 0); PREPARE TRANSACTION 'rescaled-" + std::to_string(subtask) + "-" + std::to_string(n) + "'");
  // Other jobs' prefixes that merely start the same stay: "rescaled2", and "rescaled-1",
  // whose ids look like this prefix's with one more number.
  server().sql("BEGIN; INSERT INTO rescaled VALUES (99, 0); PREPARE TRANSACTION 'rescaled2-0-9'");
  server().sql("BEGIN; INSERT INTO rescaled VALUES (98, 0); PREPARE TRANSACTION 'rescaled-1-7-5'");
  // A fresh start at parallelism 2 (no checkpoint restored, so none is covered): every
  // one of the prefix goes.
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.enableCheckpointing(1000ms);
  env.fromElements<int64_t>({1, 2, 3})
      .sinkTo(insertInto("rescaled").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).setTransactionIdPrefix("rescaled").build());
  env.execute("rescaled");
  EXPECT_EQ(count("SELECT count(*) FROM pg_prepared_xacts WHERE gid ~ '^rescaled-[0-9]+-[0-9]+$'"), 0);
  EXPECT_EQ(preparedLeft("rescaled2"), 1);
  EXPECT_EQ(preparedLeft("rescaled-1-7"), 1);
  server().sql("ROLLBACK PREPARED 'rescaled2-0-9'");
  server().sql("ROLLBACK PREPARED 'rescaled-1-7-5'");
  EXPECT_EQ(count("SELECT count(*) FROM rescaled"), 3) << "only the job's own records are committed";
}

// A server that stops under a running at-least-once job and comes back: the batch that
// failed is sent again after a wait, and nothing is lost.
TEST(PostgresSink, AtLeastOnceRidesOutAServerRestart) {
  constexpr int64_t kRecords = 6000;
  server().sql("DROP TABLE IF EXISTS restarted; CREATE TABLE restarted (id bigint PRIMARY KEY, v bigint)");
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
      .sinkTo(PostgresSink<int64_t>::builder()
                  .setConnectionString(server().connectionString())
                  .setSql("INSERT INTO restarted (id, v) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
                  .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) {
                    ps.setLong(1, n);
                    ps.setLong(2, n);
                  })
                  .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(50).withMaxRetries(5).build())
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
  EXPECT_EQ(count("SELECT count(*) FROM restarted"), kRecords);
}

TEST(PostgresSink, ABatchIntervalSendsRecordsWithoutWaitingForMore) {
  createTable("interval");
  test::GatedSource<int64_t> source;
  StreamExecutionEnvironment env;
  env.fromSource(source, WatermarkStrategy<int64_t>::noWatermarks(), "gate")
      .sinkTo(insertInto("interval")
                  .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(1000).withBatchIntervalMs(50).build())
                  .build());
  JobClient job = env.executeAsync("interval");
  source.push({1, 2, 3});
  bool arrived = false;
  for (int i = 0; i < 200 && !arrived; ++i) {
    arrived = count("SELECT count(*) FROM interval") == 3;
    if (!arrived) std::this_thread::sleep_for(50ms);
  }
  source.close();
  job.wait();
  EXPECT_TRUE(arrived) << "a batch of 3 waited for more records, or for the end";
}

// ---- bad input: one line naming the server, the object and the reason

std::string executeError(PostgresSink<int64_t> sink, bool checkpoints = false) {
  StreamExecutionEnvironment env;
  if (checkpoints) env.enableCheckpointing(100ms);
  env.setRestartStrategy(RestartStrategy::noRestart());
  sequence(env, 200).sinkTo(sink);
  return errorOf([&] { env.execute("bad input"); });
}

TEST(PostgresSink, BadInputIsAOneLineErrorNamingTheServerAndTheReason) {
  createTable("bad");
  const std::string who = "postgres sink (127.0.0.1:" + std::to_string(server().port()) + "/postgres): ";
  auto oneLine = [](const std::string& s) { return s.find('\n') == std::string::npos; };

  std::string e = executeError(insertInto("missing").build());
  EXPECT_EQ(e, who + "cannot prepare 'INSERT INTO missing (id, v) VALUES (?, ?)': relation \"missing\" does not exist "
                     "(SQLSTATE 42P01)");
  e = executeError(PostgresSink<int64_t>::builder()
                       .setConnectionString(server().connectionString())
                       .setSql("INSERT INTO bad (id, nope) VALUES (?, ?)")
                       .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) { ps.setLong(1, n); })
                       .build());
  EXPECT_EQ(e, who + "cannot prepare 'INSERT INTO bad (id, nope) VALUES (?, ?)': column \"nope\" of relation \"bad\" "
                     "does not exist (SQLSTATE 42703)");

  // Wrong credentials, and nothing listening.
  e = executeError(insertInto("bad").setConnectionString(server().connectionString() + " password=wrong").build());
  EXPECT_NE(e.find("password authentication failed for user \"weir\""), std::string::npos) << e;
  EXPECT_TRUE(oneLine(e)) << e;
  const std::string nowhere = "host=127.0.0.1 port=1 user=weir dbname=postgres";
  e = executeError(insertInto("bad").setConnectionString(nowhere).build());
  EXPECT_EQ(e.rfind("postgres sink (127.0.0.1:1/postgres): cannot prepare", 0), 0u) << e;
  EXPECT_NE(e.find("Connection refused"), std::string::npos) << e;
  EXPECT_TRUE(oneLine(e)) << e;

  // A record the server refuses: the job fails naming it.
  server().sql("ALTER TABLE bad ADD CONSTRAINT small CHECK (id < 100)");
  e = executeError(insertInto("bad").build());
  EXPECT_NE(e.find(who + "record 101 of "), std::string::npos) << e;
  EXPECT_NE(e.find("($1='100', $2='1000') was refused: new row for relation \"bad\" violates check constraint "
                   "\"small\""),
            std::string::npos)
      << e;
  EXPECT_TRUE(oneLine(e)) << e;
  // A builder that forgets a parameter.
  e = executeError(PostgresSink<int64_t>::builder()
                       .setConnectionString(server().connectionString())
                       .setSql("INSERT INTO bad (id, v) VALUES (?, ?)")
                       .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) { ps.setLong(1, n); })
                       .build());
  EXPECT_NE(e.find("the statement builder left parameter $2 unset for record 1"), std::string::npos) << e;

  // Exactly once needs checkpoints, a prefix, and prepared transactions on the server.
  e = executeError(insertInto("bad").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).setTransactionIdPrefix("p").build());
  EXPECT_EQ(e, who + "EXACTLY_ONCE commits its transactions when checkpoints complete, and the job takes none: "
                     "enable checkpointing (execution.checkpointing.interval), run the bounded job in BATCH, or use "
                     "AT_LEAST_ONCE");
  EXPECT_EQ(errorOf([] { insertInto("bad").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).build(); }),
            "postgres sink: EXACTLY_ONCE needs setTransactionIdPrefix(...): the prepared transactions are named from it");
  EXPECT_EQ(errorOf([] {
              insertInto("bad").setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE).setTransactionIdPrefix("a b").build();
            }),
            "postgres sink: the transaction id prefix 'a b' must be 1 to 150 letters, digits, '_', '.' or '-'");
  EXPECT_EQ(errorOf([] { insertInto("bad").setConnectionString("host=").setConnectionString("nonsense").build(); }),
            "postgres sink: the connection string is not valid: missing \"=\" after \"nonsense\" in connection info string");
  EXPECT_EQ(errorOf([] { JdbcExecutionOptions::builder().withBatchSize(0).build(); }),
            "jdbc execution options: batch size must be at least 1, not 0");
}

// A record the server refuses for good, by policy: skipped and counted, or written to a
// dead-letter table (in the checkpoint's transaction when exactly once); the others go on.
TEST(PostgresSink, ARefusedRecordIsSkippedOrWrittenToTheDeadLetterTable) {
  constexpr int64_t kRecords = 200;
  std::vector<std::string> good, bad;  // brute force: ids the CHECK lets in, and those it refuses
  for (int64_t n = 0; n < kRecords; ++n) (n % 7 == 3 ? bad : good).push_back(std::to_string(n));
  auto ids = [](const std::string& query) {
    std::vector<std::string> out;
    for (auto& row : server().sql(query)) out.push_back(row[0]);
    return out;
  };
  for (DeliveryGuarantee guarantee : {DeliveryGuarantee::AT_LEAST_ONCE, DeliveryGuarantee::EXACTLY_ONCE}) {
    const bool once = guarantee == DeliveryGuarantee::EXACTLY_ONCE;
    server().sql("DROP TABLE IF EXISTS policed; CREATE TABLE policed (id bigint, v bigint, CHECK (id % 7 <> 3)); "
                 "DROP TABLE IF EXISTS dead_letters; "
                 "CREATE TABLE dead_letters (sink text, record bigint, parameters text, reason text)");
    StreamExecutionEnvironment env;
    env.setRestartStrategy(RestartStrategy::noRestart());
    if (once) env.enableCheckpointing(50ms);
    sequence(env, kRecords)
        .sinkTo(insertInto("policed")
                    .setDeliveryGuarantee(guarantee)
                    .setTransactionIdPrefix("policed")
                    .setExecutionOptions(JdbcExecutionOptions::builder().withBatchSize(50).build())
                    .setBadRecordPolicy(once ? BadRecordPolicy::DEAD_LETTER : BadRecordPolicy::SKIP)
                    .setDeadLetterTable("dead_letters")
                    .build());
    EXPECT_EQ(env.execute("policed").status, JobStatus::FINISHED);
    EXPECT_EQ(ids("SELECT id::text FROM policed ORDER BY policed.id"), good);
    if (once) {
      EXPECT_EQ(ids("SELECT substring(parameters from '^\\$1=''([0-9]+)''') FROM dead_letters ORDER BY record"), bad);
      EXPECT_EQ(count("SELECT count(*) FROM dead_letters WHERE reason LIKE 'new row for relation \"policed\" violates "
                      "check constraint%(SQLSTATE 23514)' AND sink = 'Sink (1/1)'"),
                static_cast<int64_t>(bad.size()));
    } else {
      EXPECT_EQ(count("SELECT count(*) FROM dead_letters"), 0);
    }
  }
  EXPECT_EQ(errorOf([] { insertInto("policed").setBadRecordPolicy(BadRecordPolicy::DEAD_LETTER).build(); }),
            "postgres sink: DEAD_LETTER needs setDeadLetterTable(...)");
  EXPECT_EQ(executeError(insertInto("policed").setBadRecordPolicy(BadRecordPolicy::DEAD_LETTER).setDeadLetterTable("nope").build()),
            "postgres sink (127.0.0.1:" + std::to_string(server().port()) +
                "/postgres): the dead-letter table 'nope' cannot take rows: relation \"nope\" does not exist (SQLSTATE "
                "42P01)");
}

TEST(PostgresSink, ExactlyOnceIsRefusedByAServerWithoutPreparedTransactions) {
  PostgresServer plain(PostgresServer::Options{.maxPreparedTransactions = 0});
  plain.sql("CREATE TABLE t (id bigint, v bigint)");
  StreamExecutionEnvironment env;
  env.enableCheckpointing(100ms);
  sequence(env, 10).sinkTo(PostgresSink<int64_t>::builder()
                                    .setConnectionString(plain.connectionString())
                                    .setSql("INSERT INTO t (id, v) VALUES (?, ?)")
                                    .setStatementBuilder([](PreparedStatement& ps, const int64_t& n) {
                                      ps.setLong(1, n);
                                      ps.setLong(2, n);
                                    })
                                    .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                                    .setTransactionIdPrefix("t")
                                    .build());
  EXPECT_EQ(errorOf([&] { env.execute("no prepared transactions"); }),
            "postgres sink (127.0.0.1:" + std::to_string(plain.port()) +
                "/postgres): EXACTLY_ONCE needs prepared transactions, and the server's max_prepared_transactions is "
                "0: set it above the sink's parallelism in postgresql.conf and restart the server");
}

// ---- weir transactions: what a stopped job left prepared, shown and resolved

TEST(PostgresSink, WeirTransactionsListsCommitsAndAbortsPreparedTransactions) {
  const auto dir = test::freshFolder("postgres-transactions");
  createTable("leftover");
  for (const std::string id : {"left-0-7", "left-1-7", "left-1-8"})
    server().sql("BEGIN; INSERT INTO leftover VALUES (" + std::to_string(id.back() - '0') + ", " +
                 std::to_string(id[5] - '0') + "); PREPARE TRANSACTION '" + id + "'");
  // Another sink's, whose prefix starts the same: --prefix left leaves it alone.
  server().sql("BEGIN; INSERT INTO leftover VALUES (0, 0); PREPARE TRANSACTION 'left2-0-1'");
  const std::string postgres = " --postgres '" + server().connectionString() + "'";

  test::Ran list = test::runWeir("transactions list --prefix left" + postgres, dir);
  ASSERT_EQ(list.exitCode, 0) << list.err;
  for (const std::string id : {"left-0-7", "left-1-7", "left-1-8"})
    EXPECT_NE(list.out.find("postgres  " + id + "  prepared "), std::string::npos) << list.out;

  test::Ran commit = test::runWeir("transactions commit left-1-7" + postgres, dir);
  ASSERT_EQ(commit.exitCode, 0) << commit.err;
  EXPECT_EQ(commit.out, "committed left-1-7\n");
  EXPECT_EQ(server().sql("SELECT id, v FROM leftover"), (std::vector<std::vector<std::string>>{{"7", "1"}}));

  test::Ran abort = test::runWeir("transactions abort --prefix left" + postgres, dir);
  ASSERT_EQ(abort.exitCode, 0) << abort.err;
  EXPECT_EQ(abort.out, "aborted left-0-7\naborted left-1-8\n");
  EXPECT_EQ(preparedLeft("left"), 0);
  EXPECT_EQ(preparedLeft("left2"), 1);
  server().sql("ROLLBACK PREPARED 'left2-0-1'");
  EXPECT_EQ(count("SELECT count(*) FROM leftover"), 1);

  test::Ran missing = test::runWeir("transactions commit left-9-9" + postgres, dir);
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_EQ(missing.err, "weir: no prepared transaction 'left-9-9' on the server\n");
  test::Ran nothing = test::runWeir("transactions abort" + postgres, dir);
  EXPECT_EQ(nothing.exitCode, 2);
  test::Ran unreachable = test::runWeir("transactions list --postgres 'host=127.0.0.1 port=1 user=weir'", dir);
  EXPECT_EQ(unreachable.exitCode, 1);
  EXPECT_EQ(unreachable.err.rfind("weir: postgres: cannot list the prepared transactions: connection to server at "
                                  "\"127.0.0.1\", port 1 failed: Connection refused",
                                  0),
            0u)
      << unreachable.err;
  EXPECT_EQ(std::count(unreachable.err.begin(), unreachable.err.end(), '\n'), 1) << unreachable.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weir
