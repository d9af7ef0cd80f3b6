// Keyed streams connected by key (KeyedCoProcessFunction) and interval joins, against
// brute-force references computed here. Small interval-join cases with exact expected
// outputs (bounds, late data, buffer cleanup) are golden files: tests/golden/interval_join_*.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "support/event_time_test_events.h"
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

namespace weir {
namespace {

// Window joins and coGroups: the pairs (and groups) of every key and window, against a
// brute force over the windows each record belongs to.
using event_time_test::Event;
using event_time_test::punctuated;
using namespace std::chrono_literals;

// Key, left value, right value, and the window's last timestamp (the result's timestamp).
using Joined = std::tuple<int64_t, int64_t, int64_t, int64_t>;

// The windows of `time` for windows of `size` every `slide` ms: their last timestamps.
std::vector<int64_t> windowEnds(int64_t time, int64_t size, int64_t slide) {
  std::vector<int64_t> ends;
  for (int64_t start = time - time % slide; start > time - size; start -= slide) ends.push_back(start + size - 1);
  return ends;
}

std::vector<Joined> bruteForceWindowJoin(const std::vector<Event>& left, const std::vector<Event>& right, int64_t size,
                                         int64_t slide) {
  std::vector<Joined> pairs;
  for (auto& l : left)
    for (auto& r : right) {
      if (l.key != r.key) continue;
      auto rightEnds = windowEnds(r.time, size, slide);
      for (int64_t end : windowEnds(l.time, size, slide))
        if (std::find(rightEnds.begin(), rightEnds.end(), end) != rightEnds.end())
          pairs.push_back({l.key, l.value, r.value, end});
    }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

struct StampWindow : ProcessFunction<Joined, Joined> {
  void processElement(const Joined& j, Context& ctx, Collector<Joined>& out) override {
    Joined stamped = j;
    std::get<3>(stamped) = ctx.timestamp().value_or(-1);
    out.collect(stamped);
  }
};

// A JoinFunction with a lifecycle: what it emits depends on open() having run.
struct TagPairs : JoinFunction<Event, Event, Joined> {
  int64_t opened = 0;
  void open() override { opened = getRuntimeContext().getNumberOfParallelSubtasks() > 0 ? 1 : 0; }
  Joined join(const Event& l, const Event& r) override {
    if (opened != 1) throw std::logic_error("join before open()");
    return {l.key, l.value, r.value, 0};
  }
};

template <class Build>
std::vector<Joined> runWindowJoin(const std::vector<Event>& left, const std::vector<Event>& right, int parallelism,
                                  Build build) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  CollectSink<Joined> sink;
  auto l = env.fromSource(detail::CollectionSource<Event>(left), punctuated(40), "left");
  auto r = env.fromSource(detail::CollectionSource<Event>(right), punctuated(40), "right");
  build(l, r).process(StampWindow{}).sinkTo(sink);
  env.execute("window join");
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

auto byKey = [](const Event& e) { return e.key; };

TEST(WindowJoin, TumblingPairsEqualABruteForceAtEveryParallelism) {
  auto left = side(3000, 1), right = side(2000, 5);
  auto expected = bruteForceWindowJoin(left, right, 50, 50);
  ASSERT_GT(expected.size(), 5000u);
  for (int p : {1, 2, 4}) {
    auto got = runWindowJoin(left, right, p, [](auto& l, auto& r) {
      return l.join(r).where(byKey).equalTo(byKey).window(TumblingEventTimeWindows::of(50ms)).apply(
          [](const Event& a, const Event& b) { return Joined{a.key, a.value, b.value, 0}; });
    });
    EXPECT_EQ(got, expected) << "parallelism " << p;
  }
}

TEST(WindowJoin, SlidingWindowsPairOncePerSharedWindow) {
  auto left = side(1500, 2), right = side(1500, 3);
  auto expected = bruteForceWindowJoin(left, right, 60, 20);
  auto got = runWindowJoin(left, right, 2, [](auto& l, auto& r) {
    return l.join(r).where(byKey).equalTo(byKey).window(SlidingEventTimeWindows::of(60ms, 20ms)).apply(TagPairs{});
  });
  EXPECT_EQ(got, expected);
}

TEST(WindowJoin, FlatJoinEmitsWhatTheFunctionCollects) {
  auto left = side(1000, 1), right = side(1000, 4);
  std::vector<Joined> expected;
  for (const Joined& j : bruteForceWindowJoin(left, right, 30, 30))
    if ((std::get<1>(j) + std::get<2>(j)) % 3 == 0) expected.push_back(j);
  auto got = runWindowJoin(left, right, 2, [](auto& l, auto& r) {
    return l.join(r).where(byKey).equalTo(byKey).window(TumblingEventTimeWindows::of(30ms)).template apply<Joined>(
        [](const Event& a, const Event& b, Collector<Joined>& out) {
          if ((a.value + b.value) % 3 == 0) out.collect({a.key, a.value, b.value, 0});
        });
  });
  EXPECT_EQ(got, expected);
}

// A left outer join by coGroup: a left record without a partner in its window pairs
// with -1. Right records without a partner are dropped.
TEST(WindowCoGroup, ExpressesALeftOuterJoin) {
  auto left = side(2000, 1), right = side(300, 7);
  std::vector<Joined> expected = bruteForceWindowJoin(left, right, 40, 40);
  for (const Event& l : left) {
    int64_t end = windowEnds(l.time, 40, 40)[0];
    bool matched = std::any_of(right.begin(), right.end(),
                               [&](const Event& r) { return r.key == l.key && windowEnds(r.time, 40, 40)[0] == end; });
    if (!matched) expected.push_back({l.key, l.value, -1, end});
  }
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(std::count_if(expected.begin(), expected.end(), [](const Joined& j) { return std::get<2>(j) == -1; }), 100);
  for (int p : {1, 3}) {
    auto got = runWindowJoin(left, right, p, [](auto& l, auto& r) {
      return l.coGroup(r).where(byKey).equalTo(byKey).window(TumblingEventTimeWindows::of(40ms)).template apply<Joined>(
          [](std::span<const Event> as, std::span<const Event> bs, Collector<Joined>& out) {
            for (const Event& a : as) {
              if (bs.empty()) out.collect({a.key, a.value, -1, 0});
              for (const Event& b : bs) out.collect({a.key, a.value, b.value, 0});
            }
          });
    });
    EXPECT_EQ(got, expected) << "parallelism " << p;
  }
}

// Per key and session: how many records each side had. Sessions merge across both
// inputs (a left record can bridge two right records' sessions).
struct CountSides : CoGroupFunction<Event, Event, Joined> {
  void coGroup(std::span<const Event> as, std::span<const Event> bs, Collector<Joined>& out) override {
    int64_t key = as.empty() ? bs[0].key : as[0].key;
    out.collect({key, static_cast<int64_t>(as.size()), static_cast<int64_t>(bs.size()), 0});
  }
};

TEST(WindowCoGroup, SessionsMergeAcrossBothInputs) {
  // Key 1: left at 0, 20, 40 and right at 10, 30 with a gap of 15 make one session
  // [0, 55); right at 100 is a session of its own. Key 2: left only.
  std::vector<Event> left{{1, 0, 0}, {1, 20, 1}, {1, 40, 2}, {2, 5, 3}};
  std::vector<Event> right{{1, 10, 4}, {1, 30, 5}, {1, 100, 6}};
  auto got = runWindowJoin(left, right, 2, [](auto& l, auto& r) {
    return l.coGroup(r).where(byKey).equalTo(byKey).window(EventTimeSessionWindows::withGap(15ms)).apply(CountSides{});
  });
  std::vector<Joined> expected{{1, 0, 1, 114}, {1, 3, 2, 54}, {2, 1, 0, 19}};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);
}

TEST(WindowJoin, TaggedRecordsRoundTripAndACorruptTagIsAnError) {
  using Tagged = detail::TaggedUnion<Event, std::string>;
  DataOutput out;
  Serializer<Tagged>::serialize(Tagged{Event{1, 2, 3}, std::nullopt}, out);
  Serializer<Tagged>::serialize(Tagged{std::nullopt, "right"}, out);
  DataInput in(out.data());
  auto one = Serializer<Tagged>::deserialize(in);
  auto two = Serializer<Tagged>::deserialize(in);
  EXPECT_EQ(one.one, (Event{1, 2, 3}));
  EXPECT_FALSE(one.two);
  EXPECT_EQ(two.two, "right");
  EXPECT_FALSE(two.one);
  DataOutput neither;
  Serializer<Tagged>::serialize(Tagged{}, neither);
  DataInput bad(neither.data());
  EXPECT_THROW(Serializer<Tagged>::deserialize(bad), SerializationError);
}

}  // namespace
}  // namespace weir
