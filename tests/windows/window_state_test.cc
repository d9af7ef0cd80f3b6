// A ProcessWindowFunction's per-window and per-key state (windowState, globalState) and
// its clear(), on every window operator, against a brute force of the same rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "support/event_time_test_events.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

using event_time_test::Event;
using event_time_test::punctuated;

// One firing: the key, the window, how often this window has fired (its windowState),
// and how often any window of the key has (its globalState).
struct Firing {
  int64_t key, start, end, windowFirings, keyFirings;
  auto tie() const { return std::tie(key, start, end, windowFirings, keyFirings); }
  bool operator<(const Firing& o) const { return tie() < o.tie(); }
  bool operator==(const Firing& o) const { return tie() == o.tie(); }
};
void PrintTo(const Firing& f, std::ostream* os) {
  *os << "{key " << f.key << ", [" << f.start << ", " << f.end << "), window firing " << f.windowFirings
      << ", key firing " << f.keyFirings << "}";
}

// Windows cleared, as clear() saw them (shared by the function's copies).
struct Cleared {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> windows;
};

ValueStateDescriptor<int64_t> firingsOfWindow() { return ValueStateDescriptor<int64_t>("firings", 0); }

// What CountFirings does, for a keyed or a windowAll function's context.
template <class Context>
Firing countFiring(int64_t key, Context& ctx) {
  ValueState<int64_t>& mine = ctx.windowState().getState(firingsOfWindow());
  mine.update(*mine.value() + 1);
  ReducingState<int64_t>& all =
      ctx.globalState().getReducingState(ReducingStateDescriptor<int64_t>("all", [](int64_t a, int64_t b) { return a + b; }));
  all.add(1);
  return {key, ctx.window().start, ctx.window().end, *mine.value(), *all.get()};
}
template <class Context>
void clearFirings(Context& ctx, Cleared& cleared) {
  ctx.windowState().getState(firingsOfWindow()).clear();
  std::lock_guard lock(cleared.mutex);
  cleared.windows.emplace_back(ctx.window().start, ctx.window().end);
}

struct CountFirings : ProcessWindowFunction<Event, Firing, int64_t> {
  std::shared_ptr<Cleared> cleared = std::make_shared<Cleared>();
  void process(const int64_t& key, Context& ctx, std::span<const Event>, Collector<Firing>& out) override {
    out.collect(countFiring(key, ctx));
  }
  void clear(Context& ctx) override { clearFirings(ctx, *cleared); }
};

// Each record is followed by the watermark "its time − 1" (a batch of its own: the
// fillers of key 99 complete the batch and are filtered out before the windows).
std::vector<Event> stepwise(const std::vector<Event>& steps) {
  std::vector<Event> events;
  int64_t newest = INT64_MIN;
  for (const Event& step : steps) {
    events.push_back(step);
    newest = std::max(newest, step.time);
    for (size_t i = 1; i < detail::kBatchRecords<Event>; ++i) events.push_back({99, newest, 0});
  }
  return events;
}

const std::vector<Event> kSteps = {
    {0, 1, 1},   {0, 5, 1},  {1, 20, 1},  // watermark 19: key 0 fires [0, 10)
    {0, 3, 1},   {0, 7, 1},               // late within the lateness: fires again, twice
    {1, 24, 1},  {0, 28, 1}, {1, 200, 1},  // watermark 199: cleanups up to 99
    {0, 150, 1}, {0, 6, 1},  {1, 181, 1}, {0, 155, 1},
};

// The rules by hand: a record updates its windows not yet past end + lateness, and
// fires at once those the watermark passed; the watermark fires each window that has
// not fired, in order of end, and clears those past end + lateness.
std::pair<std::vector<Firing>, std::vector<std::pair<int64_t, int64_t>>> bruteForce(
    const std::vector<Event>& steps, int64_t size, int64_t slide, int64_t lateness) {
  std::vector<Firing> firings;
  std::vector<std::pair<int64_t, int64_t>> cleared;
  std::map<std::tuple<int64_t, int64_t, int64_t>, bool> open;  // (end, key, start) -> fired
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> windowFirings;
  std::map<int64_t, int64_t> keyFirings;
  auto fire = [&](int64_t end, int64_t key, int64_t start) {
    firings.push_back({key, start, end, ++windowFirings[{end, key, start}], ++keyFirings[key]});
  };
  auto advance = [&](int64_t watermark) {
    for (auto it = open.begin(); it != open.end();) {
      auto [end, key, start] = it->first;
      if (end - 1 > watermark) break;
      if (!it->second) fire(end, key, start);
      it->second = true;
      if (end - 1 + lateness <= watermark) {
        cleared.emplace_back(start, end);
        it = open.erase(it);
      } else {
        ++it;
      }
    }
  };
  int64_t watermark = INT64_MIN, newest = INT64_MIN;
  for (const Event& e : steps) {
    int64_t last = e.time - ((e.time % slide) + slide) % slide;
    for (int64_t start = last; start > e.time - size; start -= slide) {
      int64_t end = start + size;
      if (end - 1 + lateness <= watermark) continue;
      auto it = open.try_emplace({end, e.key, start}, false).first;
      if (end - 1 <= watermark) {
        fire(end, e.key, start);
        it->second = true;
      }
    }
    newest = std::max(newest, e.time);
    watermark = std::max(watermark, newest - 1);
    advance(watermark);
  }
  advance(INT64_MAX);
  std::sort(firings.begin(), firings.end());
  std::sort(cleared.begin(), cleared.end());
  return {firings, cleared};
}

// The windows of `steps` with CountFirings at `parallelism`; `viaTrigger` takes the
// general window operator.
template <class Assigner>
std::pair<std::vector<Firing>, std::vector<std::pair<int64_t, int64_t>>> run(Assigner assigner, bool viaTrigger,
                                                                            const std::string& backend, int parallelism) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(stateBackendFromName(backend));
  CollectSink<Firing> sink;
  CountFirings fn;
  auto cleared = fn.cleared;
  auto windowed = env.fromSource(detail::CollectionSource<Event>(stepwise(kSteps)), punctuated(0), "events")
                      .setParallelism(1)
                      .filter([](const Event& e) { return e.key != 99; })
                      .setParallelism(1)
                      .keyBy([](const Event& e) { return e.key; })
                      .window(assigner);
  windowed.allowedLateness(100ms);
  if (viaTrigger) windowed.trigger(EventTimeTrigger::create()).process(fn).sinkTo(sink);
  else windowed.process(fn).sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  std::sort(cleared->windows.begin(), cleared->windows.end());
  return {got, cleared->windows};
}

TEST(WindowFunctionState, EachWindowCountsItsOwnFiringsAndEachKeyAllOfThem) {
  auto tumbling = bruteForce(kSteps, 10, 10, 100);
  ASSERT_EQ(tumbling.first.size(), 9u);  // the late records really fire windows again
  ASSERT_EQ(std::count_if(tumbling.first.begin(), tumbling.first.end(), [](const Firing& f) { return f.windowFirings > 1; }), 3);
  for (int p : {1, 2}) {
    EXPECT_EQ(run(TumblingEventTimeWindows::of(10ms), false, "heap", p), tumbling) << "parallelism " << p;
    EXPECT_EQ(run(TumblingEventTimeWindows::of(10ms), true, "heap", p), tumbling) << "parallelism " << p;
  }
  EXPECT_EQ(run(TumblingEventTimeWindows::of(10ms), false, "rocksdb", 2), tumbling);
  EXPECT_EQ(run(TumblingEventTimeWindows::of(10ms), true, "rocksdb", 2), tumbling);
}

TEST(WindowFunctionState, SlidingWindowsKeepStateAndAreClearedEachByItself) {
  auto sliding = bruteForce(kSteps, 30, 10, 100);
  ASSERT_GT(sliding.first.size(), 20u);
  for (int p : {1, 2}) {
    EXPECT_EQ(run(SlidingEventTimeWindows::of(30ms, 10ms), false, "heap", p), sliding) << "parallelism " << p;
    EXPECT_EQ(run(SlidingEventTimeWindows::of(30ms, 10ms), true, "heap", p), sliding) << "parallelism " << p;
  }
  EXPECT_EQ(run(SlidingEventTimeWindows::of(30ms, 10ms), false, "rocksdb", 2), sliding);
}

// The same over the whole stream: windowAll's function has the same state.
struct CountAllFirings : ProcessAllWindowFunction<Event, Firing> {
  std::shared_ptr<Cleared> cleared = std::make_shared<Cleared>();
  void process(Context& ctx, std::span<const Event>, Collector<Firing>& out) override {
    out.collect(countFiring(0, ctx));
  }
  void clear(Context& ctx) override { clearFirings(ctx, *cleared); }
};

TEST(WindowFunctionState, WindowAllFunctionsKeepStateAndAreCleared) {
  std::vector<Event> steps = kSteps;
  for (Event& e : steps) e.key = 0;
  auto expected = bruteForce(steps, 10, 10, 100);
  StreamExecutionEnvironment env;
  CollectSink<Firing> sink;
  CountAllFirings fn;
  env.fromSource(detail::CollectionSource<Event>(stepwise(kSteps)), punctuated(0), "events")
      .filter([](const Event& e) { return e.key != 99; })
      .windowAll(TumblingEventTimeWindows::of(10ms))
      .allowedLateness(100ms)
      .process(fn)
      .sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  std::sort(fn.cleared->windows.begin(), fn.cleared->windows.end());
  EXPECT_EQ(got, expected.first);
  EXPECT_EQ(fn.cleared->windows, expected.second);
}

// Session windows merge, so a window has no state of its own (as in Flink); the key's
// state is there.
struct SessionState : ProcessWindowFunction<Event, int64_t, int64_t> {
  bool perWindow = false;
  void process(const int64_t&, Context& ctx, std::span<const Event> elements, Collector<int64_t>& out) override {
    auto& store = perWindow ? ctx.windowState() : ctx.globalState();
    ValueState<int64_t>& seen = store.getState(ValueStateDescriptor<int64_t>("seen", 0));
    seen.update(*seen.value() + static_cast<int64_t>(elements.size()));
    out.collect(*seen.value());
  }
};

TEST(WindowFunctionState, SessionsHaveKeyStateButNoWindowState) {
  std::vector<Event> events = {{1, 0, 1}, {1, 5, 1}, {1, 100, 1}, {1, 104, 1}, {1, 108, 1}};
  for (bool viaTrigger : {false, true}) {
    StreamExecutionEnvironment env;
    CollectSink<int64_t> sink;
    auto windowed = env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
                        .keyBy([](const Event& e) { return e.key; })
                        .window(EventTimeSessionWindows::withGap(10ms));
    if (viaTrigger) windowed.trigger(EventTimeTrigger::create()).process(SessionState{}).sinkTo(sink);
    else windowed.process(SessionState{}).sinkTo(sink);
    env.execute();
    EXPECT_EQ(sink.getResults(), (std::vector<int64_t>{2, 5})) << "via trigger " << viaTrigger;

    StreamExecutionEnvironment failing;
    SessionState perWindow;
    perWindow.perWindow = true;
    auto again = failing.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
                     .keyBy([](const Event& e) { return e.key; })
                     .window(EventTimeSessionWindows::withGap(10ms));
    if (viaTrigger) again.trigger(EventTimeTrigger::create()).process(perWindow).sinkTo(DiscardingSink<int64_t>());
    else again.process(perWindow).sinkTo(DiscardingSink<int64_t>());
    try {
      failing.execute();
      FAIL() << "per-window state on session windows was accepted";
    } catch (const JobExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find("session windows merge, so they have no per-window state"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace weir
