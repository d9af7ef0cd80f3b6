// Event-time session windows against brute-force references computed here, and
// aggregate(agg, processWindowFunction); session windows with triggers and evictors.
// Small cases with exact expected outputs are golden files: tests/golden/window_session_*.
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

// One result per firing: key, window, record count, sum of values.
struct Session {
  int64_t key, start, end, count, sum;
  auto tie() const { return std::tie(key, start, end, count, sum); }
  bool operator<(const Session& o) const { return tie() < o.tie(); }
  bool operator==(const Session& o) const { return tie() == o.tie(); }
};

void PrintTo(const Session& s, std::ostream* os) {
  *os << "{key " << s.key << ", [" << s.start << ", " << s.end << "), count " << s.count << ", sum " << s.sum << "}";
}

struct DescribeSession : ProcessWindowFunction<Event, Session, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> elements, Collector<Session>& out) override {
    int64_t sum = 0;
    for (auto& e : elements) sum += e.value;
    out.collect({key, ctx.window().start, ctx.window().end, static_cast<int64_t>(elements.size()), sum});
  }
};

// The sessions of each key by the definition: sort each key's [t, t + gap(e)) by start
// and join every interval that overlaps or touches the one before.
template <class Gap>
std::vector<Session> bruteForceSessions(std::vector<Event> events, Gap gap) {
  std::sort(events.begin(), events.end());
  std::vector<Session> sessions;
  for (auto& e : events) {
    int64_t end = e.time + gap(e);
    if (!sessions.empty() && sessions.back().key == e.key && e.time <= sessions.back().end) {
      auto& s = sessions.back();
      s.end = std::max(s.end, end);
      s.count += 1;
      s.sum += e.value;
    } else {
      sessions.push_back({e.key, e.time, end, 1, e.value});
    }
  }
  std::sort(sessions.begin(), sessions.end());
  return sessions;
}

// Keys 0..6 reached irregularly, a 300 ms hole every 500 records, disorder up to 29 ms.
std::vector<Event> irregular(int64_t n) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i)
    events.push_back({(i * i + i / 3) % 7, 1000 + 2 * i + (i / 500) * 300 - (i * 7919) % 30, 1 + (i * 31) % 9});
  return events;
}

// Session windows described per firing; `viaTrigger` names the default trigger
// explicitly, which takes the general (trigger) window operator instead of the
// specialised one.
std::vector<Session> runSessions(const std::vector<Event>& events, std::chrono::milliseconds gap, int parallelism,
                                 int64_t bound, bool viaTrigger = false, const std::string& backend = "heap") {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(stateBackendFromName(backend));
  CollectSink<Session> sink;
  auto windowed = env.fromSource(detail::CollectionSource<Event>(events), punctuated(bound), "events")
                      .keyBy([](const Event& e) { return e.key; })
                      .window(EventTimeSessionWindows::withGap(gap));
  if (viaTrigger) windowed.trigger(EventTimeTrigger::create()).process(DescribeSession{}).sinkTo(sink);
  else windowed.process(DescribeSession{}).sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

TEST(SessionWindows, DisorderedSessionsEqualABruteForceAtEveryParallelism) {
  auto events = irregular(20000);
  auto expected = bruteForceSessions(events, [](const Event&) { return int64_t{25}; });
  ASSERT_GT(expected.size(), 100u);  // the stream really has many sessions per key
  for (int p : {1, 2, 4}) EXPECT_EQ(runSessions(events, 25ms, p, 40), expected) << "parallelism " << p;
}

TEST(SessionTriggers, AnExplicitEventTimeTriggerMergesSessionsLikeTheDefault) {
  auto events = irregular(20000);
  auto expected = bruteForceSessions(events, [](const Event&) { return int64_t{25}; });
  for (int p : {1, 3}) EXPECT_EQ(runSessions(events, 25ms, p, 40, true), expected) << "parallelism " << p;
  EXPECT_EQ(runSessions(events, 25ms, 2, 40, true, "rocksdb"), expected);
}

// Sum and count; merge() is what joins the accumulators of merged sessions.
struct SumCount : AggregateFunction<Event, std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> {
  std::pair<int64_t, int64_t> createAccumulator() override { return {0, 0}; }
  std::pair<int64_t, int64_t> add(const Event& e, std::pair<int64_t, int64_t> acc) override {
    return {acc.first + e.value, acc.second + 1};
  }
  std::pair<int64_t, int64_t> getResult(const std::pair<int64_t, int64_t>& acc) override { return acc; }
  std::pair<int64_t, int64_t> merge(std::pair<int64_t, int64_t> a, const std::pair<int64_t, int64_t>& b) override {
    return {a.first + b.first, a.second + b.second};
  }
};

// Gives an aggregate's result its key and window.
struct WithWindow : ProcessWindowFunction<std::pair<int64_t, int64_t>, Session, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const std::pair<int64_t, int64_t>> results,
               Collector<Session>& out) override {
    if (results.size() != 1) throw std::logic_error("an aggregate gives one result per window");
    out.collect({key, ctx.window().start, ctx.window().end, results[0].second, results[0].first});
  }
};

TEST(SessionWindows, DynamicGapsWithMergingAggregatesEqualABruteForce) {
  auto events = irregular(20000);
  auto gap = [](const Event& e) { return int64_t{8} + 4 * e.value; };  // 12..44 ms
  auto expected = bruteForceSessions(events, gap);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Session> sink;
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(40), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(EventTimeSessionWindows::withDynamicGap([](const Event& e) { return std::chrono::milliseconds(8 + 4 * e.value); }))
      .aggregate(SumCount{}, WithWindow{})
      .sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

// Session windows of `gap` over `events` (watermark `bound` behind), finished by
// `finish(windowedStream)` into Session results, in the order the sink got them.
template <class Finish>
std::vector<Session> runWith(const std::vector<Event>& events, int64_t bound, int parallelism,
                             const std::string& backend, Finish finish,
                             std::chrono::milliseconds gap = std::chrono::milliseconds(20)) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(stateBackendFromName(backend));
  CollectSink<Session> sink;
  finish(env.fromSource(detail::CollectionSource<Event>(events), punctuated(bound), "events")
             .keyBy([](const Event& e) { return e.key; })
             .window(EventTimeSessionWindows::withGap(gap)))
      .sinkTo(sink);
  env.execute();
  return sink.getResults();
}

template <class Finish>
std::vector<Session> sortedRun(const std::vector<Event>& events, int64_t bound, int parallelism,
                               const std::string& backend, Finish finish) {
  auto got = runWith(events, bound, parallelism, backend, finish);
  std::sort(got.begin(), got.end());
  return got;
}

// The accumulators of merged sessions are merged on the state backend too.
TEST(SessionTriggers, MergedAccumulatorsOnEitherBackendEqualABruteForce) {
  auto events = irregular(20000);
  auto expected = bruteForceSessions(events, [](const Event&) { return int64_t{20}; });
  for (std::string backend : {"heap", "rocksdb"}) {
    EXPECT_EQ(sortedRun(events, 40, 2, backend,
                        [](auto windowed) {
                          return windowed.trigger(EventTimeTrigger::create()).aggregate(SumCount{}, WithWindow{});
                        }),
              expected)
        << backend;
  }
}

// Each key's records in time order, split into sessions of `gap`.
std::vector<std::vector<Event>> sessionsInOrder(std::vector<Event> events, int64_t gap) {
  std::sort(events.begin(), events.end());
  std::vector<std::vector<Event>> sessions;
  for (const Event& e : events) {
    if (sessions.empty() || sessions.back().back().key != e.key || e.time > sessions.back().back().time + gap)
      sessions.emplace_back();
    sessions.back().push_back(e);
  }
  return sessions;
}

// Ordered events, so that merging only ever extends a key's newest session.
std::vector<Event> ordered(int64_t n) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i) events.push_back({i % 3, 1000 + 4 * i + (i / 40) * 100, 1 + (i * 31) % 9});
  return events;
}

TEST(SessionTriggers, ACountTriggerCountsTheRecordsOfEverySessionMergedIntoOne) {
  auto events = ordered(3000);
  std::vector<Session> expected;  // every third record of a session fires it with all so far
  for (const auto& session : sessionsInOrder(events, 20)) {
    int64_t sum = 0;
    for (size_t i = 0; i < session.size(); ++i) {
      sum += session[i].value;
      if ((i + 1) % 3 == 0)
        expected.push_back({session[0].key, session[0].time, session[i].time + 20, static_cast<int64_t>(i + 1), sum});
    }
  }
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(expected.size(), 300u);
  auto countOf3 = [](auto windowed) { return windowed.trigger(CountTrigger::of(3)).process(DescribeSession{}); };
  for (std::string backend : {"heap", "rocksdb"}) EXPECT_EQ(sortedRun(events, 0, 2, backend, countOf3), expected) << backend;
  // A record that bridges two sessions brings both counts along: 1 + 1 + 1 reaches 3.
  std::vector<Event> bridged = {{1, 0, 1}, {1, 20, 2}, {1, 10, 4}};
  EXPECT_EQ(runWith(bridged, 1000, 1, "heap", countOf3, 10ms), (std::vector<Session>{{1, 0, 30, 3, 7}}));
}

TEST(SessionTriggers, AnEvictorOnSessionsLeavesTheFunctionTheLastRecords) {
  auto events = ordered(3000);
  std::vector<Session> expected;
  for (const auto& session : sessionsInOrder(events, 20)) {
    size_t from = session.size() > 2 ? session.size() - 2 : 0;
    int64_t sum = 0;
    for (size_t i = from; i < session.size(); ++i) sum += session[i].value;
    expected.push_back({session[0].key, session[0].time, session.back().time + 20,
                        static_cast<int64_t>(session.size() - from), sum});
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sortedRun(events, 0, 2, "heap",
                      [](auto windowed) { return windowed.evictor(CountEvictor::of(2)).process(DescribeSession{}); }),
            expected);
}

// Early results of each session every 50 ms of event time, then its final result.
TEST(SessionTriggers, ContinuousTriggersOnSessionsGiveEarlyResultsThatGrowToTheFinalOne) {
  auto events = ordered(2000);
  auto sessions = sessionsInOrder(events, 20);
  auto results = runWith(events, 0, 1, "heap", [](auto windowed) {
    return windowed.trigger(ContinuousEventTimeTrigger::of(50ms)).process(DescribeSession{});
  });
  std::map<std::pair<int64_t, int64_t>, std::vector<Session>> firings;  // (key, start) -> firings in order
  for (const Session& s : results) firings[{s.key, s.start}].push_back(s);
  ASSERT_EQ(firings.size(), sessions.size());
  size_t early = 0;
  for (const auto& session : sessions) {
    int64_t sum = 0;
    for (const Event& e : session) sum += e.value;
    const auto& got = firings[{session[0].key, session[0].time}];
    ASSERT_FALSE(got.empty());
    // The last firing is the whole session; the ones before it saw a prefix of it.
    EXPECT_EQ(got.back(), (Session{session[0].key, session[0].time, session.back().time + 20,
                                   static_cast<int64_t>(session.size()), sum}));
    for (size_t i = 0; i + 1 < got.size(); ++i) {
      EXPECT_LE(got[i].count, got[i + 1].count);
      int64_t prefix = 0;
      for (int64_t j = 0; j < got[i].count; ++j) prefix += session[static_cast<size_t>(j)].value;
      EXPECT_EQ(got[i].sum, prefix);
    }
    early += got.size() - 1;
  }
  EXPECT_GT(early, sessions.size());  // sessions last ~160 ms: several early firings each
}

// A user trigger that does not merge is refused on session windows.
struct NotMerging : Trigger<Event, TimeWindow> {
  TriggerResult onElement(const Event&, int64_t, const TimeWindow&, TriggerContext<TimeWindow>&) override {
    return TriggerResult::FIRE;
  }
  TriggerResult onEventTime(int64_t, const TimeWindow&, TriggerContext<TimeWindow>&) override {
    return TriggerResult::CONTINUE;
  }
  TriggerResult onProcessingTime(int64_t, const TimeWindow&, TriggerContext<TimeWindow>&) override {
    return TriggerResult::CONTINUE;
  }
};

TEST(SessionTriggers, ATriggerThatCannotMergeIsAClearErrorWhenTheJobIsBuilt) {
  StreamExecutionEnvironment env;
  auto windowed = env.fromElements(Event{1, 1, 1})
                      .keyBy([](const Event& e) { return e.key; })
                      .window(EventTimeSessionWindows::withGap(10ms));
  try {
    windowed.trigger(NotMerging{});
    FAIL() << "a trigger that cannot merge was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("canMerge"), std::string::npos) << e.what();
  }
}

TEST(SessionWindows, ReduceMergesTheReducedValuesOfMergedSessions) {
  auto events = irregular(10000);
  auto expected = bruteForceSessions(events, [](const Event&) { return int64_t{25}; });
  std::map<std::pair<int64_t, int64_t>, int64_t> sums;  // (key, end - 1) -> sum
  for (auto& s : expected) sums[{s.key, s.end - 1}] = s.sum;
  StreamExecutionEnvironment env;
  CollectSink<std::pair<Event, int64_t>> sink;
  struct WithTime : ProcessFunction<Event, std::pair<Event, int64_t>> {
    void processElement(const Event& e, Context& ctx, Collector<std::pair<Event, int64_t>>& out) override {
      out.collect({e, ctx.timestamp().value_or(-1)});
    }
  };
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(40), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(EventTimeSessionWindows::withGap(25ms))
      .reduce([](const Event& a, const Event& b) { return Event{a.key, std::max(a.time, b.time), a.value + b.value}; })
      .process(WithTime{})
      .sinkTo(sink);
  env.execute();
  std::map<std::pair<int64_t, int64_t>, int64_t> got;
  for (auto& [e, ts] : sink.getResults()) EXPECT_TRUE(got.emplace(std::pair{e.key, ts}, e.value).second) << ts;
  EXPECT_EQ(got, sums);
}

TEST(SessionWindows, BadGapsAreClearErrors) {
  EXPECT_THROW(EventTimeSessionWindows::withGap(0ms), Error);
  EXPECT_THROW(EventTimeSessionWindows::withGap(-1ms), Error);
  // A dynamic gap is checked per record: ≤ 0 fails the job, naming the operator.
  StreamExecutionEnvironment env;
  env.fromSource(detail::CollectionSource<Event>({{0, 10, 1}, {0, 20, 0}}), punctuated(0), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(EventTimeSessionWindows::withDynamicGap([](const Event& e) { return e.value; }))
      .process(DescribeSession{})
      .sinkTo(DiscardingSink<Session>());
  try {
    env.execute();
    FAIL() << "a zero gap was accepted";
  } catch (const JobExecutionError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("Window Process"), std::string::npos) << what;
    EXPECT_NE(what.find("gap must be positive, got 0 ms"), std::string::npos) << what;
  }
}

TEST(SessionWindows, TimestampsAtTheEndOfTheRangeDoNotOverflow) {
  TimeWindow w = EventTimeSessionWindows::withGap(1000ms).assignWindow(Event{}, INT64_MAX - 10);
  EXPECT_EQ(w.end, INT64_MAX);
  EXPECT_EQ(w.start, INT64_MAX - 10);
  EXPECT_TRUE(w.intersects(TimeWindow{INT64_MIN, INT64_MAX - 10}));
}

}  // namespace
}  // namespace weir
