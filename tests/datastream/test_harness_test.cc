// The public test harness (weir/testing/operator_harness.h) as a user tests their own
// functions with it: records, watermarks and processing time one at a time, output and
// side outputs in order, and snapshots restored into fresh harnesses at another
// parallelism. Expectations are worked out by hand from Flink's semantics, or by brute
// force.
#include <gtest/gtest.h>

#include <map>

#include "support/harness_events.h"
#include "weir/testing/operator_harness.h"
#include "weir/weir.h"

namespace weir {
namespace {

using test::Emitted;
using test::HarnessOptions;
using test::OperatorHarness;
using test::OperatorSubtaskState;
using test::ProcessFunctionTestHarnesses;

struct Click {
  std::string user;
  int64_t time = 0;
};

const OutputTag<std::string> kLate("late");

// Counts each user's clicks; 10 ms of event time after a click, says the count then.
// A click behind the watermark goes to the side output.
struct CountPerUser : KeyedProcessFunction<std::string, Click, std::string> {
  ValueState<int64_t>* count = nullptr;
  void open() override { count = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement(const Click& c, Context& ctx, Collector<std::string>& out) override {
    if (c.time <= ctx.timerService().currentWatermark()) {
      ctx.output(kLate, c.user);
      return;
    }
    count->update(*count->value() + 1);
    ctx.timerService().registerEventTimeTimer(c.time + 10);
    out.collect(c.user + "=" + std::to_string(*count->value()));
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<std::string>& out) override {
    out.collect(ctx.getCurrentKey() + "@" + std::to_string(time) + "=" + std::to_string(*count->value()));
  }
};

auto countHarness(HarnessOptions options = {}) {
  return ProcessFunctionTestHarnesses::forKeyedProcessFunction<Click>(
      CountPerUser{}, [](const Click& c) { return c.user; }, std::move(options));
}


TEST(TestHarness, RecordsWatermarksAndTimersComeOutInOrder) {
  auto harness = countHarness();
  auto& late = harness.captureSideOutput(kLate);
  harness.open();
  harness.processElement(Click{"ann", 5}, 5);
  harness.processElement(Click{"bob", 7}, 7);
  harness.processElement(Click{"ann", 9}, 9);
  harness.processWatermark(15);  // ann's timer for 15 fires; bob's for 17 and ann's for 19 wait
  harness.processElement(Click{"bob", 12}, 12);  // behind the watermark: late
  harness.processWatermark(30);
  EXPECT_EQ(test::emittedAsText(harness.output()),
            (std::vector<std::string>{"ann=1@5", "bob=1@7", "ann=2@9", "ann@15=2@15", "W15", "bob@17=1@17",
                                      "ann@19=2@19", "W30"}));
  EXPECT_EQ(late.records(), std::vector<std::string>{"bob"});
}

// Processing time moves only when the test moves it.
struct RemindLater : KeyedProcessFunction<std::string, Click, std::string> {
  void processElement(const Click& c, Context& ctx, Collector<std::string>& out) override {
    ctx.timerService().registerProcessingTimeTimer(ctx.timerService().currentProcessingTime() + 100);
    out.collect("in " + c.user);
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<std::string>& out) override {
    out.collect("remind " + ctx.getCurrentKey() + " at " + std::to_string(time));
  }
};

TEST(TestHarness, ProcessingTimeTimersFireWhenTheTestAdvancesTime) {
  auto harness = ProcessFunctionTestHarnesses::forKeyedProcessFunction<Click>(
      RemindLater{}, [](const Click& c) { return c.user; }, HarnessOptions{.processingTime = 1000});
  harness.open();
  harness.processElement(Click{"ann", 0});
  harness.setProcessingTime(1100);
  EXPECT_EQ(harness.output().records(), std::vector<std::string>{"in ann"});  // the timer for 1100 fires at 1101
  harness.setProcessingTime(1101);
  EXPECT_EQ(harness.output().records(), (std::vector<std::string>{"in ann", "remind ann at 1100"}));
}

TEST(TestHarness, APlainProcessFunctionAndItsSideOutput) {
  const OutputTag<int> odd("odd");
  auto harness = ProcessFunctionTestHarnesses::forProcessFunction<int, int>(
      [odd](const int& v, ProcessFunction<int, int>::Context& ctx, Collector<int>& out) {
        if (v % 2 != 0) ctx.output(odd, v);
        else out.collect(v / 2);
      });
  auto& odds = harness.captureSideOutput(odd);
  harness.open();
  harness.processBatch(std::vector<int>{1, 2, 3, 4, 6});
  EXPECT_EQ(harness.output().records(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(odds.records(), (std::vector<int>{1, 3}));
}

// A snapshot at parallelism 1 restores into 3 subtasks: each key's count and pending
// timer go to the one subtask whose key groups hold the key, as a rescaled job's do.
TEST(TestHarness, ASnapshotRestoresAtAnotherParallelismByKeyGroup) {
  std::vector<std::string> users;
  for (char c = 'a'; c <= 'z'; ++c) users.push_back(std::string(1, c) + "user");
  OperatorSubtaskState state;
  {
    auto one = countHarness();
    one.open();
    for (size_t i = 0; i < users.size(); ++i)
      for (size_t k = 0; k <= i % 3; ++k) one.processElement(Click{users[i], 100}, 100);  // count i % 3 + 1
    state = one.snapshot();
  }
  EXPECT_EQ(state.keyedEntries("count"), users.size());

  std::vector<std::unique_ptr<OperatorHarness<std::string>>> three;
  for (int s = 0; s < 3; ++s) {
    three.push_back(std::make_unique<OperatorHarness<std::string>>(
        StreamExecutionEnvironment().fromCollection(std::vector<Click>{}).keyBy([](const Click& c) { return c.user; }).process(CountPerUser{}),
        HarnessOptions{.parallelism = 3, .subtaskIndex = s}));
    three.back()->initializeState(state);
    three.back()->open();
  }
  std::map<std::string, int> owner;  // the subtask whose key groups hold the user's
  for (const auto& u : users) {
    const int keyGroup = assignToKeyGroup(KeyHash<std::string>{}(u), 128);
    for (int s = 0; s < 3; ++s)
      if (three[static_cast<size_t>(s)]->keyGroups().contains(keyGroup)) owner[u] = s;
  }
  for (int s = 0; s < 3; ++s) three[static_cast<size_t>(s)]->processWatermark(200);  // the restored timers at 110
  for (int s = 0; s < 3; ++s) {
    std::vector<std::string> expected;
    for (size_t i = 0; i < users.size(); ++i)
      if (owner[users[i]] == s) expected.push_back(users[i] + "@110=" + std::to_string(i % 3 + 1));
    auto got = three[static_cast<size_t>(s)]->output().records();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected) << "subtask " << s;
  }
  // A click goes on from the restored count on the owner only.
  for (size_t i = 0; i < users.size(); ++i) {
    auto& h = *three[static_cast<size_t>(owner[users[i]])];
    h.output().clear();
    h.processElement(Click{users[i], 300}, 300);
    EXPECT_EQ(h.output().records(), std::vector<std::string>{users[i] + "=" + std::to_string(i % 3 + 2)});
  }
}

// And back: the snapshots of 3 subtasks restore into one, which then holds every key.
TEST(TestHarness, SnapshotsOfSeveralSubtasksRestoreIntoOne) {
  std::vector<OperatorSubtaskState> states;
  std::map<std::string, int> counts;
  for (int s = 0; s < 3; ++s) {
    auto h = countHarness(HarnessOptions{.parallelism = 3, .subtaskIndex = s});
    h.open();
    for (char c = 'a'; c <= 'z'; ++c) {
      std::string user(1, c);
      if (h.keyGroups().contains(assignToKeyGroup(KeyHash<std::string>{}(user), 128))) {
        h.processElement(Click{user, 50}, 50);
        ++counts[user];
      }
    }
    states.push_back(h.snapshot());
  }
  ASSERT_EQ(counts.size(), 26u);  // every user went to exactly one subtask
  auto one = countHarness();
  one.initializeState(states);
  one.open();
  for (const auto& [user, n] : counts) {
    one.output().clear();
    one.processElement(Click{user, 500}, 500);
    EXPECT_EQ(one.output().records(), std::vector<std::string>{user + "=" + std::to_string(n + 1)});
  }
  auto other = countHarness(HarnessOptions{.maxParallelism = 64});
  EXPECT_THROW(other.initializeState(states), std::invalid_argument);
}

// Operator list state follows Flink's redistribution: split lists in contiguous parts,
// union lists whole to every subtask.
struct Remember : ProcessFunction<int, int>, CheckpointedFunction {
  ListState<int>* seen = nullptr;
  ListState<int>* everyone = nullptr;
  std::vector<int> pending;
  void initializeState(FunctionInitializationContext& ctx) override {
    seen = &ctx.getOperatorStateStore().getListState(ListStateDescriptor<int>("seen"));
    everyone = &ctx.getOperatorStateStore().getUnionListState(ListStateDescriptor<int>("everyone"));
  }
  void snapshotState(const FunctionSnapshotContext&) override {}
  void processElement(const int& v, Context&, Collector<int>& out) override {
    if (v < 0) {
      for (int s : seen->get()) out.collect(s);
      for (int e : everyone->get()) out.collect(1000 + e);
      return;
    }
    seen->add(v);
    everyone->add(v);
  }
};

TEST(TestHarness, OperatorListStateIsRedistributedAsAJobsIs) {
  OperatorSubtaskState state;
  {
    auto h = ProcessFunctionTestHarnesses::forProcessFunction<int>(Remember{});
    h.open();
    h.processBatch(std::vector<int>{1, 2, 3, 4, 5, 6});
    state = h.snapshot();
  }
  std::vector<std::vector<int>> seen(2);
  for (int s = 0; s < 2; ++s) {
    auto h = ProcessFunctionTestHarnesses::forProcessFunction<int>(Remember{}, HarnessOptions{.parallelism = 2, .subtaskIndex = s});
    h.initializeState(state);
    h.open();
    h.processElement(-1);
    seen[static_cast<size_t>(s)] = h.output().records();
  }
  EXPECT_EQ(seen[0], (std::vector<int>{1, 2, 3, 1001, 1002, 1003, 1004, 1005, 1006}));
  EXPECT_EQ(seen[1], (std::vector<int>{4, 5, 6, 1001, 1002, 1003, 1004, 1005, 1006}));
}

// snapshotAndRestore gives a subtask back its own lists, whatever the parallelism; a
// restore from some of the subtasks' snapshots only is refused.
TEST(TestHarness, SnapshotAndRestoreKeepsTheSubtasksOwnListState) {
  auto h = ProcessFunctionTestHarnesses::forProcessFunction<int>(Remember{}, HarnessOptions{.parallelism = 2, .subtaskIndex = 1});
  h.open();
  h.processBatch(std::vector<int>{1, 2, 3, 4});
  OperatorSubtaskState alone = h.snapshot();
  h.snapshotAndRestore();
  h.processElement(-1);
  EXPECT_EQ(h.output().records(), (std::vector<int>{1, 2, 3, 4, 1001, 1002, 1003, 1004}));
  auto other = ProcessFunctionTestHarnesses::forProcessFunction<int>(Remember{});
  EXPECT_THROW(other.initializeState(alone), std::invalid_argument);  // subtask 0's is missing
  EXPECT_THROW(countHarness().snapshot(), std::logic_error);          // before open()
}

TEST(TestHarness, ASubtaskThatDoesNotExistIsRefused) {
  EXPECT_THROW(countHarness(HarnessOptions{.parallelism = 2, .subtaskIndex = 2}), std::invalid_argument);
  EXPECT_THROW(countHarness(HarnessOptions{.maxParallelism = 4, .parallelism = 5}), std::invalid_argument);
}

}  // namespace
}  // namespace weir
