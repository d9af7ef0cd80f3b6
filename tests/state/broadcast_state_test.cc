// Broadcast state through connect(broadcastStream), keyed and not, against a brute force.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

struct Event {
  int64_t color = 0;
  int64_t value = 0;
  int64_t time = 0;
};
struct Rule {
  int64_t color = 0;
  int64_t multiplier = 0;
};
struct Total {
  int64_t color = 0;
  int64_t sum = 0;
  std::optional<int64_t> multiplier;
};

const MapStateDescriptor<int64_t, int64_t> kRules("rules");
constexpr int64_t kColors = 7;

// Sums each color's values in keyed state; when the input has ended (a timer far in the
// future fires at the final watermark) emits the sum with the color's broadcast rule.
// The broadcast side records each rule and checks every key's partial sum it can reach.
struct SumWithRule : KeyedBroadcastProcessFunction<int64_t, Event, Rule, Total> {
  ReducingStateDescriptor<int64_t> sumDescriptor{"sum", [](const int64_t& a, const int64_t& b) { return a + b; }};
  ReducingState<int64_t>* sum = nullptr;
  OutputTag<std::string> problems{"problems"};

  void open() override { sum = &getRuntimeContext().getReducingState(sumDescriptor); }
  void processElement(const Event& e, ReadOnlyContext& ctx, Collector<Total>&) override {
    sum->add(e.value);
    ctx.timerService().registerEventTimeTimer(1'000'000'000);
  }
  void processBroadcastElement(const Rule& r, Context& ctx, Collector<Total>&) override {
    ctx.getBroadcastState(kRules).put(r.color, r.multiplier);
    ctx.applyToKeyedState(sumDescriptor, [&](const int64_t& color, ReducingState<int64_t>& s) {
      // Every value of color c is a multiple of c + 1, so is every partial sum.
      auto partial = s.get();
      if (!partial || *partial % (color + 1) != 0)
        ctx.output(problems, "key " + std::to_string(color) + " was given another key's state");
    });
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<Total>& out) override {
    out.collect({ctx.getCurrentKey(), *sum->get(), ctx.getBroadcastState(kRules).get(ctx.getCurrentKey())});
  }
};

TEST(BroadcastState, EveryKeyedSubtaskSeesEveryRuleAndKeepsItsKeyedState) {
  for (const char* backend : {"heap", "rocksdb"}) {
    StreamExecutionEnvironment env;
    env.setParallelism(3).setAutoWatermarkInterval(1ms).setStateBackend(stateBackendFromName(backend));
    const int64_t n = 30000;
    auto event = [](int64_t i) {
      int64_t color = (i * 7919) % kColors;
      return Event{color, (color + 1) * (i % 11), i};
    };
    std::vector<Rule> rules;
    for (int64_t c = 0; c < kColors; ++c) rules.push_back({c, 100 + c});
    auto ruleStream = env.fromCollection(rules).broadcast(kRules);
    CollectSink<Total> sink;
    CollectSink<std::string> problems;
    SumWithRule fn;
    auto totals = env.fromSource(DataGeneratorSource(event, n),
                                 WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                                     [](const Event& e) { return e.time; }),
                                 "events")
                      .keyBy([](const Event& e) { return e.color; })
                      .connect(ruleStream)
                      .process(fn);
    totals.sinkTo(sink);
    totals.getSideOutput(fn.problems).sinkTo(problems);
    env.execute();

    std::map<int64_t, int64_t> expected;
    for (int64_t i = 0; i < n; ++i) expected[event(i).color] += event(i).value;
    std::map<int64_t, int64_t> sums;
    for (const Total& t : sink.getResults()) {
      EXPECT_TRUE(sums.emplace(t.color, t.sum).second) << backend << ": color " << t.color << " reported twice";
      ASSERT_TRUE(t.multiplier.has_value()) << backend << ": a subtask missed the rule of color " << t.color;
      EXPECT_EQ(*t.multiplier, 100 + t.color);
    }
    EXPECT_EQ(sums, expected) << backend;
    EXPECT_TRUE(problems.getResults().empty()) << backend << ": " << problems.getResults().front();
  }
}

// Non-keyed: each record is tagged with the rule its subtask knows when it arrives; rules
// only grow, so what a record sees is either nothing or the right rule.
struct TagWithRule : BroadcastProcessFunction<Event, Rule, Total> {
  void processElement(const Event& e, ReadOnlyContext& ctx, Collector<Total>& out) override {
    out.collect({e.color, e.value, ctx.getBroadcastState(kRules).get(e.color)});
  }
  void processBroadcastElement(const Rule& r, Context& ctx, Collector<Total>&) override {
    ctx.getBroadcastState(kRules).put(r.color, r.multiplier);
  }
};

TEST(BroadcastState, ANonKeyedStreamReadsWhatTheBroadcastSideWrote) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  std::vector<Rule> rules;
  for (int64_t c = 0; c < kColors; ++c) rules.push_back({c, 100 + c});
  std::vector<Event> events;
  for (int64_t i = 0; i < 5000; ++i) events.push_back({i % kColors, i, i});
  CollectSink<Total> sink;
  env.fromCollection(events).rebalance().connect(env.fromCollection(rules).broadcast(kRules)).process(TagWithRule{}).sinkTo(sink);
  env.execute();
  auto results = sink.getResults();
  ASSERT_EQ(results.size(), events.size());
  std::set<int64_t> values;
  for (const Total& t : results) {
    values.insert(t.sum);
    if (t.multiplier) {
      EXPECT_EQ(*t.multiplier, 100 + t.color);
    }
  }
  EXPECT_EQ(values.size(), events.size()) << "every record exactly once";
}

struct UndeclaredState : BroadcastProcessFunction<Event, Rule, Total> {
  void processElement(const Event&, ReadOnlyContext&, Collector<Total>&) override {}
  void processBroadcastElement(const Rule& r, Context& ctx, Collector<Total>&) override {
    ctx.getBroadcastState(MapStateDescriptor<int64_t, int64_t>("typo")).put(r.color, 1);
  }
};

TEST(BroadcastState, AStateNotGivenToBroadcastIsAnErrorNamingIt) {
  StreamExecutionEnvironment env;
  env.fromCollection(std::vector<Event>{{1, 1, 1}})
      .connect(env.fromCollection(std::vector<Rule>{{1, 2}}).broadcast(kRules))
      .process(UndeclaredState{})
      .sinkTo(DiscardingSink<Total>());
  try {
    env.execute();
    FAIL() << "the job must fail";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast state 'typo' was not declared: pass its descriptor to broadcast(...)"),
              std::string::npos)
        << e.what();
  }
}

// Collects what an operator emits, for driving one operator by hand.
template <class T>
struct Collected final : detail::Output<T> {
  void processBatch(std::span<T> records, detail::Timestamps) override { all.insert(all.end(), records.begin(), records.end()); }
  void endInput() override {}
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}
  std::vector<T> all;
};

// On every rule: reports each key's sum through applyToKeyedState.
struct ReportSums : KeyedBroadcastProcessFunction<int64_t, Event, Rule, Total> {
  ReducingStateDescriptor<int64_t> sumDescriptor{"sum", [](const int64_t& a, const int64_t& b) { return a + b; }};
  void processElement(const Event& e, ReadOnlyContext&, Collector<Total>&) override {
    getRuntimeContext().getReducingState(sumDescriptor).add(e.value);
  }
  void processBroadcastElement(const Rule& r, Context& ctx, Collector<Total>& out) override {
    ctx.applyToKeyedState(sumDescriptor, [&](const int64_t& color, ReducingState<int64_t>& s) {
      out.collect({color, *s.get(), r.multiplier});
    });
  }
};

// The operator driven by hand, so the broadcast element comes after the keyed ones.
TEST(BroadcastState, ApplyToKeyedStateVisitsEveryKeyWithItsOwnState) {
  for (const char* backend : {"heap", "rocksdb"}) {
    auto selector = [](const Event& e) { return e.color; };
    detail::KeyedBroadcastProcessOperator<Event, Rule, int64_t, decltype(selector), ReportSums> op(selector, ReportSums{},
                                                                                                 {"rules"});
    RuntimeContext context("report", 0, 1, 128);
    context.setStateBackend(stateBackendFromName(backend));
    detail::TaskMetrics metrics;
    Collected<Total> out;
    op.setup(&context, &metrics);
    op.setOutput(&out);
    op.open();
    std::vector<Event> events;
    std::map<int64_t, int64_t> expected;
    for (int64_t i = 0; i < 1000; ++i) {
      events.push_back({i % 13, i, i});
      expected[i % 13] += i;
    }
    op.processBatch(events, {});
    std::vector<Rule> rule{{0, 7}};
    dynamic_cast<detail::Output<Rule>&>(*op.secondInput()).processBatch(rule, {});
    std::map<int64_t, int64_t> reported;
    for (const Total& t : out.all) {
      EXPECT_TRUE(reported.emplace(t.color, t.sum).second) << backend << ": key " << t.color << " visited twice";
      EXPECT_EQ(t.multiplier, 7);
    }
    EXPECT_EQ(reported, expected) << backend;
    op.close();
  }
}

// The heap keeps live objects: applyToKeyedState needs no serializer for them.
struct Opaque {
  int64_t total = 0;
};
struct TouchOpaque : KeyedBroadcastProcessFunction<int64_t, Event, Rule, Total> {
  ValueStateDescriptor<Opaque> d{"opaque"};
  void processElement(const Event& e, ReadOnlyContext&, Collector<Total>&) override {
    auto& s = getRuntimeContext().getState(d);
    s.update(Opaque{s.value().value_or(Opaque{}).total + e.value});
  }
  void processBroadcastElement(const Rule&, Context& ctx, Collector<Total>& out) override {
    ctx.applyToKeyedState(d, [&](const int64_t& key, ValueState<Opaque>& s) { out.collect({key, s.value()->total, {}}); });
  }
};

TEST(BroadcastState, ApplyToKeyedStateOnTheHeapNeedsNoSerializer) {
  auto selector = [](const Event& e) { return e.color; };
  detail::KeyedBroadcastProcessOperator<Event, Rule, int64_t, decltype(selector), TouchOpaque> op(selector, TouchOpaque{},
                                                                                                  {"rules"});
  RuntimeContext context("touch", 0, 1, 128);
  detail::TaskMetrics metrics;
  Collected<Total> out;
  op.setup(&context, &metrics);
  op.setOutput(&out);
  op.open();
  std::vector<Event> events{{1, 10, 0}, {2, 20, 0}, {1, 5, 0}};
  op.processBatch(events, {});
  std::vector<Rule> rule{{0, 1}};
  dynamic_cast<detail::Output<Rule>&>(*op.secondInput()).processBatch(rule, {});
  std::map<int64_t, int64_t> reported;
  for (const Total& t : out.all) reported[t.color] = t.sum;
  EXPECT_EQ(reported, (std::map<int64_t, int64_t>{{1, 15}, {2, 20}}));
  op.close();
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// What a checkpoint keeps of broadcast state: every instance writes its copy, a restore
// takes the union of the old instances' copies once, and a state nobody asked for again
// is passed on to the next checkpoint.
TEST(BroadcastState, ACheckpointedCopyRestoresOnceFromTheUnionOfAllInstances) {
  MapStateDescriptor<int64_t, std::string> names("names");
  MapStateDescriptor<int64_t, int64_t> unused("unused");
  detail::BroadcastStates before({"names", "unused"});
  before.get(names).put(1, "one");
  before.get(names).put(2, "two");
  before.get(unused).put(7, 49);
  auto copy = before.snapshot();
  ASSERT_EQ(copy.size(), 2u);
  // Three old instances held the same copy: a union list holds it three times.
  std::vector<detail::OperatorStateSnapshot> restored;
  for (int i = 0; i < 3; ++i) restored.insert(restored.end(), copy.begin(), copy.end());
  detail::BroadcastStates after({"names", "unused"});
  after.restore(restored);
  EXPECT_EQ(after.get(names).immutableEntries(), (std::map<int64_t, std::string>{{1, "one"}, {2, "two"}}));
  auto next = after.snapshot();  // "unused" was not asked for: passed on, once
  ASSERT_EQ(next.size(), 2u);
  for (const auto& s : next) EXPECT_EQ(s.elements.size(), s.name == "_broadcast/names" ? 2u : 1u) << s.name;
}

// Broadcast state restored with a changed value struct gets its entries migrated (a
// field added with its default, another renamed away); a changed key type is refused.
struct RuleV1 {
  int64_t threshold = 0;
  std::string unit;
};
WEIR_STRUCT(RuleV1, threshold, unit);
namespace v2 {
struct RuleV1 {  // the same name: the next version of the struct
  int64_t threshold = 0;
  bool enabled = true;
};
WEIR_STRUCT(RuleV1, threshold, enabled);
}  // namespace v2

TEST(BroadcastState, ValuesOfAChangedStructAreMigratedOnRestore) {
  detail::BroadcastStates before({"rules"});
  before.get(MapStateDescriptor<std::string, RuleV1>("rules")).put("cpu", RuleV1{90, "%"});
  before.get(MapStateDescriptor<std::string, RuleV1>("rules")).put("disk", RuleV1{5, "GB"});
  auto copy = before.snapshot();
  detail::BroadcastStates after({"rules"});
  after.restore(copy);
  const auto& rules = after.get(MapStateDescriptor<std::string, v2::RuleV1>("rules")).immutableEntries();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules.at("cpu").threshold, 90);
  EXPECT_TRUE(rules.at("cpu").enabled);
  EXPECT_EQ(rules.at("disk").threshold, 5);
  detail::BroadcastStates byNumber({"rules"});
  byNumber.restore(copy);
  try {
    byNumber.get(MapStateDescriptor<int64_t, RuleV1>("rules"));
    FAIL() << "string keys restored as numbers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast state 'rules' does not have the type the restored checkpoint "
                                         "recorded for it: 'state.element.0' was string, is now int64"),
              std::string::npos)
        << e.what();
  }
}

TEST(BroadcastState, CheckpointingRefusesStateWithoutASerializer) {
  struct Opaque {
    int x = 0;
  };
  StreamExecutionEnvironment env;
  env.enableCheckpointing(std::chrono::milliseconds(100));
  MapStateDescriptor<int64_t, Opaque> opaque("opaque");
  auto rules = env.fromElements<int64_t>(1, 2).broadcast(opaque);
  struct Noop : BroadcastProcessFunction<int64_t, int64_t, int64_t> {
    void processElement(const int64_t&, ReadOnlyContext&, Collector<int64_t>&) override {}
    void processBroadcastElement(const int64_t&, Context&, Collector<int64_t>&) override {}
  };
  env.fromElements<int64_t>(1, 2).connect(rules).process(Noop{}).sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute();
    FAIL() << "a broadcast state without a Serializer was accepted for checkpointing";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'opaque'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
