// Async I/O (AsyncDataStream): Flink's documented behaviour, driven one step at a time in
// the test harness with the answers given by the test, then in whole jobs against a
// pool of threads that answers out of order, checked against the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/async_lookup.h"
#include "support/error_of.h"
#include "support/harness_events.h"
#include "weir/testing/operator_harness.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using test::Emitted;
using test::HarnessOptions;
using test::OperatorHarness;

// The requests an async function was given, for the test to answer.
struct Requests {
  std::vector<int> asked;  // every call of asyncInvoke, in order
  std::vector<std::pair<int, ResultFuture<std::string>>> open;
  // The newest request for `input`.
  ResultFuture<std::string> of(int input) const {
    for (auto it = open.rbegin(); it != open.rend(); ++it)
      if (it->first == input) return it->second;
    throw std::logic_error("no request for " + std::to_string(input));
  }
};

struct HeldLookup : AsyncFunction<int, std::string> {
  std::shared_ptr<Requests> requests;
  explicit HeldLookup(std::shared_ptr<Requests> r) : requests(std::move(r)) {}
  void asyncInvoke(const int& input, ResultFuture<std::string> result) override {
    requests->asked.push_back(input);
    requests->open.emplace_back(input, result);
  }
};

// Answers a timed-out request with a fallback instead of failing.
struct LookupWithFallback : HeldLookup {
  using HeldLookup::HeldLookup;
  void timeout(const int& input, ResultFuture<std::string> result) override {
    result.complete({"timeout " + std::to_string(input)});
  }
};

DataStream<int> noInput(StreamExecutionEnvironment& env) { return env.fromCollection(std::vector<int>{}); }


TEST(AsyncIo, OrderedEmitsResultsInInputOrderWithTheirRecordsTimestamps) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::orderedWait(noInput(env), HeldLookup(requests), 1s, 10));
  harness.open();
  harness.processBatch(std::vector<int>{1, 2}, {10, 20});
  harness.processWatermark(15);
  harness.processBatch(std::vector<int>{3}, {30});
  EXPECT_EQ(requests->asked, (std::vector<int>{1, 2, 3}));  // all three in flight at once
  requests->of(3).complete({"c"});
  requests->of(2).complete({"b1", "b2"});
  harness.processMail();
  EXPECT_TRUE(test::emittedAsText(harness.output()).empty());  // 1 has no answer yet
  requests->of(1).complete({"a"});
  harness.processMail();
  EXPECT_EQ(test::emittedAsText(harness.output()), (std::vector<std::string>{"a@10", "b1@20", "b2@20", "W15", "c@30"}));
}

TEST(AsyncIo, UnorderedEmitsAsAnswersComeButNeverAcrossAWatermark) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(requests), 1s, 10));
  harness.open();
  harness.processBatch(std::vector<int>{1, 2}, {1, 2});
  harness.processWatermark(5);
  harness.processBatch(std::vector<int>{3, 4}, {6, 7});
  requests->of(4).complete({"d"});
  requests->of(3).complete({"c"});
  harness.processMail();
  EXPECT_TRUE(test::emittedAsText(harness.output()).empty());  // behind the watermark 5, which waits for 1 and 2
  requests->of(2).complete({"b"});
  harness.processMail();
  EXPECT_EQ(test::emittedAsText(harness.output()), std::vector<std::string>{"b@2"});  // before 1, which has no answer
  requests->of(1).complete({"a"});
  harness.processMail();
  auto out = test::emittedAsText(harness.output());
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(out.begin(), out.begin() + 3), (std::vector<std::string>{"b@2", "a@1", "W5"}));
  std::sort(out.begin() + 3, out.end());
  EXPECT_EQ(std::vector<std::string>(out.begin() + 3, out.end()), (std::vector<std::string>{"c@6", "d@7"}));
}

// Going idle waits for the queue: the watermark behind an unanswered request comes out
// first, then the idleness (an idle channel downstream would ignore the watermark).
TEST(AsyncIo, IdlenessWaitsForTheWatermarksBehindUnansweredRequests) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(requests), 1s, 10));
  harness.open();
  harness.processBatch(std::vector<int>{1}, {1});
  harness.processWatermark(5);
  harness.op().input()->processIdleness(true);
  EXPECT_TRUE(harness.output().events().empty());
  requests->of(1).complete({"a"});
  harness.processMail();
  const auto& out = harness.output().events();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kind, Emitted<std::string>::Kind::kRecord);
  EXPECT_EQ(out[1].kind, Emitted<std::string>::Kind::kWatermark);
  EXPECT_EQ(out[2].kind, Emitted<std::string>::Kind::kIdle);
}

// At capacity the operator asks nothing more and holds its input until answers come.
TEST(AsyncIo, AtCapacityItHoldsItsInputUntilAnswersCome) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(requests), 1s, 2));
  harness.open();
  harness.processBatch(std::vector<int>{1, 2, 3});
  EXPECT_EQ(requests->asked, (std::vector<int>{1, 2}));
  EXPECT_TRUE(harness.inputHeld());
  requests->of(1).complete({"a"});
  harness.processMail();
  EXPECT_EQ(requests->asked, (std::vector<int>{1, 2, 3}));  // 1's answer made room for 3
  EXPECT_TRUE(harness.inputHeld());                         // 2 and 3 fill it again
  requests->of(3).complete({"c"});
  harness.processMail();
  EXPECT_FALSE(harness.inputHeld());
  EXPECT_EQ(harness.output().records(), (std::vector<std::string>{"a", "c"}));
}

TEST(AsyncIo, ATimedOutRequestGoesToTimeoutAndItsLateAnswerIsDropped) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(
      AsyncDataStream::orderedWait(noInput(env), LookupWithFallback(requests), 100ms, 10),
      HarnessOptions{.processingTime = 1000});
  harness.open();
  harness.processElement(7);
  harness.setProcessingTime(1100);  // sent at 1000 with 100 ms: times out once the clock reads 1101
  harness.processMail();
  EXPECT_TRUE(harness.output().records().empty());
  harness.setProcessingTime(1101);
  harness.processMail();
  EXPECT_EQ(harness.output().records(), std::vector<std::string>{"timeout 7"});
  requests->of(7).complete({"late"});
  harness.processMail();
  EXPECT_EQ(harness.output().records(), std::vector<std::string>{"timeout 7"});
}

TEST(AsyncIo, ByDefaultATimeoutFailsTheJobNamingTheOperator) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(
      AsyncDataStream::orderedWait(noInput(env), HeldLookup(requests), 100ms, 10).name("lookup"));
  harness.open();
  harness.processElement(7);
  harness.setProcessingTime(101);
  std::string error = test::errorOf([&] { harness.processMail(); });
  EXPECT_NE(error.find("operator 'lookup' (subtask 1/1) failed: Async function call has timed out."), std::string::npos)
      << error;
}

TEST(AsyncIo, AFailedRequestFailsTheJobWithItsError) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(requests), 1s, 10));
  harness.open();
  harness.processElement(7);
  requests->of(7).completeExceptionally(std::runtime_error("connection refused"));
  std::string error = test::errorOf([&] { harness.processMail(); });
  EXPECT_NE(error.find("failed: connection refused"), std::string::npos) << error;
}

TEST(AsyncIo, AnAsyncInvokeThatThrowsFailsTheJob) {
  StreamExecutionEnvironment env;
  auto throwing = [](const int&, ResultFuture<std::string>) { throw std::runtime_error("no pool"); };
  OperatorHarness<std::string> harness(AsyncDataStream::unorderedWait(noInput(env), throwing, 1s, 10));
  harness.open();
  std::string error = test::errorOf([&] { harness.processElement(1); });
  EXPECT_NE(error.find("failed: no pool"), std::string::npos) << error;
}

// Flink's FixedDelayRetryStrategy: after an answer the predicate rejects, the request is
// sent again `backoff` later, at most maxAttempts more times; the last answer stands.
TEST(AsyncIo, RetriesAfterTheBackoffUntilTheAnswerIsAcceptedOrAttemptsRunOut) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  auto retry = AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<std::string>(2, 50)
                   .ifResult(RetryPredicates::EMPTY_RESULT_PREDICATE<std::string>)
                   .build();
  OperatorHarness<std::string> harness(
      AsyncDataStream::orderedWaitWithRetry(noInput(env), HeldLookup(requests), 1s, 10, retry));
  harness.open();
  harness.processElement(7);
  requests->of(7).complete({});  // empty: retry at 50
  harness.processMail();
  harness.setProcessingTime(50);
  EXPECT_EQ(requests->asked, std::vector<int>{7});
  harness.setProcessingTime(51);
  EXPECT_EQ(requests->asked, (std::vector<int>{7, 7}));
  requests->of(7).complete({});  // empty again: the last retry at 101
  harness.processMail();
  harness.setProcessingTime(102);
  EXPECT_EQ(requests->asked, (std::vector<int>{7, 7, 7}));
  requests->of(7).complete({});  // 2 retries done: the empty answer stands
  harness.processMail();
  harness.setProcessingTime(1000);
  EXPECT_EQ(requests->asked, (std::vector<int>{7, 7, 7}));

  harness.processElement(8);
  requests->of(8).complete({});
  harness.processMail();
  harness.setProcessingTime(1051);
  requests->of(8).complete({"eight"});
  harness.processMail();
  EXPECT_EQ(harness.output().records(), std::vector<std::string>{"eight"});
}

TEST(AsyncIo, ErrorsAreRetriedWhenThePredicateSaysSoAndFailTheJobWhenAttemptsRunOut) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  auto retry = AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<std::string>(1, 10)
                   .ifException([](const std::exception& e) { return std::string(e.what()) == "busy"; })
                   .build();
  OperatorHarness<std::string> harness(
      AsyncDataStream::unorderedWaitWithRetry(noInput(env), HeldLookup(requests), 1s, 10, retry));
  harness.open();
  harness.processElement(1);
  requests->of(1).completeExceptionally(std::runtime_error("busy"));
  harness.processMail();
  harness.setProcessingTime(11);
  EXPECT_EQ(requests->asked, (std::vector<int>{1, 1}));
  requests->of(1).completeExceptionally(std::runtime_error("busy"));  // no attempt left
  std::string error = test::errorOf([&] { harness.processMail(); });
  EXPECT_NE(error.find("failed: busy"), std::string::npos) << error;
}

// The timeout counts from the first attempt: a request still being retried when it
// passes goes to timeout(), and no retry follows.
TEST(AsyncIo, TheTimeoutCoversEveryAttempt) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  auto retry = AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<std::string>(5, 400)
                   .ifResult(RetryPredicates::EMPTY_RESULT_PREDICATE<std::string>)
                   .build();
  OperatorHarness<std::string> harness(
      AsyncDataStream::orderedWaitWithRetry(noInput(env), LookupWithFallback(requests), 1000ms, 10, retry));
  harness.open();
  harness.processElement(7);
  for (int64_t now : {0, 401, 802}) {  // each attempt answers empty at once
    harness.setProcessingTime(now);
    requests->of(7).complete({});
    harness.processMail();
  }
  EXPECT_EQ(requests->asked, (std::vector<int>{7, 7, 7}));
  harness.setProcessingTime(1001);
  harness.processMail();
  EXPECT_EQ(harness.output().records(), std::vector<std::string>{"timeout 7"});
  harness.setProcessingTime(5000);
  EXPECT_EQ(requests->asked.size(), 3u);
}

TEST(AsyncIo, ExponentialBackoffGrowsByTheMultiplierUpToTheMaximum) {
  auto strategy = AsyncRetryStrategies::ExponentialBackoffDelayRetryStrategyBuilder<int>(6, 100, 1000, 2.0).build();
  for (int n = 1; n <= 6; ++n) {
    EXPECT_TRUE(strategy.canRetry(n));
    EXPECT_EQ(strategy.getBackoffTimeMillis(n), std::min<int64_t>(1000, static_cast<int64_t>(100 * std::pow(2, n - 1))));
  }
  EXPECT_FALSE(strategy.canRetry(7));
}

// Records whose results were not emitted are in the snapshot and are asked about again
// after the restore; at another parallelism too (split list state, as in Flink).
TEST(AsyncIo, RequestsInFlightAreInTheSnapshotAndAskedAgainAfterARestore) {
  StreamExecutionEnvironment env;
  auto before0 = std::make_shared<Requests>(), before1 = std::make_shared<Requests>();
  std::vector<test::OperatorSubtaskState> snapshots;
  {
    OperatorHarness<std::string> s0(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(before0), 1s, 10),
                                    HarnessOptions{.parallelism = 2, .subtaskIndex = 0});
    s0.open();
    s0.processBatch(std::vector<int>{1, 2, 3}, {1, 2, 3});
    before0->of(2).complete({"b"});
    s0.processMail();
    EXPECT_EQ(s0.output().records(), std::vector<std::string>{"b"});
    snapshots.push_back(s0.snapshot());
    OperatorHarness<std::string> s1(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(before1), 1s, 10),
                                    HarnessOptions{.parallelism = 2, .subtaskIndex = 1});
    s1.open();
    s1.processBatch(std::vector<int>{4, 5}, {4, 5});
    snapshots.push_back(s1.snapshot());
  }
  auto after = std::make_shared<Requests>();
  OperatorHarness<std::string> one(AsyncDataStream::unorderedWait(noInput(env), HeldLookup(after), 1s, 10));
  one.initializeState(snapshots);
  one.open();
  std::vector<int> asked = after->asked;
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<int>{1, 3, 4, 5}));
  for (int v : asked) after->of(v).complete({std::to_string(v)});
  one.processMail();
  one.endInput();
  std::vector<std::string> out = test::emittedAsText(one.output());
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::string>{"1@1", "3@3", "4@4", "5@5"}));  // with their timestamps
}

// Ordered: an answer that waits behind an unanswered record was not emitted, so the
// restored operator asks about it again.
TEST(AsyncIo, OrderedAnswersNotYetEmittedAreAskedAgainAfterARestore) {
  auto requests = std::make_shared<Requests>();
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::orderedWait(noInput(env), HeldLookup(requests), 1s, 10));
  harness.open();
  harness.processBatch(std::vector<int>{1, 2});
  requests->of(2).complete({"b"});
  harness.processMail();
  harness.snapshotAndRestore();
  EXPECT_EQ(requests->asked, (std::vector<int>{1, 2, 1, 2}));
  requests->of(2).complete({"b"});
  requests->of(1).complete({"a"});
  harness.processMail();
  EXPECT_EQ(harness.output().records(), (std::vector<std::string>{"a", "b"}));
}

// The end of the input waits for every answer, however late, before the output ends.
TEST(AsyncIo, TheEndOfInputWaitsForEveryAnswer) {
  StreamExecutionEnvironment env;
  OperatorHarness<std::string> harness(AsyncDataStream::orderedWait(
      noInput(env), test::answerLater<int, std::string>([](int v) { return std::to_string(v * 2); }, 2, 2000), 10s,
      5));
  harness.open();
  std::vector<int> input;
  for (int i = 0; i < 5; ++i) input.push_back(i);
  harness.processBatch(input);
  harness.endInput();
  EXPECT_EQ(harness.output().records(), (std::vector<std::string>{"0", "2", "4", "6", "8"}));
  EXPECT_EQ(harness.output().events().back().kind, Emitted<std::string>::Kind::kEndOfInput);
}

TEST(AsyncIo, BadSettingsAreOneLineNamingThem) {
  StreamExecutionEnvironment env;
  auto requests = std::make_shared<Requests>();
  EXPECT_EQ(test::errorOf([&] { AsyncDataStream::orderedWait(noInput(env), HeldLookup(requests), 0ms, 10); }),
            "AsyncDataStream: the timeout must be positive, got 0 ms (weir needs one, so that a lost answer cannot "
            "stall the job)");
  EXPECT_EQ(test::errorOf([&] { AsyncDataStream::unorderedWait(noInput(env), HeldLookup(requests), 1s, 0); }),
            "AsyncDataStream: the capacity must be at least 1, got 0");
  EXPECT_EQ(test::errorOf([] { AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<int>(0, 10); }),
            "FixedDelayRetryStrategyBuilder: maxAttempts must be greater than zero, got 0");
  EXPECT_EQ(test::errorOf([] { AsyncRetryStrategies::ExponentialBackoffDelayRetryStrategyBuilder<int>(3, 100, 50, 2); }),
            "ExponentialBackoffDelayRetryStrategyBuilder: maxRetryDelay (50) must be at least initialDelay (100)");
}

// Whole jobs against a pool that answers out of order: ordered keeps the input's order;
// unordered at parallelism 3 loses and repeats nothing.
TEST(AsyncIo, InAJobOrderedKeepsTheInputOrderAndUnorderedLosesNothing) {
  const int n = 20000;
  std::vector<int64_t> input;
  for (int i = 0; i < n; ++i) input.push_back(i);
  auto twice = [](int64_t v) { return v * 2; };

  StreamExecutionEnvironment env;
  env.setParallelism(1);
  CollectSink<int64_t> ordered, unordered;
  AsyncDataStream::orderedWait(env.fromCollection(input), test::answerLater<int64_t, int64_t>(twice), 10s, 50)
      .sinkTo(ordered);
  AsyncDataStream::unorderedWait(env.fromCollection(input).rebalance(), test::answerLater<int64_t, int64_t>(twice),
                                 10s, 50)
      .setParallelism(3)
      .sinkTo(unordered);
  env.execute("async lookups");

  std::vector<int64_t> expected;
  for (int64_t v : input) expected.push_back(twice(v));
  EXPECT_EQ(ordered.getResults(), expected);
  std::vector<int64_t> got = unordered.getResults();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

TEST(AsyncIo, AFailedAnswerInAJobFailsItWithOneLineNamingTheOperator) {
  StreamExecutionEnvironment env;
  env.setRestartStrategy(RestartStrategy::noRestart());
  auto failing = [](const int& v, ResultFuture<int> result) {
    if (v == 3) result.completeExceptionally(std::runtime_error("lookup of 3 refused"));
    else result.complete({v});
  };
  AsyncDataStream::unorderedWait(env.fromElements(1, 2, 3, 4), failing, 1s).name("lookup").sinkTo(DiscardingSink<int>());
  try {
    env.execute("failing lookup");
    FAIL() << "the job did not fail";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 'lookup' (subtask 1/1) failed: lookup of 3 refused"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weir
