#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <nlohmann/json.hpp>
#include <set>

#include "support/gated_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(DataStream, MapFilterFlatMapGiveWhatAPlainLoopGives) {
  std::vector<int> input(5000);
  std::iota(input.begin(), input.end(), -100);
  std::vector<std::string> expected;
  for (int v : input) {
    long m = static_cast<long>(v) * 3;
    if (m % 2 != 0) continue;
    for (int k = 0; k < v % 3; ++k) expected.push_back(std::to_string(m) + "#" + std::to_string(k));
  }

  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromCollection(input)
      .map([](int v) { return static_cast<long>(v) * 3; })
      .filter([](const long& v) { return v % 2 == 0; })
      .flatMap<std::string>([](const long& v, Collector<std::string>& out) {
        for (long k = 0; k < (v / 3) % 3; ++k) out.collect(std::to_string(v) + "#" + std::to_string(k));
      })
      .sinkTo(sink);
  auto result = env.execute("map filter flatMap");
  EXPECT_EQ(result.status, JobStatus::FINISHED);
  EXPECT_EQ(sink.getResults(), expected);  // parallelism 1: order is kept
}

TEST(DataStream, FromElementsKeepsOrder) {
  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromElements<std::string>("b", "a", "c").sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<std::string>{"b", "a", "c"}));
}

TEST(DataStream, FlatMapMayEmitMoreThanABatchPerRecord) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(3).flatMap<int>([](const int& n, Collector<int>& out) {
    for (int i = 0; i < n * 10000; ++i) out.collect(i);
  }).sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  ASSERT_EQ(got.size(), 30000u);
  for (int i = 0; i < 30000; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], i);
}

// A flatMap taking its record as T&& moves parts of it into its output; a stream that
// two operators consume gives each its own records, whichever moves from them.
TEST(DataStream, AFlatMapMayMoveFromItsRecordWithoutTakingItFromOtherConsumers) {
  std::vector<std::pair<std::string, std::string>> input;
  for (int i = 0; i < 3000; ++i)
    input.emplace_back("left-" + std::string(40, 'a') + std::to_string(i), "right-" + std::to_string(i));
  StreamExecutionEnvironment env;
  CollectSink<std::string> moved, copied;
  auto pairs = env.fromCollection(input);
  pairs.flatMap<std::string>([](std::pair<std::string, std::string>&& p, Collector<std::string>& out) {
        out.collect(std::move(p.first));
      })
      .sinkTo(moved);
  pairs.map([](const std::pair<std::string, std::string>& p) { return p.first + "|" + p.second; }).sinkTo(copied);
  env.execute();
  std::vector<std::string> expectMoved, expectCopied;
  for (const auto& [l, r] : input) {
    expectMoved.push_back(l);
    expectCopied.push_back(l + "|" + r);
  }
  EXPECT_EQ(moved.getResults(), expectMoved);
  EXPECT_EQ(copied.getResults(), expectCopied);
}

// Counts how often it is copied.
struct Counted {
  static inline std::atomic<int64_t> copies{0};
  int value = 0;
  Counted() = default;
  explicit Counted(int v) : value(v) {}
  Counted(const Counted& other) : value(other.value) { copies.fetch_add(1); }
  Counted(Counted&&) noexcept = default;
  Counted& operator=(const Counted& other) {
    value = other.value;
    copies.fetch_add(1);
    return *this;
  }
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() = default;
};

TEST(DataStream, OperatorsThatOnlyReadShareOneBatchWithoutCopies) {
  const int n = 20'000;
  StreamExecutionEnvironment env;
  CollectSink<int> filtered, flatMapped, mapped;
  auto s = env.fromSource(DataGeneratorSource([](int64_t i) { return Counted(static_cast<int>(i)); }, n),
                          WatermarkStrategy<Counted>::noWatermarks(), "counted");
  s.filter([](const Counted& c) { return c.value % 100 == 0; }).map([](const Counted& c) { return c.value; }).sinkTo(filtered);
  s.flatMap<int>([](const Counted& c, Collector<int>& out) {
     if (c.value % 50 == 0) out.collect(c.value);
   }).sinkTo(flatMapped);
  s.map([](const Counted& c) { return c.value * 2; }).sinkTo(mapped);
  Counted::copies = 0;
  env.execute();
  std::vector<int> everyHundred, everyFifty, doubled;
  for (int i = 0; i < n; ++i) {
    if (i % 100 == 0) everyHundred.push_back(i);
    if (i % 50 == 0) everyFifty.push_back(i);
    doubled.push_back(2 * i);
  }
  EXPECT_EQ(filtered.getResults(), everyHundred);
  EXPECT_EQ(flatMapped.getResults(), everyFifty);
  EXPECT_EQ(mapped.getResults(), doubled);
  // The filter copies the records it keeps out of the shared batch; nothing else is
  // copied (a copy of each batch per consumer would be 2n).
  EXPECT_LE(Counted::copies.load(), n / 100);
}

TEST(DataStream, OperatorsThatMoveFromRecordsGetACopyUnlessTheyTakeTheBatchLast) {
  std::vector<std::string> input;
  for (int i = 0; i < 5000; ++i) input.push_back("record-" + std::string(30, 'x') + std::to_string(i));
  StreamExecutionEnvironment env;
  CollectSink<std::string> read, moved1, moved2, filtered;
  auto s = env.fromCollection(input);
  s.map([](const std::string& v) { return v + "!"; }).sinkTo(read);
  s.map([](std::string v) { return v; }).sinkTo(moved1);
  s.filter([](const std::string& v) { return v.back() == '7'; }).sinkTo(filtered);
  s.flatMap<std::string>([](std::string&& v, Collector<std::string>& out) { out.collect(std::move(v)); }).sinkTo(moved2);
  env.execute();
  std::vector<std::string> bang, sevens;
  for (const auto& v : input) {
    bang.push_back(v + "!");
    if (v.back() == '7') sevens.push_back(v);
  }
  EXPECT_EQ(read.getResults(), bang);
  EXPECT_EQ(moved1.getResults(), input);
  EXPECT_EQ(moved2.getResults(), input);
  EXPECT_EQ(filtered.getResults(), sevens);
}

TEST(DataStream, GeneratorEmitsEveryIndexOnceAtAnyParallelism) {
  for (int p : {1, 3, 4}) {
    StreamExecutionEnvironment env;
    env.setParallelism(p);
    CollectSink<int64_t> sink;
    const int64_t n = 100003;
    env.fromSource(DataGeneratorSource([](int64_t i) { return i * 7; }, n), WatermarkStrategy<int64_t>::noWatermarks(),
                   "gen")
        .sinkTo(sink);
    env.execute();
    auto got = sorted(sink.getResults());
    ASSERT_EQ(got.size(), static_cast<size_t>(n)) << "parallelism " << p;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], i * 7) << "parallelism " << p;
  }
}

TEST(DataStream, GeneratorIsDeterministicPerSubtask) {
  auto run = [] {
    StreamExecutionEnvironment env;
    env.setParallelism(3);
    CollectSink<std::pair<int, int64_t>> sink;
    struct Tag : RichMapFunction<int64_t, std::pair<int, int64_t>> {
      std::pair<int, int64_t> map(const int64_t& v) override {
        return {getRuntimeContext().getIndexOfThisSubtask(), v};
      }
    };
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 9000), WatermarkStrategy<int64_t>::noWatermarks(),
                   "gen")
        .map(Tag{})
        .sinkTo(sink);
    env.execute();
    return sorted(sink.getResults());
  };
  auto first = run();
  EXPECT_EQ(first, run());
  // Contiguous ranges: subtask s owns [3000 s, 3000 (s + 1)).
  for (auto& [subtask, v] : first) EXPECT_EQ(subtask, v / 3000);
}

TEST(DataStream, RateLimitedGeneratorKeepsItsPace) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 400, RateLimiterStrategy::perSecond(2000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .sinkTo(sink);
  auto start = std::chrono::steady_clock::now();
  env.execute();
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(sink.getResults().size(), 400u);
  // 400 records at 2000/s cannot take less than ~0.2 s (the first record of each reader is free).
  EXPECT_GE(seconds, 0.18);
}

TEST(DataStream, NegativeRateAndCountAreRejected) {
  EXPECT_THROW(RateLimiterStrategy::perSecond(-5), Error);
  EXPECT_THROW(RateLimiterStrategy::perSecond(0), Error);
  EXPECT_THROW(DataGeneratorSource([](int64_t i) { return i; }, -1), Error);
}

struct Lifecycle : RichMapFunction<int, int> {
  static inline std::atomic<int> opened{0};
  static inline std::atomic<int> closed{0};
  static inline std::atomic<int> badContext{0};
  void open() override {
    ++opened;
    auto& ctx = getRuntimeContext();
    if (ctx.getNumberOfParallelSubtasks() != 3 || ctx.getIndexOfThisSubtask() < 0 ||
        ctx.getIndexOfThisSubtask() >= 3 || ctx.getTaskName() != "doubler" || ctx.getMaxNumberOfParallelSubtasks() != 128)
      ++badContext;
  }
  void close() override { ++closed; }
  int map(const int& v) override { return 2 * v; }
};

TEST(DataStream, RichFunctionsAreOpenedAndClosedOncePerSubtask) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(1, 2, 3, 4).rebalance().map(Lifecycle{}).name("doubler").setParallelism(3).sinkTo(sink);
  env.execute();
  EXPECT_EQ(Lifecycle::opened.load(), 3);
  EXPECT_EQ(Lifecycle::closed.load(), 3);
  EXPECT_EQ(Lifecycle::badContext.load(), 0);
  EXPECT_EQ(sorted(sink.getResults()), (std::vector<int>{2, 4, 6, 8}));
}

struct EvenOdd : ProcessFunction<int, int> {
  const OutputTag<std::string> odd{"odd"};
  void processElement(const int& v, Context& ctx, Collector<int>& out) override {
    if (v % 2 == 0) out.collect(v);
    else ctx.output(odd, "odd " + std::to_string(v));
  }
};

TEST(DataStream, ProcessFunctionSplitsIntoSideOutputs) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int> evens;
  CollectSink<std::string> odds;
  std::vector<int> input(3000);
  std::iota(input.begin(), input.end(), 0);
  auto processed = env.fromCollection(input).rebalance().process(EvenOdd{});
  processed.sinkTo(evens);
  processed.getSideOutput(OutputTag<std::string>("odd")).sinkTo(odds);
  env.execute();
  std::vector<int> expectedEvens;
  std::vector<std::string> expectedOdds;
  for (int v : input) {
    if (v % 2 == 0) expectedEvens.push_back(v);
    else expectedOdds.push_back("odd " + std::to_string(v));
  }
  EXPECT_EQ(sorted(evens.getResults()), expectedEvens);
  EXPECT_EQ(sorted(odds.getResults()), sorted(expectedOdds));
}

// getExecutionPlan(): Flink's JSON of what would run, without running it. Operators that
// feed no sink are not in it; a union, a partitioning and a side output are edges.
TEST(DataStream, GetExecutionPlanShowsWhatWouldRunAndRunsNothing) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int> evens, odds, both;
  auto processed = env.fromElements(1, 2, 3).name("numbers").process(EvenOdd{}).name("split");
  processed.sinkTo(evens).name("evens");
  auto odd = processed.getSideOutput(OutputTag<std::string>("odd")).map([](const std::string& s) {
    return static_cast<int>(s.size());
  }).name("lengths");
  odd.sinkTo(odds).name("odds");
  odd.unionWith(processed).rebalance().sinkTo(both).name("both").setParallelism(3);
  processed.map([](int v) { return v; }).name("unused");  // feeds no sink
  const auto plan = nlohmann::json::parse(env.getExecutionPlan());
  std::map<std::string, nlohmann::json> byType;
  std::map<int, std::string> typeOf;
  for (const auto& node : plan["nodes"]) {
    byType[node["type"]] = node;
    typeOf[node["id"].get<int>()] = node["type"];
  }
  std::set<std::string> types;
  for (const auto& [type, node] : byType) types.insert(type);
  EXPECT_EQ(types, (std::set<std::string>{"Source: numbers", "split", "evens", "lengths", "odds", "both"}));
  auto from = [&](const std::string& type) {
    std::set<std::string> out;
    for (const auto& p : byType[type].value("predecessors", nlohmann::json::array()))
      out.insert(typeOf[p["id"].get<int>()] + " " + p["ship_strategy"].get<std::string>());
    return out;
  };
  // fromElements runs at parallelism 1 (it cannot be split), so it rebalances into split.
  EXPECT_EQ(byType["Source: numbers"]["parallelism"], 1);
  EXPECT_EQ(byType["split"]["parallelism"], 2);
  EXPECT_EQ(from("split"), (std::set<std::string>{"Source: numbers REBALANCE"}));
  EXPECT_EQ(from("lengths"), (std::set<std::string>{"split FORWARD"}));  // its side output
  EXPECT_EQ(from("both"), (std::set<std::string>{"lengths REBALANCE", "split REBALANCE"}));
  EXPECT_EQ(byType["both"]["parallelism"], 3);
  EXPECT_EQ(byType["both"]["pact"], "Data Sink");
  EXPECT_EQ(byType["Source: numbers"]["pact"], "Data Source");
  EXPECT_EQ(byType["split"]["pact"], "Operator");

  StreamExecutionEnvironment noSink;
  noSink.fromElements(1).map([](int v) { return v; });
  EXPECT_THROW(noSink.getExecutionPlan(), Error);
}

TEST(DataStream, ProcessTakesALambda) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(1, 2, 3)
      .process<int>([](const int& v, ProcessFunction<int, int>::Context&, Collector<int>& out) {
        out.collect(v);
        out.collect(-v);
      })
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<int>{1, -1, 2, -2, 3, -3}));
}

TEST(DataStream, UnionMergesStreams) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int64_t> sink;
  auto a = env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1000),
                          WatermarkStrategy<int64_t>::noWatermarks(), "a");
  auto b = env.fromSource(DataGeneratorSource([](int64_t i) { return 1000 + i; }, 500),
                          WatermarkStrategy<int64_t>::noWatermarks(), "b");
  auto c = env.fromElements<int64_t>(-1, -2);
  a.unionWith(b, c).map([](int64_t v) { return v; }).sinkTo(sink);
  env.execute();
  std::vector<int64_t> expected{-2, -1};
  for (int64_t i = 0; i < 1500; ++i) expected.push_back(i);
  EXPECT_EQ(sorted(sink.getResults()), expected);
}

struct WhereAmI : RichMapFunction<int64_t, std::pair<int, int64_t>> {
  std::pair<int, int64_t> map(const int64_t& v) override { return {getRuntimeContext().getIndexOfThisSubtask(), v}; }
};

TEST(DataStream, RebalanceSpreadsRoundRobin) {
  StreamExecutionEnvironment env;
  CollectSink<std::pair<int, int64_t>> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 4000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .rebalance()
      .map(WhereAmI{})
      .setParallelism(4)
      .sinkTo(sink);
  env.execute();
  // From one producer, record i goes to the subtask after record i - 1's, in a circle:
  // the subtask of each record follows from the first one's.
  std::map<int64_t, int> subtaskOf;
  for (auto& [s, v] : sink.getResults()) EXPECT_TRUE(subtaskOf.emplace(v, s).second) << v << " arrived twice";
  ASSERT_EQ(subtaskOf.size(), 4000u);
  const int first = subtaskOf.at(0);
  for (auto& [v, s] : subtaskOf) ASSERT_EQ(s, (first + v) % 4) << "record " << v;
}

// Flink's rescale(): each upstream subtask feeds a contiguous share of the downstream
// subtasks round robin (with 2 upstream and 4 downstream, upstream 0 feeds 0 and 1), and
// each downstream subtask reads a contiguous share of the upstream ones (with 4 upstream
// and 2 downstream, downstream 0 reads 0 and 1). Generator subtask s of p makes
// [n s / p, n (s + 1) / p), in order.
TEST(DataStream, RescaleFeedsALocalShareRoundRobin) {
  for (auto [up, down] : std::vector<std::pair<int, int>>{{2, 4}, {4, 2}, {3, 3}, {2, 3}, {3, 2}, {2, 7}}) {
    const int64_t n = 2100;
    StreamExecutionEnvironment env;
    CollectSink<std::pair<int, int64_t>> sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n), WatermarkStrategy<int64_t>::noWatermarks(), "gen")
        .setParallelism(up)
        .rescale()
        .map(WhereAmI{})
        .setParallelism(down)
        .sinkTo(sink);
    env.execute();
    auto results = sorted(sink.getResults());
    ASSERT_EQ(results.size(), static_cast<size_t>(n));
    std::map<int64_t, int> subtaskOf;
    for (auto& [s, v] : results) subtaskOf[v] = s;
    for (int u = 0; u < up; ++u) {
      // The downstream subtasks upstream u feeds, by the definitions above.
      std::vector<int> share;
      for (int d = 0; d < down; ++d) {
        const bool fed = up <= down ? d * up / down == u : d * up / down <= u && u < (d + 1) * up / down;
        if (fed) share.push_back(d);
      }
      ASSERT_FALSE(share.empty());
      const int64_t from = n * u / up, to = n * (u + 1) / up;
      for (int64_t v = from; v < to; ++v)
        ASSERT_EQ(subtaskOf.at(v), share[static_cast<size_t>(v - from) % share.size()])
            << up << " -> " << down << ": record " << v << " of upstream " << u;
    }
  }
}

TEST(DataStream, GlobalSendsEverythingToTheFirstSubtask) {
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  CollectSink<std::pair<int, int64_t>> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 3000), WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .global()
      .map(WhereAmI{})
      .sinkTo(sink);
  env.execute();
  auto results = sink.getResults();
  ASSERT_EQ(results.size(), 3000u);
  for (auto& [s, v] : results) ASSERT_EQ(s, 0) << v;
}

struct ModuloPartitioner : Partitioner<int64_t> {
  int partition(const int64_t& key, int numPartitions) const override { return static_cast<int>((key * 3) % numPartitions); }
};

TEST(DataStream, PartitionCustomSendsEachKeyWhereThePartitionerSays) {
  for (bool subclass : {true, false}) {
    StreamExecutionEnvironment env;
    CollectSink<std::pair<int, int64_t>> sink;
    auto keyOf = [](const int64_t& v) { return v % 11; };
    auto numbers = env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 5000),
                                  WatermarkStrategy<int64_t>::noWatermarks(), "gen")
                       .setParallelism(2);
    auto partitioned = subclass ? numbers.partitionCustom(ModuloPartitioner{}, keyOf)
                                : numbers.partitionCustom([](const int64_t& k, int n) { return static_cast<int>((k * 3) % n); },
                                                          keyOf);
    partitioned.map(WhereAmI{}).setParallelism(4).sinkTo(sink);
    env.execute();
    auto results = sink.getResults();
    ASSERT_EQ(results.size(), 5000u);
    for (auto& [s, v] : results) ASSERT_EQ(s, (v % 11) * 3 % 4) << v;
  }
}

TEST(DataStream, APartitionerOutOfRangeFailsTheJobNamingIt) {
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 100), WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .partitionCustom([](const int64_t& k, int n) { return k < 50 ? 0 : n; }, [](const int64_t& v) { return v; })
      .map([](const int64_t& v) { return v; })
      .setParallelism(3)
      .sinkTo(sink);
  try {
    env.execute();
    FAIL() << "the job should fail";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("partitionCustom: the partitioner returned channel 3 for 3 downstream subtasks"),
              std::string::npos)
        << e.what();
  }
}

// The names of the threads that ran `recordThreadName`, as top -H, perf and gdb show them.
std::mutex gThreadNamesMutex;
std::set<std::string> gThreadNames;

int64_t recordThreadName(int64_t v) {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  std::lock_guard lock(gThreadNamesMutex);
  gThreadNames.insert(name);
  return v;
}

TEST(DataStream, EachSubtaskThreadIsNamedAfterItsOperatorAndIndex) {
  StreamExecutionEnvironment env;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 400), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .rebalance()
      .map([](const int64_t& v) { return recordThreadName(v); })
      .name("Count words")
      .setParallelism(2)
      .sinkTo(DiscardingSink<int64_t>());
  env.execute();
  EXPECT_EQ(gThreadNames, (std::set<std::string>{"Count words 1/2", "Count words 2/2"}));
}

TEST(DataStream, ShuffleReachesEverySubtaskAndLosesNothing) {
  StreamExecutionEnvironment env;
  CollectSink<std::pair<int, int64_t>> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 4000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .shuffle()
      .map(WhereAmI{})
      .setParallelism(4)
      .sinkTo(sink);
  env.execute();
  std::map<int, int> perSubtask;
  std::vector<int64_t> values;
  for (auto& [s, v] : sink.getResults()) {
    perSubtask[s]++;
    values.push_back(v);
  }
  // Every record exactly once (no loss hidden by a duplicate) ...
  std::vector<int64_t> expected(4000);
  for (int64_t i = 0; i < 4000; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(sorted(values), expected);
  // ... spread at random over every subtask: each gets about a quarter (1,000 +- 27 by
  // the binomial's deviation; under 800 or over 1,200 is all but impossible).
  ASSERT_EQ(perSubtask.size(), 4u);
  for (auto& [s, n] : perSubtask) EXPECT_TRUE(n > 800 && n < 1200) << "subtask " << s << " got " << n;
}

TEST(DataStream, BroadcastSendsEveryRecordToEverySubtask) {
  StreamExecutionEnvironment env;
  CollectSink<std::pair<int, int64_t>> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 2500), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .broadcast()
      .map(WhereAmI{})
      .setParallelism(3)
      .sinkTo(sink);
  env.execute();
  std::map<int, std::set<int64_t>> perSubtask;
  for (auto& [s, v] : sink.getResults()) perSubtask[s].insert(v);
  ASSERT_EQ(perSubtask.size(), 3u);
  for (auto& [s, values] : perSubtask) EXPECT_EQ(values.size(), 2500u);
  EXPECT_EQ(sink.getResults().size(), 7500u);
}

// One record in a million of a source that never runs out of input, sent to another
// subtask: a buffer of them would take a billion records to fill.
template <class Sink>
JobClient rareRecordsFromABusySource(StreamExecutionEnvironment& env, Sink sink) {
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount),
                 WatermarkStrategy<int64_t>::noWatermarks(), "busy")
      .filter([](const int64_t& v) { return v % 1'000'000 == 0; })
      .rebalance()
      .sinkTo(sink);
  return env.executeAsync("rare records");
}

TEST(DataStream, ABusySubtaskSendsAPartlyFilledBufferWhenTheBufferTimeoutPasses) {
  StreamExecutionEnvironment env;
  env.setBufferTimeout(std::chrono::milliseconds(20));
  CollectSink<int64_t> sink;
  auto client = rareRecordsFromABusySource(env, sink);
  test::waitUntil([&] { return sink.getResults().size() >= 2; }, "the first two records at the sink");
  client.cancel();
  client.wait();
  auto got = sink.getResults();
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(got[1], 1'000'000);
}

TEST(DataStream, WithoutABufferTimeoutABusySubtaskSendsOnlyFullBuffers) {
  StreamExecutionEnvironment env;
  env.setBufferTimeout(std::chrono::milliseconds(-1));
  CollectSink<int64_t> sink;
  auto client = rareRecordsFromABusySource(env, sink);
  // Five records were kept (0, 1 M, ... 4 M) and wait in a partly filled buffer.
  test::waitUntil([&] { return client.getMetrics().vertices[0].numSourceRecords > 5'000'000; },
                  "5 M records from the source");
  EXPECT_TRUE(sink.getResults().empty());
  client.cancel();
  client.wait();
}

TEST(DataStream, ASubtaskOutOfInputSendsItsPartlyFilledBuffersAtOnce) {
  StreamExecutionEnvironment env;
  env.setBufferTimeout(std::chrono::milliseconds(-1));  // so only running out of input sends them
  test::GatedSource<int64_t> source;
  CollectSink<int64_t> sink;
  env.fromSource(source, WatermarkStrategy<int64_t>::noWatermarks(), "gated")
      .keyBy([](const int64_t& v) { return v; })
      .map([](const int64_t& v) { return v * 10; })
      .sinkTo(sink);
  auto client = env.executeAsync("out of input");
  source.push({1, 2, 3});
  test::waitUntil([&] { return sink.getResults().size() == 3; }, "three records at the sink");
  source.push({4});
  test::waitUntil([&] { return sink.getResults().size() == 4; }, "a fourth record at the sink");
  source.close();
  client.wait();
  EXPECT_EQ(sorted(sink.getResults()), (std::vector<int64_t>{10, 20, 30, 40}));
}

// The subtask a record is in after a forward edge (in a vertex of its own).
struct WhereAfterForward : RichMapFunction<std::pair<int, int64_t>, std::pair<int, std::pair<int, int64_t>>> {
  std::pair<int, std::pair<int, int64_t>> map(const std::pair<int, int64_t>& p) override {
    return {getRuntimeContext().getIndexOfThisSubtask(), p};
  }
};

TEST(DataStream, ForwardKeepsRecordsOnTheirSubtask) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::pair<int, std::pair<int, int64_t>>> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 2000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .map(WhereAmI{})
      .forward()
      .map([](const std::pair<int, int64_t>& p) { return p; })
      .disableChaining()
      .map(WhereAfterForward{})
      .sinkTo(sink);
  env.execute();
  ASSERT_EQ(sink.getResults().size(), 2000u);
  for (auto& [after, p] : sink.getResults()) {
    EXPECT_EQ(p.first, p.second / 1000) << "the source's subtask " << p.first << " made record " << p.second;
    EXPECT_EQ(after, p.first) << "record " << p.second << " crossed the forward edge to another subtask";
  }
}

TEST(DataStream, ForwardBetweenDifferentParallelismIsAnError) {
  StreamExecutionEnvironment env;
  env.fromElements(1, 2).forward().map([](int v) { return v; }).setParallelism(2).sinkTo(DiscardingSink<int>());
  try {
    env.execute();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJob);
    EXPECT_NE(std::string(e.what()).find("forward"), std::string::npos) << e.what();
  }
}

TEST(DataStream, ForwardOperatorsOfEqualParallelismAreChained) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 5000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .map([](int64_t v) { return v + 1; })
      .filter([](const int64_t& v) { return v % 2 == 0; })
      .sinkTo(sink);
  auto client = env.executeAsync("chained");
  client.wait();
  auto metrics = client.getMetrics();
  ASSERT_EQ(metrics.vertices.size(), 1u);  // one chain: no channel at all
  EXPECT_EQ(metrics.vertices[0].name, "Source: gen -> Map -> Filter -> Sink");
  EXPECT_EQ(metrics.vertices[0].numRecordsIn, 0u);
  EXPECT_EQ(metrics.vertices[0].numSourceRecords, 5000u);
  EXPECT_EQ(metrics.vertices[0].numRecordsOut, 2500u);
  EXPECT_EQ(sink.getResults().size(), 2500u);
}

TEST(DataStream, OneStreamFeedsSeveralOperators) {
  StreamExecutionEnvironment env;
  CollectSink<int> a;
  CollectSink<int> b;
  auto s = env.fromElements(1, 2, 3);
  s.map([](int v) { return v * 10; }).sinkTo(a);
  s.map([](int v) { return v * 100; }).setParallelism(2).sinkTo(b);
  env.execute();
  EXPECT_EQ(a.getResults(), (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(sorted(b.getResults()), (std::vector<int>{100, 200, 300}));
}

struct Plus {
  int by;
  int operator()(int v) const { return v + by; }
};
struct IsPositive {
  bool filter(const int& v) const { return v > 0; }
};

TEST(DataStream, FunctionObjectsWorkLikeLambdas) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(-5, 1, 2).map(Plus{3}).filter(IsPositive{}).sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<int>{4, 5}));
}

TEST(DataStream, AJobWithoutASinkIsRefused) {
  StreamExecutionEnvironment env;
  env.fromElements(1).map([](int v) { return v; });
  EXPECT_THROW(env.execute(), Error);
}

// #35.7: the buffers of every channel share the job's network memory. With many
// channels each buffer is smaller, and every record still arrives once; a job whose
// channels cannot have buffers of 256 bytes within it is refused at start, saying how
// many channels it has and what they need (docs/runtime.md: n + 1 buffers and about
// 1.5 KiB more per channel).
TEST(NetworkMemory, SmallBuffersCarryEveryRecordOnce) {
  StreamExecutionEnvironment env;
  // 16 x 16 keyed channels in 2 MiB: buffers of about 1.3 KiB, 80-odd records.
  env.setParallelism(16).setNetworkMemory(2 << 20);
  CollectSink<std::pair<int64_t, int64_t>> sink;
  constexpr int64_t kRecords = 200000, kKeys = 97;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kRecords), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .map([](const int64_t& v) { return std::pair<int64_t, int64_t>{v % kKeys, v}; })
      .keyBy([](const std::pair<int64_t, int64_t>& p) { return p.first; })
      .reduce([](const std::pair<int64_t, int64_t>& a, const std::pair<int64_t, int64_t>& b) {
        return std::pair<int64_t, int64_t>{a.first, a.second + b.second};
      })
      .sinkTo(sink);
  env.execute();
  std::map<int64_t, int64_t> expected, last;
  for (int64_t v = 0; v < kRecords; ++v) expected[v % kKeys] += v;
  size_t results = 0;
  for (const auto& [key, sum] : sink.getResults()) {
    last[key] = std::max(last[key], sum);  // a running sum: its largest is the total
    ++results;
  }
  EXPECT_EQ(results, static_cast<size_t>(kRecords)) << "one running sum per record";
  EXPECT_EQ(last, expected);
}

TEST(NetworkMemory, AJobWhoseChannelsCannotFitIsRefusedWithTheNumbers) {
  StreamExecutionEnvironment env;
  env.setParallelism(64).setNetworkMemory(4 << 20);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .keyBy([](const int64_t& v) { return v % 10; })
      .reduce([](const int64_t& a, const int64_t& b) { return a + b; })
      .sinkTo(sink);
  // One all-to-all edge of 64 x 64 channels (the sink is chained): each needs 5 buffers
  // of 256 bytes and 1,536 bytes more, 11.0 MiB in all, more than 4 MiB.
  try {
    env.execute();
    FAIL() << "a job that needs 11 MiB of network memory ran in 4";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    const std::string message = e.what();
    EXPECT_NE(message.find("4096 channels need at least 11.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("more than its 4.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("--network-memory"), std::string::npos) << message;
  }
  EXPECT_TRUE(sink.getResults().empty()) << "nothing ran";
}

}  // namespace
}  // namespace weir
