// Windows at the ends of the timestamp range. This file is built with UBSan (CMake gives
// it -fsanitize=undefined without recovery), and the window operators, assigners,
// triggers and watermark strategies are templates compiled here, so a signed overflow
// in their arithmetic fails the test instead of wrapping silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Event {
  int64_t key = 0;
  int64_t time = 0;
};

// Times at both ends of the range, in order.
std::vector<Event> extremes() {
  std::vector<Event> out;
  for (int64_t d : {0, 1, 2, 500, 999, 1000, 1500, 5000}) out.push_back({d % 2, kMin + d});
  for (int64_t d : {5000, 1500, 1000, 999, 500, 2, 1, 0}) out.push_back({d % 2, kMax - d});
  return out;
}

WatermarkStrategy<Event> byTime(std::chrono::milliseconds bound) {
  return WatermarkStrategy<Event>::forBoundedOutOfOrderness(bound).withTimestampAssigner(
      [](const Event& e) { return e.time; });
}

// (key, window start, window end, records)
using Counted = std::tuple<int64_t, int64_t, int64_t, int64_t>;

struct CountIn : ProcessWindowFunction<Event, Counted, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> in, Collector<Counted>& out) override {
    out.collect({key, ctx.window().start, ctx.window().end, static_cast<int64_t>(in.size())});
  }
};

// The aligned window of `size` holding t, computed wide and clamped to the range.
std::pair<int64_t, int64_t> windowOf(int64_t t, int64_t size) {
  __int128 start = static_cast<__int128>(t) - ((static_cast<__int128>(t) % size) + size) % size;
  __int128 end = start + size;
  return {static_cast<int64_t>(std::max<__int128>(start, kMin)), static_cast<int64_t>(std::min<__int128>(end, kMax))};
}

template <class Windowed>
std::vector<Counted> run(Windowed&& build) {
  StreamExecutionEnvironment env;
  CollectSink<Counted> sink;
  auto keyed = env.fromCollection(extremes()).assignTimestampsAndWatermarks(byTime(100ms)).keyBy([](const Event& e) {
    return e.key;
  });
  build(keyed).process(CountIn{}).sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

TEST(WindowBounds, TumblingWindowsAtBothEndsOfTheRangeCountEveryRecord) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> counts;
  for (const Event& e : extremes()) {
    auto [start, end] = windowOf(e.time, 1000);
    ++counts[{e.key, start, end}];
  }
  std::vector<Counted> expected;
  for (const auto& [w, n] : counts) expected.push_back({std::get<0>(w), std::get<1>(w), std::get<2>(w), n});
  EXPECT_EQ(run([](auto& k) { return k.window(TumblingEventTimeWindows::of(1000ms)).allowedLateness(1h); }),
            expected);
  // The same windows through the trigger path, with early firings that must not overflow
  // either: the final firing of each window is the last one for it.
  auto continuous = run([](auto& k) {
    return k.window(TumblingEventTimeWindows::of(1000ms)).trigger(ContinuousEventTimeTrigger::of(300ms));
  });
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> largest;
  for (const auto& [key, start, end, n] : continuous) {
    auto& m = largest[{key, start, end}];
    m = std::max(m, n);
  }
  EXPECT_EQ(largest, counts);
}

TEST(WindowBounds, SlidingAndSessionWindowsAtBothEndsOfTheRangeFire) {
  auto sliding = run([](auto& k) { return k.window(SlidingEventTimeWindows::of(1000ms, 250ms)); });
  int64_t placements = 0;  // each record is in 4 windows, fewer where the range ends
  for (const auto& c : sliding) placements += std::get<3>(c);
  EXPECT_GT(placements, static_cast<int64_t>(extremes().size()));
  EXPECT_LE(placements, 4 * static_cast<int64_t>(extremes().size()));
  auto sessions = run([](auto& k) { return k.window(EventTimeSessionWindows::withGap(1000ms)); });
  int64_t inSessions = 0;
  for (const auto& c : sessions) inSessions += std::get<3>(c);
  EXPECT_EQ(inSessions, static_cast<int64_t>(extremes().size()));
  for (const auto& [key, start, end, n] : sessions) EXPECT_LE(start, end);
}

TEST(WindowBounds, TimeEvictorAndCountWindowsAtTheEndsOfTheRange) {
  auto evicted = run([](auto& k) {
    return k.window(TumblingEventTimeWindows::of(1000ms)).evictor(TimeEvictor::of(std::chrono::milliseconds(kMax)));
  });
  int64_t kept = 0;  // nothing is older than the newest by more than INT64_MAX ms
  for (const auto& c : evicted) kept += std::get<3>(c);
  EXPECT_EQ(kept, static_cast<int64_t>(extremes().size()));
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromCollection(extremes())
      .assignTimestampsAndWatermarks(byTime(100ms))
      .keyBy([](const Event& e) { return e.key; })
      .countWindow(2)
      .reduce([](const Event& a, const Event& b) { return Event{a.key, a.time / 2 + b.time / 2}; })
      .map([](const Event& e) { return e.key; })
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults().size(), extremes().size() / 2);
}

}  // namespace
}  // namespace weir
