// Every checkpoint records the schema of each keyed state; a job restored from it that
// registers the state with reordered or added fields migrates its values, and one that
// changes a field's type (or the state's kind) fails naming the state and the field, on
// both backends, instead of decoding its bytes as the new type. Before the schemas, a
// field changed from int32 to float decoded silently wrong (same size, other meaning).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "checkpoint/checkpoint_storage.h"
#include "weir/weir.h"

// The same struct, as three versions of a job would declare it.
namespace v1 {
struct Counts {
  int32_t a = 0;
  int32_t b = 0;
};
WEIR_STRUCT(Counts, a, b);
}  // namespace v1
namespace retyped {
struct Counts {
  int32_t a = 0;
  float b = 0;  // was int32: the same four bytes
};
WEIR_STRUCT(Counts, a, b);
}  // namespace retyped
namespace reordered {
struct Counts {
  int32_t b = 0;
  int64_t total = 0;  // new
  int32_t a = 0;
};
WEIR_STRUCT(Counts, b, total, a);
}  // namespace reordered

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Counts the records of each key in `a` of a ValueState<Counts>, and emits it.
template <class Counts>
struct CountInValue : KeyedProcessFunction<int64_t, int64_t, int64_t> {
  void open() override { state_ = &getRuntimeContext().getState(ValueStateDescriptor<Counts>("counts")); }
  void processElement(const int64_t&, Context&, Collector<int64_t>& out) override {
    Counts c = state_->value().value_or(Counts{});
    ++c.a;
    state_->update(c);
    out.collect(c.a);
  }
  ValueState<Counts>* state_ = nullptr;
};

// The same name, as a ListState.
struct CountInList : KeyedProcessFunction<int64_t, int64_t, int64_t> {
  void open() override { state_ = &getRuntimeContext().getListState(ListStateDescriptor<v1::Counts>("counts")); }
  void processElement(const int64_t&, Context&, Collector<int64_t>& out) override {
    state_->add(v1::Counts{1, 0});
    out.collect(1);
  }
  ListState<v1::Counts>* state_ = nullptr;
};

class StateSchemaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-state-schema-" + std::to_string(::getpid()) + "-" + GetParam());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    checkpoint_ = takeCheckpoint();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void configure(StreamExecutionEnvironment& env) {
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam()));
    env.setRestartStrategy(RestartStrategy::noRestart());
    env.enableCheckpointing(20ms);
    env.getCheckpointConfig().setCheckpointStorage(dir_.string());
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
  }

  static constexpr int64_t kRecords = 1'000'000;

  // A job counting into v1::Counts, slowly, cancelled after five checkpoints.
  std::string takeCheckpoint() {
    StreamExecutionEnvironment env;
    configure(env);
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kRecords, RateLimiterStrategy::perSecond(2000)),
                   WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
        .keyBy([](const int64_t& i) { return i % 10; })
        .process(CountInValue<v1::Counts>{})
        .uid("count")
        .sinkTo(DiscardingSink<int64_t>());
    auto job = env.executeAsync("first");
    for (auto deadline = std::chrono::steady_clock::now() + 30s;
         job.getMetrics().numberOfCompletedCheckpoints < 5 && std::chrono::steady_clock::now() < deadline;)
      std::this_thread::sleep_for(5ms);
    job.cancel();
    try {
      job.wait();
    } catch (const JobExecutionError&) {
    }
    return checkpoint::findLatestCheckpoint(dir_.string());
  }

  // Resumes with `function`, reading the rest of the records at full speed: the largest
  // count emitted, or the error the job failed with.
  template <class F>
  std::pair<int64_t, std::string> resumeWith(F function) {
    StreamExecutionEnvironment env;
    configure(env);
    env.setRestorePath(checkpoint_);
    CollectSink<int64_t> sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kRecords), WatermarkStrategy<int64_t>::noWatermarks(),
                   "numbers")
        .keyBy([](const int64_t& i) { return i % 10; })
        .process(std::move(function))
        .uid("count")
        .sinkTo(sink);
    try {
      env.execute("resumed");
    } catch (const JobExecutionError& e) {
      return {-1, e.what()};
    }
    auto counts = sink.getResults();
    return {counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end()), ""};
  }

  fs::path dir_;
  std::string checkpoint_;
};

TEST_P(StateSchemaTest, TheSameTypeRestoresItsValues) {
  ASSERT_FALSE(checkpoint_.empty());
  auto [largest, error] = resumeWith(CountInValue<v1::Counts>{});
  EXPECT_EQ(error, "");
  // Each key's count goes on from the checkpoint's to all its records.
  EXPECT_EQ(largest, kRecords / 10);
}

TEST_P(StateSchemaTest, AFieldOfAnotherTypeIsRefusedNamingIt) {
  auto [largest, error] = resumeWith(CountInValue<retyped::Counts>{});
  EXPECT_NE(error.find("state 'counts' of 'Keyed Process-"), std::string::npos) << error;
  EXPECT_NE(error.find("' does not have the type the restored checkpoint recorded for it: "
                       "'state.value.b' was int32, is now float32"),
            std::string::npos)
      << error;
}

TEST_P(StateSchemaTest, ReorderedAndAddedFieldsMigrate) {
  auto [largest, error] = resumeWith(CountInValue<reordered::Counts>{});
  EXPECT_EQ(error, "");
  // `a` was found by name: each key's count goes on from the checkpoint's.
  EXPECT_EQ(largest, kRecords / 10);
}

TEST_P(StateSchemaTest, AnotherKindOfStateIsRefused) {
  auto [largest, error] = resumeWith(CountInList{});
  EXPECT_NE(error.find("' does not have the type the restored checkpoint recorded for it: it was a "
                       "ValueState, it is now a ListState"),
            std::string::npos)
      << error;
}

INSTANTIATE_TEST_SUITE_P(Backends, StateSchemaTest, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weir
