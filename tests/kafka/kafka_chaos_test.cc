// `weir run kafka-wordcount` killed with -9 at random moments and resumed with
// `--restore latest`, reading a topic kcat filled, against librdkafka's mock cluster in a
// process of its own (which outlives every kill): the counts it publishes are checked
// against the truth of the input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "support/kafka_cluster.h"
#include "support/weir_process.h"
#include "support/word_counts.h"

namespace weir::test {
namespace {

namespace fs = std::filesystem;

// The lines of `file`, each "key<TAB>value", into `topic` through kcat.
void kcatProduce(const KafkaCluster& cluster, const std::string& topic, const fs::path& file, const fs::path& dir) {
  const std::string command = "kcat -P -b " + cluster.bootstrapServers() + " -t " + topic + " -K '\t' -l " +
                              file.string() + " 2>" + (dir / "kcat.err").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << "kcat failed: see " << (dir / "kcat.err");
}

// `records` lines of three words from 500, keyed by their first word, into `topic`
// through kcat; returns how often each word occurs.
std::map<std::string, int64_t> produceLines(const KafkaCluster& cluster, const std::string& topic, int64_t records,
                                            const fs::path& dir) {
  std::mt19937 rng(11);
  std::map<std::string, int64_t> truth;
  const fs::path file = dir / "lines.txt";
  {
    std::ofstream out(file);
    for (int64_t i = 0; i < records; ++i) {
      std::string line;
      for (int w = 0; w < 3; ++w) {
        std::string word = "w";  // not "w" + ...: g++ 12 warns falsely (-Wrestrict) on that
        word += std::to_string(std::uniform_int_distribution<int>(0, 499)(rng));
        ++truth[word];
        line += (w == 0 ? "" : " ") + word;
      }
      out << line.substr(0, line.find(' ')) << '\t' << line << '\n';
    }
  }
  kcatProduce(cluster, topic, file, dir);
  return truth;
}

// Runs `args` and kills it with -9 `delayMs` after one more checkpoint completed, unless
// it ends first; its wait status.
int killAfterACheckpoint(const std::string& args, const fs::path& dir, int delayMs) {
  const size_t before = completedByAllRuns(dir / "checkpoints");
  pid_t pid = spawnWeir(args, dir / "out.txt", dir / "err.txt");
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (completedByAllRuns(dir / "checkpoints") == before && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

struct Kills {
  int killed = 0;  // runs killed before they ended
  int exitCode = -1;
  std::string err;  // of the last run
};

// Runs `args` until a run ends on its own: each run is killed with -9 a random
// 0-`maxDelayMs` ms after one more checkpoint completed, `kills` runs at most.
Kills killAndResume(const std::string& args, int kills, int maxDelayMs, const fs::path& dir, std::mt19937& rng) {
  Kills k;
  int status = 0;
  for (;;) {
    const bool mayKill = k.killed < kills;
    if (mayKill) {
      status = killAfterACheckpoint(args, dir, std::uniform_int_distribution<int>(0, maxDelayMs)(rng));
    } else {
      pid_t pid = spawnWeir(args, dir / "out.txt", dir / "err.txt");
      ::waitpid(pid, &status, 0);
    }
    if (!mayKill || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) break;
    ++k.killed;
  }
  k.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream errIn(dir / "err.txt");
  k.err.assign(std::istreambuf_iterator<char>(errIn), {});
  return k;
}

// The rolling counts the job wrote into the topic "counts", against `truth`.
RollingCountCheck checkCountsTopic(const KafkaCluster& cluster, const std::map<std::string, int64_t>& truth) {
  std::map<std::string, std::vector<int64_t>> counts;
  for (const auto& r : readAll(cluster.bootstrapServers(), "counts")) counts[r.key].push_back(std::stoll(r.value));
  return checkRollingCounts(std::move(counts), truth);
}

fs::path freshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("weir-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "checkpoints");
  return dir;
}

// 1.5 M records in 24 partitions (the mock keeps 5 MiB of each), read at parallelism 3
// with a checkpoint every 50 ms, killed 20 times, each a random 0-50 ms after a
// checkpoint: the exactly-once file sink publishes every word's counts 1..n once.
TEST(KafkaChaos, AKafkaWordCountKilledTwentyTimesPublishesEveryCountOnce) {
  constexpr int64_t kRecords = 1'500'000;
  fs::path dir = freshDir("kafka-chaos-files");
  KafkaCluster cluster;
  cluster.createTopic("lines", 24);
  const auto truth = produceLines(cluster, "lines", kRecords, dir);
  std::mt19937 rng(29);
  const std::string args = "run kafka-wordcount --bootstrap-servers " + cluster.bootstrapServers() +
                           " --input-topic lines --bounded --output " + (dir / "out").string() +
                           " --no-rest -p 3 --checkpoint-interval 50 --checkpoint-dir " +
                           (dir / "checkpoints").string() + " --restore latest";
  Kills k = killAndResume(args, 20, 50, dir, rng);
  // 1 M records took 40 kills on a quiet machine, and ran out after 19 beside a build.
  EXPECT_EQ(k.killed, 20) << "the runs ended too soon: make the input larger";
  ASSERT_EQ(k.exitCode, 0) << k.err;
  EXPECT_NE(k.err.find("resuming from checkpoint"), std::string::npos) << k.err;
  size_t hidden = 0, broken = 0;
  RollingCountCheck check = checkRollingCounts(publishedCounts(dir / "out", hidden, broken), truth);
  EXPECT_TRUE(check.exact()) << check;
  EXPECT_EQ(hidden, 0u);
  EXPECT_EQ(broken, 0u);
  fs::remove_all(dir);
}

// The same into a Kafka topic AT_LEAST_ONCE: every count of every word is there, some
// maybe twice.
TEST(KafkaChaos, AtLeastOnceIntoATopicKeepsEveryCountAcrossKills) {
  constexpr int64_t kRecords = 300'000;
  fs::path dir = freshDir("kafka-chaos-topic");
  KafkaCluster cluster;
  cluster.createTopic("lines", 16);
  cluster.createTopic("counts", 16);
  const auto truth = produceLines(cluster, "lines", kRecords, dir);
  std::mt19937 rng(31);
  const std::string args = "run kafka-wordcount --bootstrap-servers " + cluster.bootstrapServers() +
                           " --input-topic lines --bounded --output-topic counts --delivery-guarantee at-least-once"
                           " --no-rest -p 3 --checkpoint-interval 50 --checkpoint-dir " +
                           (dir / "checkpoints").string() + " --restore latest";
  Kills k = killAndResume(args, 5, 50, dir, rng);
  EXPECT_EQ(k.killed, 5) << "the runs ended too soon: make the input larger";
  ASSERT_EQ(k.exitCode, 0) << k.err;
  RollingCountCheck check = checkCountsTopic(cluster, truth);
  EXPECT_TRUE(check.atLeastOnce()) << check;
  fs::remove_all(dir);
}

// The transaction markers of prefix "chaos" under `dir`'s checkpoints, by id: what
// each says (open, committing, committed, aborted), read here from the files.
std::map<std::string, std::string> markers(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir / "checkpoints" / "kafka-transactions" / "chaos")) {
    if (e.path().filename().string()[0] == '.') continue;  // one being written
    std::ifstream in(e.path());
    std::getline(in, out[e.path().filename().string()]);
  }
  return out;
}

std::string exactlyOnceArgs(const KafkaCluster& cluster, const fs::path& dir, int parallelism) {
  return "run kafka-wordcount --bootstrap-servers " + cluster.bootstrapServers() +
         " --input-topic lines --bounded --output-topic counts --delivery-guarantee exactly-once"
         " --transactional-id-prefix chaos --no-rest -p " + std::to_string(parallelism) +
         " --checkpoint-interval 200 --checkpoint-dir " + (dir / "checkpoints").string() + " --restore latest";
}

// EXACTLY_ONCE at p = 3 killed with -9 and resumed at p = 2: the transactions subtask
// 2 left open are aborted by subtask 0 (2 mod 2), since no subtask 2 is left to; the
// resumed job finishes with every count there.
TEST(KafkaChaos, ARescaledJobAbortsTheTransactionsOfSubtasksThatAreGone) {
  constexpr int64_t kRecords = 300'000;
  fs::path dir = freshDir("kafka-chaos-rescale");
  KafkaCluster cluster;
  cluster.createTopic("lines", 16);
  cluster.createTopic("counts", 16);
  const auto truth = produceLines(cluster, "lines", kRecords, dir);
  ASSERT_TRUE(WIFSIGNALED(killAfterACheckpoint(exactlyOnceArgs(cluster, dir, 3), dir, 100)))
      << "the run ended before it was killed; make the input larger";
  std::set<std::string> leftBySubtask2;
  for (const auto& [id, state] : markers(dir))
    if (state == "open" && id.rfind("chaos-2-", 0) == 0) leftBySubtask2.insert(id);
  ASSERT_FALSE(leftBySubtask2.empty()) << "the kill left no transaction of subtask 2 open";

  Ran resumed = runWeir(exactlyOnceArgs(cluster, dir, 2), dir);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  // Each is aborted as lingering, unless the restored checkpoint held it (its commit was
  // still to come when the kill hit): then its records were committed on restore.
  const auto after = markers(dir);
  int aborted = 0;
  for (const auto& id : leftBySubtask2) {
    if (after.at(id) == "committed") continue;
    ++aborted;
    EXPECT_EQ(after.at(id), "aborted") << id;
    EXPECT_NE(resumed.err.find("(1/2) aborted the lingering Kafka transaction '" + id + "'"), std::string::npos)
        << resumed.err;
  }
  EXPECT_GT(aborted, 0) << "subtask 2's newest transaction began after the last checkpoint: it lingers";
  for (const auto& [id, state] : after) EXPECT_NE(state, "open") << id;
  RollingCountCheck check = checkCountsTopic(cluster, truth);
  EXPECT_TRUE(check.atLeastOnce()) << check;  // the mock shows aborted records too
  fs::remove_all(dir);
}

// The JSON window example (`weir run kafka-windows`), killed with -9 once and resumed:
// each page's count in each event-time window equals a brute force over the events,
// none missing. (A window may show twice on the mock, which shows aborted transactions'
// records too, but always with the right count: the set of results is the truth.)
TEST(KafkaChaos, TheWindowExampleCountsEveryWindowRightAcrossAKill) {
  constexpr int64_t kEvents = 200'000, kWindow = 10'000;
  fs::path dir = freshDir("kafka-windows");
  KafkaCluster cluster;
  cluster.createTopic("views", 16);
  cluster.createTopic("view-counts", 16);
  // Event i at 5 i ms, up to 400 ms early: never later than the job's 1 s of
  // out-of-orderness allows, so no event is dropped, whatever the interleaving.
  std::mt19937 rng(53);
  std::map<std::pair<std::string, int64_t>, int64_t> views;
  {
    std::ofstream out(dir / "views.txt");
    for (int64_t i = 0; i < kEvents; ++i) {
      const std::string page = "/p" + std::to_string(std::uniform_int_distribution<int>(0, 49)(rng));
      const int64_t at = 1'700'000'000'000 + 5 * i - std::uniform_int_distribution<int>(0, 400)(rng);
      ++views[{page, at - at % kWindow}];
      out << page << "\t{\"page\":\"" << page << "\",\"user\":" << i % 1000 << ",\"timestamp\":" << at << "}\n";
    }
  }
  kcatProduce(cluster, "views", dir / "views.txt", dir);
  std::set<std::tuple<std::string, int64_t, int64_t, int64_t>> truth;
  for (const auto& [window, count] : views) truth.insert({window.first, window.second, window.second + kWindow, count});

  const std::string args = "run kafka-windows --bootstrap-servers " + cluster.bootstrapServers() +
                           " --input-topic views --output-topic view-counts --bounded --window " +
                           std::to_string(kWindow) + " --no-rest -p 2 --checkpoint-interval 100 --checkpoint-dir " +
                           (dir / "checkpoints").string() + " --restore latest";
  ASSERT_TRUE(WIFSIGNALED(killAfterACheckpoint(args, dir, 50))) << "the run ended before it was killed";
  Ran resumed = runWeir(args, dir);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  std::set<std::tuple<std::string, int64_t, int64_t, int64_t>> got;
  for (const auto& r : readAll(cluster.bootstrapServers(), "view-counts")) {
    const auto v = nlohmann::json::parse(r.value);
    EXPECT_EQ(r.key, v.at("page").get<std::string>());
    got.insert({v.at("page").get<std::string>(), v.at("window_start").get<int64_t>(),
                v.at("window_end").get<int64_t>(), v.at("views").get<int64_t>()});
  }
  EXPECT_EQ(got.size(), truth.size());
  EXPECT_TRUE(got == truth) << "the results differ from the brute force";
  fs::remove_all(dir);
}

// EXACTLY_ONCE into a topic, killed with -9 three times: `weir transactions list` shows
// the transactions the last kill left open, `abort` aborts them (and says so for each),
// after which none is listed; the resumed job finishes with every count there.
TEST(KafkaChaos, TheTransactionsAKilledJobLeftOpenAreListedAndAborted) {
  // Enough that none of the three runs reads all of it before its kill: 300 000 were
  // read whole by the third run, at times, before a checkpoint of its own completed.
  constexpr int64_t kRecords = 1'000'000;
  fs::path dir = freshDir("kafka-chaos-transactions");
  KafkaCluster cluster;
  cluster.createTopic("lines", 16);
  cluster.createTopic("counts", 16);
  const auto truth = produceLines(cluster, "lines", kRecords, dir);
  std::mt19937 rng(41);
  const std::string checkpoints = (dir / "checkpoints").string();
  const std::string args = exactlyOnceArgs(cluster, dir, 3);
  for (int kill = 0; kill < 3; ++kill)
    ASSERT_TRUE(WIFSIGNALED(killAfterACheckpoint(args, dir, std::uniform_int_distribution<int>(50, 150)(rng))))
        << "the run ended before it was killed; make the input larger";
  std::set<std::string> open;
  for (const auto& [id, state] : markers(dir))
    if (state == "open") open.insert(id);
  ASSERT_FALSE(open.empty()) << "the kill left no transaction open";
  Ran list = runWeir("transactions list " + checkpoints, dir);
  ASSERT_EQ(list.exitCode, 0) << list.err;
  for (const auto& id : open) EXPECT_NE(list.out.find("kafka  " + id + "  open"), std::string::npos) << list.out;

  Ran unreachable = runWeir("transactions abort " + checkpoints + " --bootstrap-servers 127.0.0.1:1", dir);
  EXPECT_EQ(unreachable.exitCode, 1) << unreachable.out << unreachable.err;
  EXPECT_NE(unreachable.err.find("cannot initialize transactional id 'chaos-"), std::string::npos) << unreachable.err;
  EXPECT_EQ(std::count(unreachable.err.begin(), unreachable.err.end(), '\n'), 1) << unreachable.err;

  Ran abort = runWeir("transactions abort " + checkpoints + " --bootstrap-servers " + cluster.bootstrapServers(), dir);
  ASSERT_EQ(abort.exitCode, 0) << abort.err;
  for (const auto& id : open) EXPECT_NE(abort.out.find("aborted " + id + "\n"), std::string::npos) << abort.out;
  Ran after = runWeir("transactions list " + checkpoints, dir);
  EXPECT_EQ(after.out.find("  open"), std::string::npos) << after.out;
  EXPECT_EQ(runWeir("transactions abort " + checkpoints + " --bootstrap-servers " + cluster.bootstrapServers() +
                        " chaos-9-9",
                    dir)
                .exitCode,
            2);

  Ran resumed = runWeir(args, dir);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  RollingCountCheck check = checkCountsTopic(cluster, truth);
  EXPECT_TRUE(check.atLeastOnce()) << check;  // the mock shows aborted records too
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir::test
