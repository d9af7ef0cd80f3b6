// Watermark alignment (WatermarkStrategy::withWatermarkAlignment): sources of one group
// keep within the allowed drift of the group's slowest. What each source emitted is
// recorded where it is read (a map chained to it), with the wall-clock moment, and the
// lead of the fast source over the slow one is measured against the drift; the same job
// without alignment is the control that shows the lead is real.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "support/error_of.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

struct Tick {
  int64_t source = 0;  // 0: the fast one, 1: the slow one
  int64_t time = 0;
};
WEIR_STRUCT(Tick, source, time);

// Event time each source had reached, as it was read: (wall-clock ns, timestamp).
struct Reached {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> of[2];
  void add(const Tick& t) {
    const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::lock_guard lock(mutex);
    of[t.source].emplace_back(now, t.time);
  }
  // The most the fast source was ahead of the slow one in event time, at any moment it
  // emitted a record, while the slow one still had records to come.
  int64_t largestLead(int64_t slowLast) {
    std::lock_guard lock(mutex);
    int64_t lead = 0;
    size_t s = 0;
    int64_t slowAt = std::numeric_limits<int64_t>::min() / 2;
    for (const auto& [when, time] : of[0]) {
      while (s < of[1].size() && of[1][s].first <= when) slowAt = std::max(slowAt, of[1][s++].second);
      if (slowAt >= slowLast) break;
      lead = std::max(lead, time - std::max<int64_t>(slowAt, 0));
    }
    return lead;
  }
};

Reached* reached = nullptr;

std::atomic<bool> silentEnd{false};  // ends the silent TickSource

// A source of `count` ticks, `perMs` of them every ms, `step` ms of event time apart. It
// does not catch up after a pause (a rate-limited generator would, in one burst).
class TickSource final : public Source<Tick> {
 public:
  // perMs 0: a source that reads nothing until `silentUntil` holds (or `count` ms pass),
  // then ends.
  TickSource(int64_t source, int64_t count, int64_t perMs, int64_t step)
      : source_(source), count_(count), perMs_(perMs), step_(step) {}
  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override {
    return std::make_unique<SharedSplitEnumerator>(std::deque<std::unique_ptr<SourceSplit>>{});
  }
  std::unique_ptr<SourceReader<Tick>> createReader(const SourceReaderContext&) const override {
    return std::make_unique<Reader>(source_, count_, perMs_, step_);
  }
  int maxParallelism() const override { return 1; }

 private:
  class Reader final : public SourceReader<Tick> {
   public:
    Reader(int64_t source, int64_t count, int64_t perMs, int64_t step)
        : source_(source), count_(count), perMs_(perMs), step_(step) {}
    InputStatus pollNext(std::vector<Tick>& out, size_t) override {
      if (perMs_ == 0) {
        if (due_ == std::chrono::steady_clock::time_point{})
          due_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(count_);
        if (silentEnd.load()) return InputStatus::END_OF_INPUT;
        return std::chrono::steady_clock::now() < due_ ? InputStatus::NOTHING_AVAILABLE : InputStatus::END_OF_INPUT;
      }
      if (next_ == count_) return InputStatus::END_OF_INPUT;
      if (std::chrono::steady_clock::now() < due_) return InputStatus::NOTHING_AVAILABLE;
      due_ = std::chrono::steady_clock::now() + 1ms;
      for (int64_t k = 0; k < perMs_ && next_ < count_; ++k, ++next_) out.push_back(Tick{source_, next_ * step_});
      return InputStatus::NOTHING_AVAILABLE;
    }
    std::chrono::steady_clock::time_point nextPollTime() const override { return due_; }

   private:
    int64_t source_, count_, perMs_, step_;
    int64_t next_ = 0;
    std::chrono::steady_clock::time_point due_{};
  };
  int64_t source_, count_, perMs_, step_;
};

// The fast source: 20 ms of event time per ms of wall clock; the slow one: 2 ms. Both
// cover 4 s of event time; the slow one takes 2 s.
int64_t runTwoSources(std::optional<std::string> group) {
  Reached r;
  reached = &r;
  const int64_t n = 2000;
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(2ms);
  auto strategy = WatermarkStrategy<Tick>::forMonotonousTimestamps().withTimestampAssigner(
      [](const Tick& t) { return t.time; });
  if (group) strategy = strategy.withWatermarkAlignment(*group, 100ms, 5ms);
  auto fast = env.fromSource(TickSource(0, n, 10, 2), strategy, "fast");
  auto slow = env.fromSource(TickSource(1, n, 1, 2), strategy, "slow");
  auto seen = [](const Tick& t) {
    reached->add(t);
    return t;
  };
  fast.map(seen).unionWith(slow.map(seen)).sinkTo(DiscardingSink<Tick>());
  env.execute("aligned");
  reached = nullptr;
  return r.largestLead(2 * (n - 1));
}

TEST(WatermarkAlignment, AFastSourceStaysWithinTheDriftOfTheSlowOne) {
  // Without alignment the fast source is done in a fifth of a second, seconds of event
  // time ahead; with a drift of 100 ms it may run ahead by that, plus what it reads
  // between two updates of the group's watermark and two periodic watermarks (7 ms here,
  // 140 ms of its event time) and a scheduling hiccup.
  const int64_t unaligned = runTwoSources(std::nullopt);
  EXPECT_GT(unaligned, 2500) << "the control: without alignment the fast source should run far ahead";
  const int64_t aligned = runTwoSources("ticks");
  EXPECT_LT(aligned, 1000) << "aligned, the fast source ran " << aligned << " ms of event time ahead";
  std::fprintf(stderr, "the fast source's largest lead: %lld ms unaligned, %lld ms aligned (drift 100 ms)\n",
               static_cast<long long>(unaligned), static_cast<long long>(aligned));
}

// A source of the group that has read nothing (no watermark yet: an empty partition,
// say) holds no one back, as in Flink: the fast source reads all of its input while the
// silent one is still there.
TEST(WatermarkAlignment, ASourceWithoutAWatermarkHoldsNoOneBack) {
  Reached r;
  reached = &r;
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(2ms);
  auto strategy = WatermarkStrategy<Tick>::forMonotonousTimestamps()
                      .withTimestampAssigner([](const Tick& t) { return t.time; })
                      .withWatermarkAlignment("ticks", 100ms, 5ms);
  silentEnd = false;
  auto seen = [](const Tick& t) {
    reached->add(t);
    if (t.source == 0 && t.time == 2 * 1999) silentEnd = true;  // the fast source's last
    return t;
  };
  const auto start = std::chrono::steady_clock::now();
  env.fromSource(TickSource(0, 2000, 10, 2), strategy, "fast")
      .map(seen)
      .unionWith(env.fromSource(TickSource(1, 60000, 0, 0), strategy, "silent").map(seen))
      .sinkTo(DiscardingSink<Tick>());
  env.execute("silent");
  reached = nullptr;
  EXPECT_EQ(r.of[0].size(), 2000u);
  // Held back, the fast source would have waited for the silent one's own end, a minute on.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "the fast source waited for the silent one";
}

// Two splits read by one reader that can pause them: the one ahead is paused until the
// other catches up, and every record still arrives once.
class TwoSplitSource final : public Source<Tick> {
 public:
  struct Log {
    std::mutex mutex;
    std::vector<std::string> calls;  // "pause fast", "resume fast", ...
    bool supportsPausing = true;
  };
  explicit TwoSplitSource(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override {
    return std::make_unique<SharedSplitEnumerator>(std::deque<std::unique_ptr<SourceSplit>>{});
  }
  std::unique_ptr<SourceReader<Tick>> createReader(const SourceReaderContext&) const override {
    return std::make_unique<Reader>(log_);
  }
  int maxParallelism() const override { return 1; }

 private:
  // Every ms: 10 records of the fast split (10 ms of event time each) and 1 of the slow
  // one (1 ms), 2,000 each.
  class Reader final : public SourceReader<Tick> {
   public:
    explicit Reader(std::shared_ptr<Log> log) : log_(std::move(log)) {}
    InputStatus pollNext(std::vector<Tick>& out, size_t) override {
      runs_.clear();
      if (next_[0] == kCount && next_[1] == kCount) return InputStatus::END_OF_INPUT;
      if (std::chrono::steady_clock::now() < due_) return InputStatus::NOTHING_AVAILABLE;
      due_ = std::chrono::steady_clock::now() + 1ms;
      const int64_t step[2] = {10, 1};
      const int64_t per[2] = {10, 1};
      for (int s = 0; s < 2; ++s) {
        if (paused_[s] || next_[s] == kCount) continue;
        size_t n = 0;
        for (; n < static_cast<size_t>(per[s]) && next_[s] < kCount; ++n, ++next_[s]) out.push_back({s, next_[s] * step[s]});
        runs_.push_back({s == 0 ? "fast" : "slow", n, next_[s] == kCount});
      }
      return InputStatus::NOTHING_AVAILABLE;
    }
    std::chrono::steady_clock::time_point nextPollTime() const override { return due_; }
    std::span<const SplitRun> splitRuns() const override { return runs_; }
    bool pauseOrResumeSplits(const std::vector<std::string>& toPause, const std::vector<std::string>& toResume) override {
      std::lock_guard lock(log_->mutex);
      if (!log_->supportsPausing) return false;
      for (const auto& id : toPause) {
        log_->calls.push_back("pause " + id);
        paused_[id == "fast" ? 0 : 1] = true;
      }
      for (const auto& id : toResume) {
        log_->calls.push_back("resume " + id);
        paused_[id == "fast" ? 0 : 1] = false;
      }
      return true;
    }

   private:
    static constexpr int64_t kCount = 2000;
    std::shared_ptr<Log> log_;
    int64_t next_[2] = {0, 0};
    bool paused_[2] = {false, false};
    std::vector<SplitRun> runs_;
    std::chrono::steady_clock::time_point due_{};
  };
  std::shared_ptr<Log> log_;
};

struct SplitRun2 {
  int64_t lead = 0;
  std::vector<Tick> seen;
};

SplitRun2 runTwoSplits(const std::shared_ptr<TwoSplitSource::Log>& log) {
  Reached r;
  reached = &r;
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(2ms);
  CollectSink<Tick> sink;
  env.fromSource(TwoSplitSource(log),
                 WatermarkStrategy<Tick>::forMonotonousTimestamps()
                     .withTimestampAssigner([](const Tick& t) { return t.time; })
                     .withWatermarkAlignment("splits", 100ms, 5ms),
                 "two splits")
      .map([](const Tick& t) {
        reached->add(t);
        return t;
      })
      .sinkTo(sink);
  env.execute("two splits");
  reached = nullptr;
  return {r.largestLead(1999), sink.getResults()};
}

TEST(WatermarkAlignment, ASplitAheadOfItsGroupIsPausedUntilTheOthersCatchUp) {
  auto log = std::make_shared<TwoSplitSource::Log>();
  SplitRun2 run = runTwoSplits(log);
  // The fast split reads 10 ms of event time per ms against the slow one's 1 ms: left
  // alone it would end 18 s ahead.
  EXPECT_LT(run.lead, 1000) << "the fast split ran " << run.lead << " ms of event time ahead";
  ASSERT_FALSE(log->calls.empty());
  EXPECT_EQ(log->calls.front(), "pause fast");
  EXPECT_NE(std::find(log->calls.begin(), log->calls.end(), "resume fast"), log->calls.end());
  std::multiset<std::pair<int64_t, int64_t>> got, want;
  for (const Tick& t : run.seen) got.insert({t.source, t.time});
  for (int64_t i = 0; i < 2000; ++i) {
    want.insert({0, i * 10});
    want.insert({1, i});
  }
  EXPECT_EQ(got, want);
}

// A reader that cannot pause splits: the source falls back to pausing itself, which
// cannot hold back one split while its other split is behind (documented).
TEST(WatermarkAlignment, AReaderThatCannotPauseSplitsIsAskedOnceAndReadsOn) {
  auto log = std::make_shared<TwoSplitSource::Log>();
  log->supportsPausing = false;
  SplitRun2 run = runTwoSplits(log);
  EXPECT_TRUE(log->calls.empty());
  EXPECT_EQ(run.seen.size(), 4000u);
}

TEST(WatermarkAlignment, BadSettingsAreOneLineNamingThem) {
  auto s = WatermarkStrategy<Tick>::forMonotonousTimestamps();
  EXPECT_EQ(test::errorOf([&] { s.withWatermarkAlignment("", 1s, 1s); }),
            "withWatermarkAlignment: the group name must not be empty");
  EXPECT_EQ(test::errorOf([&] { s.withWatermarkAlignment("g", -1ms, 1s); }),
            "withWatermarkAlignment: the allowed drift must not be negative, got -1 ms");
  EXPECT_EQ(test::errorOf([&] { s.withWatermarkAlignment("g", 1s, 0ms); }),
            "withWatermarkAlignment: the update interval must be positive, got 0 ms");
  EXPECT_EQ(test::errorOf([] { WatermarkStrategy<Tick>::noWatermarks().withWatermarkAlignment("g", 1s, 1s); }),
            "withWatermarkAlignment: the strategy emits no watermarks (noWatermarks), so there is nothing to align");
}

}  // namespace
}  // namespace weir
