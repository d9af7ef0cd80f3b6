// The demo job `make run` runs: a generated click stream, keyed by user, with a rolling
// count per user kept in keyed state; at the end it prints the users with the most clicks.
//
//   weir run clicks                          # 20 million clicks, parallelism 2
//   weir run clicks --events 1000000 --users 5000 --top 5 -p 1
//   weir run clicks --rate 100000            # at most 100,000 clicks per second
//   weir run clicks --events 1000000 --state-backend rocksdb
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

#include "cli/examples.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

struct Click {
  int64_t user = 0;
  int32_t page = 0;
  int64_t timestamp = 0;
};
WEIR_STRUCT(Click, user, page, timestamp);

// A well-mixed 64-bit value for sequence number i, so the stream looks random but is the
// same in every run.
uint64_t mix(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Click i: a few users click much more than the rest (user id ~ users * u^3).
struct ClickGenerator {
  int64_t users;
  Click operator()(int64_t i) const {
    uint64_t r = mix(static_cast<uint64_t>(i));
    double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    auto user = static_cast<int64_t>(static_cast<double>(users) * u * u * u);
    return Click{user, static_cast<int32_t>(r % 1000), 1'700'000'000'000 + i};
  }
};

using UserCount = std::pair<int64_t, int64_t>;

// Counts each user's clicks in a ValueState and emits the new count with every click.
class ClicksPerUser : public KeyedProcessFunction<int64_t, Click, UserCount> {
 public:
  void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("clicks", 0)); }
  void processElement(const Click& click, Context&, Collector<UserCount>& out) override {
    int64_t count = *count_->value() + 1;
    count_->update(count);
    out.collect({click.user, count});
  }

 private:
  ValueState<int64_t>* count_ = nullptr;
};

// Keeps the latest count of every user, and how many counts it received; the writers of
// all subtasks merge at the end. Both are operator state, so a restart or a resumed run
// goes on from the last checkpoint, as the counts in keyed state do.
// Each subtask publishes its latest counts when its input ends, or when the job stops
// with a savepoint: then the savepoint it was told completed covers every count it
// received. A subtask's publication replaces its earlier one (a restarted attempt's
// subtask publishes again), so the totals count every click once.
class LatestCountSink : public Sink<UserCount> {
 public:
  std::unique_ptr<SinkWriter<UserCount>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(shared_, context.getIndexOfThisSubtask());
  }
  std::vector<UserCount> counts() const {
    std::lock_guard lock(shared_->mutex);
    return {shared_->latest.begin(), shared_->latest.end()};
  }
  // Every count the sink received, over all its runs: one per click.
  int64_t received() const {
    std::lock_guard lock(shared_->mutex);
    int64_t total = 0;
    for (const auto& [subtask, n] : shared_->received) total += n;
    return total;
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::unordered_map<int64_t, int64_t> latest;  // guarded by mutex
    std::map<int, int64_t> received;              // guarded by mutex; by subtask
  };
  struct Writer : SinkWriter<UserCount>, CheckpointedFunction, CheckpointListener {
    Writer(std::shared_ptr<Shared> s, int subtask) : shared(std::move(s)), subtask(subtask) {}
    void initializeState(FunctionInitializationContext& context) override {
      auto& store = context.getOperatorStateStore();
      latestState = &store.getListState(ListStateDescriptor<UserCount>("latest counts"));
      receivedState = &store.getListState(ListStateDescriptor<int64_t>("received"));
      // After a rescale a user's counts may come from several old writers: the highest
      // is the latest, as counts only grow.
      for (const auto& [user, count] : latestState->get()) latest[user] = std::max(latest[user], count);
      for (int64_t n : receivedState->get()) received += n;
    }
    void snapshotState(const FunctionSnapshotContext& context) override {
      latestState->update({latest.begin(), latest.end()});
      receivedState->update({received});
      snapshotId = context.getCheckpointId();
      writtenSinceSnapshot = false;
    }
    void notifyCheckpointComplete(int64_t id) override { covered = id == snapshotId && !writtenSinceSnapshot; }
    void write(const UserCount& c) override {
      latest[c.first] = c.second;
      ++received;
      writtenSinceSnapshot = true;
      covered = false;
    }
    void flush(bool endOfInput) override {
      if (endOfInput) publish();
    }
    // Stopped with a savepoint: the last thing it heard is that the savepoint holding
    // everything it wrote completed.
    void close() override {
      if (covered) publish();
    }
    void publish() {
      std::lock_guard lock(shared->mutex);
      for (auto& [user, count] : latest) shared->latest[user] = std::max(shared->latest[user], count);
      shared->received[subtask] = received;
    }
    std::shared_ptr<Shared> shared;
    int subtask;
    std::unordered_map<int64_t, int64_t> latest;
    int64_t received = 0;
    int64_t snapshotId = 0;
    bool writtenSinceSnapshot = false;
    bool covered = false;  // the newest completed checkpoint holds every count written
    ListState<UserCount>* latestState = nullptr;
    ListState<int64_t>* receivedState = nullptr;
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

struct ClickOptions {
  int64_t events = 20'000'000;
  int64_t users = 100'000;
  int top = 10;
  double rate = 0;
};

int runClickCount(const JobOptions& options, const ClickOptions& clicks) {
  if (clicks.events <= 0) throw Error(ErrorCode::kInvalidArgument, "--events must be positive, got " + std::to_string(clicks.events));
  if (clicks.users <= 0) throw Error(ErrorCode::kInvalidArgument, "--users must be positive, got " + std::to_string(clicks.users));
  if (clicks.top <= 0) throw Error(ErrorCode::kInvalidArgument, "--top must be positive, got " + std::to_string(clicks.top));
  if (!(clicks.rate >= 0))
    throw Error(ErrorCode::kInvalidArgument, "--rate must not be negative, got " + std::to_string(clicks.rate));

  StreamExecutionEnvironment env;
  env.setParallelism(2);
  options.applyTo(env);

  auto limiter = clicks.rate > 0 ? RateLimiterStrategy::perSecond(clicks.rate) : RateLimiterStrategy::noOp();
  LatestCountSink sink;
  env.fromSource(DataGeneratorSource(ClickGenerator{clicks.users}, clicks.events, limiter),
                 WatermarkStrategy<Click>::noWatermarks(), "clicks")
      .uid("clicks")
      .keyBy([](const Click& c) { return c.user; })
      .process(ClicksPerUser{})
      .name("count per user")
      .uid("count-per-user")
      .sinkTo(sink)
      .name("latest counts")
      .uid("latest-counts");

  std::printf("clicks: %s events from up to %s users, parallelism %d\n", withThousands(static_cast<uint64_t>(clicks.events)).c_str(),
              withThousands(static_cast<uint64_t>(clicks.users)).c_str(), env.getParallelism());
  std::fflush(stdout);
  auto client = env.executeAsync("click count");
  cancelOnInterrupt(client);
  if (!client.getWebInterfaceURL().empty()) std::printf("Web UI: %s\n", client.getWebInterfaceURL().c_str());
  std::fflush(stdout);
  JobExecutionResult result;
  {
    ProgressLine progress(client, "events");
    result = client.wait();
  }

  if (result.status == JobStatus::CANCELED) {
    std::printf("cancelled after %.2f s\n", static_cast<double>(result.getNetRuntime()) / 1000.0);
    return 130;
  }

  auto counts = sink.counts();
  int64_t total = 0;
  for (auto& [user, count] : counts) total += count;
  size_t top = std::min(counts.size(), static_cast<size_t>(clicks.top));
  std::partial_sort(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(top), counts.end(),
                    [](const UserCount& a, const UserCount& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  double seconds = static_cast<double>(result.getNetRuntime()) / 1000.0;
  std::printf("counted %s events from %s users in %.2f s (%s events/s)\n", withThousands(static_cast<uint64_t>(total)).c_str(),
              withThousands(counts.size()).c_str(), seconds,
              humanRate(seconds > 0 ? static_cast<double>(total) / seconds : 0).c_str());
  std::printf("top %zu users:\n", top);
  for (size_t i = 0; i < top; ++i)
    std::printf("  %2zu. user %-8lld %s clicks\n", i + 1, static_cast<long long>(counts[i].first),
                withThousands(static_cast<uint64_t>(counts[i].second)).c_str());
  // Every click must be counted exactly once, also across restarts and resumed runs: each
  // click updates one user's count, so the latest counts add up to the counts the sink
  // received. Within one run without restarts the source's own count must match too, and
  // a run that was not stopped early generated every event.
  const int64_t received = sink.received();
  if (total != received) {
    std::fprintf(stderr, "weir: the latest counts add up to %lld events, but the sink received %lld counts\n",
                 static_cast<long long>(total), static_cast<long long>(received));
    return 1;
  }
  const JobMetrics metrics = client.getMetrics();
  uint64_t generated = 0;
  for (auto& v : metrics.vertices) generated += v.numSourceRecords;
  if (metrics.numRestarts == 0 && !options.restores() && static_cast<uint64_t>(total) != generated) {
    std::fprintf(stderr, "weir: counted %lld events, but the source generated %llu\n", static_cast<long long>(total),
                 static_cast<unsigned long long>(generated));
    return 1;
  }
  if (total > clicks.events) {
    std::fprintf(stderr, "weir: counted %lld events, but the source generates %lld\n", static_cast<long long>(total),
                 static_cast<long long>(clicks.events));
    return 1;
  }
  return 0;
}

}  // namespace

Example clickCountExample() {
  return {"clicks", "The demo: count clicks per user in a generated stream and print the top users",
          [](JobOptions& app) {
            auto clicks = std::make_shared<ClickOptions>();
            app.addOption("--events", clicks->events, "Number of clicks to generate (default 20,000,000)");
            app.addOption("-u,--users", clicks->users, "Number of distinct users (default 100,000)");
            app.addOption("-t,--top", clicks->top, "How many top users to print (default 10)");
            app.addOption("-r,--rate", clicks->rate, "Clicks per second at most, over all subtasks (default: no limit)");
            return [clicks](const JobOptions& options) { return runClickCount(options, *clicks); };
          }};
}

}  // namespace weir::cli
