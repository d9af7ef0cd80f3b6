#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "weir/weir.h"

namespace weir {
namespace {

struct Sale {
  std::string shop;
  int64_t amount = 0;
  int64_t seq = 0;
  bool operator==(const Sale&) const = default;
};

struct Tagged : RichMapFunction<std::pair<int64_t, int64_t>, std::pair<int, std::pair<int64_t, int64_t>>> {
  std::pair<int, std::pair<int64_t, int64_t>> map(const std::pair<int64_t, int64_t>& v) override {
    return {getRuntimeContext().getIndexOfThisSubtask(), v};
  }
};

// Runs generator -> keyBy(i % keys) -> sum at parallelism p on `backend`; returns
// (subtask, (key, sum)).
std::vector<std::pair<int, std::pair<int64_t, int64_t>>> runKeyedSum(int p, int64_t n, int64_t keys,
                                                                      const std::string& backend) {
  StreamExecutionEnvironment env;
  env.setParallelism(p).setStateBackend(stateBackendFromName(backend));
  CollectSink<std::pair<int, std::pair<int64_t, int64_t>>> sink;
  env.fromSource(DataGeneratorSource([keys](int64_t i) { return std::pair<int64_t, int64_t>{(i * 7919) % keys, i % 13}; }, n),
                 WatermarkStrategy<std::pair<int64_t, int64_t>>::noWatermarks(), "gen")
      .keyBy([](const std::pair<int64_t, int64_t>& r) { return r.first; })
      .sum<1>()
      .map(Tagged{})
      .sinkTo(sink);
  env.execute();
  return sink.getResults();
}

// On RocksDB the sums are RocksDB state; on the heap a table of the operator's own.
TEST(KeyedStream, RollingSumIsTheSameAtParallelism1_2_4OnBothBackends) {
  const int64_t n = 50000, keys = 997;
  // Independent expectation: per key, the final sum and how many updates it saw.
  std::map<int64_t, int64_t> expectedSum, expectedCount;
  for (int64_t i = 0; i < n; ++i) {
    expectedSum[(i * 7919) % keys] += i % 13;
    expectedCount[(i * 7919) % keys]++;
  }
  for (auto [p, backend] : {std::pair{1, "heap"}, {2, "heap"}, {4, "heap"}, {1, "rocksdb"}, {2, "rocksdb"}}) {
    SCOPED_TRACE(backend);
    auto results = runKeyedSum(p, n, keys, backend);
    ASSERT_EQ(results.size(), static_cast<size_t>(n)) << "parallelism " << p;
    std::map<int64_t, int64_t> finalSum, count;
    std::map<int64_t, std::set<int>> subtasksOfKey;
    for (auto& [subtask, kv] : results) {
      finalSum[kv.first] = std::max(finalSum[kv.first], kv.second);  // sums only grow
      count[kv.first]++;
      subtasksOfKey[kv.first].insert(subtask);
    }
    EXPECT_EQ(finalSum, expectedSum) << "parallelism " << p;
    EXPECT_EQ(count, expectedCount) << "parallelism " << p;
    for (auto& [key, subtasks] : subtasksOfKey) {
      ASSERT_EQ(subtasks.size(), 1u) << "key " << key << " on several subtasks at parallelism " << p;
      int keyGroup = assignToKeyGroup(KeyHash<int64_t>{}(key), kDefaultMaxParallelism);
      EXPECT_EQ(*subtasks.begin(), computeOperatorIndexForKeyGroup(kDefaultMaxParallelism, p, keyGroup));
    }
  }
}

// Without setMaxParallelism a job takes Flink's default for its highest parallelism,
// min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768): a job at parallelism 200 runs
// (it failed to start against the fixed 128) with 512 key groups, one at 2 has 128.
TEST(KeyedStream, TheDefaultMaxParallelismFollowsTheParallelismAsFlinks) {
  EXPECT_EQ(StreamExecutionEnvironment().getMaxParallelism(), -1);
  for (auto [p, expected] : {std::pair{2, 128}, std::pair{200, 512}, std::pair{100, 256}}) {
    EXPECT_EQ(defaultMaxParallelism(p), expected);
    StreamExecutionEnvironment env;
    env.setParallelism(p);
    CollectSink<std::pair<int, int64_t>> sink;
    struct KeyGroups : RichMapFunction<std::pair<int64_t, int64_t>, std::pair<int, int64_t>> {
      std::pair<int, int64_t> map(const std::pair<int64_t, int64_t>& v) override {
        return {getRuntimeContext().getMaxNumberOfParallelSubtasks(), v.second};
      }
    };
    env.fromSource(DataGeneratorSource([](int64_t i) { return std::pair<int64_t, int64_t>{i % 1000, 1}; }, 20000),
                   WatermarkStrategy<std::pair<int64_t, int64_t>>::noWatermarks(), "gen")
        .setParallelism(1)
        .keyBy([](const std::pair<int64_t, int64_t>& r) { return r.first; })
        .sum<1>()
        .map(KeyGroups{})
        .sinkTo(sink);
    env.execute();
    int64_t finals = 0;
    for (auto& [keyGroups, count] : sink.getResults()) {
      ASSERT_EQ(keyGroups, expected) << "parallelism " << p;
      if (count == 20) ++finals;  // each of the 1,000 keys reaches 20 once
    }
    EXPECT_EQ(finals, 1000) << "parallelism " << p;
  }
  EXPECT_EQ(defaultMaxParallelism(30000), 32768);
}

TEST(KeyedStream, RollingReduceEmitsEveryIntermediateResultInOrder) {
  StreamExecutionEnvironment env;
  CollectSink<std::pair<std::string, int>> sink;
  env.fromCollection(std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 10}, {"a", 2}, {"a", 3}, {"b", 20}})
      .keyBy([](const std::pair<std::string, int>& p) { return p.first; })
      .reduce([](const std::pair<std::string, int>& acc, const std::pair<std::string, int>& v) {
        return std::pair<std::string, int>{acc.first, acc.second * 10 + v.second};
      })
      .sinkTo(sink);
  env.execute();
  std::vector<std::pair<std::string, int>> expected{{"a", 1}, {"b", 10}, {"a", 12}, {"a", 123}, {"b", 120}};
  EXPECT_EQ(sink.getResults(), expected);
}

TEST(KeyedStream, SumMinMaxOnAStructFieldKeepTheFirstRecordsOtherFields) {
  std::vector<Sale> sales{{"x", 5, 0}, {"y", 7, 1}, {"x", 3, 2}, {"x", 9, 3}, {"y", 1, 4}};
  auto run = [&](auto aggregate) {
    StreamExecutionEnvironment env;
    CollectSink<Sale> sink;
    aggregate(env.fromCollection(sales).keyBy([](const Sale& s) { return s.shop; })).sinkTo(sink);
    env.execute();
    return sink.getResults();
  };
  auto sums = run([](auto keyed) { return keyed.sum(&Sale::amount); });
  EXPECT_EQ(sums, (std::vector<Sale>{{"x", 5, 0}, {"y", 7, 1}, {"x", 8, 0}, {"x", 17, 0}, {"y", 8, 1}}));
  auto mins = run([](auto keyed) { return keyed.min(&Sale::amount); });
  EXPECT_EQ(mins, (std::vector<Sale>{{"x", 5, 0}, {"y", 7, 1}, {"x", 3, 0}, {"x", 3, 0}, {"y", 1, 1}}));
  auto maxs = run([](auto keyed) { return keyed.max(&Sale::amount); });
  EXPECT_EQ(maxs, (std::vector<Sale>{{"x", 5, 0}, {"y", 7, 1}, {"x", 5, 0}, {"x", 9, 0}, {"y", 7, 1}}));
  auto minBy = run([](auto keyed) { return keyed.minBy(&Sale::amount); });
  EXPECT_EQ(minBy, (std::vector<Sale>{{"x", 5, 0}, {"y", 7, 1}, {"x", 3, 2}, {"x", 3, 2}, {"y", 1, 4}}));
  auto maxBy = run([](auto keyed) { return keyed.maxBy(&Sale::amount); });
  EXPECT_EQ(maxBy, (std::vector<Sale>{{"x", 5, 0}, {"y", 7, 1}, {"x", 5, 0}, {"x", 9, 3}, {"y", 7, 1}}));
}

TEST(KeyedStream, SumOfPlainNumbersKeyedByThemselves) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(2, 3, 2, 2, 3).keyBy([](int v) { return v; }).sum().sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<int>{2, 3, 4, 6, 6}));
}

// A bool key (even or odd) splits the stream in two running sums, at parallelism 2 too.
TEST(KeyedStream, ABoolKeySplitsTheStreamInTwo) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int> sink;
  env.fromElements(1, 2, 3, 4, 5, 6).keyBy([](int v) { return v % 2 == 0; }).sum().sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 2, 4, 6, 9, 12}));  // odd: 1, 4, 9; even: 2, 6, 12
}

struct Point {
  int x = 0;
  int y = 0;
  bool operator==(const Point&) const = default;
};
WEIR_STRUCT(Point, x, y);

TEST(KeyedStream, StructKeysDeclaredWithWeirStructPartition) {
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  CollectSink<std::pair<Point, int>> sink;
  std::vector<std::pair<Point, int>> input;
  std::map<std::pair<int, int>, int> expected;
  for (int i = 0; i < 3000; ++i) {
    Point p{i % 5, i % 7};
    input.push_back({p, 1});
    expected[{p.x, p.y}]++;
  }
  env.fromCollection(input)
      .rebalance()
      .keyBy([](const std::pair<Point, int>& r) { return r.first; })
      .sum<1>()
      .sinkTo(sink);
  env.execute();
  std::map<std::pair<int, int>, int> finalCount;
  for (auto& [p, c] : sink.getResults()) finalCount[{p.x, p.y}] = std::max(finalCount[{p.x, p.y}], c);
  EXPECT_EQ(finalCount, expected);
}

}  // namespace
}  // namespace weir
