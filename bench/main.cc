// weir_bench: the engine against the same computation written as a plain loop.
//
//   weir_bench [--only chain,keyed_sum,channel] [--runs 5]
//
// Every engine figure is printed beside its baseline, measured in the same run, with
// ratio = baseline records/s ÷ engine records/s (above 1: the engine is slower).
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <httplib.h>

#include <atomic>

#include "harness.h"
#include "checkpoint_bench.h"
#include "format_bench.h"
#include "kafka_bench.h"
#include "sink_bench.h"
#include "nexmark/driver.h"
#include "postgres_bench.h"
#include "redis_bench.h"
#include "state_bench.h"
#include "weir/detail/runtime/channel.h"
#include "weir/weir.h"

namespace weir::bench {
namespace {

int gRuns = 5;

// The work of the chain benchmark, shared by the engine job and the baseline loop.
inline int64_t generate(int64_t i) { return i * 2654435761 % 1000003; }
inline int64_t transform(int64_t v) { return v * 3 + 1; }
inline bool keep(int64_t v) { return v % 5 != 0; }

void chain() {
  const int64_t n = 50'000'000;
  auto [engine, baseline] = medianSecondsInterleaved(gRuns, [&] {
    StreamExecutionEnvironment env;
    env.setParallelism(1);
    env.fromSource(DataGeneratorSource([](int64_t i) { return generate(i); }, n),
                   WatermarkStrategy<int64_t>::noWatermarks(), "gen")
        .map([](int64_t v) { return transform(v); })
        .filter([](const int64_t& v) { return keep(v); })
        .sinkTo(DiscardingSink<int64_t>());
    env.execute("chain");
  }, [&] {
    int64_t checksum = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = transform(generate(i));
      if (keep(v)) checksum += v;
    }
    doNotOptimize(checksum);
  });
  double e = static_cast<double>(n) / engine, b = static_cast<double>(n) / baseline;
  printFigure("chain", {{"parallelism", 1}, {"records", static_cast<double>(n)}, {"records_per_s", e},
                        {"baseline_records_per_s", b}, {"ratio", b / e}});
}

// keyed_sum's job: `n` records over `keys` keys -> keyBy -> rolling sum -> discarding sink.
void addKeyedSum(StreamExecutionEnvironment& env, int64_t n, int64_t keys) {
  env.fromSource(DataGeneratorSource([keys](int64_t i) { return keyedRecord(i, keys); }, n),
                 WatermarkStrategy<KeyedRecord>::noWatermarks(), "gen")
      .keyBy([](const KeyedRecord& r) { return r.first; })
      .sum<1>()
      .sinkTo(DiscardingSink<KeyedRecord>());
}

void keyedSum() {
  const int64_t n = 20'000'000, keys = 100'000;
  auto baseline = [&] {
    std::unordered_map<int64_t, KeyedRecord> sums;
    int64_t checksum = 0;
    for (int64_t i = 0; i < n; ++i) {
      KeyedRecord r = keyedRecord(i, keys);
      auto [it, inserted] = sums.try_emplace(r.first, r);
      if (!inserted) it->second.second += r.second;
      checksum += it->second.second;
    }
    doNotOptimize(checksum);
  };
  for (int p : {1, 2}) {
    auto [engine, base] = medianSecondsInterleaved(gRuns, [&] {
      StreamExecutionEnvironment env;
      env.setParallelism(p);
      addKeyedSum(env, n, keys);
      env.execute("keyed_sum");
    }, baseline);
    double e = static_cast<double>(n) / engine, b = static_cast<double>(n) / base;
    printFigure("keyed_sum", {{"parallelism", p}, {"records", static_cast<double>(n)}, {"keys", static_cast<double>(keys)},
                              {"records_per_s", e}, {"baseline_records_per_s", b}, {"ratio", b / e}});
  }
}

// A bounded rolling sum per key run as a batch job (its input sorted by key within the
// default 128 MiB budget, final values only) beside the same job in STREAMING, and in
// BATCH with its keyBy pipelined rather than blocking (ALL_EXCHANGES_PIPELINED), each
// run in a child process, in turn; batch_sum's ratio = batch ÷ streaming records/s,
// batch_shuffle's = blocking ÷ pipelined; and each one's peak RSS (docs/batch.md).
void batchSum() {
  for (const auto& [backend, n, keys] : {std::tuple{"heap", int64_t{50'000'000}, int64_t{1'000'000}},
                                         std::tuple{"rocksdb", int64_t{2'000'000}, int64_t{1'000'000}}}) {
    auto run = [&](RuntimeExecutionMode mode, BatchShuffleMode shuffle) {
      StreamExecutionEnvironment env;
      env.setRuntimeMode(mode).setBatchShuffleMode(shuffle).setStateBackend(stateBackendFromName(backend));
      addKeyedSum(env, n, keys);
      env.execute("batch_sum");
    };
    enum { kBatch, kStreaming, kPipelined };
    std::vector<double> seconds[3], rss[3];
    for (int r = 0; r < gRuns; ++r) {
      for (int m : {kBatch, kStreaming, kPipelined}) {
        auto [s, peak] = secondsAndPeakRssInChild([&] {
          run(m == kStreaming ? RuntimeExecutionMode::STREAMING : RuntimeExecutionMode::BATCH,
              m == kPipelined ? BatchShuffleMode::ALL_EXCHANGES_PIPELINED : BatchShuffleMode::ALL_EXCHANGES_BLOCKING);
        });
        seconds[m].push_back(s), rss[m].push_back(peak);
      }
    }
    for (int m : {kBatch, kStreaming, kPipelined}) {
      std::sort(seconds[m].begin(), seconds[m].end());
      std::sort(rss[m].begin(), rss[m].end());
    }
    const size_t mid = seconds[kBatch].size() / 2;
    auto rate = [&](int m) { return static_cast<double>(n) / seconds[m][mid]; };
    printFigure("batch_sum", {{"backend", backend}},
                {{"parallelism", 1}, {"records", static_cast<double>(n)}, {"keys", static_cast<double>(keys)},
                 {"records_per_s", rate(kBatch)}, {"baseline_records_per_s", rate(kStreaming)},
                 {"ratio", rate(kBatch) / rate(kStreaming)}, {"sort_budget_bytes", 128.0 * (1 << 20)},
                 {"peak_rss_bytes", rss[kBatch][mid]}, {"baseline_peak_rss_bytes", rss[kStreaming][mid]}});
    printFigure("batch_shuffle", {{"backend", backend}},
                {{"parallelism", 1}, {"records", static_cast<double>(n)}, {"records_per_s", rate(kBatch)},
                 {"baseline_records_per_s", rate(kPipelined)}, {"ratio", rate(kBatch) / rate(kPipelined)},
                 {"shuffle_memory_bytes", 64.0 * (1 << 20)}, {"peak_rss_bytes", rss[kBatch][mid]},
                 {"baseline_peak_rss_bytes", rss[kPipelined][mid]}});
  }
}

// Moves `n` records of type T through one channel from a producer to a consumer thread.
template <class T, class Make>
double channelSeconds(int64_t n, Make make) {
  return medianSeconds(gRuns, [&] {
    detail::TaskSignal signal;
    detail::TaskMetrics metrics;
    detail::Channel<T> channel(4, &signal);
    std::thread producer([&] {
      std::vector<T> buffer;
      buffer.reserve(detail::kBatchSize);
      for (int64_t i = 0; i < n; ++i) {
        buffer.push_back(make(i));
        if (buffer.size() == detail::kBatchSize) {
          buffer = std::move(channel.send(std::move(buffer), {}, metrics)->records);
          if (buffer.capacity() == 0) buffer.reserve(detail::kBatchSize);
        }
      }
      if (!buffer.empty()) channel.send(std::move(buffer), {}, metrics);
      channel.sendEvent(detail::EventKind::kEndOfPartition);
    });
    typename detail::Channel<T>::Message m;
    int64_t received = 0;
    while (true) {
      if (!channel.poll(m)) {
        signal.wait();
        continue;
      }
      if (m.isEvent) break;
      received += static_cast<int64_t>(m.records.size());
      channel.recycle(m);
    }
    producer.join();
    doNotOptimize(received);
  });
}

void channel() {
  const int64_t n = 50'000'000;
  double s = channelSeconds<int64_t>(n, [](int64_t i) { return i; });
  printFigure("channel", {{"record_bytes", 8}, {"records", static_cast<double>(n)},
                          {"records_per_s", static_cast<double>(n) / s},
                          {"bytes_per_s", 8.0 * static_cast<double>(n) / s}});
  const int64_t m = 5'000'000;
  const std::string payload(100, 'x');
  double t = channelSeconds<std::string>(m, [&](int64_t) { return payload; });
  printFigure("channel", {{"record_bytes", 100}, {"records", static_cast<double>(m)},
                          {"records_per_s", static_cast<double>(m) / t},
                          {"bytes_per_s", 100.0 * static_cast<double>(m) / t}});
}

// Count per key in 1-second tumbling event-time windows. Event i has key mix(i) % keys and
// time i / rate (rate events per ms, so time only grows); watermarks are bounded
// out-of-orderness 0. The baseline keeps a count per (key, window) and, when time passes
// a window's end, folds the finished windows into a checksum, as the engine emits them.
struct TimedEvent {
  int64_t key;
  int64_t time;
};

// n generated events as (key, 1) pairs keyed by key, with the events' timestamps.
template <class Event>
auto keyedCounts(StreamExecutionEnvironment& env, Event event, int64_t n) {
  return env
      .fromSource(DataGeneratorSource(event, n),
                  WatermarkStrategy<TimedEvent>::forMonotonousTimestamps().withTimestampAssigner(
                      [](const TimedEvent& e) { return e.time; }),
                  "events")
      .map([](const TimedEvent& e) { return std::pair<int64_t, int64_t>{e.key, 1}; })
      .keyBy([](const std::pair<int64_t, int64_t>& c) { return c.first; });
}

// The engine's side of tumbling_count and session_count: count per key in the windows
// `assigner` makes, over n generated events.
// With a `trigger`, the windows take the general window operator.
template <class Event, class Assigner, class Trigger = std::nullptr_t>
void countPerWindow(int parallelism, Event event, int64_t n, Assigner assigner, const char* name,
                    Trigger trigger = nullptr) {
  using Count = std::pair<int64_t, int64_t>;
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  auto windowed = keyedCounts(env, event, n).window(assigner);
  auto add = [](const Count& a, const Count& b) { return Count{a.first, a.second + b.second}; };
  if constexpr (std::is_same_v<Trigger, std::nullptr_t>) windowed.reduce(add).sinkTo(DiscardingSink<Count>());
  else windowed.trigger(trigger).reduce(add).sinkTo(DiscardingSink<Count>());
  env.execute(name);
}

void tumblingCount() {
  const int64_t n = 20'000'000;
  const int64_t perMs = 2000;  // 2 M events per second of event time: 10 s of windows
  for (int64_t keys : {int64_t{1000}, int64_t{1'000'000}}) {
    auto event = [keys](int64_t i) {
      return TimedEvent{static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % static_cast<uint64_t>(keys)), i / perMs};
    };
    auto baseline = [&] {
      std::unordered_map<int64_t, int64_t> counts;  // of the current window; time only grows
      int64_t window = 0, checksum = 0;
      for (int64_t i = 0; i < n; ++i) {
        TimedEvent e = event(i);
        int64_t w = e.time - e.time % 1000;
        if (w != window) {
          for (auto& [k, c] : counts) checksum += k ^ c;
          counts.clear();
          window = w;
        }
        ++counts[e.key];
      }
      for (auto& [k, c] : counts) checksum += k ^ c;
      doNotOptimize(checksum);
    };
    for (int p : {1, 2}) {
      auto [engine, base] = medianSecondsInterleaved(
          gRuns, [&] { countPerWindow(p, event, n, TumblingEventTimeWindows::of(std::chrono::seconds(1)), "tumbling_count"); },
          baseline);
      double e = static_cast<double>(n) / engine, b = static_cast<double>(n) / base;
      printFigure("tumbling_count", {{"parallelism", p}, {"keys", static_cast<double>(keys)},
                                     {"records", static_cast<double>(n)}, {"records_per_s", e},
                                     {"baseline_records_per_s", b}, {"ratio", b / e}});
    }
  }
}

// tumbling_count's job (1,000 keys, p = 1) through the general window operator (an
// explicit EventTimeTrigger: window contents, trigger and timers in keyed state) beside
// the specialised one, measured alternately; and countWindow(100) (GlobalWindows with a
// purging CountTrigger) on the same stream. ratio = specialised ÷ triggered records/s.
void triggeredCount() {
  using Count = std::pair<int64_t, int64_t>;
  const int64_t n = 10'000'000, perMs = 2000, keys = 1000;
  auto event = [](int64_t i) {
    return TimedEvent{static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % keys), i / perMs};
  };
  enum Kind { kSpecialised, kTriggered, kCountWindow };
  auto job = [&](Kind kind) {
    StreamExecutionEnvironment env;
    auto keyed = keyedCounts(env, event, n);
    auto add = [](const Count& a, const Count& b) { return Count{a.first, a.second + b.second}; };
    auto tumbling = TumblingEventTimeWindows::of(std::chrono::seconds(1));
    if (kind == kSpecialised) keyed.window(tumbling).reduce(add).sinkTo(DiscardingSink<Count>());
    else if (kind == kTriggered)
      keyed.window(tumbling).trigger(EventTimeTrigger::create()).reduce(add).sinkTo(DiscardingSink<Count>());
    else keyed.countWindow(100).reduce(add).sinkTo(DiscardingSink<Count>());
    env.execute("triggered_count");
  };
  auto [triggered, specialised] = medianSecondsInterleaved(gRuns, [&] { job(kTriggered); }, [&] { job(kSpecialised); });
  double counted = medianSecondsInterleaved(gRuns, [&] { job(kCountWindow); }, [] {}).first;
  double records = static_cast<double>(n);
  printFigure("triggered_count", {{"parallelism", 1}, {"keys", static_cast<double>(keys)}, {"records", records},
                                  {"records_per_s", records / triggered},
                                  {"specialised_records_per_s", records / specialised},
                                  {"count_window_records_per_s", records / counted},
                                  {"ratio", triggered / specialised}});
}

// tumbling_count's job (p = 1, 2 M events; 1,000 and 1,000,000 keys) with the window
// contents in RocksDB (a ValueState read and written per record) beside the same job on
// the heap, measured alternately; 10 s windows sliding by 1 s (1,000 keys), whose panes
// RocksDB keeps likewise; and sessions with a 100 ms gap (1,000 keys, each key's records
// about 0.5 ms apart: one growing session per key), whose windows and contents RocksDB
// keeps. ratio = heap ÷ RocksDB records/s.
void windowRocksDB() {
  using Count = std::pair<int64_t, int64_t>;
  const int64_t n = 2'000'000, perMs = 2000;
  for (auto [keys, windows] : {std::pair<int64_t, const char*>{1000, "tumbling"}, {1'000'000, "tumbling"},
                               {1000, "sliding"}, {1000, "sessions"}}) {
    auto event = [keys](int64_t i) {
      return TimedEvent{static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % static_cast<uint64_t>(keys)), i / perMs};
    };
    const std::string kind = windows;
    auto job = [&](const char* backend) {
      StreamExecutionEnvironment env;
      env.setStateBackend(stateBackendFromName(backend));
      auto keyed = keyedCounts(env, event, n);
      auto add = [](const Count& a, const Count& b) { return Count{a.first, a.second + b.second}; };
      if (kind == "sliding")
        keyed.window(SlidingEventTimeWindows::of(std::chrono::seconds(10), std::chrono::seconds(1)))
            .reduce(add)
            .sinkTo(DiscardingSink<Count>());
      else if (kind == "sessions")
        keyed.window(EventTimeSessionWindows::withGap(std::chrono::milliseconds(100))).reduce(add).sinkTo(DiscardingSink<Count>());
      else keyed.window(TumblingEventTimeWindows::of(std::chrono::seconds(1))).reduce(add).sinkTo(DiscardingSink<Count>());
      env.execute("window_rocksdb");
    };
    auto [rocksdb, heap] = medianSecondsInterleaved(gRuns, [&] { job("rocksdb"); }, [&] { job("heap"); });
    double records = static_cast<double>(n);
    printFigure("window_rocksdb", {{"windows", kind}},
                {{"parallelism", 1}, {"keys", static_cast<double>(keys)}, {"records", records},
                 {"records_per_s", records / rocksdb}, {"heap_records_per_s", records / heap},
                 {"ratio", rocksdb / heap}});
  }
}

// Sum per key in sliding windows of 10 s every 1 s with an AggregateFunction, beside
// tumbling_count's job at the same key count, measured alternately; the target is a
// sliding throughput within 2x of the tumbling one (ratio = tumbling / sliding).
struct SumValues : AggregateFunction<std::pair<int64_t, int64_t>, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const std::pair<int64_t, int64_t>& v, int64_t acc) override { return acc + v.second; }
  int64_t getResult(const int64_t& acc) override { return acc; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};

void slidingSum() {
  const int64_t n = 20'000'000, perMs = 2000, keys = 1000;
  auto event = [](int64_t i) {
    return TimedEvent{static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % keys), i / perMs};
  };
  auto job = [&](bool sliding) {
    StreamExecutionEnvironment env;
    auto keyed = env.fromSource(DataGeneratorSource(event, n),
                                WatermarkStrategy<TimedEvent>::forMonotonousTimestamps().withTimestampAssigner(
                                    [](const TimedEvent& e) { return e.time; }),
                                "events")
                     .map([](const TimedEvent& e) { return std::pair<int64_t, int64_t>{e.key, 1}; })
                     .keyBy([](const std::pair<int64_t, int64_t>& c) { return c.first; });
    if (sliding) {
      keyed.window(SlidingEventTimeWindows::of(std::chrono::seconds(10), std::chrono::seconds(1)))
          .aggregate(SumValues{})
          .sinkTo(DiscardingSink<int64_t>());
    } else {
      keyed.window(TumblingEventTimeWindows::of(std::chrono::seconds(1)))
          .aggregate(SumValues{})
          .sinkTo(DiscardingSink<int64_t>());
    }
    env.execute("sliding_sum");
  };
  auto [sliding, tumbling] = medianSecondsInterleaved(gRuns, [&] { job(true); }, [&] { job(false); });
  printFigure("sliding_sum", {{"parallelism", 1}, {"keys", static_cast<double>(keys)}, {"records", static_cast<double>(n)},
                              {"records_per_s", static_cast<double>(n) / sliding},
                              {"tumbling_records_per_s", static_cast<double>(n) / tumbling},
                              {"ratio", sliding / tumbling}});
}

// Count per key in event-time sessions with a 10 s gap, 10,000 keys. Keys take turns:
// even keys have records in even 20-second periods, odd keys in odd ones, so every key
// has a session per active period that closes 10 s after it. The baseline keeps each
// key's open session and folds a closed one into a checksum, as the engine emits it.
void sessionCount() {
  const int64_t n = 20'000'000, perMs = 200, keys = 10'000, gapMs = 10'000, periodMs = 20'000;
  auto event = [](int64_t i) {
    int64_t time = i / perMs;
    int64_t half = static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % (keys / 2));
    return TimedEvent{half * 2 + (time / periodMs) % 2, time};
  };
  auto baseline = [&] {
    struct Open {
      int64_t end = -1;
      int64_t count = 0;
    };
    std::unordered_map<int64_t, Open> open;  // as tumbling_count's baseline keeps its counts
    int64_t checksum = 0, sessions = 0;
    for (int64_t i = 0; i < n; ++i) {
      TimedEvent e = event(i);
      Open& o = open[e.key];
      if (e.time > o.end && o.count > 0) {  // the gap passed: the key's session closed
        checksum += e.key ^ o.count;
        ++sessions;
        o.count = 0;
      }
      o.end = std::max(o.end, e.time + gapMs);
      ++o.count;
    }
    for (auto& [k, o] : open)
      if (o.count > 0) checksum += k ^ o.count, ++sessions;
    doNotOptimize(checksum);
    doNotOptimize(sessions);
  };
  auto sessions = EventTimeSessionWindows::withGap(std::chrono::milliseconds(gapMs));
  for (int p : {1, 2}) {
    auto [engine, base] =
        medianSecondsInterleaved(gRuns, [&] { countPerWindow(p, event, n, sessions, "session_count"); }, baseline);
    double e = static_cast<double>(n) / engine, b = static_cast<double>(n) / base;
    printFigure("session_count", {{"parallelism", p}, {"keys", static_cast<double>(keys)},
                                  {"records", static_cast<double>(n)}, {"records_per_s", e},
                                  {"baseline_records_per_s", b}, {"ratio", b / e}});
  }
  // The same sessions through the general window operator (an explicit EventTimeTrigger:
  // the key's windows, contents, trigger and timers in keyed state), p = 1.
  auto [triggered, specialised] = medianSecondsInterleaved(
      gRuns, [&] { countPerWindow(1, event, n, sessions, "session_count", EventTimeTrigger::create()); },
      [&] { countPerWindow(1, event, n, sessions, "session_count"); });
  printFigure("session_count_triggered", {{"parallelism", 1}, {"keys", static_cast<double>(keys)},
                                          {"records", static_cast<double>(n)},
                                          {"records_per_s", static_cast<double>(n) / triggered},
                                          {"specialised_records_per_s", static_cast<double>(n) / specialised},
                                          {"ratio", triggered / specialised}});
}

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What the REST server costs one job: medians over `gRuns` pairs of runs, one with the
// server off and one with it on, Prometheus scraping /metrics every second (the issue's
// load) and, with `pollPage`, a client polling the job's page every 200 ms as an open Web
// UI does (the two in alternating order). Each pair's ratios compare runs a
// few seconds apart, so the drift of a shared machine's speed cancels within a pair.
// CPU time is the whole process's (the job's threads, the server's and the metrics
// sampler's), less the polling client's own, which is the browser's cost, not weir's.
struct RestOverhead {
  double secondsOff = 0, secondsOn = 0;  // medians
  double wallRatio = 0;                  // median of on ÷ off per pair
  double cpuOff = 0, cpuOn = 0;          // medians, CPU seconds
  double cpuRatio = 0;                   // median of on ÷ off per pair
};

// The server is started once (its threads are a one-time cost) and serves every run.
template <class Job>
RestOverhead withAndWithoutRest(Job job, bool pollPage = true) {
  static int port = 0;
  auto run = [&](bool rest) -> std::pair<double, double> {
    StreamExecutionEnvironment env;
    if (rest) {
      RestOptions options;
      options.enabled = true;
      options.port = port;
      env.setRestOptions(options);
    }
    job(env);
    double cpuStart = processCpuSeconds();
    auto wallStart = std::chrono::steady_clock::now();
    auto client = env.executeAsync("rest overhead");
    if (rest && port == 0) {
      std::string url = client.getWebInterfaceURL();
      port = std::stoi(url.substr(url.rfind(':') + 1));
    }
    std::atomic<bool> done{false};
    double pollerCpu = 0;
    std::thread poller;
    if (rest) {
      poller = std::thread([&] {
        double start = threadCpuSeconds();
        std::string url = client.getWebInterfaceURL();
        httplib::Client http("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
        for (int poll = 0; !done; ++poll) {
          if (pollPage) http.Get("/jobs/" + client.getJobID());
          if (poll % 5 == 0) http.Get("/metrics");
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        pollerCpu = threadCpuSeconds() - start;
      });
    }
    client.wait();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    done = true;
    if (poller.joinable()) poller.join();
    return {wall, processCpuSeconds() - cpuStart - pollerCpu};
  };
  std::vector<double> wallOff, wallOn, cpuOff, cpuOn, wallRatio, cpuRatio;
  for (int i = 0; i < gRuns; ++i) {
    std::pair<double, double> off, on;
    if (i % 2 == 0) {
      off = run(false);
      on = run(true);
    } else {
      on = run(true);
      off = run(false);
    }
    wallOff.push_back(off.first);
    wallOn.push_back(on.first);
    cpuOff.push_back(off.second);
    cpuOn.push_back(on.second);
    wallRatio.push_back(on.first / off.first);
    cpuRatio.push_back(on.second / off.second);
  }
  return {median(wallOff), median(wallOn), median(wallRatio), median(cpuOff), median(cpuOn), median(cpuRatio)};
}

// transform() with user metrics on every record.
struct MeasuredTransform : RichMapFunction<int64_t, int64_t> {
  void open() override {
    MetricGroup group = getRuntimeContext().getMetricGroup();
    records = group.counter("records");
    perSecond = group.meter("recordsPerSecond");
    values = group.histogram("lowBits");
  }
  int64_t map(const int64_t& v) override {
    records.inc();
    perSecond.markEvent();
    values.update(v & 1023);
    return transform(v);
  }
  Counter records;
  Meter perSecond;
  Histogram values;
};

void printRestOverhead(int job, int64_t records, const RestOverhead& o, const char* load = "scrape+ui") {
  auto n = static_cast<double>(records);
  printFigure("rest_overhead", {{"load", load}},
              {{"job", job},
               {"records", n},
               {"records_per_s", n / o.secondsOn},
               {"baseline_records_per_s", n / o.secondsOff},
               {"ratio", o.wallRatio},
               {"cpu_ns_per_record", o.cpuOn / n * 1e9},
               {"baseline_cpu_ns_per_record", o.cpuOff / n * 1e9},
               {"cpu_ratio", o.cpuRatio}});
}

void rest() {
  const int64_t n = 1'000'000'000;
  printRestOverhead(1, n, withAndWithoutRest([&](StreamExecutionEnvironment& env) {
    env.fromSource(DataGeneratorSource([](int64_t i) { return generate(i); }, n),
                   WatermarkStrategy<int64_t>::noWatermarks(), "gen")
        .map([](int64_t v) { return transform(v); })
        .filter([](const int64_t& v) { return keep(v); })
        .sinkTo(DiscardingSink<int64_t>());
  }));
  // As long as job 1's: what a job's end costs the server (its archive) is one-off.
  const int64_t m = 1'000'000'000, keys = 100'000;
  auto keyedSumJob = [&](StreamExecutionEnvironment& env) { addKeyedSum(env, m, keys); };
  printRestOverhead(2, m, withAndWithoutRest(keyedSumJob));
  // The load alone: its two busy threads on two cores lose a core to each
  // wake-up of the server or a client, so fewer wake-ups show what the server costs.
  printRestOverhead(2, m, withAndWithoutRest(keyedSumJob, false), "scrape");
  // Job 1's chain with a function that counts, meters and measures every record in
  // metrics of its own (a counter, a meter, a histogram of 1,000 values).
  const int64_t u = 200'000'000;
  printRestOverhead(3, u, withAndWithoutRest([&](StreamExecutionEnvironment& env) {
    env.fromSource(DataGeneratorSource([](int64_t i) { return generate(i); }, u),
                   WatermarkStrategy<int64_t>::noWatermarks(), "gen")
        .map(MeasuredTransform())
        .filter([](const int64_t& v) { return keep(v); })
        .sinkTo(DiscardingSink<int64_t>());
  }));
}

}  // namespace
}  // namespace weir::bench

int main(int argc, char** argv) {
  using namespace weir::bench;
  std::map<std::string, void (*)()> benches{
      {"chain", chain}, {"keyed_sum", keyedSum}, {"batch_sum", batchSum}, {"channel", channel}, {"rest_overhead", rest},
      {"tumbling_count", tumblingCount}, {"sliding_sum", slidingSum}, {"session_count", sessionCount},
      {"triggered_count", triggeredCount}, {"window_rocksdb", windowRocksDB},
      {"value_state", [] { valueState(gRuns); }}, {"map_state", [] { mapState(gRuns); }},
      {"list_state", [] { listState(gRuns); }}, {"state_memory", [] { stateMemory(gRuns); }},
      {"checkpoint_size", [] { checkpointSize(gRuns); }}, {"checkpoint_overhead", [] { checkpointOverhead(gRuns); }},
      {"recovery", [] { recovery(gRuns); }}, {"file_sink", [] { fileSink(gRuns); }},
      {"json_decode", [] { jsonDecode(gRuns); }}, {"csv_decode", [] { csvDecode(gRuns); }}, {"rescale", [] { rescale(gRuns); }}, {"savepoint", [] { savepoint(gRuns); }}, {"alignment", [] { alignment(gRuns); }},
      {"kafka_pipeline", [] { kafkaPipeline(gRuns); }},
      {"postgres_sink", [] { postgresSink(gRuns); }},
      {"redis_pipeline", [] { redisPipeline(gRuns); }},
      {"nexmark", [] {
         weir::nexmark::DriverOptions options;
         options.runs = std::min(gRuns, 3);  // 16 figures of 10 M events each: keep make bench short
         weir::nexmark::runNexmark(options);
       }}};
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) {
        if (!benches.count(name)) {
          std::string known;
          for (auto& [n, f] : benches) known += (known.empty() ? "" : ", ") + n;
          std::fprintf(stderr, "weir_bench: unknown benchmark '%s'; the benchmarks are: %s\n", name.c_str(), known.c_str());
          return 2;
        }
        only.insert(name);
      }
    } else if (arg == "--runs" && i + 1 < argc) {
      gRuns = std::atoi(argv[++i]);
      if (gRuns < 1) {
        std::fprintf(stderr, "weir_bench: --runs must be at least 1\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "weir_bench: unknown argument '%s'; usage: weir_bench [--only a,b] [--runs N]\n", arg.c_str());
      return 2;
    }
  }
  for (auto& [name, fn] : benches) {
    if (!only.empty() && !only.count(name)) continue;
    try {
      fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weir_bench: %s failed: %s\n", name.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
