#include "nexmark/driver.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

#include "harness.h"
#include "nexmark/generator.h"
#include "nexmark/queries.h"
#include "weir/weir.h"

namespace weir::nexmark {
namespace {

using bench::doNotOptimize;

// Adds `query` over `events` to the job, into a discarding sink.
void sinkQuery(const std::string& query, DataStream<Event> events) {
  if (query == "q0") q0(events).sinkTo(DiscardingSink<Bid>());
  else if (query == "q1") q1(events).sinkTo(DiscardingSink<Q1Result>());
  else if (query == "q2") q2(events).sinkTo(DiscardingSink<Q2Result>());
  else if (query == "q5") q5(events).sinkTo(DiscardingSink<Q5Result>());
  else if (query == "q7") q7(events).sinkTo(DiscardingSink<Q7Result>());
  else if (query == "q8") q8(events).sinkTo(DiscardingSink<Q8Result>());
  else if (query == "q11") q11(events).sinkTo(DiscardingSink<Q11Result>());
  else if (query == "q12") q12(events).sinkTo(DiscardingSink<Q12Result>());
  else if (query == "q14") q14(events).sinkTo(DiscardingSink<Q14Result>());
  else if (query == "q3") q3(events).sinkTo(DiscardingSink<Q3Result>());
  else if (query == "q4") q4(events).sinkTo(DiscardingSink<Q4Result>());
  else if (query == "q9") q9(events).sinkTo(DiscardingSink<AuctionBid>());
  else if (query == "q15") q15(events).sinkTo(DiscardingSink<Q15Result>());
  else if (query == "q16") q16(events).sinkTo(DiscardingSink<Q16Result>());
  else if (query == "q17") q17(events).sinkTo(DiscardingSink<Q17Result>());
  else if (query == "q18") q18(events).sinkTo(DiscardingSink<Bid>());
  else if (query == "q19") q19(events).sinkTo(DiscardingSink<Bid>());
  else if (query == "q20") q20(events).sinkTo(DiscardingSink<AuctionBid>());
  else if (query == "q21") q21(events).sinkTo(DiscardingSink<Q21Result>());
  else if (query == "q22") q22(events).sinkTo(DiscardingSink<Q22Result>());
  else throw Error(ErrorCode::kInvalidArgument, "unknown query " + query);
}

// Flink's published figures (events/s per core; Flink 1.x, 8 parallel, RocksDB), for the
// table.
const std::map<std::string, double>& flinkPerCore() {
  static const std::map<std::string, double> figures{{"q0", 155e3}, {"q1", 158e3}, {"q2", 175e3}, {"q3", 152e3},
                                                     {"q4", 34e3},  {"q5", 22e3},  {"q7", 12.3e3}, {"q9", 14.2e3},
                                                     {"q11", 39.7e3}, {"q16", 18.7e3}, {"q19", 44e3}, {"q20", 19e3}};
  return figures;
}

struct ChildResult {
  double seconds = -1;
  double peakRssBytes = 0;
  std::string error;
};

// Runs the query's job in a child process, so its peak RSS is its own.
ChildResult runInChild(const std::string& query, const std::string& backend, const std::string& mode, int parallelism,
                       const DriverOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, 0, "pipe failed"};
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    char message[512] = {};
    double seconds = -1;
    std::filesystem::path dir;
    try {
      GeneratorConfig config;
      config.events = options.events;
      StreamExecutionEnvironment env;
      // rocksdb_incremental: RocksDB with incremental checkpoints.
      env.setParallelism(parallelism)
          .setStateBackend(backend == "rocksdb_incremental" ? std::make_shared<EmbeddedRocksDBStateBackend>(true)
                                                            : stateBackendFromName(backend));
      env.setBufferTimeout(std::chrono::milliseconds(options.bufferTimeoutMs));
      if (mode == "batch") env.setRuntimeMode(RuntimeExecutionMode::BATCH);
      if (options.checkpointIntervalMs > 0 && mode != "batch") {
        dir = std::filesystem::temp_directory_path() / ("weir-nexmark-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        env.enableCheckpointing(std::chrono::milliseconds(options.checkpointIntervalMs));
        env.getCheckpointConfig().setCheckpointStorage(dir.string());
      }
      sinkQuery(query, env.fromSource(NexmarkSource(config), nexmarkWatermarks(config), "Nexmark"));
      auto start = std::chrono::steady_clock::now();
      env.execute("nexmark " + query);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } catch (const std::exception& e) {
      std::snprintf(message, sizeof message, "%s", e.what());
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
    (void)!::write(fds[1], &seconds, sizeof seconds);
    (void)!::write(fds[1], message, sizeof message);
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildResult result;
  char message[512] = {};
  if (::read(fds[0], &result.seconds, sizeof result.seconds) != sizeof result.seconds) result.seconds = -1;
  if (::read(fds[0], message, sizeof message) > 0) result.error = message;
  ::close(fds[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(child, &status, 0, &usage);
  result.peakRssBytes = static_cast<double>(usage.ru_maxrss) * 1024.0;
  if (result.seconds < 0 && result.error.empty()) result.error = "the child process died (status " + std::to_string(status) + ")";
  return result;
}

// Hand-written single-threaded loops over the same generator: what the engine is
// measured against. Each folds its results into a checksum the optimizer must keep.
uint64_t baselineQ0(const GeneratorConfig& c) {
  uint64_t sum = 0;
  for (int64_t m = 0; m < c.events; ++m) {
    Event e = generateEvent(c, m);
    if (e.bid) {
      Bid b = std::move(*e.bid);
      sum += static_cast<uint64_t>(b.price) + b.extra.size();
    }
  }
  return sum;
}
uint64_t baselineQ1(const GeneratorConfig& c) {
  double sum = 0;
  for (int64_t m = 0; m < c.events; ++m) {
    Event e = generateEvent(c, m);
    if (e.bid) {
      Q1Result r{e.bid->auction, e.bid->bidder, kDollarToEuro * e.bid->price, e.bid->dateTime, std::move(e.bid->extra)};
      sum += r.price + static_cast<double>(r.extra.size());
    }
  }
  return static_cast<uint64_t>(sum);
}
uint64_t baselineQ2(const GeneratorConfig& c) {
  uint64_t sum = 0;
  for (int64_t m = 0; m < c.events; ++m) {
    Event e = generateEvent(c, m);
    if (e.bid && e.bid->auction % 123 == 0) sum += static_cast<uint64_t>(e.bid->auction + e.bid->price);
  }
  return sum;
}
// Windows by end, each folded once the bounded-out-of-orderness watermark passes it
// (its last millisecond, or with `kThroughEnd` its end as well).
template <class Window, bool kThroughEnd = false, class Add, class Fold>
uint64_t windowedBaseline(const GeneratorConfig& c, Add add, Fold fold) {
  std::map<int64_t, Window> windows;
  int64_t highest = std::numeric_limits<int64_t>::min();
  uint64_t sum = 0;
  for (int64_t m = 0; m < c.events; ++m) {
    Event e = generateEvent(c, m);
    highest = std::max(highest, e.dateTime());
    if (e.bid) add(windows, *e.bid);
    int64_t watermark = highest - c.maxDelayMs - 1;
    while (!windows.empty() && windows.begin()->first - (kThroughEnd ? 0 : 1) <= watermark) {
      sum += fold(windows.begin()->second);
      windows.erase(windows.begin());
    }
  }
  for (auto& [end, w] : windows) sum += fold(w);
  return sum;
}
uint64_t baselineQ5(const GeneratorConfig& c) {
  using Counts = std::unordered_map<int64_t, int64_t>;
  return windowedBaseline<Counts>(
      c,
      [](std::map<int64_t, Counts>& windows, const Bid& b) {
        int64_t lastStart = b.dateTime - b.dateTime % kQ5Slide;
        for (int64_t start = lastStart; start > b.dateTime - kQ5Size; start -= kQ5Slide) ++windows[start + kQ5Size][b.auction];
      },
      [](const Counts& counts) {
        int64_t max = 0;
        uint64_t sum = 0;
        for (auto& [a, n] : counts) max = std::max(max, n);
        for (auto& [a, n] : counts)
          if (n == max) sum += static_cast<uint64_t>(a);
        return sum;
      });
}
// q7: a window's bids at its highest price, and the bids at exactly its end at that
// price; folded once the watermark has passed the end, when those have all come.
uint64_t baselineQ7(const GeneratorConfig& c) {
  struct Highest {
    std::vector<Bid> bids;  // at the highest price of the window
    std::vector<Bid> atEnd;  // at exactly its end, any price
  };
  return windowedBaseline<Highest, true>(
      c,
      [](std::map<int64_t, Highest>& windows, const Bid& b) {
        const int64_t end = b.dateTime - b.dateTime % kQ7Window + kQ7Window;
        std::vector<Bid>& h = windows[end].bids;
        if (!h.empty() && b.price > h[0].price) h.clear();
        if (h.empty() || b.price == h[0].price) h.push_back(b);
        if (end - kQ7Window == b.dateTime) windows[b.dateTime].atEnd.push_back(b);
      },
      [](const Highest& h) {
        uint64_t sum = 0;
        for (const Bid& b : h.bids) sum += static_cast<uint64_t>(b.auction + b.price);
        for (const Bid& b : h.atEnd)
          if (!h.bids.empty() && b.price == h.bids[0].price) sum += static_cast<uint64_t>(b.auction + b.price);
        return sum;
      });
}
std::function<uint64_t(const GeneratorConfig&)> baselineOf(const std::string& query) {
  if (query == "q0") return baselineQ0;
  if (query == "q1") return baselineQ1;
  if (query == "q2") return baselineQ2;
  if (query == "q5") return baselineQ5;
  if (query == "q7") return baselineQ7;
  return nullptr;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

const std::vector<std::string>& knownQueries() {
  static const std::vector<std::string> queries{"q0", "q1", "q2",  "q3",  "q4",  "q5",  "q7",  "q8",  "q9",
                                                "q11", "q12", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"};
  return queries;
}

std::string validate(const DriverOptions& options) {
  for (const auto& q : options.queries) {
    if (std::find(knownQueries().begin(), knownQueries().end(), q) == knownQueries().end()) {
      std::string known;
      for (const auto& k : knownQueries()) known += (known.empty() ? "" : ",") + k;
      return "unknown query '" + q + "'; the queries are " + known;
    }
  }
  for (const auto& b : options.backends)
    if (b != "heap" && b != "rocksdb" && b != "rocksdb_incremental")
      return "unknown state backend '" + b + "'; use heap, rocksdb or rocksdb_incremental";
  for (const auto& m : options.modes)
    if (m != "streaming" && m != "batch") return "unknown execution mode '" + m + "'; use streaming or batch";
  if (options.events <= 0) return "--events must be positive, got " + std::to_string(options.events);
  for (int p : options.parallelisms)
    if (p < 1 || p > 128) return "--parallelism must be from 1 to 128, got " + std::to_string(p);
  if (options.checkpointIntervalMs < 0) return "--checkpoint-interval must not be negative";
  if (options.bufferTimeoutMs < -1) return "--buffer-timeout must be -1, 0 or positive";
  if (options.runs < 1) return "--runs must be at least 1";
  if (options.queries.empty() || options.parallelisms.empty() || options.backends.empty() || options.modes.empty())
    return "nothing to run: give at least one query, parallelism, backend and execution mode";
  return "";
}

bool runNexmark(const DriverOptions& options) {
  if (std::string error = validate(options); !error.empty()) {
    std::fprintf(stderr, "nexmark: %s\n", error.c_str());
    return false;
  }
  std::fprintf(stderr, "%-5s %-8s %2s %10s %8s %12s %12s %10s %12s %6s %10s\n", "query", "backend", "p", "events",
               "seconds", "events/s", "per core", "peak RSS", "baseline/s", "ratio", "Flink/core");
  GeneratorConfig config;
  config.events = options.events;
  bool ok = true;
  for (const auto& query : options.queries) {
    auto baseline = baselineOf(query);
    for (const auto& backend : options.backends) {
      for (const auto& mode : options.modes)
        for (int p : options.parallelisms) {
          std::vector<double> seconds, baselineSeconds, rss;
          std::string error;
          for (int run = 0; run < options.runs && error.empty(); ++run) {
            ChildResult r = runInChild(query, backend, mode, p, options);
            if (!r.error.empty()) error = r.error;
            seconds.push_back(r.seconds);
            rss.push_back(r.peakRssBytes);
            if (baseline) {
              auto start = std::chrono::steady_clock::now();
              doNotOptimize(baseline(config));
              baselineSeconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            }
          }
          if (!error.empty()) {
            std::fprintf(stderr, "nexmark %s (%s, %s, p = %d) failed: %s\n", query.c_str(), backend.c_str(), mode.c_str(), p,
                         error.c_str());
            ok = false;
            continue;
          }
          double s = median(seconds), eps = static_cast<double>(options.events) / s;
          std::vector<std::pair<std::string, double>> fields{
              {"events", static_cast<double>(options.events)}, {"parallelism", p},
              {"checkpoint_interval_ms", mode == "batch" ? 0.0 : static_cast<double>(options.checkpointIntervalMs)},
              {"buffer_timeout_ms", static_cast<double>(options.bufferTimeoutMs)},
              {"seconds", s}, {"events_per_s", eps}, {"events_per_s_per_core", eps / p},
              {"peak_rss_bytes", median(rss)}};
          double bps = 0;
          if (baseline) {
            bps = static_cast<double>(options.events) / median(baselineSeconds);
            fields.push_back({"baseline_events_per_s", bps});
            fields.push_back({"ratio", bps / eps});
          }
          std::vector<std::pair<std::string, std::string>> labels{{"backend", backend}};
          if (mode != "streaming") labels.push_back({"mode", mode});
          bench::printFigure("nexmark_" + query, labels, fields);
          auto flink = flinkPerCore().find(query);
          std::fprintf(stderr, "%-5s %-8s %2d %10lld %8.2f %12.0f %12.0f %9.0fM %12s %6s %10s\n",
                       (query + (mode == "batch" ? "b" : "")).c_str(), backend.c_str(), p, static_cast<long long>(options.events), s, eps, eps / p, median(rss) / 1048576.0,
                       baseline ? std::to_string(static_cast<long long>(bps)).c_str() : "-",
                       baseline ? std::to_string(bps / eps).substr(0, 4).c_str() : "-",
                       flink != flinkPerCore().end() ? std::to_string(static_cast<long long>(flink->second)).c_str() : "-");
        }
    }
  }
  return ok;
}

}  // namespace weir::nexmark
