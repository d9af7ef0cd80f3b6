// The weir program as a user runs it: exit codes, one-line errors, and real output.
#include <gtest/gtest.h>

#include <regex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <thread>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/tls_files.h"
#include "support/weir_process.h"
#include "support/word_counts.h"

namespace {

using weir::test::checkRollingCounts;
using weir::test::completedByAllRuns;
using weir::test::publishedCounts;
using weir::test::RollingCountCheck;
using weir::test::recordedCheckpoints;
using weir::test::spawnWeir;

namespace fs = std::filesystem;

struct Result {
  int exitCode = -1;
  bool signaled = false;
  std::string out;
  std::string err;
};

Result weir(const std::string& args) {
  auto errFile = fs::temp_directory_path() / ("weir-cli-err-" + std::to_string(::getpid()));
  std::string command = std::string(WEIR_BINARY) + " " + args + " 2>" + errFile.string();
  Result run;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) run.out.append(buf.data(), n);
  int status = ::pclose(pipe);
  run.signaled = WIFSIGNALED(status);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(errFile);
  std::stringstream ss;
  ss << in.rdbuf();
  run.err = ss.str();
  fs::remove(errFile);
  return run;
}

// Exit code 2, and stderr is one line that starts with "weir: " and mentions `word`.
void expectUsageError(const std::string& args, const std::string& word) {
  Result r = weir(args);
  EXPECT_FALSE(r.signaled) << args;
  EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("weir: ", 0), 0u) << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(word), std::string::npos) << args << "\n" << r.err;
}

TEST(Cli, HelpExitsZero) {
  for (const char* args : {"--help", "run --help", "run clicks --help", "run wordcount --help"}) {
    Result r = weir(args);
    EXPECT_EQ(r.exitCode, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args;
  }
  EXPECT_NE(weir("run --help").out.find("clicks"), std::string::npos);
}

// weir run takes Flink's configuration keys from --config, $WEIR_PROPERTIES and -D, the
// options on the command line winning, and names the job's id and REST address when it
// starts (docs/configuration.md).
TEST(Cli, ConfigurationKeysSetUpTheJobWhichAnnouncesItself) {
  auto file = fs::temp_directory_path() / ("weir-cli-config-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "parallelism:\n  default: 3\nrest.port: 0\n";
  Result r = weir("run clicks --events 2000 --config " + file.string());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("parallelism 3"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("weir: job 'click count' started with id [0-9a-f]+; REST API and "
                                                  "Web UI at http://127\\.0\\.0\\.1:[1-9][0-9]*")))
      << r.err;
  r = weir("run clicks --events 2000 --no-rest --config " + file.string() + " -D parallelism.default=4");
  EXPECT_NE(r.out.find("parallelism 4"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("no REST API (it is off)"), std::string::npos) << r.err;
  r = weir("run clicks --events 2000 --no-rest --config " + file.string() + " -D parallelism.default=4 -p 2");
  EXPECT_NE(r.out.find("parallelism 2"), std::string::npos) << r.out;
  ::setenv("WEIR_PROPERTIES", "parallelism.default: 5", 1);
  r = weir("run clicks --events 2000 --no-rest --config " + file.string());
  ::unsetenv("WEIR_PROPERTIES");
  EXPECT_NE(r.out.find("parallelism 5"), std::string::npos) << r.out;
  fs::remove(file);
}

// weir info prints the example's plan as Flink's getExecutionPlan() JSON and runs nothing.
TEST(Cli, InfoPrintsThePlanWithoutRunningTheJob) {
  auto input = fs::temp_directory_path() / ("weir-cli-info-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(input) << "unmistakable words\n";
  Result r = weir("info wordcount -p 2 --input " + input.string());
  fs::remove(input);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("unmistakable"), std::string::npos) << "the job ran:\n" << r.out;
  const auto plan = nlohmann::json::parse(r.out);
  std::map<int, nlohmann::json> byId;
  std::map<std::string, int> idOf;
  for (const auto& node : plan["nodes"]) {
    byId[node["id"].get<int>()] = node;
    idOf[node["type"].get<std::string>()] = node["id"].get<int>();
  }
  ASSERT_EQ(idOf.size(), 4u) << r.out;
  auto expectNode = [&](const std::string& type, const std::string& pact, const std::string& from,
                        const std::string& strategy) {
    ASSERT_TRUE(idOf.count(type)) << type << "\n" << r.out;
    const auto& node = byId[idOf[type]];
    EXPECT_EQ(node["pact"], pact) << type;
    EXPECT_EQ(node["parallelism"], 2) << type;
    if (from.empty()) {
      EXPECT_FALSE(node.contains("predecessors")) << type;
      return;
    }
    ASSERT_EQ(node["predecessors"].size(), 1u) << type;
    EXPECT_EQ(node["predecessors"][0]["id"], idOf[from]) << type;
    EXPECT_EQ(node["predecessors"][0]["ship_strategy"], strategy) << type;
  };
  expectNode("Source: lines", "Data Source", "", "");
  expectNode("tokenize", "Operator", "Source: lines", "FORWARD");
  expectNode("count", "Operator", "tokenize", "HASH");
  expectNode("Print to Std. Out", "Data Sink", "count", "FORWARD");
  // What an example prints of itself goes to stderr: stdout is the plan alone.
  r = weir("info clicks --events 100");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["nodes"].size(), 3u) << r.out;
  EXPECT_NE(r.err.find("clicks: 100 events"), std::string::npos) << r.err;
  expectUsageError("info", "weir info needs an example");
  expectUsageError("info nosuchjob", "unknown example 'nosuchjob'");
  expectUsageError("info clicks --parallelism 0", "--parallelism");
}

TEST(Cli, BadCommandLinesGiveOneLineAndExitCode2) {
  expectUsageError("frobnicate", "unknown command 'frobnicate'");
  expectUsageError("run nosuchjob", "unknown example 'nosuchjob'");
  expectUsageError("run clicks --no-such-option", "--no-such-option");
  expectUsageError("run clicks --parallelism 0", "--parallelism");
  expectUsageError("run clicks --parallelism -2", "--parallelism");
  expectUsageError("run clicks --parallelism 32769", "--parallelism");
  expectUsageError("run clicks --max-parallelism 4 --parallelism 5", "--parallelism");
  expectUsageError("run clicks --max-parallelism 0", "--max-parallelism");
  expectUsageError("run clicks --max-parallelism 32769", "--max-parallelism");
  expectUsageError("run clicks --rate -10", "--rate");
  expectUsageError("run clicks --events 0", "--events");
  expectUsageError("run clicks --parallelism many", "--parallelism");
  expectUsageError("run wordcount", "--input");
  expectUsageError("run wordcount --input /no/such/file.txt", "/no/such/file.txt");
  expectUsageError("run clicks --rest-port 70000", "--rest-port");
  expectUsageError("status not-a-job-id", "not a job id");
  expectUsageError("cancel 0123", "not a job id");
  expectUsageError("run clicks --state-backend leveldb", "--state-backend: 'leveldb' is not one of");
  expectUsageError("run clicks -D execution.checkpointing.intervall=1s", "did you mean 'execution.checkpointing.interval'");
  expectUsageError("run clicks --config /no/such/config.yaml", "/no/such/config.yaml");
  expectUsageError("run clicks --rocksdb-local-dir /tmp", "--rocksdb-local-dir needs --state-backend rocksdb");
  // Numbers the parser would otherwise round or cap at 2^63 - 1.
  expectUsageError("run clicks --events 1e20", "--events");
  expectUsageError("run clicks --events 99999999999999999999", "--events");
  expectUsageError("run clicks --users 12abc", "--users");
  expectUsageError("run clicks --checkpoint-interval 1e30 --no-rest", "--checkpoint-interval");
  expectUsageError("run clicks --parallelism 2.5", "--parallelism");
  // Paths that can never work are refused before the job starts.
  auto file = fs::temp_directory_path() / ("weir-cli-file-" + std::to_string(::getpid()));
  std::ofstream(file) << "x\n";
  expectUsageError("run clicks --checkpoint-interval 10 --checkpoint-dir " + file.string() + " --no-rest",
                   "is not a folder");
  expectUsageError("run clicks --state-backend rocksdb --rocksdb-local-dir /no/such/dir --no-rest",
                   "--rocksdb-local-dir '/no/such/dir' does not exist");
  expectUsageError("run clicks --state-backend rocksdb --rocksdb-local-dir " + file.string() + " --no-rest",
                   "is not a folder");
  expectUsageError("run wordcount --input README.md --output " + file.string() + " --no-rest", "--output");
  fs::remove(file);
}

// A parallelism above 128 runs without --max-parallelism: the default follows it as
// Flink's does (the job failed to start against a fixed 128).
TEST(Cli, AParallelismAbove128RunsWithTheDerivedMaxParallelism) {
  Result r = weir("run clicks --events 20000 --users 500 -p 200 --no-rest");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("counted 20,000 events"), std::string::npos) << r.out;
}

TEST(Cli, JobControlWithoutAServerSaysSoInOneLine) {
  // Nothing listens on port 9 (discard) of loopback here.
  Result r = weir("list --address 127.0.0.1:9");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(r.err.rfind("weir: cannot reach the REST API at 127.0.0.1:9", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  expectUsageError("list --address nonsense", "--address");
}

TEST(Cli, AnUnreadableInputIsAUsageError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  auto path = fs::temp_directory_path() / ("weir-cli-secret-" + std::to_string(::getpid()));
  std::ofstream(path) << "x\n";
  fs::permissions(path, fs::perms::none);
  expectUsageError("run wordcount --input " + path.string(), path.string());
  fs::remove(path);
}

// Three files of words under dir/in; how often each word occurs.
std::map<std::string, int64_t> writeWords(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::map<std::string, int64_t> expected;
  const char* words[] = {"alpha", "beta", "gamma", "delta"};
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(dir / "in" / ("f" + std::to_string(f)));
    for (int i = 0; i < 500; ++i) {
      std::string w = words[(i * (f + 1)) % 4];
      out << w << (i % 3 ? ", " : "\n");
      expected[w]++;
    }
  }
  return expected;
}

// Every count of each word that `weir run wordcount` wrote to the part files in `out`.
std::map<std::string, std::vector<int64_t>> countsIn(const fs::path& out) {
  std::map<std::string, std::vector<int64_t>> counts;
  for (auto& part : fs::directory_iterator(out)) {
    std::ifstream in(part.path());
    for (std::string line; std::getline(in, line);) {  // ("word", n)
      auto q1 = line.find('"'), q2 = line.find('"', q1 + 1), comma = line.find(", ", q2);
      counts[line.substr(q1 + 1, q2 - q1 - 1)].push_back(std::stoll(line.substr(comma + 2)));
    }
  }
  return counts;
}

TEST(Cli, WordCountCountsEveryWordOfAFolder) {
  auto dir = fs::temp_directory_path() / ("weir-cli-words-" + std::to_string(::getpid()));
  const auto expected = writeWords(dir);
  Result r = weir("run wordcount -p 2 --rest-port 0 --input " + (dir / "in").string() + " --output " + (dir / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The last (largest) rolling count of each word is its total.
  std::map<std::string, int64_t> finalCounts;
  for (const auto& [word, counts] : countsIn(dir / "out")) finalCounts[word] = *std::max_element(counts.begin(), counts.end());
  EXPECT_EQ(finalCounts, expected);
  fs::remove_all(dir);
}

// --execution-mode batch: each word's total, once (docs/batch.md); checkpoint options and
// unbounded sources are refused with exit code 2.
TEST(Cli, WordCountInBatchModeWritesEachWordsTotalOnce) {
  auto dir = fs::temp_directory_path() / ("weir-cli-batch-" + std::to_string(::getpid()));
  const auto expected = writeWords(dir);
  Result r = weir("run wordcount --execution-mode batch -p 2 --no-rest --input " + (dir / "in").string() +
                  " --output " + (dir / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::map<std::string, std::vector<int64_t>> once;
  for (const auto& [word, n] : expected) once[word] = {n};
  EXPECT_EQ(countsIn(dir / "out"), once);

  expectUsageError("run wordcount --execution-mode batch --checkpoint-interval 100 --input " + (dir / "in").string(),
                   "--execution-mode batch takes no checkpoints and starts from scratch, but --checkpoint-interval is "
                   "given");
  // A configuration file's checkpoint interval is for streaming jobs: AUTOMATIC, which
  // runs this bounded job in BATCH, leaves it out; the same interval given with -D is
  // refused, naming the mode's choice.
  const auto config = dir / "streaming.yaml";
  std::ofstream(config) << "execution.checkpointing.interval: 100ms\n";
  fs::remove_all(dir / "out");
  r = weir("run wordcount --execution-mode automatic -p 2 --no-rest --config " + config.string() + " --input " +
           (dir / "in").string() + " --output " + (dir / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(countsIn(dir / "out"), once);
  expectUsageError("run wordcount --execution-mode automatic -D execution.checkpointing.interval=100ms --input " +
                       (dir / "in").string(),
                   "execution mode AUTOMATIC runs this job in BATCH (every source is bounded), which takes no "
                   "checkpoints, but checkpointing is enabled");
  expectUsageError("run wordcount --execution-mode sometimes --input " + (dir / "in").string(), "--execution-mode");
  expectUsageError("run kafka-wordcount --execution-mode batch --bootstrap-servers 127.0.0.1:1 --input-topic lines "
                   "--output-topic counts --no-rest",
                   "execution mode BATCH needs bounded sources, but source 'lines' is unbounded");
  fs::remove_all(dir);
}

// The peak resident memory of `weir args` run to its end (its exit code must be 0).
int64_t peakRssOf(const std::string& args, const fs::path& dir) {
  pid_t pid = spawnWeir(args, dir / "rss.out", dir / "rss.err");
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  std::ifstream err(dir / "rss.err");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << args << "\n" << std::string(std::istreambuf_iterator<char>(err), {});
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// A batch word count over 2 M words, 1 M of them distinct, keeps what it aggregates and
// sorts within its sorted-inputs budget: with 4 MiB it spills, and its peak memory is
// within 48 MiB of the same job over a handful of words; with 1 GiB it holds every
// word's count, some 100 MiB more. Its counts are right either way.
TEST(Cli, ABatchWordCountSortsWithinItsMemoryBudget) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator keeps freed memory: peak RSS shows nothing";
#endif
  auto dir = fs::temp_directory_path() / ("weir-cli-budget-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "big");
  fs::create_directories(dir / "small");
  auto word = [](int64_t i) { return "w" + std::to_string((i * 7919) % 1'000'000); };
  constexpr int64_t kWords = 2'000'000;
  {
    std::ofstream big(dir / "big" / "words"), small(dir / "small" / "words");
    for (int64_t i = 0; i < kWords; ++i) big << word(i) << (i % 10 == 9 ? "\n" : " ");
    small << "a few words\n";
  }
  auto run = [&](const std::string& input, const std::string& budget, const std::string& out) {
    // The keyBy's blocking exchange holds little (4 MiB): this measures the sort budget.
    return peakRssOf("run wordcount --execution-mode batch --no-rest -D execution.sorted-inputs.memory=" + budget +
                         " -D weir.batch-shuffle.memory=4m -D io.tmp.dirs=" + dir.string() + " --input " + (dir / input).string() + " --output " +
                         (dir / out).string(),
                     dir);
  };
  // (A child's peak counts what this process held when it forked: the expected counts
  // are made after.)
  const int64_t idle = run("small", "4m", "out-small");
  const int64_t spilling = run("big", "4m", "out-4m");
  const int64_t holding = run("big", "1g", "out-1g");
  std::map<std::string, std::vector<int64_t>> expected;
  {
    std::map<std::string, int64_t> counts;
    for (int64_t i = 0; i < kWords; ++i) ++counts[word(i)];
    for (auto& [w, n] : counts) expected[w] = {n};
  }
  EXPECT_EQ(countsIn(dir / "out-4m"), expected);
  EXPECT_EQ(countsIn(dir / "out-1g"), expected);
  EXPECT_LT(spilling, idle + (int64_t{48} << 20)) << "peak RSS " << (spilling >> 20) << " MiB with a 4 MiB budget, "
                                                  << (idle >> 20) << " MiB for a few words";
  EXPECT_GT(holding, spilling + (int64_t{100} << 20)) << "peak RSS " << (holding >> 20) << " MiB with a 1 GiB budget";
  fs::remove_all(dir);
}

TEST(Cli, TheDemoCountsEveryEventAndPrintsTheTopUsers) {
  Result r = weir("run clicks --events 200000 --users 1000 --top 3 -p 2 --rest-port 0");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("counted 200,000 events"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top 3 users:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   3. user "), std::string::npos) << r.out;
}

TEST(Cli, TheDemoGivesTheSameTopUsersOnRocksDB) {
  auto top = [](const std::string& out) { return out.substr(out.find("top 5 users:")); };
  Result heap = weir("run clicks --events 30000 --users 500 --top 5 -p 2 --no-rest");
  auto dir = fs::temp_directory_path() / ("weir-cli-rocks-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Result rocks = weir("run clicks --events 30000 --users 500 --top 5 -p 2 --no-rest --state-backend rocksdb "
                      "--rocksdb-local-dir " + dir.string());
  Result incremental = weir("run clicks --events 30000 --users 500 --top 5 -p 2 --no-rest --state-backend rocksdb "
                            "--incremental-checkpoints --checkpoint-interval 10 --rocksdb-local-dir " + dir.string());
  ASSERT_EQ(heap.exitCode, 0) << heap.err;
  ASSERT_EQ(rocks.exitCode, 0) << rocks.err;
  ASSERT_EQ(incremental.exitCode, 0) << incremental.err;
  EXPECT_NE(rocks.out.find("counted 30,000 events"), std::string::npos) << rocks.out;
  EXPECT_EQ(top(rocks.out), top(heap.out));
  EXPECT_EQ(top(incremental.out), top(heap.out));
  EXPECT_TRUE(fs::is_empty(dir)) << "RocksDB's folders are removed when the job ends";
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(Cli, CtrlCCancelsTheJobAndExits130) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::execl(WEIR_BINARY, WEIR_BINARY, "run", "clicks", "--events", "2000000000", "--rest-port", "0", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* reader = ::fdopen(out[0], "r");
  std::array<char, 4096> line;
  // The job is running once the Web UI line is out.
  std::string seen;
  while (seen.find("Web UI") == std::string::npos && std::fgets(line.data(), line.size(), reader)) seen += line.data();
  ASSERT_NE(seen.find("Web UI"), std::string::npos) << seen;
  ::kill(pid, SIGINT);
  std::string rest;
  while (std::fgets(line.data(), line.size(), reader)) rest += line.data();
  std::fclose(reader);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << rest;
  EXPECT_EQ(WEXITSTATUS(status), 130) << rest;
  EXPECT_NE(rest.find("cancelling the job"), std::string::npos) << rest;
  EXPECT_NE(rest.find("cancelled after"), std::string::npos) << rest;
}

TEST(Cli, BadCheckpointOptionsNameTheOption) {
  expectUsageError("run clicks --checkpoint-interval 0 --no-rest", "--checkpoint-interval");
  expectUsageError("run clicks --checkpoint-interval -5 --no-rest", "--checkpoint-interval");
  expectUsageError("run clicks --checkpoint-timeout -1 --checkpoint-interval 10 --no-rest", "--checkpoint-timeout");
  expectUsageError("run clicks --checkpoint-timeout 100 --no-rest", "--checkpoint-interval");
  expectUsageError("run clicks --max-concurrent-checkpoints 0 --checkpoint-interval 10 --no-rest",
                   "--max-concurrent-checkpoints");
  expectUsageError("run clicks --checkpointing-mode sometimes --checkpoint-interval 10 --no-rest",
                   "--checkpointing-mode");
  expectUsageError("run clicks --restore yesterday --no-rest", "--restore");
  expectUsageError("run clicks --restore latest --no-rest", "--checkpoint-dir");
  expectUsageError("run clicks --checkpoint-interval 10 --checkpoint-dir /no/such/dir --no-rest", "/no/such/dir");
  expectUsageError("run clicks --from-checkpoint /no/such/chk-1 --no-rest", "/no/such/chk-1");
  expectUsageError("run clicks --unaligned --checkpointing-mode at-least-once --checkpoint-interval 10 --no-rest",
                   "--unaligned");
  expectUsageError("run clicks --aligned-checkpoint-timeout 50 --checkpoint-interval 10 --no-rest", "--unaligned");
  expectUsageError("run clicks --unaligned --aligned-checkpoint-timeout -1 --checkpoint-interval 10 --no-rest",
                   "--aligned-checkpoint-timeout");
  expectUsageError("run clicks --restart-strategy sometimes --no-rest", "restart strategy");
  expectUsageError("run clicks --incremental-checkpoints --checkpoint-interval 10 --no-rest",
                   "--incremental-checkpoints");
  Result r = weir("checkpoint inspect /no/such/chk-1");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("/no/such/chk-1"), std::string::npos) << r.err;
  r = weir("checkpoint clean /no/such/folder");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("/no/such/folder"), std::string::npos) << r.err;
}

// Ctrl-C cancels a job whose input is a FIFO no writer opened: the read that would
// never return does not hold the cancellation (it hung forever before), and the process
// exits 130 within a few seconds.
TEST(Cli, CtrlCCancelsAJobBlockedOnAnInputThatNeverComes) {
  fs::path fifo = fs::temp_directory_path() / ("weir-fifo-" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::execl(WEIR_BINARY, WEIR_BINARY, "run", "wordcount", "--input", fifo.c_str(), "--rest-port", "0", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* reader = ::fdopen(out[0], "r");
  std::array<char, 4096> line;
  std::string seen;
  while (seen.find("Web UI") == std::string::npos && std::fgets(line.data(), line.size(), reader)) seen += line.data();
  ASSERT_NE(seen.find("Web UI"), std::string::npos) << seen;
  auto start = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  std::string rest;
  while (std::fgets(line.data(), line.size(), reader)) rest += line.data();
  std::fclose(reader);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto took = std::chrono::steady_clock::now() - start;
  fs::remove(fifo);
  ASSERT_TRUE(WIFEXITED(status)) << rest;
  EXPECT_EQ(WEXITSTATUS(status), 130) << rest;
  EXPECT_LT(took, std::chrono::seconds(3)) << "the cancellation itself, not the 5 s watchdog, ended it\n" << rest;
}

// The demo is exact across a kill -9 and a resume: it counts every event once and
// prints the same top users as a run that was never interrupted (it exited 1 before,
// its sink's counts kept outside any state).
TEST(Cli, TheDemoResumedAfterAKillCountsEveryEventOnce) {
  fs::path dir = fs::temp_directory_path() / ("weir-demo-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  const std::string job = "run clicks --events 3000000 --users 2000 --top 5 -p 2 --no-rest";
  Result whole = weir(job);
  ASSERT_EQ(whole.exitCode, 0) << whole.err;
  auto topUsers = [](const std::string& out) { return out.substr(out.find("top 5 users:")); };

  std::string args = job + " --rate 1500000 --checkpoint-interval 50 --checkpoint-dir " +
                     (dir / "checkpoints").string() + " --restore latest";
  fs::path out = dir / "out.txt";
  pid_t pid = spawnWeir(args, out, dir / "err.txt");
  auto completed = [&] { return recordedCheckpoints(dir / "checkpoints") > 0; };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!completed() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed; make it longer";

  fs::remove(out);
  pid = spawnWeir(args, out, dir / "err.txt");
  ::waitpid(pid, &status, 0);
  std::ifstream in(out);
  std::string resumed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream errIn(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(errIn)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << resumed << err;
  EXPECT_NE(err.find("resuming from checkpoint"), std::string::npos) << err;
  EXPECT_NE(resumed.find("counted 3,000,000 events"), std::string::npos) << resumed;
  EXPECT_EQ(topUsers(resumed), topUsers(whole.out));
  fs::remove_all(dir);
}

// Waits up to `seconds` for `pid` to exit; kills it and returns -1 if it has not.
int exitCodeWithin(pid_t pid, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string fileText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The first group of `pattern` in `file` once a process has written it there (10 s at
// most; "" if never), and in `text` what the file then held.
std::string awaitInFile(const fs::path& file, const std::string& pattern, std::string& text) {
  const std::regex re(pattern);
  for (int i = 0; i < 500; ++i) {
    text = fileText(file);
    std::smatch m;
    if (std::regex_search(text, m, re)) return m[1];
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

// Flink's HistoryServer: a run with --archive-dir leaves its REST answers behind, and
// `weir history` serves them to `weir list` and `weir status` as the run's server did.
TEST(Cli, HistoryServesWhatARunThatEndedArchived) {
  const fs::path dir = fs::temp_directory_path() / ("weir-cli-history-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path archive = dir / "archive";
  auto run = weir::test::runWeir("run clicks --events 20000 --rest-port 0 --archive-dir " + archive.string(), dir);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  std::smatch id;
  ASSERT_TRUE(std::regex_search(run.err, id, std::regex("started with id ([0-9a-f]{32})"))) << run.err;
  const std::string jid = id[1];
  EXPECT_NE(run.err.find("weir: job " + jid + " archived to " + (archive / jid).string()), std::string::npos) << run.err;

  pid_t history = spawnWeir("history --port 0 --archive-dir " + archive.string(), dir / "history.out", dir / "history.err");
  std::string said;
  const std::string address = awaitInFile(dir / "history.err", "Web UI at http://(127\\.0\\.0\\.1:[0-9]+)", said);
  ASSERT_FALSE(address.empty()) << said;
  EXPECT_NE(said.find("weir: 1 job archive(s) from " + archive.string()), std::string::npos) << said;
  auto list = weir::test::runWeir("list -a --address " + address, dir);
  EXPECT_EQ(list.exitCode, 0) << list.err;
  EXPECT_TRUE(std::regex_search(list.out, std::regex(jid + "  FINISHED  .*click count"))) << list.out;
  auto status = weir::test::runWeir("status " + jid + " --address " + address, dir);
  EXPECT_EQ(status.exitCode, 0) << status.err;
  EXPECT_TRUE(std::regex_search(status.out, std::regex("Source: clicks.* out +20000 "))) << status.out;
  EXPECT_NE(status.out.find("restarts: 0"), std::string::npos) << status.out;
  // A job the archive does not hold is not found, as by a running server.
  auto unknown = weir::test::runWeir("status ffffffffffffffffffffffffffffffff --address " + address, dir);
  EXPECT_EQ(unknown.exitCode, 1) << unknown.out;
  ::kill(history, SIGTERM);
  EXPECT_EQ(exitCodeWithin(history, 10), 130);
  std::ifstream historyErr(dir / "history.err");
  const std::string historySaid((std::istreambuf_iterator<char>(historyErr)), std::istreambuf_iterator<char>());
  EXPECT_NE(historySaid.find("weir: termination signal received, stopping the history server (again to quit at once)"),
            std::string::npos)
      << historySaid;
  EXPECT_EQ(historySaid.find("cancelling"), std::string::npos) << historySaid;

  // A folder that is not there: one line naming it, exit code 2.
  auto missing = weir::test::runWeir("history --port 0 --archive-dir " + (dir / "none").string(), dir);
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_EQ(missing.err, "weir: the archive folder " + (dir / "none").string() + " does not exist\n");
  fs::remove_all(dir);
}

// A job served over TLS with a token: `weir list` needs the certificate trusted
// (--ca-file), `weir cancel` the token too ($WEIR_REST_TOKEN or --token-file), and each
// missing piece is one line that says what is missing.
TEST(Cli, JobControlOverTlsWithAToken) {
  const fs::path dir = fs::temp_directory_path() / ("weir-cli-tls-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto tls = weir::test::makeSelfSignedCertificate(dir);
  {
    std::ofstream(dir / "token") << "s3cret\n";
  }
  fs::permissions(dir / "token", fs::perms::owner_read | fs::perms::owner_write);
  ::unsetenv("WEIR_REST_TOKEN");  // the cases without a token must have none
  pid_t job = spawnWeir("run clicks --events 1000000000 --rate 100000 --rest-port 0 --rest-ssl-certificate " +
                            tls.certificate + " --rest-ssl-private-key " + tls.privateKey + " --rest-token-file " +
                            (dir / "token").string(),
                        dir / "job.out", dir / "job.err");
  // A failed assertion must not leave the job running for hours.
  struct KillAtExit {
    pid_t& pid;
    ~KillAtExit() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } killAtExit{job};
  std::string said;
  const std::string address = awaitInFile(dir / "job.err", "Web UI at (https://127\\.0\\.0\\.1:[0-9]+)", said);
  ASSERT_FALSE(address.empty()) << said;
  const std::string trust = " --ca-file " + tls.certificate;
  std::smatch id;
  ASSERT_TRUE(std::regex_search(said, id, std::regex("started with id ([0-9a-f]{32})"))) << said;
  const std::string jid = id[1];

  auto untrusted = weir::test::runWeir("list --address " + address, dir);
  EXPECT_EQ(untrusted.exitCode, 1);
  EXPECT_NE(untrusted.err.find("cannot reach the REST API at " + address), std::string::npos) << untrusted.err;
  auto list = weir::test::runWeir("list --address " + address + trust, dir);
  EXPECT_EQ(list.exitCode, 0) << list.err;
  EXPECT_NE(list.out.find(jid), std::string::npos) << list.out;
  auto noToken = weir::test::runWeir("cancel " + jid + " --address " + address + trust, dir);
  EXPECT_EQ(noToken.exitCode, 1);
  EXPECT_EQ(noToken.err,
            "weir: Changing a job needs the REST token (Authorization: Bearer <token>). Give it with --token-file or "
            "$WEIR_REST_TOKEN.\n");
  auto stopWithout = weir::test::runWeir("stop " + jid + " --address " + address + trust, dir);
  EXPECT_EQ(stopWithout.exitCode, 1) << stopWithout.err;
  EXPECT_EQ(stopWithout.err, noToken.err);
  // Over plain http to another machine the token is not sent at all.
  ::setenv("WEIR_REST_TOKEN", "s3cret", 1);
  auto clear = weir::test::runWeir("cancel " + jid + " --address 192.0.2.1:8081", dir);
  ::unsetenv("WEIR_REST_TOKEN");
  EXPECT_EQ(clear.exitCode, 1);
  EXPECT_EQ(clear.err, "weir: not sending the REST token in clear text to 192.0.2.1:8081; use https://\n");
  {
    std::ofstream(dir / "wrong") << "s3cre7\n";
  }
  fs::permissions(dir / "wrong", fs::perms::owner_read | fs::perms::owner_write);
  auto wrong = weir::test::runWeir("cancel " + jid + " --address " + address + trust + " --token-file " +
                                       (dir / "wrong").string(),
                                   dir);
  EXPECT_EQ(wrong.exitCode, 1);
  EXPECT_EQ(wrong.err, "weir: The REST token is not this server's.\n");
  // A token file others may read is used, with a warning (as ssh says of an open key).
  fs::permissions(dir / "wrong", fs::perms::group_read, fs::perm_options::add);
  auto open = weir::test::runWeir("cancel " + jid + " --address " + address + trust + " --token-file " +
                                      (dir / "wrong").string(),
                                  dir);
  EXPECT_EQ(open.exitCode, 1);
  EXPECT_EQ(open.err, "weir: warning: --token-file '" + (dir / "wrong").string() +
                          "' is open to others (mode 0640); chmod 600 it\nweir: The REST token is not this server's.\n");
  ::setenv("WEIR_REST_TOKEN", "s3cret", 1);
  auto cancel = weir::test::runWeir("cancel " + jid + " --address " + address + trust, dir);
  ::unsetenv("WEIR_REST_TOKEN");
  EXPECT_EQ(cancel.exitCode, 0) << cancel.err;
  EXPECT_EQ(exitCodeWithin(job, 30), 130) << fileText(dir / "job.err");  // cancelled
  job = -1;
  fs::remove_all(dir);
}

// A user's savepoint round trip: `weir savepoint` of the running demo, `weir stop
// --savepoint-path`, `weir savepoint inspect`, a resume with -s at another parallelism
// that counts every event once, and `weir savepoint dispose`. Requests the job cannot
// take are one line and exit code 2.
TEST(Cli, TheDemoStoppedWithASavepointResumesAndCountsEveryEventOnce) {
  fs::path dir = fs::temp_directory_path() / ("weir-demo-savepoint-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  const std::string job = "run clicks --events 3000000 --users 2000 --top 5";
  Result whole = weir(job + " -p 2 --no-rest");
  ASSERT_EQ(whole.exitCode, 0) << whole.err;
  auto topUsers = [](const std::string& out) { return out.substr(out.find("top 5 users:")); };

  fs::path out = dir / "out.txt";
  pid_t pid = spawnWeir(job + " -p 2 --rate 300000 --rest-port 0 --checkpoint-interval 50 --checkpoint-dir " +
                            (dir / "checkpoints").string(),
                        out, dir / "err.txt");
  std::string address;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (address.empty() && std::chrono::steady_clock::now() < deadline) {
    std::string text = fileText(out);
    auto at = text.find("Web UI: http://");
    if (at != std::string::npos && text.find('\n', at) != std::string::npos)
      address = text.substr(at + 15, text.find('\n', at) - at - 15);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(address.empty()) << fileText(dir / "err.txt");
  // $WEIR_REST_ADDRESS stands for --address.
  ::setenv("WEIR_REST_ADDRESS", address.c_str(), 1);
  Result list = weir("list");
  ::unsetenv("WEIR_REST_ADDRESS");
  ASSERT_EQ(list.exitCode, 0) << list.err;
  const std::string jobId = list.out.substr(list.out.find('\n') + 1, 32);
  EXPECT_NE(weir("list -r --address " + address).out.find(jobId), std::string::npos);
  EXPECT_NE(weir("list -a --address " + address).out.find(jobId), std::string::npos);
  while (recordedCheckpoints(dir / "checkpoints") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // status: the operators, then the checkpoints and restarts.
  Result status = weir("status " + jobId + " --address " + address);
  EXPECT_EQ(status.exitCode, 0) << status.err;
  EXPECT_TRUE(std::regex_search(status.out, std::regex("checkpoints: [1-9][0-9]* completed, 0 failed")))
      << status.out;
  EXPECT_NE(status.out.find("restarts: 0"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("watermark"), std::string::npos) << status.out;

  Result noFolder = weir("savepoint " + jobId + " --address " + address);
  EXPECT_EQ(noFolder.exitCode, 2) << noFolder.err;
  EXPECT_NE(noFolder.err.find("savepoint"), std::string::npos) << noFolder.err;
  Result badType = weir("savepoint " + jobId + " " + (dir / "sp").string() + " --type fancy --address " + address);
  EXPECT_EQ(badType.exitCode, 2) << badType.err;
  Result taken = weir("savepoint " + jobId + " " + (dir / "sp").string() + " --address " + address);
  ASSERT_EQ(taken.exitCode, 0) << taken.err;
  EXPECT_EQ(taken.out.rfind("Savepoint completed. Path: " + (dir / "sp").string() + "/savepoint-" + jobId.substr(0, 6), 0),
            0u) << taken.out;
  Result stopped = weir("stop " + jobId + " --savepoint-path " + (dir / "sp").string() + " --address " + address);
  ASSERT_EQ(stopped.exitCode, 0) << stopped.err;
  const std::string prefix = "Savepoint completed. Path: ";
  ASSERT_EQ(stopped.out.rfind(prefix, 0), 0u) << stopped.out;
  const std::string savepoint = stopped.out.substr(prefix.size(), stopped.out.find('\n') - prefix.size());
  EXPECT_EQ(exitCodeWithin(pid, 30), 0) << fileText(dir / "err.txt");
  EXPECT_NE(fileText(out).find("counted"), std::string::npos) << fileText(out);

  Result inspect = weir("savepoint inspect " + savepoint);
  EXPECT_EQ(inspect.exitCode, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("CANONICAL format, taken on the hashmap state backend"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("verified"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("    state 'clicks': ValueState{key:"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find(", namespace:void, value:int64}\n"), std::string::npos) << inspect.out;

  // Every user's count, as the savepoint holds it: one JSON line per user, whose counts
  // add up to the events the stopped run counted.
  Result dump = weir("savepoint dump " + savepoint + " --operator count-per-user --state clicks");
  ASSERT_EQ(dump.exitCode, 0) << dump.err;
  EXPECT_EQ(std::count(dump.out.begin(), dump.out.end(), '\n'), 2000) << dump.out.substr(0, 500);
  EXPECT_EQ(dump.out.rfind("{\"keyGroup\":", 0), 0u) << dump.out.substr(0, 200);
  int64_t dumped = 0;
  for (size_t at = dump.out.find("\"value\":"); at != std::string::npos; at = dump.out.find("\"value\":", at + 1))
    dumped += std::stoll(dump.out.substr(at + 8));
  const std::string first = fileText(out);
  const size_t countedAt = first.find("counted ");
  ASSERT_NE(countedAt, std::string::npos) << first;
  std::string counted = first.substr(countedAt + 8, first.find(' ', countedAt + 8) - countedAt - 8);
  counted.erase(std::remove(counted.begin(), counted.end(), ','), counted.end());
  EXPECT_EQ(dumped, std::stoll(counted)) << first;
  expectUsageError("savepoint dump " + savepoint + " --operator nope --state clicks", "count-per-user");
  expectUsageError("savepoint dump " + savepoint + " --operator count-per-user --state nope", "clicks");

  Result resumed = weir(job + " -p 3 --no-rest --checkpoint-interval 50 --checkpoint-dir " +
                        (dir / "checkpoints").string() + " -s " + savepoint);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("counted 3,000,000 events"), std::string::npos) << resumed.out;
  EXPECT_EQ(topUsers(resumed.out), topUsers(whole.out));

  EXPECT_EQ(weir("savepoint dispose " + savepoint).exitCode, 0);
  EXPECT_FALSE(fs::exists(savepoint));
  expectUsageError("savepoint dispose " + savepoint, "no checkpoint");
  expectUsageError(job + " -s " + (dir / "nothing").string(), "nothing");
  fs::remove_all(dir);
}

// #35.3 and #35.8: the newest completed checkpoint of a killed run is damaged (its
// _metadata a FIFO, then a link to /dev/zero) while an older one is whole. `--restore
// latest` fails at once naming it — no hang, no fall-back to the older one, no fresh
// start — and so does `checkpoint inspect`; made whole again, it resumes from it.
TEST(Cli, ADamagedLatestCheckpointIsAnErrorNotAFallBack) {
  fs::path dir = fs::temp_directory_path() / ("weir-damaged-latest-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  const std::string args = "run clicks --events 3000000 --users 2000 -p 2 --no-rest --rate 500000 "
                           "--checkpoint-interval 50 --retained-checkpoints 2 --checkpoint-dir " +
                           (dir / "checkpoints").string() + " --restore latest";
  pid_t pid = spawnWeir(args, dir / "out.txt", dir / "err.txt");
  // Two completed checkpoints, as the job's record lists them.
  auto recorded = [&] { return recordedCheckpoints(dir / "checkpoints") == 2; };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!recorded() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed; make it longer";
  ASSERT_TRUE(recorded());
  // The newest recorded: chk-<n> with the highest n (one job folder).
  fs::path newest;
  int64_t newestId = -1;
  for (const auto& e : fs::recursive_directory_iterator(dir / "checkpoints")) {
    std::string name = e.path().filename().string();
    if (name.rfind("chk-", 0) != 0 || !fs::exists(e.path() / "_metadata")) continue;
    if (std::stoll(name.substr(4)) > newestId) {
      newestId = std::stoll(name.substr(4));
      newest = e.path();
    }
  }
  const fs::path metadata = newest / "_metadata", saved = dir / "saved-metadata";
  fs::rename(metadata, saved);
  // `inspect` exits 2 where there is no checkpoint, 1 where it is damaged.
  auto refused = [&](const std::string& why, int inspectExitCode) {
    pid_t run = spawnWeir(args, dir / "out.txt", dir / "err.txt");
    EXPECT_EQ(exitCodeWithin(run, 20), 2) << "the run did not refuse at once";
    std::string err = fileText(dir / "err.txt");
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("latest completed checkpoint '" + newest.string() + "'"), std::string::npos) << err;
    EXPECT_NE(err.find(why), std::string::npos) << err;
    EXPECT_EQ(err.find("resuming"), std::string::npos) << err;
    pid_t inspect = spawnWeir("checkpoint inspect " + newest.string(), dir / "out.txt", dir / "err.txt");
    EXPECT_EQ(exitCodeWithin(inspect, 20), inspectExitCode) << fileText(dir / "err.txt");
  };
  refused("is missing", 2);
  ASSERT_EQ(::mkfifo(metadata.c_str(), 0644), 0);
  refused("not a regular file", 1);
  fs::remove(metadata);
  fs::create_symlink("/dev/zero", metadata);
  refused("not a regular file", 1);
  fs::remove(metadata);

  fs::rename(saved, metadata);
  pid = spawnWeir(args, dir / "out.txt", dir / "err.txt");
  EXPECT_EQ(exitCodeWithin(pid, 120), 0) << fileText(dir / "err.txt");
  EXPECT_NE(fileText(dir / "err.txt").find("resuming from checkpoint '" + newest.string() + "'"), std::string::npos)
      << fileText(dir / "err.txt");
  fs::remove_all(dir);
}

// #35.7: the demo's channels grow with the square of the parallelism, their memory
// does not: doubling -p from 64 to 128 (four times the channels) less than doubles the
// peak memory (it was 2.8 times: 386 MB to 1.09 GB, and 3.0 GB at -p 256). At -p 512
// the channels cannot fit the default network memory: refused at once with the numbers.
TEST(Cli, PeakMemoryGrowsAboutLinearlyWithTheParallelism) {
  fs::path dir = fs::temp_directory_path() / ("weir-network-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto peakKiB = [&](int parallelism) {
    pid_t pid = spawnWeir("run clicks --events 200000 --users 1000 --no-rest -p " + std::to_string(parallelism),
                          dir / "out.txt", dir / "err.txt");
    int status = 0;
    struct rusage usage {};
    ::wait4(pid, &status, 0, &usage);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "-p " << parallelism << ": " << fileText(dir / "err.txt");
    return usage.ru_maxrss;
  };
  const long at64 = peakKiB(64), at128 = peakKiB(128);
  EXPECT_LT(at128, 2 * at64) << "peak " << at64 << " KiB at -p 64, " << at128 << " KiB at -p 128";
  pid_t pid = spawnWeir("run clicks --events 200000 --no-rest -p 512", dir / "out.txt", dir / "err.txt");
  EXPECT_EQ(exitCodeWithin(pid, 60), 2);
  const std::string err = fileText(dir / "err.txt");
  EXPECT_NE(err.find("channels need at least"), std::string::npos) << err;
  EXPECT_NE(err.find("--network-memory"), std::string::npos) << err;
  fs::remove_all(dir);
}

// RocksDB's working folders of a run killed with -9 are removed by the next run in the
// same local directory (they leaked 8 MB a kill before), and by `checkpoint clean`.
TEST(Cli, TheRocksDBFoldersOfAKilledRunAreRemovedByTheNext) {
  fs::path dir = fs::temp_directory_path() / ("weir-rocks-leak-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "local");
  // The weir-rocksdb-* folders in the local directory, all or those of process `pid`.
  auto folders = [&](pid_t pid = 0) {
    const std::string prefix = "weir-rocksdb-" + (pid ? std::to_string(pid) + "-" : std::string());
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir / "local"))
      if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) ++n;
    return n;
  };
  const std::string rocks = " --no-rest -p 2 --state-backend rocksdb --rocksdb-local-dir " + (dir / "local").string();
  // Starts a long run and kills it once both its keyed subtasks made their folder.
  auto killARun = [&] {
    pid_t pid = spawnWeir("run clicks --events 100000000 --rate 1000000" + rocks, dir / "out.txt", dir / "err.txt");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (folders(pid) < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && folders(pid) == 2;
  };
  ASSERT_TRUE(killARun());
  ASSERT_TRUE(killARun());
  // The second run removed the first's folders as it started; its own are left.
  EXPECT_EQ(folders(), 2u);
  Result r = weir("run clicks --events 1000" + rocks);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(folders(), 0u) << "the dead run's folders are gone, and the run removed its own";
  // `checkpoint clean` removes them too.
  ASSERT_TRUE(killARun());
  fs::create_directories(dir / "checkpoints");
  Result clean = weir("checkpoint clean " + (dir / "checkpoints").string() + " --rocksdb-local-dir " +
                      (dir / "local").string());
  EXPECT_EQ(folders(), 0u) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("the RocksDB folder of a run that is gone"), std::string::npos) << clean.out;
  fs::remove_all(dir);
}

// `files` text files of 40,000 lines of five words each, w0..w299 drawn by `rng`, into
// folder `input`; returns how often each word occurs.
std::map<std::string, int64_t> writeWordFiles(const fs::path& input, int files, std::mt19937& rng) {
  fs::create_directories(input);
  std::map<std::string, int64_t> truth;
  for (int f = 0; f < files; ++f) {
    std::ofstream file(input / ("part-" + std::to_string(f) + ".txt"));
    for (int line = 0; line < 40000; ++line) {
      for (int w = 0; w < 5; ++w) {
        std::string word = "w" + std::to_string(std::uniform_int_distribution<int>(0, 299)(rng));
        ++truth[word];
        file << word << (w == 4 ? "\n" : " ");
      }
    }
  }
  return truth;
}

// kill -9 at random moments, 10 times, each run resumed with --restore latest: once the
// job completes, the last count printed for every word is its true count.
TEST(Cli, AJobKilledTenTimesResumesFromItsLatestCheckpoint) {
  fs::path dir = fs::temp_directory_path() / ("weir-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  std::mt19937 rng(2026);
  std::map<std::string, int64_t> truth = writeWordFiles(dir / "input", 6, rng);
  fs::path out = dir / "out.txt";
  std::string args = "run wordcount --input " + (dir / "input").string() + " --no-rest -p 2 --checkpoint-interval 30 " +
                     "--checkpoint-dir " + (dir / "checkpoints").string() + " --restore latest";
  for (int kill = 0; kill < 10; ++kill) {
    pid_t pid = spawnWeir(args, out, dir / "err.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(60, 300)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  // What the killed runs left: the newest checkpoint is whole, as `inspect` verifies.
  std::string newest;
  fs::file_time_type newestTime{};
  for (const auto& e : fs::recursive_directory_iterator(dir / "checkpoints")) {
    if (e.path().filename() != "_metadata") continue;
    if (newest.empty() || e.last_write_time() > newestTime) {
      newest = e.path().parent_path().string();
      newestTime = e.last_write_time();
    }
  }
  ASSERT_FALSE(newest.empty()) << "no run lived long enough to complete a checkpoint";
  Result inspect = weir("checkpoint inspect " + newest);
  EXPECT_EQ(inspect.exitCode, 0) << inspect.out << inspect.err;
  EXPECT_NE(inspect.out.find("verified:"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("_source_splits"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("_rolling"), std::string::npos) << inspect.out;
  // `checkpoint clean` removes the unfinished checkpoints the kills left, and the
  // complete ones stay whole.
  size_t unfinished = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "checkpoints"))
    if (e.is_directory() && e.path().filename().string().rfind("chk-", 0) == 0 && !fs::exists(e.path() / "_metadata"))
      ++unfinished;
  Result clean = weir("checkpoint clean " + (dir / "checkpoints").string());
  EXPECT_EQ(clean.exitCode, 0) << clean.out << clean.err;
  size_t said = 0;
  for (size_t at = 0; (at = clean.out.find(" unfinished checkpoints", at)) != std::string::npos; ++at) {
    size_t start = clean.out.rfind(' ', at - 1) + 1;
    said += std::stoul(clean.out.substr(start, at - start));
  }
  EXPECT_EQ(said, unfinished) << clean.out;
  for (const auto& e : fs::recursive_directory_iterator(dir / "checkpoints")) {
    if (e.is_directory() && e.path().filename().string().rfind("chk-", 0) == 0) {
      EXPECT_TRUE(fs::exists(e.path() / "_metadata")) << e.path() << " is unfinished and was left";
    }
  }
  EXPECT_EQ(weir("checkpoint inspect " + newest).exitCode, 0);

  pid_t pid = spawnWeir(args, out, dir / "err.txt");
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // It resumed (the check below could not tell a fresh start from a resume).
  std::ifstream errIn(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(errIn)), {});
  EXPECT_NE(err.find("resuming from checkpoint"), std::string::npos) << err;
  std::map<std::string, int64_t> last;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    // A killed run may leave half a line, which the next run's output continues.
    auto open = line.rfind("(\"");
    auto comma = open == std::string::npos ? open : line.find("\", ", open);
    if (open == std::string::npos || comma == std::string::npos) continue;
    last[line.substr(open + 2, comma - open - 2)] = std::stoll(line.substr(comma + 3));
  }
  EXPECT_EQ(last, truth);
  fs::remove_all(dir);
}

// #37: `wordcount --output` writes through FileSink. Killed with -9 at 20 random moments
// (each run once it completed a checkpoint, 0-150 ms later), with a checkpoint every
// 100-200 ms, each run resumed with --restore latest until one completes: the published
// part files hold each word's rolling counts 1, 2, ..., n exactly once — nothing lost,
// nothing twice — and nothing is left hidden.
TEST(Cli, AWordCountKilledTwentyTimesPublishesEveryCountOnce) {
  fs::path dir = fs::temp_directory_path() / ("weir-kill-output-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  std::mt19937 rng(37);
  std::map<std::string, int64_t> truth = writeWordFiles(dir / "input", 80, rng);
  auto args = [&] {
    return "run wordcount --input " + (dir / "input").string() + " --output " + (dir / "out").string() +
           " --no-rest -p 2 --checkpoint-interval " + std::to_string(std::uniform_int_distribution<int>(100, 200)(rng)) +
           " --checkpoint-dir " + (dir / "checkpoints").string() + " --restore latest";
  };
  auto completed = [&] { return completedByAllRuns(dir / "checkpoints"); };
  for (int kill = 0; kill < 20; ++kill) {
    const size_t before = completed();
    pid_t pid = spawnWeir(args(), dir / "out.txt", dir / "err.txt");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (completed() == before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 150)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "run " << kill << " completed before it was killed; make the input larger";
  }
  pid_t pid = spawnWeir(args(), dir / "out.txt", dir / "err.txt");
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream errIn(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(errIn)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << err;
  EXPECT_NE(err.find("resuming from checkpoint"), std::string::npos) << err;

  size_t hidden = 0, broken = 0;
  auto counts = publishedCounts(dir / "out", hidden, broken);
  EXPECT_EQ(hidden, 0u);
  EXPECT_EQ(broken, 0u);
  EXPECT_EQ(counts.size(), truth.size());
  RollingCountCheck check = checkRollingCounts(std::move(counts), truth);
  EXPECT_TRUE(check.exact()) << check;
  fs::remove_all(dir);
}

// The last count printed for each word (print mode) in `out`.
std::map<std::string, int64_t> lastCounts(const fs::path& out) {
  std::map<std::string, int64_t> last;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto open = line.rfind("(\"");
    auto comma = open == std::string::npos ? open : line.find("\", ", open);
    if (open == std::string::npos || comma == std::string::npos) continue;
    last[line.substr(open + 2, comma - open - 2)] = std::stoll(line.substr(comma + 3));
  }
  return last;
}

// A word count over one large file, killed once its first checkpoint completed: what
// the resume tests start from.
struct KilledWordCount {
  fs::path dir = fs::temp_directory_path() / ("weir-resume-" + std::to_string(::getpid()));
  std::map<std::string, int64_t> truth;
  std::string options;
  bool killed = false;

  KilledWordCount() {
    fs::remove_all(dir);
    fs::create_directories(dir / "checkpoints");
    std::mt19937 rng(7);
    std::ofstream file(dir / "in.txt");
    for (int line = 0; line < 300000; ++line) {
      for (int w = 0; w < 5; ++w) {
        std::string word = "w" + std::to_string(std::uniform_int_distribution<int>(0, 199)(rng));
        ++truth[word];
        file << word << (w == 4 ? "\n" : " ");
      }
    }
    file.close();
    options = " --no-rest -p 2 --checkpoint-interval 20 --checkpoint-dir " + (dir / "checkpoints").string() +
              " --restore latest --restart-strategy none";
    // Started with the input spelled relative to its folder.
    pid_t pid = spawnWeir("run wordcount --input in.txt" + options, dir / "out.txt", dir / "err.txt", dir);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto completed = [&] { return recordedCheckpoints(dir / "checkpoints") > 0; };
    while (!completed() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    killed = WIFSIGNALED(status);
  }
  ~KilledWordCount() { fs::remove_all(dir); }
  // Resumes with the input spelled `input`; returns the exit code and stderr.
  std::pair<int, std::string> resume(const std::string& input) {
    pid_t pid = spawnWeir("run wordcount --input " + input + options, dir / "out.txt", dir / "err.txt");
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::ifstream errIn(dir / "err.txt");
    std::string err((std::istreambuf_iterator<char>(errIn)), {});
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err};
  }
};

// The same file spelled another way is the same split: the resumed job reads on from
// the checkpoint and every count is exact (it read the file again from its start, and
// doubled the counts, when splits were known by the path as typed).
TEST(Cli, AJobResumedWithTheInputSpelledAnotherWayReadsNothingTwice) {
  KilledWordCount run;
  ASSERT_TRUE(run.killed) << "the run ended before it was killed; make the input larger";
  auto [code, err] = run.resume((run.dir / "." / "in.txt").string());
  ASSERT_EQ(code, 0) << err;
  EXPECT_NE(err.find("resuming from checkpoint"), std::string::npos) << err;
  EXPECT_EQ(lastCounts(run.dir / "out.txt"), run.truth);
}

// A file the checkpoint was reading that is gone or changed since is an error naming it,
// never a silent re-read or a read of other bytes at the old offset.
TEST(Cli, AResumedJobWhoseFileIsGoneOrChangedSaysSo) {
  {
    KilledWordCount run;
    ASSERT_TRUE(run.killed);
    fs::remove(run.dir / "in.txt");
    std::ofstream(run.dir / "other.txt") << "x\n";
    auto [code, err] = run.resume((run.dir / "other.txt").string());
    EXPECT_EQ(code, 1) << err;
    EXPECT_NE(err.find((run.dir / "in.txt").string() + "', which the restored checkpoint was reading"),
              std::string::npos) << err;
    EXPECT_NE(err.find("is gone"), std::string::npos) << err;
  }
  {
    KilledWordCount run;
    ASSERT_TRUE(run.killed);
    std::ofstream(run.dir / "in.txt", std::ios::app) << "one more line\n";
    auto [code, err] = run.resume((run.dir / "in.txt").string());
    EXPECT_EQ(code, 1) << err;
    EXPECT_NE(err.find("changed since the restored checkpoint"), std::string::npos) << err;
  }
}

// An input of one endless line stops at the max line length with an error, instead of
// taking all memory.
TEST(Cli, AnEndlessLineIsAnErrorNotUnboundedMemory) {
  Result r = weir("run wordcount --input /dev/zero --no-rest");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("bad record in '/dev/zero' at position 0: the line is longer than 8388608 bytes"), std::string::npos)
      << r.err;
}

}  // namespace
