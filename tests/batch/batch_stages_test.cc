// A batch job's stages (docs/batch.md, "Stages"): where a job is cut, that a stage runs
// only once those it reads have finished, that a failed stage re-runs alone from what
// the stages before it wrote, that a sink's stage commits once, and that blocking
// exchanges spill beyond their memory and stay exact. Results are checked against
// brute forces computed here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/process_figures.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using KeySum = std::pair<int64_t, int64_t>;

constexpr int64_t kRecords = 200000, kKeys = 1009;

KeySum recordOf(int64_t i) { return {(i * 7919) % kKeys, i % 13}; }

std::map<int64_t, int64_t> bruteForce(int64_t records = kRecords) {
  std::map<int64_t, int64_t> sums;
  for (int64_t i = 0; i < records; ++i) sums[recordOf(i).first] += recordOf(i).second;
  return sums;
}

std::map<int64_t, int64_t> asMap(const std::vector<KeySum>& results) {
  std::map<int64_t, int64_t> out;
  for (const auto& [k, v] : results) EXPECT_TRUE(out.emplace(k, v).second) << "key " << k << " came twice";
  return out;
}

// The stage of each node of `env`'s plan by name (0: one stage), and each edge's exchange
// by consumer name.
struct PlanView {
  std::map<std::string, int> stageOf;
  std::map<std::string, std::string> exchangeInto;
};
PlanView viewPlan(const StreamExecutionEnvironment& env) {
  PlanView view;
  const auto plan = nlohmann::json::parse(env.getExecutionPlan());
  for (const auto& node : plan["nodes"]) {
    const std::string name = node["type"];
    view.stageOf[name] = node.value("stage", 0);
    if (node.contains("predecessors"))
      for (const auto& p : node["predecessors"]) view.exchangeInto[name] = p["exchange"];
  }
  return view;
}

// source -> count -> keyBy -> sum -> rebalance -> sink: three stages in BATCH.
void buildSumJob(StreamExecutionEnvironment& env, CollectSink<KeySum>& sink,
                 std::function<KeySum(const KeySum&)> first = {},
                 std::function<KeySum(const KeySum&)> second = {}) {
  auto identity = [](const KeySum& r) { return r; };
  env.fromSource(DataGeneratorSource([](int64_t i) { return recordOf(i); }, kRecords),
                 WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
      .map(first ? first : identity)
      .name("first")
      .keyBy([](const KeySum& r) { return r.first; })
      .sum<1>()
      .name("sum")
      .rebalance()
      .map(second ? second : identity)
      .name("second")
      .sinkTo(sink);
}

// A map that counts what passes through it into `count`.
std::function<KeySum(const KeySum&)> counting(std::shared_ptr<std::atomic<int64_t>> count) {
  return [count](const KeySum& r) {
    count->fetch_add(1);
    return r;
  };
}

TEST(BatchStages, AJobIsCutIntoStagesAtItsRedistributions) {
  auto planOf = [](RuntimeExecutionMode mode, BatchShuffleMode shuffle) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setRuntimeMode(mode).setBatchShuffleMode(shuffle);
    CollectSink<KeySum> sink;
    buildSumJob(env, sink);
    return viewPlan(env);
  };
  const auto batch = planOf(RuntimeExecutionMode::BATCH, BatchShuffleMode::ALL_EXCHANGES_BLOCKING);
  EXPECT_EQ(batch.stageOf.at("Source: numbers"), 1);
  EXPECT_EQ(batch.stageOf.at("first"), 1);  // chained
  EXPECT_EQ(batch.stageOf.at("sum"), 2);
  EXPECT_EQ(batch.stageOf.at("second"), 3);
  EXPECT_EQ(batch.exchangeInto.at("sum"), "blocking");
  EXPECT_EQ(batch.exchangeInto.at("second"), "blocking");
  for (auto [mode, shuffle] : {std::pair{RuntimeExecutionMode::STREAMING, BatchShuffleMode::ALL_EXCHANGES_BLOCKING},
                               std::pair{RuntimeExecutionMode::BATCH, BatchShuffleMode::ALL_EXCHANGES_PIPELINED}}) {
    const auto one = planOf(mode, shuffle);
    for (const auto& [name, stage] : one.stageOf) EXPECT_EQ(stage, 0) << name;
    for (const auto& [name, exchange] : one.exchangeInto) EXPECT_EQ(exchange, "pipelined_bounded") << name;
  }

  // A forward edge between two chains stays within a stage, and so does an exchange into
  // an operator that reads the same stream forward too (a union).
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  CollectSink<KeySum> sink;
  auto numbers = env.fromSource(DataGeneratorSource([](int64_t i) { return recordOf(i); }, 100),
                                WatermarkStrategy<KeySum>::noWatermarks(), "numbers");
  auto apart = numbers.map([](const KeySum& r) { return r; }).name("apart").disableChaining();
  apart.rebalance().unionWith(apart).map([](const KeySum& r) { return r; }).name("both").sinkTo(sink);
  // A reads C directly and through a blocking B: {A, C} and {B} would each wait for the
  // other, so all three run together.
  struct Both : CoMapFunction<KeySum, KeySum, KeySum> {
    KeySum map1(const KeySum& r) override { return r; }
    KeySum map2(const KeySum& r) override { return r; }
  };
  auto b = apart.rebalance().map([](const KeySum& r) { return r; }).name("b");
  apart.connect(b.rebalance()).map(Both{}).name("c").sinkTo(sink);
  const auto mixed = viewPlan(env);
  EXPECT_EQ(mixed.stageOf.count("c"), 1u);
  for (const auto& [name, stage] : mixed.stageOf) EXPECT_EQ(stage, 0) << name << " is in a stage of its own";
}

// A stage starts only once every stage it reads has finished: a map right after the
// first blocking exchange sees no record before the source's stage read them all. Run
// with ALL_EXCHANGES_PIPELINED, it does (the check can fail). The result is the brute
// force's either way.
TEST(BatchStages, EachStageRunsAfterTheStagesItReads) {
  for (auto mode : {BatchShuffleMode::ALL_EXCHANGES_BLOCKING, BatchShuffleMode::ALL_EXCHANGES_PIPELINED}) {
    const bool blocking = mode == BatchShuffleMode::ALL_EXCHANGES_BLOCKING;
    SCOPED_TRACE(blocking ? "blocking" : "pipelined");
    auto read = std::make_shared<std::atomic<int64_t>>(0);
    auto early = std::make_shared<std::atomic<int64_t>>(0);
    StreamExecutionEnvironment env;
    env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH).setBatchShuffleMode(mode);
    CollectSink<KeySum> sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return recordOf(i); }, kRecords),
                   WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
        .map(counting(read))
        .rebalance()
        .map([read, early](const KeySum& r) {
          if (read->load() != kRecords) early->fetch_add(1);
          return r;
        })
        .keyBy([](const KeySum& r) { return r.first; })
        .sum<1>()
        .sinkTo(sink);
    env.execute();
    if (blocking) EXPECT_EQ(early->load(), 0) << "the second stage ran before the first had read everything";
    else EXPECT_GT(early->load(), 0) << "pipelined, both ran at once";
    EXPECT_EQ(asMap(sink.getResults()), bruteForce());
  }
}

// A stage that fails once is re-run alone: the stage before it is not (it read its
// input once), its partial output is discarded, and the result is the brute force's.
// One line on stderr names the stage. A failure in the first stage re-reads the source.
// When both fail once, each line counts the stage's own attempts and the job's restarts.
TEST(BatchStages, AStageThatFailsOnceIsReRunAlone) {
  for (const std::string failing : {"second", "first", "both"}) {
    SCOPED_TRACE(failing);
    auto read = std::make_shared<std::atomic<int64_t>>(0);
    auto failedFirst = std::make_shared<std::atomic<bool>>(false);
    auto failedSecond = std::make_shared<std::atomic<bool>>(false);
    const bool inFirst = failing != "second", inSecond = failing != "first";
    auto failOnce = [](std::atomic<bool>& failed, int64_t seen, int64_t at) {
      if (seen == at && !failed.exchange(true)) throw std::runtime_error("a flaky record");
    };
    StreamExecutionEnvironment env;
    env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
    env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
    CollectSink<KeySum> sink;
    auto secondSeen = std::make_shared<std::atomic<int64_t>>(0);
    buildSumJob(
        env, sink,
        [=](const KeySum& r) {
          const int64_t n = read->fetch_add(1) + 1;
          if (inFirst) failOnce(*failedFirst, n, kRecords / 2);
          return r;
        },
        [=](const KeySum& r) {
          if (inSecond) failOnce(*failedSecond, secondSeen->fetch_add(1) + 1, kKeys / 3);
          return r;
        });
    testing::internal::CaptureStderr();
    JobClient client = env.executeAsync("staged");
    client.wait();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(failedFirst->load(), inFirst);
    EXPECT_EQ(failedSecond->load(), inSecond);
    EXPECT_EQ(client.getMetrics().numRestarts, inFirst && inSecond ? 2 : 1);
    // The source's stage read its input once; or, when it failed, at least half of it
    // (the other subtask may read on until it is cancelled) and then all of it again.
    if (inFirst) {
      EXPECT_GE(read->load(), kRecords + kRecords / 2);
      EXPECT_LE(read->load(), 2 * kRecords);
    } else {
      EXPECT_EQ(read->load(), kRecords);
    }
    auto says = [&](const std::string& stage, const char* op, int restart) {
      EXPECT_NE(err.find("job 'staged' " + stage + " attempt 1 failed: operator '" + op + "' (subtask "),
                std::string::npos) << err;
      EXPECT_NE(err.find("a flaky record; re-running " + stage + " in 0 ms (fixed-delay, restart " +
                         std::to_string(restart) + ")"),
                std::string::npos) << err;
    };
    if (inFirst) says("stage 1/3 ('Source: numbers -> first')", "first", 1);
    if (inSecond) says("stage 3/3 ('second -> Sink')", "second", inFirst ? 2 : 1);
    if (!inSecond) {
      EXPECT_EQ(asMap(sink.getResults()), bruteForce());
    } else {
      // The sink's stage ran twice: what the collecting sink got in the failed run stays
      // (it commits nothing), so each key's total comes once or twice, and is exact.
      std::map<int64_t, int64_t> totals;
      for (const auto& [k, v] : sink.getResults()) {
        auto [it, fresh] = totals.emplace(k, v);
        EXPECT_EQ(it->second, v) << "key " << k;
      }
      EXPECT_EQ(totals, bruteForce());
    }
  }
}

// A stage that fails every time fails the job once the restart strategy allows no more
// runs: fixedDelayRestart(2) runs it three times, the stage before it once.
TEST(BatchStages, AStageThatKeepsFailingEndsTheJobWithinTheRestartStrategy) {
  auto read = std::make_shared<std::atomic<int64_t>>(0);
  auto runs = std::make_shared<std::atomic<int>>(0);
  StreamExecutionEnvironment env;
  env.setParallelism(1).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(2, 0ms));
  CollectSink<KeySum> sink;
  buildSumJob(
      env, sink,
      counting(read),
      [runs](const KeySum&) -> KeySum {
        runs->fetch_add(1);
        throw std::runtime_error("always broken");
      });
  testing::internal::CaptureStderr();
  EXPECT_THROW(env.execute("broken"), JobExecutionError);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(runs->load(), 3);
  EXPECT_EQ(read->load(), kRecords);
  EXPECT_NE(err.find("stage 3/3 ('second -> Sink') attempt 3 failed"), std::string::npos) << err;
  EXPECT_NE(err.find("not restarting"), std::string::npos) << err;
}

// The files a FileSink published under `out`: their lines, sorted.
std::multiset<std::string> publishedLines(const fs::path& out) {
  std::multiset<std::string> lines;
  if (!fs::exists(out)) return lines;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file() || e.path().filename().string()[0] == '.') continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) lines.insert(line);
  }
  return lines;
}

fs::path freshFolder(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("weir-stages-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct LineEncoder final : Encoder<KeySum> {
  void encode(const KeySum& r, std::string& out) override {
    out += std::to_string(r.first) + "," + std::to_string(r.second) + "\n";
  }
};

// A FileSink's stage commits once all its subtasks ended their input: when subtask 2
// fails after subtask 1 has had all its input, the re-run stage still publishes every
// line once. (Committed at each subtask's end of input, subtask 1's lines came twice.)
TEST(BatchStages, AFileSinksStageCommitsOnceEvenWhenReRun) {
  const fs::path out = freshFolder("file-sink");
  auto failed = std::make_shared<std::atomic<bool>>(false);
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(1, 0ms));
  struct FailSecondSubtaskOnce : RichMapFunction<KeySum, KeySum> {
    std::shared_ptr<std::atomic<bool>> failed;
    fs::path out;
    KeySum map(const KeySum& r) override {
      if (getRuntimeContext().getIndexOfThisSubtask() == 1 && !failed->load()) {
        // Give subtask 1 time to end its input (and, were it to commit then, to publish).
        for (int i = 0; i < 100 && publishedLines(out).empty(); ++i) std::this_thread::sleep_for(20ms);
        failed->store(true);
        throw std::runtime_error("subtask 2 broke");
      }
      return r;
    }
  };
  FailSecondSubtaskOnce failing;
  failing.failed = failed;
  failing.out = out;
  env.fromSource(DataGeneratorSource([](int64_t i) { return recordOf(i); }, 20000),
                 WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
      .keyBy([](const KeySum& r) { return r.first; })
      .sum<1>()
      .name("sum")
      .map(failing)
      .name("failing")
      .sinkTo(FileSink<KeySum>::forRowFormat(out.string(), LineEncoder()).build());
  testing::internal::CaptureStderr();
  env.execute("file sink");
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(failed->load());
  std::multiset<std::string> expected;
  for (const auto& [k, v] : bruteForce(20000)) expected.insert(std::to_string(k) + "," + std::to_string(v));
  EXPECT_EQ(publishedLines(out), expected);
  fs::remove_all(out);
}

// Files this process holds open in `folder`: a spill file has no name there, but its
// descriptor still says where it is.
int openFilesIn(const fs::path& folder) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind(folder.string() + "/", 0) == 0) ++n;
  }
  return n;
}

// Blocking exchanges beyond their memory spill to io.tmp.dirs, and the result stays the
// brute force's: with no shuffle memory the job writes at least its records' bytes, and
// the last stage finds spill files open; with 256 MiB almost nothing is written. No
// spill file is left once the job ends. A broadcast and a rebalance exchange spill as a
// keyBy does; ALL_EXCHANGES_PIPELINED gives the same.
TEST(BatchStages, BlockingExchangesSpillBeyondTheirMemoryAndStayExact) {
  const fs::path tmp = freshFolder("spill");
  auto spillFiles = std::make_shared<std::atomic<int>>(0);  // open when the last stage starts
  auto run = [&](int64_t memory, BatchShuffleMode mode) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH).setBatchShuffleMode(mode);
    env.setBatchShuffleMemory(memory).setTmpDirectory(tmp.string());
    CollectSink<KeySum> sink;
    auto numbers = env.fromSource(DataGeneratorSource([](int64_t i) { return recordOf(i); }, kRecords),
                                  WatermarkStrategy<KeySum>::noWatermarks(), "numbers");
    numbers.rebalance()
        .map([](const KeySum& r) { return r; })
        .keyBy([](const KeySum& r) { return r.first; })
        .sum<1>()
        .broadcast()
        .filter([spillFiles, tmp](const KeySum&) {
          if (spillFiles->load() < 0) spillFiles->store(openFilesIn(tmp));
          return true;
        })
        .setParallelism(1)
        .sinkTo(sink);
    spillFiles->store(-1);
    const int64_t before = test::bytesWritten();
    env.execute();
    EXPECT_EQ(openFilesIn(tmp), 0) << "spill files outlived the job";
    return std::pair{asMap(sink.getResults()), test::bytesWritten() - before};
  };
  const int64_t recordBytes = kRecords * 16;
  const auto [spilled, spilledBytes] = run(0, BatchShuffleMode::ALL_EXCHANGES_BLOCKING);
  EXPECT_EQ(spilled, bruteForce());
  EXPECT_GT(spilledBytes, 2 * recordBytes) << "with no shuffle memory, two exchanges of every record spill";
  EXPECT_GT(spillFiles->load(), 0) << "no spill file was open when the last stage started";
  const auto [held, heldBytes] = run(int64_t{256} << 20, BatchShuffleMode::ALL_EXCHANGES_BLOCKING);
  EXPECT_EQ(held, bruteForce());
  EXPECT_LT(heldBytes, recordBytes / 4);
  const auto [pipelined, pipelinedBytes] = run(0, BatchShuffleMode::ALL_EXCHANGES_PIPELINED);
  EXPECT_EQ(pipelined, bruteForce());
  EXPECT_LT(pipelinedBytes, recordBytes / 4);
  fs::remove_all(tmp);
}

// A blocking exchange holds no more than its memory: 4 M records (64 MiB as frames)
// cross a rebalance into a summing stage, with 4 MiB of shuffle memory, and the job's
// peak memory stays far below what holding them would take.
TEST(BatchStages, ABlockingExchangeStaysWithinItsMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory makes resident memory meaningless";
#endif
  constexpr int64_t kMany = 4'000'000;
  const fs::path tmp = freshFolder("rss");
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.setBatchShuffleMemory(4 << 20).setTmpDirectory(tmp.string());
  auto total = std::make_shared<std::atomic<int64_t>>(0);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return KeySum{i, i % 7}; }, kMany),
                 WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
      .setParallelism(1)
      .rebalance()
      .map([total](const KeySum& r) {
        total->fetch_add(r.second, std::memory_order_relaxed);
        return r.second;
      })
      .filter([](int64_t) { return false; })
      .sinkTo(sink);
  const int64_t added = test::peakRssAddedBy(env);
  int64_t expected = 0;
  for (int64_t i = 0; i < kMany; ++i) expected += i % 7;
  EXPECT_EQ(total->load(), expected);
  EXPECT_LT(added, int64_t{48} << 20) << "peak memory rose by " << (added >> 20) << " MiB";
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace weir
