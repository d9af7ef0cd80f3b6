// Keyed streams connected by key (KeyedCoProcessFunction) and interval joins, against
// brute-force references computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "api/event_time_test_events.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using event_time_test::Event;
using event_time_test::punctuated;

// Keys 0..12 reached irregularly, times with disorder up to 29 ms; `salt` makes the two
// sides differ.
std::vector<Event> side(int64_t n, int64_t salt) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i)
    events.push_back({(i * i + salt * i / 7) % 13, 1000 + i + salt - (i * 7919 + salt) % 30, i});
  return events;
}

// One joined pair: key, left value, right value, and the timestamp the result carries.
using Pair = std::tuple<int64_t, int64_t, int64_t, int64_t>;

struct JoinValues : ProcessJoinFunction<Event, Event, Pair> {
  void processElement(const Event& l, const Event& r, Context& ctx, Collector<Pair>& out) override {
    if (ctx.getLeftTimestamp() != l.time || ctx.getRightTimestamp() != r.time) throw std::logic_error("wrong timestamps");
    out.collect({l.key, l.value, r.value, 0});
  }
};

struct WithTimestamp : ProcessFunction<Pair, Pair> {
  void processElement(const Pair& p, Context& ctx, Collector<Pair>& out) override {
    Pair stamped = p;
    std::get<3>(stamped) = ctx.timestamp().value_or(-1);
    out.collect(stamped);
  }
};

std::vector<Pair> bruteForceJoin(const std::vector<Event>& left, const std::vector<Event>& right, int64_t lower,
                                 int64_t upper) {
  std::vector<Pair> pairs;
  for (auto& l : left)
    for (auto& r : right)
      if (l.key == r.key && r.time >= l.time + lower && r.time <= l.time + upper)
        pairs.push_back({l.key, l.value, r.value, std::max(l.time, r.time)});
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

struct JoinCase {
  int parallelism;
  std::string backend;
  int64_t lower, upper;
  bool lowerExclusive, upperExclusive;
};

std::vector<Pair> runJoin(const std::vector<Event>& left, const std::vector<Event>& right, const JoinCase& c) {
  StreamExecutionEnvironment env;
  env.setParallelism(c.parallelism).setStateBackend(stateBackendFromName(c.backend));
  CollectSink<Pair> sink;
  auto byKey = [](const Event& e) { return e.key; };
  auto l = env.fromSource(detail::CollectionSource<Event>(left), punctuated(40), "left").keyBy(byKey);
  auto r = env.fromSource(detail::CollectionSource<Event>(right), punctuated(40), "right").keyBy(byKey);
  auto joined = l.intervalJoin(r).between(std::chrono::milliseconds(c.lower), std::chrono::milliseconds(c.upper));
  if (c.lowerExclusive) joined.lowerBoundExclusive();
  if (c.upperExclusive) joined.upperBoundExclusive();
  joined.process(JoinValues{}).process(WithTimestamp{}).sinkTo(sink);
  env.execute("interval join");
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

TEST(IntervalJoin, PairsEqualABruteForceForEveryBoundKindParallelismAndBackend) {
  auto left = side(3000, 1), right = side(3000, 5);
  for (const JoinCase& c : {JoinCase{1, "heap", -20, 30, false, false}, JoinCase{2, "heap", -20, 30, true, true},
                            JoinCase{4, "heap", 3, 8, false, false}, JoinCase{2, "rocksdb", -50, -10, false, true},
                            JoinCase{3, "rocksdb", 0, 40, true, false}}) {
    int64_t lower = c.lower + (c.lowerExclusive ? 1 : 0), upper = c.upper - (c.upperExclusive ? 1 : 0);
    auto expected = bruteForceJoin(left, right, lower, upper);
    EXPECT_GT(expected.size(), 50u) << "[" << lower << ", " << upper << "] has too few pairs to test";
    EXPECT_EQ(runJoin(left, right, c), expected)
        << "p" << c.parallelism << " " << c.backend << " [" << c.lower << ", " << c.upper << "]";
  }
}

TEST(IntervalJoin, RecordsBehindTheWatermarkGoToTheSideOutputsOrAreCounted) {
  // One source feeds both sides (value 1: left, 2: right), so the two inputs' watermarks
  // move together; 60 batches in, a left and a right record come far behind them.
  const int64_t b = static_cast<int64_t>(detail::kBatchSize);
  std::vector<Event> events;
  for (int64_t i = 0; i < 80 * b; ++i) events.push_back({i % 7, 10'000 + i, 1 + i % 2});
  events.insert(events.begin() + 60 * b, {Event{3, 500, 1}, Event{4, 600, 2}});
  for (bool sideOutputs : {true, false}) {
    StreamExecutionEnvironment env;
    CollectSink<Pair> sink;
    CollectSink<Event> lateLeft, lateRight;
    OutputTag<Event> leftTag("late-left"), rightTag("late-right");
    auto all = env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events");
    auto byKey = [](const Event& e) { return e.key; };
    auto l = all.filter([](const Event& e) { return e.value == 1; }).keyBy(byKey);
    auto r = all.filter([](const Event& e) { return e.value == 2; }).keyBy(byKey);
    auto joined = l.intervalJoin(r).between(-10ms, 10ms);
    if (sideOutputs) joined.sideOutputLeftLateData(leftTag).sideOutputRightLateData(rightTag);
    auto pairs = joined.process(JoinValues{});
    pairs.sinkTo(sink);
    pairs.getSideOutput(leftTag).sinkTo(lateLeft);
    pairs.getSideOutput(rightTag).sinkTo(lateRight);
    auto client = env.executeAsync("late join");
    client.wait();
    uint64_t dropped = 0;
    for (auto& v : client.getMetrics().vertices) dropped += v.numLateRecordsDropped;
    if (sideOutputs) {
      EXPECT_EQ(lateLeft.getResults(), (std::vector<Event>{{3, 500, 1}}));
      EXPECT_EQ(lateRight.getResults(), (std::vector<Event>{{4, 600, 2}}));
      EXPECT_EQ(dropped, 0u);
    } else {
      EXPECT_TRUE(lateLeft.getResults().empty());
      EXPECT_EQ(dropped, 2u);
    }
    EXPECT_FALSE(sink.getResults().empty());
  }
}

TEST(IntervalJoin, BadBoundsAndMissingTimestampsAreClearErrors) {
  StreamExecutionEnvironment env;
  auto byKey = [](const Event& e) { return e.key; };
  auto l = env.fromCollection(std::vector<Event>{{1, 10, 1}}).keyBy(byKey);
  auto r = env.fromCollection(std::vector<Event>{{1, 10, 2}}).keyBy(byKey);
  EXPECT_THROW(l.intervalJoin(r).between(5ms, 4ms), Error);
  l.intervalJoin(r).between(-1ms, 1ms).process(JoinValues{}).sinkTo(DiscardingSink<Pair>());
  try {
    env.execute();
    FAIL() << "a join without timestamps ran";
  } catch (const JobExecutionError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("Interval Join"), std::string::npos) << what;
    EXPECT_NE(what.find("withTimestampAssigner"), std::string::npos) << what;
  }
}

// Orders and payments by order id: a matched pair is emitted when the second arrives;
// an order still unpaid when the watermark passes its time + 100 is reported unpaid.
struct Order {
  int64_t id = 0;
  int64_t time = 0;
};
struct Payment {
  int64_t id = 0;
  int64_t amount = 0;
};
WEIR_STRUCT(Order, id, time);
WEIR_STRUCT(Payment, id, amount);
using Settled = std::pair<int64_t, int64_t>;  // order id, amount (-1: unpaid)

struct Settle : KeyedCoProcessFunction<int64_t, Order, Payment, Settled> {
  void open() override {
    order_ = &getRuntimeContext().getState(ValueStateDescriptor<Order>("order"));
    payment_ = &getRuntimeContext().getState(ValueStateDescriptor<Payment>("payment"));
  }
  void processElement1(const Order& o, Context& ctx, Collector<Settled>& out) override {
    if (auto p = payment_->value()) {
      out.collect({o.id, p->amount});
      payment_->clear();
      return;
    }
    order_->update(o);
    ctx.timerService().registerEventTimeTimer(o.time + 100);
  }
  void processElement2(const Payment& p, Context& ctx, Collector<Settled>& out) override {
    if (ctx.getCurrentKey() != p.id) throw std::logic_error("the payment's key is not current");
    if (order_->value()) {
      out.collect({p.id, p.amount});
      order_->clear();
      return;
    }
    payment_->update(p);
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<Settled>& out) override {
    if (order_->value()) out.collect({ctx.getCurrentKey(), -1});
    order_->clear();
  }

 private:
  ValueState<Order>* order_ = nullptr;
  ValueState<Payment>* payment_ = nullptr;
};

TEST(KeyedCoProcess, BothInputsShareEachKeysStateAndTimersAtEveryParallelism) {
  std::vector<Order> orders;
  std::vector<Payment> payments;
  for (int64_t id = 0; id < 5000; ++id) {
    orders.push_back({id, 10 * id});
    if (id % 3 != 0) payments.push_back({id, id * 11});  // every third order is unpaid
  }
  // Payments often come before their order. They carry no watermarks, so the combined
  // watermark (and the unpaid timers) moves only once every payment is in.
  std::reverse(payments.begin(), payments.end());
  std::vector<Settled> expected;
  for (auto& o : orders) expected.push_back({o.id, o.id % 3 != 0 ? o.id * 11 : -1});
  for (int p : {1, 2, 4}) {
    for (const char* backend : {"heap", "rocksdb"}) {
      StreamExecutionEnvironment env;
      env.setParallelism(p).setStateBackend(stateBackendFromName(backend));
      CollectSink<Settled> sink;
      auto o = env.fromSource(detail::CollectionSource<Order>(orders),
                              WatermarkStrategy<Order>::forMonotonousTimestamps().withTimestampAssigner(
                                  [](const Order& x) { return x.time; }),
                              "orders")
                   .keyBy([](const Order& x) { return x.id; });
      auto pay = env.fromCollection(payments).keyBy([](const Payment& x) { return x.id; });
      o.connect(pay).process(Settle{}).sinkTo(sink);
      env.execute("settle");
      auto got = sink.getResults();
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, expected) << "p" << p << " " << backend;
    }
  }
}

}  // namespace
}  // namespace weir
