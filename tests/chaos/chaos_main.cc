// weir_chaos: the Redis and PostgreSQL connectors under faults, checked against a known
// truth (in the spirit of RocksDB's db_crashtest and Jepsen's checkers).
//
// For each scenario it writes a stream of clicks with known IDs into a real
// redis-server, runs `weir run redis-clicks` (clicks per user in 1 s event-time windows)
// into PostgreSQL, Redis or files through loopback proxies, and injects faults: kill -9
// of the job at random moments, crashes at exact steps (WEIR_CRASH_AT: after a sink
// prepared, after _metadata, between PREPARE TRANSACTION and COMMIT PREPARED, halfway
// through a Redis MULTI), the servers stopped and started under a running job, and
// connections cut or slowed by the proxies. Each run resumes from the latest checkpoint;
// a last run goes to the end. Then it compares what the sink holds with a brute-force
// count of the input and prints one JSON line per scenario:
//   {"scenario", "faults", "records", "lost", "duplicated", "pg_prepared_left", "seconds"}
// An exactly-once scenario must lose and duplicate nothing and leave no prepared
// transaction; the `control` scenario (at least once, plain inserts, under kills) must
// report duplicates, which proves the checker can see them.
//
//   weir_chaos            the full run (at least 100 faults); `make chaos`
//   weir_chaos --short    a few faults of each kind (CI)
//   weir_chaos --only NAME --seed N
// Exit code 0 when every check held, 1 when one did not, 2 for a bad command line.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chaos/tcp_proxy.h"
#include "support/postgres_server.h"
#include "support/redis_server.h"
#include "support/weir_process.h"

namespace weir::chaos {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kUsers = 50;
constexpr int64_t kEntriesPerMs = 20;
constexpr int64_t kBaseMs = 1'700'000'000'000;
constexpr int64_t kRate = 100'000;  // clicks a second the job reads at most (--max-rate)

struct Scenario {
  std::string name;
  std::string sink;  // postgres, redis, file
  bool exactlyOnce = true;
  int kills = 0;                          // kill -9 at random moments
  std::vector<std::string> crashPoints;   // a run each, killed there ("<sync point>@<pass>")
  int serverRestarts = 0;                 // the servers stopped and started under a run
  int proxyFaults = 0;                    // connections cut or slowed under a run
  int64_t windowMs = 1000;
  int batchSize = 0;                      // the sink's; 0: its default
  int minKillDelayMs = 0;                 // a kill comes this long after a checkpoint, at least
  int maxKillDelayMs = 60;                // and at most
  int checkpointIntervalMs = 100;
};

// (user, window start) -> clicks.
using Truth = std::map<std::pair<std::string, int64_t>, int64_t>;

struct Tally {
  int64_t lost = 0;        // windows missing, or with a count below the truth
  int64_t duplicated = 0;  // rows or counts beyond the truth
};

// The input: `records` clicks, entry i at ms kBaseMs + i / kEntriesPerMs, users at random.
Truth fillStream(test::RedisClient& redis, const std::string& stream, int64_t records, int64_t windowMs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Truth truth;
  constexpr int64_t kChunk = 20000;
  for (int64_t start = 0; start < records; start += kChunk) {
    std::vector<std::vector<std::pair<std::string, std::string>>> entries;
    std::vector<std::string> ids;
    for (int64_t i = start; i < std::min(records, start + kChunk); ++i) {
      const int64_t ms = kBaseMs + i / kEntriesPerMs;
      const std::string user = "u" + std::to_string(rng() % kUsers);
      entries.push_back({{"user", user}});
      ids.push_back(std::to_string(ms) + "-" + std::to_string(i % kEntriesPerMs));
      ++truth[{user, ms - ms % windowMs}];
    }
    redis.xaddMany(stream, entries, ids);
  }
  return truth;
}

// Rows (user, window start, clicks) against the truth.
Tally tallyRows(const Truth& truth, const std::vector<std::tuple<std::string, int64_t, int64_t>>& rows) {
  std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> seen;
  for (const auto& [user, window, clicks] : rows) seen[{user, window}].push_back(clicks);
  Tally t;
  for (const auto& [key, clicks] : truth) {
    auto it = seen.find(key);
    if (it == seen.end() || std::find(it->second.begin(), it->second.end(), clicks) == it->second.end()) ++t.lost;
    if (it != seen.end()) t.duplicated += static_cast<int64_t>(it->second.size()) - 1;
  }
  for (const auto& [key, clicks] : seen)
    if (!truth.count(key)) t.duplicated += static_cast<int64_t>(clicks.size());
  return t;
}

class Chaos {
 public:
  Chaos(bool full, uint64_t seed)
      : full_(full),
        rng_(seed),
        seed_(seed),
        dir_(fs::temp_directory_path() / ("weir-chaos-" + std::to_string(::getpid()))),
        redisProxy_(redis_.port()),
        postgresProxy_(postgres_.port()) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Chaos() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `s`; prints its line; false when a check failed.
  bool run(const Scenario& s) {
    const auto started = Clock::now();
    // The job reads kRate clicks a second; each faulty run gets a checkpoint or two
    // further. Enough input that every fault comes before the end.
    const int64_t records = full_ ? 4'000'000 : 1'500'000;
    const fs::path dir = dir_ / s.name;
    fs::create_directories(dir / "checkpoints");
    const std::string stream = "clicks-" + s.name;
    Truth truth;
    {
      test::RedisClient redis(redis_.port());
      redis.command({"DEL", stream});
      truth = fillStream(redis, stream, records, s.windowMs, seed_ + std::hash<std::string>{}(s.name));
    }
    if (s.sink == "postgres")
      postgres_.sql("DROP TABLE IF EXISTS " + s.name + "; CREATE TABLE " + s.name +
                    " (user_id text, window_start bigint, window_end bigint, clicks bigint)");
    const std::string args = jobArgs(s, stream, dir);

    // The faults, in a random order.
    std::vector<std::string> plan;
    for (int i = 0; i < s.kills; ++i) plan.push_back("kill");
    for (const auto& p : s.crashPoints) plan.push_back("crash " + p);
    for (int i = 0; i < s.serverRestarts; ++i) plan.push_back("restart");
    for (int i = 0; i < s.proxyFaults; ++i) plan.push_back(i % 2 ? "slow" : "cut");
    std::shuffle(plan.begin(), plan.end(), rng_);
    int faults = 0;
    int status = 0;
    bool finished = false;  // a finished job is never run again: it would repeat its last part
    for (const std::string& fault : plan) {
      const Injected injected = inject(fault, args, dir, s);
      faults += injected.faults;
      if ((finished = injected.finished)) {
        status = injected.status;
        std::fprintf(stderr, "weir_chaos: %s: the job finished before every fault was injected (%d)\n",
                     s.name.c_str(), faults);
        break;
      }
    }
    if (!finished) status = waitFor(test::spawnWeir(args, dir / "out.txt", errFile(dir)), 600s);  // to the end
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) std::fprintf(stderr, "weir_chaos: %s: the last run did not finish: %s\n", s.name.c_str(), tail(dir).c_str());

    Tally t = check(s, truth, dir);
    if (std::getenv("WEIR_CHAOS_DEBUG") && s.sink == "postgres" && t.duplicated > 0) {
      for (auto& r : postgres_.sql("SELECT xmin::text, count(*), min(window_start), max(window_start) FROM " + s.name +
                                   " GROUP BY xmin ORDER BY 3"))
        std::fprintf(stderr, "xmin %s rows %s windows %s..%s\n", r[0].c_str(), r[1].c_str(), r[2].c_str(), r[3].c_str());
      for (int i = 1; i <= runs_; ++i) {
        std::ifstream in(dir / ("err-" + std::to_string(i) + ".txt"));
        std::fprintf(stderr, "---- run %d\n%s", i, std::string((std::istreambuf_iterator<char>(in)), {}).c_str());
      }
    }
    const int64_t prepared =
        std::stoll(postgres_.value("SELECT count(*) FROM pg_prepared_xacts WHERE starts_with(gid, '" + s.name + "-')"));
    const bool fencesOk = s.sink != "redis" || !s.exactlyOnce || fencesConsistent(s.name);
    const bool control = s.name.find("control") != std::string::npos;
    if (control) {
      ok = ok && t.lost == 0 && t.duplicated > 0;
      if (t.duplicated == 0) std::fprintf(stderr, "weir_chaos: %s reported no duplicates: the checker cannot tell\n", s.name.c_str());
    } else {
      ok = ok && t.lost == 0 && t.duplicated == 0 && prepared == 0 && fencesOk;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::printf("{\"scenario\":\"%s\",\"faults\":%d,\"records\":%lld,\"lost\":%lld,\"duplicated\":%lld,"
                "\"pg_prepared_left\":%lld,\"seconds\":%.1f%s}\n",
                s.name.c_str(), faults, static_cast<long long>(records), static_cast<long long>(t.lost),
                static_cast<long long>(t.duplicated), static_cast<long long>(prepared), seconds,
                fencesOk ? "" : ",\"fences\":\"inconsistent\"");
    std::fflush(stdout);
    totalFaults_ += faults;
    test::RedisClient(redis_.port()).command({"DEL", stream});
    return ok;
  }

  int totalFaults() const { return totalFaults_; }

 private:
  std::string jobArgs(const Scenario& s, const std::string& stream, const fs::path& dir) const {
    std::string a = "run redis-clicks --redis 127.0.0.1:" + std::to_string(redisProxy_.port()) + " --stream " + stream +
                    " --sink " + s.sink + " --bounded --no-rest -p 2 --max-rate " + std::to_string(kRate) +
                    " --window " + std::to_string(s.windowMs) +
                    (s.batchSize > 0 ? " --batch-size " + std::to_string(s.batchSize) : "") +
                    " --transaction-id-prefix " + s.name +
                    " --delivery-guarantee " + (s.exactlyOnce ? "exactly-once" : "at-least-once");
    if (s.sink == "postgres")
      a += " --postgres 'host=127.0.0.1 port=" + std::to_string(postgresProxy_.port()) +
           " user=weir password=secret dbname=postgres' --table " + s.name + (s.exactlyOnce ? "" : " --plain-inserts");
    if (s.sink == "file") a += " --output " + (dir / "out").string();
    // Every checkpoint retained: its record then counts each one (untilACheckpoint).
    return a + " --checkpoint-interval " + std::to_string(s.checkpointIntervalMs) +
           " --retained-checkpoints 100000 --checkpoint-dir " + (dir / "checkpoints").string() +
           " --restore latest --restart-strategy fixed-delay:1000:200";
  }

  // Waits for `pid`; kills it after `limit`. Its wait status.
  static int waitFor(pid_t pid, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    return status;
  }

  // Waits until one more checkpoint of the job under `dir` completed; false when `pid`
  // ended first (its status in `status`). (A job that finishes empties its record, so
  // only a count that grew is a checkpoint.)
  static bool untilACheckpoint(pid_t pid, const fs::path& dir, int& status) {
    const size_t before = test::completedByAllRuns(dir / "checkpoints");
    const auto deadline = Clock::now() + 60s;
    while (test::completedByAllRuns(dir / "checkpoints") <= before && Clock::now() < deadline) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }

  static int kill9(pid_t pid) {
    int status = 0;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return status;
  }

  struct Injected {
    int faults = 0;
    bool finished = false;  // the run ended on its own (its wait status in `status`)
    int status = 0;
  };

  // Injects one fault in a run of its own, which is then killed.
  Injected inject(const std::string& fault, const std::string& args, const fs::path& dir, const Scenario& s) {
    Injected r;
    auto ended = [&](int status) {
      r.status = status;
      r.finished = !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      if (!r.finished) ++r.faults;
      return r;
    };
    if (fault.rfind("crash ", 0) == 0)
      return ended(waitFor(test::spawnWeir(args, dir / "out.txt", errFile(dir), {}, "WEIR_CRASH_AT=" + fault.substr(6)),
                           300s));
    const pid_t pid = test::spawnWeir(args, dir / "out.txt", errFile(dir));
    int status = 0;
    if (!untilACheckpoint(pid, dir, status)) {
      r.status = status;
      r.finished = true;
      return r;
    }
    if (fault == "kill") {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(s.minKillDelayMs, s.maxKillDelayMs)(rng_)));
    } else {
      if (fault == "restart") {
        // Both servers away for a second under the running job, which rides it out or
        // restarts from its checkpoint.
        if (s.sink == "postgres") postgres_.stop();
        redis_.stop();
        std::this_thread::sleep_for(1s);
        redis_.start();
        if (s.sink == "postgres") postgres_.start();
        r.faults += s.sink == "postgres" ? 2 : 1;
      } else if (fault == "cut") {
        redisProxy_.cutAll();
        postgresProxy_.cutAll();
        ++r.faults;
      } else if (fault == "slow") {
        redisProxy_.setDelay(100ms);
        postgresProxy_.setDelay(100ms);
        std::this_thread::sleep_for(1s);
        redisProxy_.setDelay(0ms);
        postgresProxy_.setDelay(0ms);
        ++r.faults;
      }
      if (!untilACheckpoint(pid, dir, status)) {
        r.status = status;
        r.finished = true;
        return r;
      }
    }
    // A job that finished empties its record: killed after that, it must not run again.
    const size_t recorded = test::completedByAllRuns(dir / "checkpoints");
    Injected done = ended(kill9(pid));
    if (!done.finished && test::completedByAllRuns(dir / "checkpoints") < recorded) {
      done.finished = true;
      done.status = 0;  // it had finished: the kill hit a process on its way out
      --done.faults;
    }
    if (std::getenv("WEIR_CHAOS_DEBUG"))
      (void)!std::system(("(echo after " + fault + "; find " + (dir / "checkpoints").string() +
                          " -maxdepth 2; cat " + (dir / "checkpoints").string() + "/*/completed-checkpoints) >&2").c_str());
    return done;
  }

  Tally check(const Scenario& s, const Truth& truth, const fs::path& dir) {
    std::vector<std::tuple<std::string, int64_t, int64_t>> rows;
    if (s.sink == "postgres") {
      for (auto& r : postgres_.sql("SELECT user_id, window_start, clicks FROM " + s.name))
        rows.emplace_back(r[0], std::stoll(r[1]), std::stoll(r[2]));
      return tallyRows(truth, rows);
    }
    if (s.sink == "file") {
      for (const auto& e : fs::recursive_directory_iterator(dir / "out")) {
        if (!e.is_regular_file() || e.path().filename().string()[0] == '.') continue;  // not published
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) {
          const size_t a = line.find(','), b = line.rfind(',');
          rows.emplace_back(line.substr(0, a), std::stoll(line.substr(a + 1, b - a - 1)), std::stoll(line.substr(b + 1)));
        }
      }
      return tallyRows(truth, rows);
    }
    // Redis: HINCRBY clicks:<window> user n, so a count applied twice is a multiple.
    test::RedisClient redis(redis_.port());
    std::map<int64_t, std::map<std::string, int64_t>> hashes;
    for (const auto& [key, clicks] : truth) {
      if (hashes.count(key.second)) continue;
      test::RedisValue all = redis.command({"HGETALL", "clicks:" + std::to_string(key.second)});
      auto& h = hashes[key.second];
      for (size_t i = 0; i + 1 < all.elements.size(); i += 2) h[all.elements[i].text] = std::stoll(all.elements[i + 1].text);
    }
    Tally t;
    for (const auto& [key, clicks] : truth) {
      const int64_t got = hashes[key.second][key.first];
      if (got < clicks || got % clicks != 0) ++t.lost;
      else t.duplicated += got / clicks - 1;
    }
    for (const auto& [window, h] : hashes) redis.command({"DEL", "clicks:" + std::to_string(window)});
    return t;
  }

  // Every fence key of the prefix is a set of the checkpoint numbers applied.
  bool fencesConsistent(const std::string& prefix) {
    test::RedisClient redis(redis_.port());
    test::RedisValue keys = redis.command({"KEYS", "weir:fence:" + prefix + ":*"});
    if (keys.elements.empty()) return false;
    for (const auto& k : keys.elements) {
      test::RedisValue numbers = redis.command({"ZRANGE", k.text, "0", "-1"});
      if (numbers.type != test::RedisValue::kArray || numbers.elements.empty()) return false;
      for (const auto& n : numbers.elements)
        if (n.text.empty() || n.text.find_first_not_of("0123456789") != std::string::npos) return false;
    }
    return true;
  }

  // Each run's stderr in a file of its own: err-<n>.txt.
  fs::path errFile(const fs::path& dir) { return dir / ("err-" + std::to_string(++runs_) + ".txt"); }

  // The end of the last run's stderr.
  std::string tail(const fs::path& dir) const {
    std::ifstream in(dir / ("err-" + std::to_string(runs_) + ".txt"));
    std::string all((std::istreambuf_iterator<char>(in)), {});
    return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
  }

  bool full_;
  std::mt19937 rng_;
  uint64_t seed_;
  fs::path dir_;
  test::RedisServer redis_;
  test::PostgresServer postgres_;
  TcpProxy redisProxy_;
  TcpProxy postgresProxy_;
  int totalFaults_ = 0;
  int runs_ = 0;
};

std::vector<Scenario> scenarios(bool full) {
  const int n = full ? 2 : 1;  // passes of each crash point
  auto times = [&](std::vector<std::string> points) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i)
      for (const auto& p : points) out.push_back(p + "@" + std::to_string(2 + i * 2));
    return out;
  };
  return {
      {"postgres_kill9", "postgres", true, full ? 25 : 3, {}, 0, 0},
      {"postgres_crash_points", "postgres", true, 0,
       times({"PostgresSink::AfterPrepare", "PostgresSink::BeforeCommit", "PostgresSink::AfterCommit",
              "CheckpointCoordinator::AfterMetadataWritten", "CheckpointCoordinator::AfterCompletionRecorded"}),
       0, 0},
      {"postgres_servers", "postgres", true, 0, {}, full ? 4 : 1, full ? 6 : 2},
      {"file_kill9", "file", true, full ? 15 : 2, times({"FileSink::AfterPrepareCommit"}), 0, 0},
      {"redis_kill9", "redis", true, full ? 12 : 2,
       times({"RedisSink::AfterPrepare", "RedisSink::BeforeCommit", "RedisSink::InMulti", "RedisSink::AfterCommit"}),
       full ? 2 : 1, full ? 2 : 1},
      // At least once with plain inserts, each row sent at once, windows of 100 ms, a
      // checkpoint a second and kills 300-700 ms after one: windows fire at each
      // watermark (every 200 ms), so rows written since the checkpoint are replayed.
      {"postgres_control", "postgres", false, full ? 8 : 4, {}, 0, 0, 100, 1, 300, 700, 1000},
  };
}

}  // namespace
}  // namespace weir::chaos

int main(int argc, char** argv) {
  using namespace weir::chaos;
  bool full = true;
  std::string only;
  uint64_t seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--short") full = false;
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "weir_chaos: unknown option '%s'; usage: weir_chaos [--short] [--only NAME] [--seed N]\n",
                   a.c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "weir_chaos: seed %llu\n", static_cast<unsigned long long>(seed));
  try {
    Chaos chaos(full, seed);
    bool ok = true;
    bool ran = false;
    for (const Scenario& s : scenarios(full)) {
      if (!only.empty() && s.name != only) continue;
      ran = true;
      ok = chaos.run(s) && ok;
    }
    if (!ran) {
      std::fprintf(stderr, "weir_chaos: no scenario named '%s'\n", only.c_str());
      return 2;
    }
    std::printf("{\"scenario\":\"total\",\"faults\":%d}\n", chaos.totalFaults());
    if (full && only.empty() && chaos.totalFaults() < 100) {
      std::fprintf(stderr, "weir_chaos: only %d faults were injected, fewer than 100: make the input larger\n",
                   chaos.totalFaults());
      ok = false;
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weir_chaos: %s\n", e.what());
    return 1;
  }
}
