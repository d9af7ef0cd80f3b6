// An operator's own max parallelism (SingleOutputStreamOperator::setMaxParallelism, as in
// Flink): its keyed state has that many key groups and a keyBy into it routes by them;
// the savepoint names it per operator, beside the job's; a resume must keep it, and one
// that leaves it unset takes the savepoint's. Expectations come from Flink's key group
// formulas (key_group.h) and from counting the input.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "checkpoint/checkpoint_storage.h"
#include "support/error_of.h"
#include "support/fresh_folder.h"
#include "support/job_end.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using namespace weir::test;

struct Seen {
  int64_t key = 0;
  int32_t subtask = 0;
  int32_t keyGroups = 0;  // getMaxNumberOfParallelSubtasks()
  int64_t count = 0;      // the key's count so far
};
WEIR_STRUCT(Seen, key, subtask, keyGroups, count);

struct CountWhere : KeyedProcessFunction<int64_t, int64_t, Seen> {
  void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement(const int64_t& v, Context& ctx, Collector<Seen>& out) override {
    count_->update(*count_->value() + 1);
    out.collect({ctx.getCurrentKey(), getRuntimeContext().getIndexOfThisSubtask(),
                 getRuntimeContext().getMaxNumberOfParallelSubtasks(), *count_->value()});
  }
  ValueState<int64_t>* count_ = nullptr;
};

// Passes records on, stamped with where it runs and its key groups.
struct StampWhere : KeyedProcessFunction<int64_t, Seen, Seen> {
  void processElement(const Seen& s, Context& ctx, Collector<Seen>& out) override {
    out.collect({ctx.getCurrentKey(), getRuntimeContext().getIndexOfThisSubtask(),
                 getRuntimeContext().getMaxNumberOfParallelSubtasks(), s.count});
  }
};

// Numbers 0..n-1 keyed by v % 50 into a count whose max parallelism is `countMax` (0:
// unset), then by v % 7 into a second count that keeps the job's.
void addJob(StreamExecutionEnvironment& env, int64_t n, double rate, int countMax, CollectSink<Seen> first,
            CollectSink<Seen> second) {
  auto counted = env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                                WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
                     .uid("numbers")
                     .keyBy([](const int64_t& v) { return v % 50; })
                     .process(CountWhere{})
                     .name("count")
                     .uid("count");
  if (countMax > 0) counted.setMaxParallelism(countMax);
  counted.sinkTo(first).uid("first");
  counted.keyBy([](const Seen& s) { return s.count % 7; })
      .process(StampWhere{})
      .uid("second")
      .sinkTo(second)
      .uid("second-sink");
}

TEST(MaxParallelism, AnOperatorsOwnIsTheKeyGroupsOfItsStateAndOfTheKeyByIntoIt) {
  StreamExecutionEnvironment env;
  env.setParallelism(4);
  CollectSink<Seen> first, second;
  addJob(env, 5000, 1e9, 16, first, second);
  env.execute("own max parallelism");
  std::map<int64_t, int64_t> last;
  for (const Seen& s : first.getResults()) {
    EXPECT_EQ(s.keyGroups, 16);
    const int keyGroup = assignToKeyGroup(KeyHash<int64_t>{}(s.key), 16);
    ASSERT_EQ(s.subtask, computeOperatorIndexForKeyGroup(16, 4, keyGroup)) << "key " << s.key;
    last[s.key] = std::max(last[s.key], s.count);
  }
  ASSERT_EQ(last.size(), 50u);
  for (const auto& [key, count] : last) EXPECT_EQ(count, 100) << "key " << key;
  // The second keyBy routes by the job's 128 key groups, into an operator that has them.
  for (const Seen& s : second.getResults()) {
    EXPECT_EQ(s.keyGroups, 128);
    ASSERT_EQ(s.subtask, computeOperatorIndexForKeyGroup(128, 4, assignToKeyGroup(KeyHash<int64_t>{}(s.key), 128)));
  }
  EXPECT_EQ(second.getResults().size(), 5000u);
}

TEST(MaxParallelism, BadValuesAreOneLineNamingTheOperator) {
  StreamExecutionEnvironment env;
  auto numbers = env.fromElements<int64_t>(1, 2, 3);
  auto mapped = numbers.map([](const int64_t& v) { return v; }).name("double");
  EXPECT_EQ(errorOf([&] { mapped.setMaxParallelism(0); }),
            "max parallelism of 'double' must be between 1 and 32768, got 0");
  EXPECT_EQ(errorOf([&] { mapped.setMaxParallelism(32769); }),
            "max parallelism of 'double' must be between 1 and 32768, got 32769");
  auto sink = mapped.sinkTo(DiscardingSink<int64_t>()).name("nowhere");
  EXPECT_EQ(errorOf([&] { sink.setMaxParallelism(-1); }),
            "max parallelism of sink 'nowhere' must be between 1 and 32768, got -1");
  auto single = numbers.map([](const int64_t& v) { return v; }).name("one");
  single.forceNonParallel();
  EXPECT_EQ(errorOf([&] { single.setMaxParallelism(4); }),
            "'one' is a non-parallel operator: its max parallelism must be 1, got 4");

  StreamExecutionEnvironment wide;
  wide.setParallelism(8);
  wide.fromElements<int64_t>(1, 2, 3)
      .keyBy([](const int64_t& v) { return v; })
      .process(CountWhere{})
      .name("count")
      .setMaxParallelism(4)
      .sinkTo(DiscardingSink<Seen>());
  EXPECT_EQ(errorOf([&] { wide.execute(); }), "parallelism of 'count' is 8; it must be between 1 and maxParallelism (4)");
}

TEST(MaxParallelism, ASavepointKeepsEachOperatorsAndAResumeMustNotChangeIt) {
  fs::path dir = freshFolder("max-parallelism");
  fs::create_directories(dir / "checkpoints");
  const int64_t n = 200000;
  StreamExecutionEnvironment env;
  env.setParallelism(2).enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
  CollectSink<Seen> first, second;
  addJob(env, n, 20000, 16, first, second);
  auto client = env.executeAsync("first");
  ASSERT_TRUE(waitWhileRunning(client, [](const JobMetrics& m) { return m.numberOfCompletedCheckpoints >= 1; }));
  std::string savepoint = client.stopWithSavepoint(false, (dir / "savepoints").string()).get();
  client.wait();

  auto metadata = checkpoint::readMetadata(savepoint);
  EXPECT_EQ(metadata.maxParallelism, 128);  // the job's default at parallelism 2
  std::map<std::string, std::set<int>> maxOf;
  std::set<std::pair<int, int>> countGroups;
  for (const auto& f : metadata.files) {
    maxOf[f.operatorId].insert(f.maxParallelism);
    if (f.operatorId == "count") countGroups.insert({f.keyGroups.start, f.keyGroups.end});
  }
  EXPECT_EQ(maxOf["count"], std::set<int>{16});
  EXPECT_EQ(maxOf["second"], std::set<int>{128});
  EXPECT_EQ(countGroups, (std::set<std::pair<int, int>>{{0, 7}, {8, 15}}));

  auto resume = [&](int countMax, int jobMax, int parallelism) {
    StreamExecutionEnvironment resumed;
    resumed.setParallelism(parallelism);
    if (jobMax > 0) resumed.setMaxParallelism(jobMax);
    resumed.setRestorePath(savepoint);
    CollectSink<Seen> a, b;
    addJob(resumed, n, 1e9, countMax, a, b);
    resumed.execute("resumed");
    return a.getResults();
  };
  std::string error = errorOf([&] { resume(32, 0, 2); });
  EXPECT_NE(error.find("holds state of operator 'count' (count) taken with max parallelism 16, but the operator now "
                       "has max parallelism 32; they must be equal"),
            std::string::npos)
      << error;
  // The job's, once set, is every operator's that has none of its own (as in Flink).
  error = errorOf([&] { resume(0, 64, 2); });
  EXPECT_NE(error.find("but the operator now has max parallelism 64"), std::string::npos) << error;
  EXPECT_NE(errorOf([&] { resume(0, 0, 20); })
                .find("parallelism of 'count' is 20, more than the max parallelism (16) of its state in the checkpoint "
                      "it restores"),
            std::string::npos);
  // Unset, the savepoint's 16 is taken: at parallelism 3 the counts go on exactly.
  std::map<int64_t, int64_t> last;
  for (const Seen& s : first.getResults()) last[s.key] = std::max(last[s.key], s.count);
  for (const Seen& s : resume(0, 0, 3)) {
    EXPECT_EQ(s.keyGroups, 16);
    last[s.key] = std::max(last[s.key], s.count);
  }
  ASSERT_EQ(last.size(), 50u);
  for (const auto& [key, count] : last) EXPECT_EQ(count, n / 50) << "key " << key;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
