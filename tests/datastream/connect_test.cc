// Two non-keyed streams connected into one operator: CoMap, CoFlatMap and CoProcess
// functions, and connected.keyBy(...) into a KeyedCoProcessFunction.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "support/event_time_test_events.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

using event_time_test::Event;
using event_time_test::punctuated;

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// "n<number>" and "s<word>" (appended, as GCC 12 warns falsely on "literal" + string).
std::string tagged(char tag, const std::string& s) {
  std::string out(1, tag);
  out += s;
  return out;
}

struct Describe : CoMapFunction<int64_t, std::string, std::string> {
  std::string map1(const int64_t& v) override { return tagged('n', std::to_string(v)); }
  std::string map2(const std::string& s) override { return tagged('s', s); }
};

TEST(ConnectedStreams, CoMapSeesEveryRecordOfBothInputsOnce) {
  std::vector<int64_t> numbers;
  std::vector<std::string> words, expected;
  for (int64_t i = 0; i < 5000; ++i) {
    numbers.push_back(i);
    expected.push_back(tagged('n', std::to_string(i)));
  }
  for (int i = 0; i < 3000; ++i) {
    words.push_back(tagged('w', std::to_string(i)));
    expected.push_back(tagged('s', words.back()));
  }
  for (int p : {1, 3}) {
    StreamExecutionEnvironment env;
    env.setParallelism(p);
    CollectSink<std::string> sink;
    env.fromCollection(numbers).connect(env.fromCollection(words)).map(Describe{}).sinkTo(sink);
    env.execute();
    EXPECT_EQ(sorted(sink.getResults()), sorted(expected)) << "parallelism " << p;
  }
}

// Even numbers of the first input twice, words of the second split into characters.
struct Spread : CoFlatMapFunction<int64_t, std::string, std::string> {
  void flatMap1(const int64_t& v, Collector<std::string>& out) override {
    if (v % 2 != 0) return;
    out.collect(std::to_string(v));
    out.collect(std::to_string(v));
  }
  void flatMap2(const std::string& s, Collector<std::string>& out) override {
    for (char c : s) out.collect(std::string(1, c));
  }
};

TEST(ConnectedStreams, CoFlatMapEmitsAnyNumberOfRecordsPerInput) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::string> sink;
  env.fromElements<int64_t>(1, 2, 3, 4)
      .connect(env.fromElements<std::string>("ab", "", "c"))
      .flatMap(Spread{})
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sorted(sink.getResults()), sorted(std::vector<std::string>{"2", "2", "4", "4", "a", "b", "c"}));
}

// The first input's events go out with their timestamps; the second's to a side output.
const OutputTag<int64_t> kSecondTimes("second");
struct Route : CoProcessFunction<Event, Event, std::pair<int64_t, int64_t>> {
  void processElement1(const Event& e, Context& ctx, Collector<std::pair<int64_t, int64_t>>& out) override {
    out.collect({e.value, ctx.timestamp().value_or(-1)});
  }
  void processElement2(const Event& e, Context& ctx, Collector<std::pair<int64_t, int64_t>>&) override {
    ctx.output(kSecondTimes, *ctx.timestamp());
  }
};

TEST(ConnectedStreams, CoProcessSeesTimestampsAndWritesSideOutputs) {
  std::vector<Event> first, second;
  for (int64_t i = 0; i < 2000; ++i) first.push_back({i % 3, 1000 + i, i});
  for (int64_t i = 0; i < 1000; ++i) second.push_back({i % 3, 5000 + i, -i});
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::pair<int64_t, int64_t>> main;
  CollectSink<int64_t> side;
  auto routed = env.fromSource(detail::CollectionSource<Event>(first), punctuated(0), "first")
                    .connect(env.fromSource(detail::CollectionSource<Event>(second), punctuated(0), "second"))
                    .process(Route{});
  routed.sinkTo(main);
  routed.getSideOutput(kSecondTimes).sinkTo(side);
  env.execute();
  std::vector<std::pair<int64_t, int64_t>> expectedMain;
  for (const Event& e : first) expectedMain.push_back({e.value, e.time});
  std::vector<int64_t> expectedSide;
  for (const Event& e : second) expectedSide.push_back(e.time);
  EXPECT_EQ(sorted(main.getResults()), sorted(expectedMain));
  EXPECT_EQ(sorted(side.getResults()), sorted(expectedSide));
}

// The connected operator's watermark is the smaller of its inputs': windows after it
// count the records of both inputs, none late, even when one input runs far ahead.
struct Merge : CoMapFunction<Event, Event, Event> {
  Event map1(const Event& e) override { return e; }
  Event map2(const Event& e) override { return e; }
};

TEST(ConnectedStreams, TheWatermarkIsTheSmallerOfTheTwoInputs) {
  std::vector<Event> slow, fast;
  for (int64_t i = 0; i < 3000; ++i) slow.push_back({i % 4, i, 1});
  for (int64_t i = 0; i < 3000; ++i) fast.push_back({i % 4, i * 3, 10});
  std::map<std::pair<int64_t, int64_t>, int64_t> expected;  // (key, window end - 1) -> sum
  for (const auto* in : {&slow, &fast})
    for (const Event& e : *in) expected[{e.key, e.time - e.time % 100 + 99}] += e.value;
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Event> sink;
  env.fromSource(detail::CollectionSource<Event>(slow), punctuated(0), "slow")
      .connect(env.fromSource(detail::CollectionSource<Event>(fast), punctuated(0), "fast"))
      .map(Merge{})
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(100ms))
      .reduce([](const Event& a, const Event& b) { return Event{a.key, a.time - a.time % 100 + 99, a.value + b.value}; })
      .sinkTo(sink);
  env.execute();
  std::map<std::pair<int64_t, int64_t>, int64_t> got;
  for (const Event& e : sink.getResults()) got[{e.key, e.time - e.time % 100 + 99}] += e.value;
  EXPECT_EQ(got, expected);
}

// connected.keyBy(k1, k2) gives the keyed connection: records with equal keys meet.
struct CountBoth : KeyedCoProcessFunction<int64_t, Event, Event, std::pair<int64_t, int64_t>> {
  void open() override { seen_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("seen", 0)); }
  void processElement1(const Event& e, Context& ctx, Collector<std::pair<int64_t, int64_t>>& out) override { bump(e, out); }
  void processElement2(const Event& e, Context& ctx, Collector<std::pair<int64_t, int64_t>>& out) override { bump(e, out); }
  void bump(const Event& e, Collector<std::pair<int64_t, int64_t>>& out) {
    seen_->update(*seen_->value() + 1);
    out.collect({e.key, *seen_->value()});
  }
  ValueState<int64_t>* seen_ = nullptr;
};

TEST(ConnectedStreams, KeyByOnBothInputsSharesKeyedStateAcrossThem) {
  std::vector<Event> a, b;
  for (int64_t i = 0; i < 1000; ++i) a.push_back({i % 7, i, 0});
  for (int64_t i = 0; i < 600; ++i) b.push_back({i % 5, i, 0});
  std::map<int64_t, int64_t> perKey;
  for (const auto* in : {&a, &b})
    for (const Event& e : *in) ++perKey[e.key];
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  CollectSink<std::pair<int64_t, int64_t>> sink;
  auto key = [](const Event& e) { return e.key; };
  env.fromCollection(a).connect(env.fromCollection(b)).keyBy(key, key).process(CountBoth{}).sinkTo(sink);
  env.execute();
  std::map<int64_t, int64_t> highest;
  for (const auto& [k, n] : sink.getResults()) highest[k] = std::max(highest[k], n);
  EXPECT_EQ(highest, perKey);  // each key counted the records of both inputs in one state
  EXPECT_EQ(sink.getResults().size(), a.size() + b.size());
}

}  // namespace
}  // namespace weir
