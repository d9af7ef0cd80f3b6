// How a job ends when something goes wrong: user exceptions, cancellation, bad
// configuration, and a slow sink (backpressure).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

auto unboundedGenerator() {
  return DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount);
}

TEST(JobFailure, AUserExceptionFailsTheJobNamingOperatorSubtaskAndMessage) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.fromSource(unboundedGenerator(), WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .rebalance()
      .map([](int64_t v) {
        if (v == 4242) throw std::runtime_error("bad record 4242");
        return v;
      })
      .name("fragile")
      .setParallelism(3)
      .sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute("failing job");
    FAIL() << "the job should have failed";
  } catch (const JobExecutionError& e) {
    std::string message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kUserFunction);
    EXPECT_NE(message.find("'failing job'"), std::string::npos) << message;
    EXPECT_NE(message.find("operator 'fragile'"), std::string::npos) << message;
    EXPECT_NE(message.find("/3)"), std::string::npos) << message;
    EXPECT_NE(message.find("bad record 4242"), std::string::npos) << message;
  }
}

TEST(JobFailure, ExceptionsInOpenCloseSourcesAndSinksFailTheJobToo) {
  struct BadOpen : RichMapFunction<int, int> {
    void open() override { throw std::runtime_error("cannot open"); }
    int map(const int& v) override { return v; }
  };
  StreamExecutionEnvironment env;
  env.fromElements(1, 2).map(BadOpen{}).name("opener").sinkTo(DiscardingSink<int>());
  try {
    env.execute();
    FAIL();
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 'opener' (subtask 1/1) failed: cannot open"), std::string::npos)
        << e.what();
  }

  struct BadSink : Sink<int> {
    struct Writer : SinkWriter<int> {
      void write(const int& v) override {
        if (v == 2) throw std::runtime_error("disk full");
      }
    };
    std::unique_ptr<SinkWriter<int>> createWriter(RuntimeContext&) const override { return std::make_unique<Writer>(); }
  };
  StreamExecutionEnvironment env2;
  env2.fromElements(1, 2, 3).sinkTo(BadSink{}).name("fragile sink");
  try {
    env2.execute();
    FAIL();
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("'fragile sink'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
  }

  StreamExecutionEnvironment env3;
  env3.fromSource(DataGeneratorSource(
                      [](int64_t i) -> int64_t {
                        if (i == 77) throw std::runtime_error("generator broke");
                        return i;
                      },
                      1000),
                  WatermarkStrategy<int64_t>::noWatermarks(), "gen")
      .sinkTo(DiscardingSink<int64_t>());
  try {
    env3.execute();
    FAIL();
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 'gen'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("generator broke"), std::string::npos) << e.what();
  }
}

// Every failure is a line on stderr naming the attempt, the operator and subtask, the
// cause and the restart that follows; and a cause that recurs on every attempt ends the
// job once the identical-failure limit is reached, saying why.
TEST(JobFailure, EveryFailureAndRestartIsALineOnStderr) {
  auto failures = std::make_shared<std::atomic<int>>(0);
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(5, 0ms));
  CollectSink<int> sink;
  env.fromElements(1, 2, 3)
      .uid("numbers")  // stateful operators have uids: no warning on stderr
      .map([failures](int v) {
        if (v == 2 && failures->fetch_add(1) < 2) throw std::runtime_error("flaky record 2");
        return v;
      })
      .name("flaky")
      .sinkTo(sink)
      .uid("sink");
  testing::internal::CaptureStderr();
  env.execute("flaky job");
  std::string err = testing::internal::GetCapturedStderr();
  for (int attempt : {1, 2}) {
    std::string line = "job 'flaky job' attempt " + std::to_string(attempt) +
                       " failed: operator 'flaky' (subtask 1/1) failed: flaky record 2; restarting in 0 ms (fixed-delay, "
                       "restart " + std::to_string(attempt) + ")";
    EXPECT_NE(err.find(line), std::string::npos) << err;
  }
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
  EXPECT_EQ(err.rfind("weir: ", 0), 0u) << err;
}

TEST(JobFailure, AFailureThatRecursOnEveryAttemptEndsTheJobAtTheIdenticalFailureLimit) {
  StreamExecutionEnvironment env;
  env.enableCheckpointing(50ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(1000, 0ms).stopAfterIdenticalFailures(3));
  env.fromElements(1, 2, 3)
      .uid("numbers")
      .map([](int v) -> int { throw std::runtime_error("broken " + std::to_string(v)); })
      .name("broken")
      .sinkTo(DiscardingSink<int>())
      .uid("sink");
  testing::internal::CaptureStderr();
  auto client = env.executeAsync("broken job");
  EXPECT_THROW(client.wait(), JobExecutionError);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(client.getMetrics().numRestarts, 2) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3) << err;
  EXPECT_NE(err.find("attempt 3 failed: operator 'broken' (subtask 1/1) failed: broken 1; not restarting: it failed 3 "
                     "times in a row with the same cause"),
            std::string::npos)
      << err;
}

TEST(JobFailure, CancelStopsAnUnboundedJobWithinASecond) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.fromSource(unboundedGenerator(), WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .keyBy([](int64_t v) { return v % 1000; })
      .sum()
      .sinkTo(DiscardingSink<int64_t>());
  auto client = env.executeAsync("endless");
  // Wait until records flow, without sleeping a fixed time.
  while (client.getMetrics().vertices.back().numRecordsIn < 100000) std::this_thread::yield();
  EXPECT_EQ(client.getJobStatus(), JobStatus::RUNNING);
  auto start = std::chrono::steady_clock::now();
  client.cancel();
  auto result = client.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(result.status, JobStatus::CANCELED);
  EXPECT_EQ(client.getJobStatus(), JobStatus::CANCELED);
}

TEST(JobFailure, CancelWakesARateLimitedSourceAndABlockedProducer) {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  struct Blocking : Sink<int64_t> {
    Blocking(std::mutex* mu, std::condition_variable* c, bool* r) : m(mu), cv(c), release(r) {}
    std::mutex* m;
    std::condition_variable* cv;
    bool* release;
    struct Writer : SinkWriter<int64_t> {
      Blocking* owner;
      void write(const int64_t&) override {
        std::unique_lock lock(*owner->m);
        owner->cv->wait(lock, [&] { return *owner->release; });
      }
    };
    std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext&) const override {
      auto w = std::make_unique<Writer>();
      w->owner = const_cast<Blocking*>(this);
      return w;
    }
  };
  StreamExecutionEnvironment env;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(1)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "slow")
      .sinkTo(DiscardingSink<int64_t>());
  env.fromSource(unboundedGenerator(), WatermarkStrategy<int64_t>::noWatermarks(), "fast")
      .rebalance()
      .sinkTo(Blocking(&mutex, &cv, &release))
      .setParallelism(1);
  auto client = env.executeAsync();
  while (client.getMetrics().vertices[1].backPressuredTimeNanos == 0) std::this_thread::yield();
  auto start = std::chrono::steady_clock::now();
  client.cancel();
  {
    std::lock_guard lock(mutex);  // the sink's own write is the user's to unblock
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(client.wait().status, JobStatus::CANCELED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// A sink that writes only as many records as the test allows.
struct GatedSink : Sink<int64_t> {
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    int64_t allowed = 0;
    int64_t written = 0;
  };
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  struct Writer : SinkWriter<int64_t> {
    std::shared_ptr<Gate> gate;
    void write(const int64_t&) override {
      std::unique_lock lock(gate->mutex);
      gate->cv.wait(lock, [&] { return gate->written < gate->allowed; });
      ++gate->written;
      gate->cv.notify_all();
    }
  };
  std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext&) const override {
    auto w = std::make_unique<Writer>();
    w->gate = gate;
    return w;
  }
};

TEST(JobFailure, ASlowSinkThrottlesTheSourceAndBoundsBufferedRecords) {
  const int credits = 3;
  StreamExecutionEnvironment env;
  env.setBuffersPerChannel(credits);
  GatedSink sink;
  auto gate = sink.gate;
  env.fromSource(unboundedGenerator(), WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .map([](int64_t v) { return v; })
      .disableChaining()
      .sinkTo(sink);
  auto client = env.executeAsync("backpressure");

  for (int64_t step = 1; step <= 5; ++step) {
    {
      std::unique_lock lock(gate->mutex);
      gate->allowed = step * 5000;
      gate->cv.notify_all();
      gate->cv.wait(lock, [&] { return gate->written == gate->allowed; });
    }
    // Wait until the producers stall on credit: the source cannot run ahead.
    while (true) {
      auto before = client.getMetrics();
      std::this_thread::sleep_for(20ms);  // a window to see that nothing moves any more
      auto after = client.getMetrics();
      if (after.vertices[0].numSourceRecords == before.vertices[0].numSourceRecords) break;
    }
    auto m = client.getMetrics();
    // Records that can be in flight: per channel, the credited buffers plus the buffer a
    // consumer holds while processing, times two channels; plus, in each producer, one
    // batch inside its chain and a partly filled buffer its writer holds (no credit to
    // send it).
    const uint64_t perChannel = (credits + 1) * detail::kBatchSize;
    const uint64_t bound = static_cast<uint64_t>(gate->allowed) + 2 * perChannel + 2 * 2 * detail::kBatchSize;
    EXPECT_LE(m.vertices[0].numSourceRecords, bound) << "step " << step;
    for (auto& v : m.vertices) {
      EXPECT_LE(v.maxBuffersInFlight, credits) << v.name;
    }
    EXPECT_GT(m.vertices[0].backPressuredTimeNanos, 0);
  }
  client.cancel();
  {
    std::lock_guard lock(gate->mutex);
    gate->allowed = INT64_MAX;
  }
  gate->cv.notify_all();
  client.wait();
}

TEST(JobFailure, BadConfigurationIsRejectedWithAClearError) {
  StreamExecutionEnvironment env;
  EXPECT_THROW(env.setParallelism(0), Error);
  EXPECT_THROW(env.setParallelism(-3), Error);
  EXPECT_THROW(env.setMaxParallelism(0), Error);
  EXPECT_THROW(env.setMaxParallelism(32769), Error);
  EXPECT_THROW(env.setBufferTimeout(std::chrono::milliseconds(-2)), Error);
  env.setMaxParallelism(4);
  env.setParallelism(5);
  env.fromElements(1).sinkTo(DiscardingSink<int>());
  try {
    env.execute();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("maxParallelism (4)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

struct Counted : RichMapFunction<int, int> {
  static inline std::atomic<int> opens{0};
  static inline std::atomic<int> closes{0};
  bool throwInOpen = false;
  bool throwInClose = false;
  void open() override {
    ++opens;
    if (throwInOpen) throw std::runtime_error("open failed");
  }
  void close() override {
    ++closes;
    if (throwInClose) throw std::runtime_error("close failed");
  }
  int map(const int& v) override { return v; }
};

TEST(JobFailure, EveryOpenedFunctionIsClosedExactlyOnceEvenWhenOpenOrCloseThrows) {
  {
    Counted::opens = Counted::closes = 0;
    StreamExecutionEnvironment env;
    Counted bad;
    bad.throwInClose = true;
    env.fromElements(1, 2).map(Counted{}).map(bad).name("closer").map(Counted{}).sinkTo(DiscardingSink<int>());
    try {
      env.execute();
      FAIL();
    } catch (const JobExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find("close failed"), std::string::npos) << e.what();
    }
    EXPECT_EQ(Counted::opens.load(), 3);
    EXPECT_EQ(Counted::closes.load(), 3);
  }
  {
    Counted::opens = Counted::closes = 0;
    StreamExecutionEnvironment env;
    Counted bad;
    bad.throwInOpen = true;
    env.fromElements(1, 2).map(Counted{}).map(bad).map(Counted{}).sinkTo(DiscardingSink<int>());
    EXPECT_THROW(env.execute(), JobExecutionError);
    // Opened tail first: the last map and the failing one were opened, the first was not.
    EXPECT_EQ(Counted::opens.load(), 2);
    EXPECT_EQ(Counted::closes.load(), 2);
  }
}

TEST(JobFailure, OneSideOutputIdCannotCarryTwoTypes) {
  OutputTag<int> ints("weir-test-clash");
  EXPECT_THROW(OutputTag<std::string>("weir-test-clash"), Error);
  OutputTag<int> same("weir-test-clash");
  EXPECT_EQ(same.index(), ints.index());
}

TEST(JobFailure, CancelAfterTheJobFinishedChangesNothing) {
  StreamExecutionEnvironment env;
  CollectSink<int> sink;
  env.fromElements(1, 2, 3).sinkTo(sink);
  auto client = env.executeAsync();
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  client.cancel();
  EXPECT_EQ(client.getJobStatus(), JobStatus::FINISHED);
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  EXPECT_EQ(sink.getResults().size(), 3u);
}

TEST(JobFailure, SeveralThreadsMayWaitForTheSameJob) {
  StreamExecutionEnvironment env;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 2'000'000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .rebalance()
      .sinkTo(DiscardingSink<int64_t>());
  auto client = env.executeAsync();
  JobClient copy = client;
  auto other = std::async(std::launch::async, [copy]() mutable { return copy.wait().status; });
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  EXPECT_EQ(other.get(), JobStatus::FINISHED);
}

}  // namespace
}  // namespace weir
