// Consecutive map and filter calls of plain functions run fused, one record through
// all of them at a time: the results, timestamps and failures must be what the same
// operators give one after another.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "weir/weir.h"

namespace weir {
namespace {

std::vector<int64_t> numbers(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), -500);
  return v;
}

// The run used below, written as a loop: in place (int64 -> int64), to a string, by a
// filter on strings, to a size, and a last filter.
std::vector<size_t> expectedRun(const std::vector<int64_t>& input) {
  std::vector<size_t> out;
  for (int64_t v : input) {
    int64_t m = v * 7 - 3;
    if (m % 3 == 0) continue;
    std::string s = std::to_string(m) + "n";
    if (s.find('5') != std::string::npos) continue;
    size_t len = s.size() * 10 + static_cast<size_t>(m & 7);
    if (len % 4 == 1) continue;
    out.push_back(len);
  }
  return out;
}

template <class S>
auto addRun(S stream) {
  return stream.map([](int64_t v) { return v * 7 - 3; })
      .filter([](const int64_t& m) { return m % 3 != 0; })
      .map([](int64_t m) { return std::make_pair(std::to_string(m) + "n", m); })
      .filter([](const std::pair<std::string, int64_t>& p) { return p.first.find('5') == std::string::npos; })
      .map([](std::pair<std::string, int64_t>&& p) { return p.first.size() * 10 + static_cast<size_t>(p.second & 7); })
      .filter([](const size_t& len) { return len % 4 != 1; });
}

TEST(Fusion, ARunOfMapsAndFiltersGivesWhatAPlainLoopGives) {
  auto input = numbers(20'000);
  StreamExecutionEnvironment env;
  CollectSink<size_t> sink;
  addRun(env.fromCollection(input)).sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), expectedRun(input));  // parallelism 1: in order
}

TEST(Fusion, ARunAtParallelismThreeGivesTheSameRecords) {
  auto input = numbers(20'000);
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  CollectSink<size_t> sink;
  addRun(env.fromCollection(input).rebalance()).sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  auto expected = expectedRun(input);
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);
}

// What fusion promises: each record passes through every function of the run before
// the next record starts (a batch at a time, each function would see a whole batch
// before the next function saw any of it).
TEST(Fusion, EachRecordPassesThroughTheWholeRunBeforeTheNext) {
  auto calls = std::make_shared<std::vector<std::pair<char, int64_t>>>();  // one subtask: one thread
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromCollection(numbers(3000))
      .map([calls](int64_t v) {
        calls->emplace_back('m', v);
        return v + 1000;
      })
      .filter([calls](const int64_t& v) {
        calls->emplace_back('f', v);
        return v % 2 == 0;
      })
      .map([calls](int64_t v) {
        calls->emplace_back('n', v);
        return -v;
      })
      .sinkTo(sink);
  env.execute();
  std::vector<std::pair<char, int64_t>> expected;
  std::vector<int64_t> expectedOut;
  for (int64_t v : numbers(3000)) {
    expected.emplace_back('m', v);
    expected.emplace_back('f', v + 1000);
    if ((v + 1000) % 2 != 0) continue;
    expected.emplace_back('n', v + 1000);
    expectedOut.push_back(-(v + 1000));
  }
  EXPECT_EQ(*calls, expected);
  EXPECT_EQ(sink.getResults(), expectedOut);
}

// Each record keeps its own timestamp through the filters that drop its neighbours.
TEST(Fusion, EveryKeptRecordKeepsItsOwnTimestamp) {
  const int64_t n = 10'000;
  StreamExecutionEnvironment env;
  CollectSink<std::pair<int64_t, int64_t>> sink;  // (value, timestamp)
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n),
                 WatermarkStrategy<int64_t>::forMonotonousTimestamps().withTimestampAssigner(
                     [](const int64_t& i) { return 1'000'000 + i * 3; }),
                 "numbers")
      .filter([](const int64_t& i) { return i % 3 != 0; })
      .map([](int64_t i) { return i * 10; })
      .filter([](const int64_t& v) { return v % 7 != 0; })
      .process<std::pair<int64_t, int64_t>>(
          [](const int64_t& v, ProcessFunction<int64_t, std::pair<int64_t, int64_t>>::Context& ctx,
             Collector<std::pair<int64_t, int64_t>>& out) { out.collect({v, ctx.timestamp().value_or(-1)}); })
      .sinkTo(sink);
  env.execute();
  std::vector<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 0; i < n; ++i)
    if (i % 3 != 0 && (i * 10) % 7 != 0) expected.emplace_back(i * 10, 1'000'000 + i * 3);
  EXPECT_EQ(sink.getResults(), expected);
}

TEST(Fusion, AFailingFunctionIsReportedUnderItsOwnOperatorsName) {
  for (const char* failing : {"first", "second", "third"}) {
    std::string which = failing;
    StreamExecutionEnvironment env;
    env.fromCollection(numbers(5000))
        .map([which](int64_t v) {
          if (which == "first" && v == 1234) throw std::runtime_error("bad 1234");
          return v;
        })
        .name("first")
        .filter([which](const int64_t& v) {
          if (which == "second" && v == 1234) throw std::runtime_error("bad 1234");
          return true;
        })
        .name("second")
        .map([which](int64_t v) {
          if (which == "third" && v == 1234) throw std::runtime_error("bad 1234");
          return v;
        })
        .name("third")
        .sinkTo(DiscardingSink<int64_t>());
    try {
      env.execute();
      ADD_FAILURE() << which << ": the job should have failed";
    } catch (const JobExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find("operator '" + which + "' (subtask 1/1) failed: bad 1234"),
                std::string::npos)
          << e.what();
    }
  }
}

// A run whose middle stream is read twice, or whose members are not chained one to one,
// is not fused there; every consumer still gets every record.
TEST(Fusion, RunsThatBranchOrBreakTheChainStillGiveEveryRecord) {
  auto input = numbers(10'000);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<int64_t> branched, direct, unchained, rescaled;
  auto tripled = env.fromCollection(input).map([](int64_t v) { return v * 3; });
  tripled.filter([](const int64_t& v) { return v % 2 == 0; }).sinkTo(branched);
  tripled.sinkTo(direct);
  env.fromCollection(input)
      .map([](int64_t v) { return v + 1; })
      .filter([](const int64_t& v) { return v % 5 == 0; })
      .disableChaining()
      .map([](int64_t v) { return v * 2; })
      .sinkTo(unchained);
  env.fromCollection(input)
      .map([](int64_t v) { return v - 1; })
      .filter([](const int64_t& v) { return v % 4 == 0; })
      .setParallelism(1)
      .sinkTo(rescaled);
  env.execute();
  std::vector<int64_t> even, all, fifths, quarters;
  for (int64_t v : input) {
    if (v * 3 % 2 == 0) even.push_back(v * 3);
    all.push_back(v * 3);
    if ((v + 1) % 5 == 0) fifths.push_back((v + 1) * 2);
    if ((v - 1) % 4 == 0) quarters.push_back(v - 1);
  }
  auto sorted = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(branched.getResults()), even);
  EXPECT_EQ(sorted(direct.getResults()), all);
  EXPECT_EQ(sorted(unchained.getResults()), fifths);
  EXPECT_EQ(sorted(rescaled.getResults()), quarters);
}

// A run cut in its middle fuses on both sides of the cut: here the two functions after
// startNewChain() run in their own chain, still one record at a time.
TEST(Fusion, ARunCutInItsMiddleIsFusedAfterTheCutToo) {
  auto before = std::make_shared<std::vector<std::pair<char, int64_t>>>();  // chain 1's thread
  auto after = std::make_shared<std::vector<std::pair<char, int64_t>>>();   // chain 2's thread
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromCollection(numbers(3000))
      .map([before](int64_t v) {
        before->emplace_back('a', v);
        return v * 2;
      })
      .filter([before](const int64_t& v) {
        before->emplace_back('b', v);
        return v % 3 != 0;
      })
      .map([after](int64_t v) {
        after->emplace_back('c', v);
        return v + 1;
      })
      .startNewChain()
      .filter([after](const int64_t& v) {
        after->emplace_back('d', v);
        return v % 5 != 0;
      })
      .sinkTo(sink);
  env.execute();
  std::vector<std::pair<char, int64_t>> expectBefore, expectAfter;
  std::vector<int64_t> expectOut;
  for (int64_t v : numbers(3000)) {
    expectBefore.emplace_back('a', v);
    expectBefore.emplace_back('b', v * 2);
    if (v * 2 % 3 == 0) continue;
    expectAfter.emplace_back('c', v * 2);
    expectAfter.emplace_back('d', v * 2 + 1);
    if ((v * 2 + 1) % 5 != 0) expectOut.push_back(v * 2 + 1);
  }
  EXPECT_EQ(*before, expectBefore);
  EXPECT_EQ(*after, expectAfter);
  EXPECT_EQ(sink.getResults(), expectOut);
}

// A small record without a default constructor, read by a run and by a sink from one
// batch: the run must leave the batch as it is and keep only what both filters accept.
struct Reading {
  int64_t sensor, value;
  Reading(int64_t s, int64_t v) : sensor(s), value(v) {}
};

TEST(Fusion, ARunThatSharesItsBatchKeepsExactlyTheRecordsItsFiltersAccept) {
  std::vector<Reading> input;
  for (int64_t i = 0; i < 5000; ++i) input.emplace_back(i % 7, i);
  StreamExecutionEnvironment env;
  CollectSink<Reading> filtered, all;
  CollectSink<std::string> moved;
  auto readings = env.fromCollection(input);
  readings.filter([](const Reading& r) { return r.sensor != 3; })
      .filter([](const Reading& r) { return r.value % 2 == 0; })
      .sinkTo(filtered);
  readings.sinkTo(all);
  // A map that moves from its record after a filter: the run cannot read a shared batch,
  // so it gets a copy.
  readings.filter([](const Reading& r) { return r.sensor == 0; })
      .map([](const Reading& r) { return std::to_string(r.value); })
      .map([](std::string&& s) { return std::move(s) + "!"; })
      .sinkTo(moved);
  env.execute();
  auto pairs = [](const std::vector<Reading>& rs) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& r : rs) out.emplace_back(r.sensor, r.value);
    return out;
  };
  std::vector<std::pair<int64_t, int64_t>> expectFiltered;
  std::vector<std::string> expectMoved;
  for (const auto& r : input) {
    if (r.sensor != 3 && r.value % 2 == 0) expectFiltered.emplace_back(r.sensor, r.value);
    if (r.sensor == 0) expectMoved.push_back(std::to_string(r.value) + "!");
  }
  EXPECT_EQ(pairs(filtered.getResults()), expectFiltered);
  EXPECT_EQ(pairs(all.getResults()), pairs(input));
  EXPECT_EQ(moved.getResults(), expectMoved);
}

// A variable may hold one step of a pipeline after another, as with
// SingleOutputStreamOperator; the run then ends where it was reassigned.
TEST(Fusion, AStreamVariableMayBeReassignedTheNextStep) {
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  auto s = env.fromCollection(numbers(1000)).map([](int64_t v) { return v * 4; });
  s = s.filter([](const int64_t& v) { return v % 3 == 0; });
  s = s.map([](int64_t v) { return v + 1; });
  s.sinkTo(sink);
  env.execute();
  std::vector<int64_t> expected;
  for (int64_t v : numbers(1000))
    if (v * 4 % 3 == 0) expected.push_back(v * 4 + 1);
  EXPECT_EQ(sink.getResults(), expected);
}

// A helper that takes the stream as its base type may replace it with another step; the
// run must not skip that step's function.
void addRichStep(SingleOutputStreamOperator<int64_t>& s) {
  struct Negate : RichMapFunction<int64_t, int64_t> {
    int64_t map(const int64_t& v) override { return -v; }
  };
  s = s.map(Negate{});
}

TEST(Fusion, AStepAssignedThroughABaseReferenceStillRuns) {
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  auto s = env.fromCollection(numbers(1000)).map([](int64_t v) { return v * 2; });
  addRichStep(s);
  s.filter([](const int64_t& v) { return v % 3 != 0; }).sinkTo(sink);
  env.execute();
  std::vector<int64_t> expected;
  for (int64_t v : numbers(1000))
    if (-v * 2 % 3 != 0) expected.push_back(-v * 2);
  EXPECT_EQ(sink.getResults(), expected);
}

// A rich function (open, close, runtime context) ends a run and runs as its own
// operator between two runs.
TEST(Fusion, ARichFunctionBetweenPlainOnesIsOpenedAndSeesEveryRecord) {
  struct Opened : RichMapFunction<int64_t, int64_t> {
    std::shared_ptr<int> opens = std::make_shared<int>(0);
    void open() override { ++*opens; }
    int64_t map(const int64_t& v) override { return v + getRuntimeContext().getIndexOfThisSubtask(); }
  };
  Opened rich;
  auto input = numbers(5000);
  StreamExecutionEnvironment env;
  CollectSink<int64_t> sink;
  env.fromCollection(input)
      .map([](int64_t v) { return v * 2; })
      .filter([](const int64_t& v) { return v % 3 != 0; })
      .map(rich)
      .map([](int64_t v) { return v - 1; })
      .filter([](const int64_t& v) { return v % 5 != 0; })
      .sinkTo(sink);
  env.execute();
  std::vector<int64_t> expected;
  for (int64_t v : input) {
    if (v * 2 % 3 == 0) continue;
    if ((v * 2 - 1) % 5 == 0) continue;
    expected.push_back(v * 2 - 1);
  }
  EXPECT_EQ(sink.getResults(), expected);
  EXPECT_EQ(*rich.opens, 1);
}

}  // namespace
}  // namespace weir
