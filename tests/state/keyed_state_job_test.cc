// Keyed state inside whole jobs, on both backends, against a brute force.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "weir/weir.h"

namespace weir {
namespace {

struct Seen {
  int64_t key = 0;
  int64_t count = 0;     // records of this key so far, this one included
  int64_t sum = 0;       // their values
  int64_t distinct = 0;  // distinct values among them
};

// Per key: a count (ValueState), a running sum (ReducingState) and the distinct values
// (MapState), emitted with every record.
struct CountPerKey : KeyedProcessFunction<int64_t, std::pair<int64_t, int64_t>, Seen> {
  void open() override {
    count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0));
    sum_ = &getRuntimeContext().getReducingState(
        ReducingStateDescriptor<int64_t>("sum", [](const int64_t& a, const int64_t& b) { return a + b; }));
    values_ = &getRuntimeContext().getMapState(MapStateDescriptor<int64_t, bool>("values"));
  }
  void processElement(const std::pair<int64_t, int64_t>& r, Context& ctx, Collector<Seen>& out) override {
    int64_t count = *count_->value() + 1;
    count_->update(count);
    sum_->add(r.second);
    values_->put(r.second, true);
    int64_t distinct = 0;
    for ([[maybe_unused]] const auto& k : values_->keys()) ++distinct;
    out.collect({ctx.getCurrentKey(), count, *sum_->get(), distinct});
  }

 private:
  ValueState<int64_t>* count_ = nullptr;
  ReducingState<int64_t>* sum_ = nullptr;
  MapState<int64_t, bool>* values_ = nullptr;
};

class KeyedStateJobTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(KeyedStateJobTest, StateFollowsEachKeyAcrossSubtasks) {
  auto [backend, parallelism] = GetParam();
  const int64_t n = 20000;
  auto record = [](int64_t i) { return std::pair<int64_t, int64_t>{(i * 7919) % 97, i % 5}; };
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(stateBackendFromName(backend));
  CollectSink<Seen> sink;
  env.fromSource(DataGeneratorSource(record, n), WatermarkStrategy<std::pair<int64_t, int64_t>>::noWatermarks(),
                 "records")
      .keyBy([](const std::pair<int64_t, int64_t>& r) { return r.first; })
      .process(CountPerKey{})
      .sinkTo(sink);
  env.execute();

  // Brute force: the n-th record of a key sees count n; a key's final sum and distinct
  // count are those of all its records.
  std::map<int64_t, std::vector<int64_t>> valuesOf;
  for (int64_t i = 0; i < n; ++i) valuesOf[record(i).first].push_back(record(i).second);
  std::map<int64_t, std::set<int64_t>> counts;
  std::map<int64_t, Seen> last;
  for (const Seen& s : sink.getResults()) {
    EXPECT_TRUE(counts[s.key].insert(s.count).second) << "key " << s.key << " saw count " << s.count << " twice";
    if (s.count > last[s.key].count) last[s.key] = s;
  }
  ASSERT_EQ(counts.size(), valuesOf.size());
  for (const auto& [key, values] : valuesOf) {
    EXPECT_EQ(counts[key].size(), values.size());
    EXPECT_EQ(*counts[key].rbegin(), static_cast<int64_t>(values.size()));
    int64_t sum = 0;
    for (int64_t v : values) sum += v;
    EXPECT_EQ(last[key].sum, sum) << "key " << key;
    EXPECT_EQ(last[key].distinct, static_cast<int64_t>(std::set<int64_t>(values.begin(), values.end()).size()));
  }
}

INSTANTIATE_TEST_SUITE_P(BackendsAndParallelism, KeyedStateJobTest,
                         ::testing::Combine(::testing::Values("heap", "rocksdb"), ::testing::Values(1, 3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_p" + std::to_string(std::get<1>(info.param));
                         });

struct PassThrough : KeyedProcessFunction<int64_t, int64_t, int64_t> {
  void open() override { getRuntimeContext().getState(ValueStateDescriptor<int64_t>("v")); }
  void processElement(const int64_t& v, Context&, Collector<int64_t>& out) override { out.collect(v); }
};

TEST(KeyedStateJob, AMissingRocksDBFolderFailsTheJobNamingIt) {
  EmbeddedRocksDBStateBackend::Options options;
  options.localDirectory = "/nonexistent/rocks";
  StreamExecutionEnvironment env;
  env.setStateBackend(std::make_shared<EmbeddedRocksDBStateBackend>(options));
  env.fromElements<int64_t>({1, 2, 3})
      .keyBy([](int64_t v) { return v; })
      .process(PassThrough{})
      .name("stateful")
      .sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute();
    FAIL() << "the job must fail";
  } catch (const JobExecutionError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("stateful"), std::string::npos) << what;
    EXPECT_NE(what.find("RocksDB local directory '/nonexistent/rocks' does not exist"), std::string::npos) << what;
  }
}

struct UnkeyedWithState : ProcessFunction<int64_t, int64_t> {
  void open() override { getRuntimeContext().getState(ValueStateDescriptor<int64_t>("total")); }
  void processElement(const int64_t& v, Context&, Collector<int64_t>& out) override { out.collect(v); }
};

TEST(KeyedStateJob, KeyedStateOnAnUnkeyedStreamFailsTheJobNamingTheState) {
  StreamExecutionEnvironment env;
  env.fromElements<int64_t>({1, 2, 3}).process(UnkeyedWithState{}).name("adder").sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute();
    FAIL() << "the job must fail";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("state 'total' is keyed state, but operator 'adder' is not on a keyed stream"),
              std::string::npos)
        << e.what();
  }
}

// Records what it saw of its operator state: initializeState runs before open(), on a
// fresh start, with the runtime context already set.
struct Checkpointed : RichMapFunction<int64_t, std::string>, CheckpointedFunction {
  void initializeState(FunctionInitializationContext& ctx) override {
    restored = ctx.isRestored();
    offsets = &ctx.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("offsets"));
    subtask = getRuntimeContext().getIndexOfThisSubtask();
  }
  void snapshotState(const FunctionSnapshotContext&) override {}
  void open() override { opened = offsets != nullptr; }
  std::string map(const int64_t& v) override {
    offsets->add(v);
    return std::to_string(subtask) + (restored ? " restored" : " fresh") + (opened ? " opened-after-init" : "") +
           " holds " + std::to_string(offsets->get().size());
  }
  ListState<int64_t>* offsets = nullptr;
  bool restored = true, opened = false;
  int subtask = -1;
};

TEST(OperatorStateJob, InitializeStateRunsBeforeOpenOnAFreshStart) {
  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromElements<int64_t>({1, 2, 3}).map(Checkpointed{}).sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(),
            (std::vector<std::string>{"0 fresh opened-after-init holds 1", "0 fresh opened-after-init holds 2",
                                      "0 fresh opened-after-init holds 3"}));
}

}  // namespace
}  // namespace weir
