// The REST API as a client sees it: a real server on a free loopback port, real jobs.
#include "rest/rest_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "support/gated_map.h"
#include "support/operator_metrics.h"
#include "support/promtool.h"
#include "support/tls_files.h"
#include "support/refusing_snapshot.h"
#include "support/slow_sink.h"
#include "support/staged_batch_job.h"
#include "rest/job_archive.h"
#include "support/user_metrics_job.h"
#include "weir/weir.h"

namespace weir {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

RestOptions testOptions() { return test::restOnAnyPort(); }

// The value of every sample of `metric` in a Prometheus text page whose labels include
// all of `labels`.
std::vector<double> prometheusSamples(const std::string& page, const std::string& metric,
                                      const std::vector<std::string>& labels) {
  std::vector<double> out;
  size_t at = 0;
  while ((at = page.find("\n" + metric + "{", at)) != std::string::npos) {
    const size_t end = page.find('\n', at + 1);
    const std::string line = page.substr(at + 1, end - at - 1);
    at = end;
    if (std::all_of(labels.begin(), labels.end(), [&](const std::string& l) { return line.find(l) != std::string::npos; }))
      out.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return out;
}

// Their sum; -1 when there is none.
double prometheusSum(const std::string& page, const std::string& metric, const std::vector<std::string>& labels) {
  const auto samples = prometheusSamples(page, metric, labels);
  return samples.empty() ? -1 : std::accumulate(samples.begin(), samples.end(), 0.0);
}

bool prometheusHas(const std::string& page, const std::string& metric, const std::vector<std::string>& labels) {
  return !prometheusSamples(page, metric, labels).empty();
}

using testing::startSlowJob;

struct Server {
  explicit Server(const JobClient& job) {
    std::string url = job.getWebInterfaceURL();
    port = std::stoi(url.substr(url.rfind(':') + 1));
    const size_t host = url.find("//") + 2;
    client = std::make_unique<httplib::Client>(url.substr(host, url.rfind(':') - host), port);
    client->set_read_timeout(10, 0);
  }
  json get(const std::string& path, int expectStatus = 200) {
    auto r = client->Get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, expectStatus) << path << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << path;
    return json::parse(r->body);
  }
  int port;
  std::unique_ptr<httplib::Client> client;
};

// Polls `condition` for up to 10 s.
template <class F>
bool eventually(F condition) {
  for (int i = 0; i < 200; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Sums per key of numbers from a generator at `perSecond`: a job with keyed state.
JobClient startKeyedSums(StreamExecutionEnvironment& env, double perSecond, const std::string& name) {
  env.fromSource(DataGeneratorSource([](int64_t i) { return std::pair<int64_t, int64_t>{i % 100, 1}; },
                                     kUnboundedCount, RateLimiterStrategy::perSecond(perSecond)),
                 WatermarkStrategy<std::pair<int64_t, int64_t>>::noWatermarks(), "numbers")
      .keyBy([](const std::pair<int64_t, int64_t>& p) { return p.first; })
      .sum<1>()
      .sinkTo(DiscardingSink<std::pair<int64_t, int64_t>>());
  return env.executeAsync(name);
}

TEST(RestServer, ShowsCheckpointCountsHistoryConfigAndMetrics) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.enableCheckpointing(50ms);
  auto job = startKeyedSums(env, 100000, "checkpointed job");
  Server server(job);
  const std::string jid = job.getJobID();
  ASSERT_TRUE(eventually([&] { return server.get("/jobs/" + jid + "/checkpoints")["counts"]["completed"] >= 2; }));
  auto cp = server.get("/jobs/" + jid + "/checkpoints");
  const auto& latest = cp["latest"]["completed"];
  EXPECT_EQ(latest["status"], "COMPLETED");
  EXPECT_GT(latest["state_size"].get<int64_t>(), 0);
  EXPECT_NE(latest["external_path"].get<std::string>().find("chk-" + std::to_string(latest["id"].get<int64_t>())),
            std::string::npos);
  ASSERT_FALSE(cp["history"].empty());
  EXPECT_EQ(cp["history"][0]["id"], latest["id"]);  // newest first
  auto config = server.get("/jobs/" + jid + "/checkpoints/config");
  EXPECT_EQ(config["mode"], "exactly_once");
  EXPECT_EQ(config["interval"], 50);
  EXPECT_EQ(config["timeout"], 600000);
  auto metrics = server.get("/jobs/" + jid + "/metrics?get=numberOfCompletedCheckpoints,lastCheckpointSize");
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_GE(std::stod(metrics[0]["value"].get<std::string>()), 2);
  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  EXPECT_GE(prometheusSum(prometheus->body, "weir_jobmanager_job_number_of_completed_checkpoints_total",
                          {"job_id=\"" + jid + "\""}),
            2);
  EXPECT_GT(prometheusSum(prometheus->body, "weir_jobmanager_job_last_checkpoint_duration_seconds",
                          {"job_id=\"" + jid + "\""}),
            0);
  auto [code, said] = test::promtoolCheck(prometheus->body);
  EXPECT_EQ(code, 0) << said;
  EXPECT_EQ(said, "");
  job.cancel();
  job.wait();
}

// Commons Math's legacy percentile over sorted values, as Flink's summary has them.
double legacyPercentile(const std::vector<int64_t>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() + 1);
  if (pos < 1) return static_cast<double>(sorted.front());
  if (pos >= static_cast<double>(sorted.size())) return static_cast<double>(sorted.back());
  const auto at = static_cast<size_t>(pos);
  return static_cast<double>(sorted[at - 1]) + (pos - static_cast<double>(at)) * static_cast<double>(sorted[at] - sorted[at - 1]);
}

// Flink's checkpoint statistics: the summary of the completed checkpoints agrees with
// their history, latest.failed names the refused one, and a job restored from a
// retained checkpoint shows it as latest.restored.
TEST(RestServer, CheckpointSummaryLatestFailedAndRestoredAreFlinks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-restored-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto build = [&](StreamExecutionEnvironment& env) {
    env.enableCheckpointing(50ms);
    env.getCheckpointConfig().setCheckpointStorage(dir.string());
    env.getCheckpointConfig().setTolerableCheckpointFailureNumber(100);
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(20000)),
                   WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
        .map(test::RefusesCheckpoint2{})
        .uid("refuses")
        .keyBy([](int64_t i) { return i % 10; })
        .reduce([](int64_t a, int64_t b) { return a + b; })
        .uid("sums")
        .sinkTo(DiscardingSink<int64_t>());
  };
  auto envA = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  build(envA);
  auto jobA = envA.executeAsync("job A");
  json cp, failedDetails, ended;
  {
    Server server(jobA);
    const std::string jid = jobA.getJobID();
    // Taken while it runs: a cancel fails the checkpoint in progress, as in Flink.
    ASSERT_TRUE(eventually([&] {
      cp = server.get("/jobs/" + jid + "/checkpoints");
      return cp["counts"]["completed"] >= 3;
    }));
    failedDetails = server.get("/jobs/" + jid + "/checkpoints/details/2");
    jobA.cancel();
    jobA.wait();
    ended = server.get("/jobs/" + jid + "/checkpoints");  // its last checkpoint is the one retained
  }
  const json& failed = cp["latest"]["failed"];
  ASSERT_TRUE(failed.is_object()) << cp.dump();
  EXPECT_EQ(failed["@class"], "failed");
  EXPECT_EQ(failed["id"], 2);
  EXPECT_EQ(failed["status"], "FAILED");
  EXPECT_NE(failed["failure_message"].get<std::string>().find("snapshot refused"), std::string::npos) << failed;
  EXPECT_GE(failed["failure_timestamp"].get<int64_t>(), failed["trigger_timestamp"].get<int64_t>());
  EXPECT_TRUE(cp["latest"]["restored"].is_null());
  // A failed checkpoint's details count the subtasks that acknowledged it.
  EXPECT_EQ(failedDetails["status"], "FAILED");
  int acknowledged = 0;
  for (const auto& [id, task] : failedDetails["tasks"].items()) acknowledged += task["num_acknowledged_subtasks"].get<int>();
  EXPECT_EQ(acknowledged, failed["num_acknowledged_subtasks"]);
  EXPECT_LT(acknowledged, failed["num_subtasks"].get<int>()) << "the refusing subtask acknowledged";
  EXPECT_EQ(cp["counts"]["restored"], 0);
  // Every completed checkpoint is in the history (it keeps 10): the summary over them.
  ASSERT_LE(cp["counts"]["total"].get<int64_t>(), 10) << "more checkpoints than the history keeps";
  for (const char* figure : {"end_to_end_duration", "state_size", "checkpointed_size", "persisted_data"}) {
    std::vector<int64_t> values;
    for (const json& h : cp["history"])
      if (h["status"] == "COMPLETED") values.push_back(h[figure].get<int64_t>());
    ASSERT_EQ(values.size(), cp["counts"]["completed"].get<size_t>());
    std::sort(values.begin(), values.end());
    int64_t sum = 0;
    for (int64_t v : values) sum += v;
    const json& s = cp["summary"][figure];
    EXPECT_EQ(s["min"], values.front()) << figure;
    EXPECT_EQ(s["max"], values.back()) << figure;
    EXPECT_EQ(s["avg"], sum / static_cast<int64_t>(values.size())) << figure;
    for (auto [key, q] : {std::pair{"p50", 0.5}, std::pair{"p90", 0.9}, std::pair{"p99", 0.99}})
      EXPECT_DOUBLE_EQ(s[key].get<double>(), legacyPercentile(values, q)) << figure << " " << key;
  }
  EXPECT_EQ(cp["summary"]["alignment_buffered"]["max"], 0);
  const json& completed = cp["latest"]["completed"];
  EXPECT_EQ(completed["@class"], "completed");
  EXPECT_EQ(completed["num_acknowledged_subtasks"], completed["num_subtasks"]);
  EXPECT_GE(completed["latest_ack_timestamp"].get<int64_t>(), completed["trigger_timestamp"].get<int64_t>());

  // Job B resumes from job A's latest checkpoint (read after A ended: one is retained).
  const json& retained = ended["latest"]["completed"];
  const std::string path = retained["external_path"];
  auto envB = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  build(envB);
  envB.setRestorePath(path);
  const int64_t before = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  auto jobB = envB.executeAsync("job B");
  {
    Server server(jobB);
    const json restored = server.get("/jobs/" + jobB.getJobID() + "/checkpoints");
    EXPECT_EQ(restored["counts"]["restored"], 1);
    const json& r = restored["latest"]["restored"];
    ASSERT_TRUE(r.is_object()) << restored.dump();
    EXPECT_EQ(r["id"], retained["id"]);
    EXPECT_TRUE(fs::equivalent(r["external_path"].get<std::string>(), path)) << r;
    EXPECT_EQ(r["is_savepoint"], false);
    EXPECT_GE(r["restore_timestamp"].get<int64_t>(), before);
    jobB.cancel();
    jobB.wait();
  }
  fs::remove_all(dir);
}

// Flink's checkpoint details: each task's part of a checkpoint, by vertex id, adds up to
// the checkpoint; each subtask's adds up to its task's; bad ids are 400 and 404.
TEST(RestServer, CheckpointDetailsShowEachTaskAndSubtask) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.setParallelism(2);
  // One every 200 ms: the checkpoint read stays in the history of ten for 2 s while its
  // details are read (the newest completed one is kept beyond it; this one may not be).
  env.enableCheckpointing(200ms);
  auto job = startKeyedSums(env, 20000, "detailed job");
  Server server(job);
  const std::string jid = job.getJobID();
  json latest;
  ASSERT_TRUE(eventually([&] {
    latest = server.get("/jobs/" + jid + "/checkpoints")["latest"]["completed"];
    return latest.is_object();
  }));
  const std::string cid = std::to_string(latest["id"].get<int64_t>());
  const json details = server.get("/jobs/" + jid + "/checkpoints/details/" + cid);
  EXPECT_EQ(details["id"], latest["id"]);
  EXPECT_EQ(details["status"], "COMPLETED");
  std::set<std::string> vertexIds, taskIds;
  const json overview = server.get("/jobs/" + jid);
  for (const json& v : overview["vertices"]) vertexIds.insert(v["id"].get<std::string>());
  int64_t stateSize = 0, checkpointedSize = 0;
  for (const auto& [id, task] : details["tasks"].items()) {
    taskIds.insert(id);
    EXPECT_EQ(task["num_subtasks"], 2) << id;
    EXPECT_EQ(task["num_acknowledged_subtasks"], 2) << id;
    EXPECT_LE(task["end_to_end_duration"].get<int64_t>(), details["end_to_end_duration"].get<int64_t>()) << id;
    stateSize += task["state_size"].get<int64_t>();
    checkpointedSize += task["checkpointed_size"].get<int64_t>();

    const json sub = server.get("/jobs/" + jid + "/checkpoints/details/" + cid + "/subtasks/" + id);
    ASSERT_EQ(sub["subtasks"].size(), 2u) << id;
    int64_t subtaskStates = 0, largest = 0;
    for (size_t i = 0; i < 2; ++i) {
      const json& s = sub["subtasks"][i];
      EXPECT_EQ(s["index"], i);
      EXPECT_EQ(s["status"], "completed");
      EXPECT_GE(s["ack_timestamp"].get<int64_t>(), details["trigger_timestamp"].get<int64_t>());
      subtaskStates += s["state_size"].get<int64_t>();
      largest = std::max(largest, s["state_size"].get<int64_t>());
    }
    EXPECT_EQ(subtaskStates, task["state_size"]) << id;
    EXPECT_EQ(sub["summary"]["state_size"]["max"], largest) << id;
    EXPECT_EQ(sub["state_size"], task["state_size"]) << id;
  }
  EXPECT_EQ(taskIds, vertexIds);
  EXPECT_EQ(stateSize, details["state_size"]);
  EXPECT_EQ(checkpointedSize, details["checkpointed_size"]);
  EXPECT_GT(stateSize, 0) << "the keyed sums hold state";

  server.get("/jobs/" + jid + "/checkpoints/details/999999", 404);
  server.get("/jobs/" + jid + "/checkpoints/details/12x", 400);
  server.get("/jobs/" + jid + "/checkpoints/details/" + cid + "/subtasks/" + std::string(32, '0'), 404);
  job.cancel();
  job.wait();
}

// Flink's savepoint routes: a trigger id at once, then the operation's status and the
// savepoint's location; stop with a savepoint; bad requests and conflicts as 4xx.
TEST(RestServer, TakesSavepointsAndStopsWithOneThroughFlinksRoutes) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("weir-rest-savepoints-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage(fs::temp_directory_path().string());
  auto job = startKeyedSums(env, 20000, "savepointed job");
  Server server(job);
  const std::string jid = job.getJobID();
  auto post = [&](const std::string& path, const std::string& body) {
    auto r = server.client->Post("/jobs/" + jid + path, body, "application/json");
    EXPECT_TRUE(r) << path;
    return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(0, json());
  };
  // Waits for a trigger's operation to complete and returns it.
  auto await = [&](const std::string& trigger) {
    json status;
    EXPECT_TRUE(eventually([&] {
      status = server.get("/jobs/" + jid + "/savepoints/" + trigger);
      return status["status"]["id"] == "COMPLETED";
    }));
    return status["operation"];
  };
  EXPECT_EQ(post("/savepoints", R"({"target-directory": 5})").first, 400);
  EXPECT_EQ(post("/savepoints", R"({"formatType": "FOO", "target-directory": "/tmp"})").first, 400);
  EXPECT_EQ(post("/savepoints", "{}").first, 400);  // no folder and no default one
  server.get("/jobs/" + jid + "/savepoints/00000000000000000000000000000000", 404);

  auto [status, body] = post("/savepoints", json{{"target-directory", (dir / "a").string()}}.dump());
  ASSERT_EQ(status, 202) << body;
  json operation = await(body["request-id"].get<std::string>());
  ASSERT_TRUE(operation.contains("location")) << operation;
  const std::string first = operation["location"];
  EXPECT_EQ(fs::path(first).parent_path(), fs::canonical(dir / "a"));
  EXPECT_TRUE(fs::exists(fs::path(first) / "_metadata"));
  EXPECT_EQ(job.getJobStatus(), JobStatus::RUNNING);
  auto checkpoints = server.get("/jobs/" + jid + "/checkpoints");
  EXPECT_EQ(checkpoints["latest"]["savepoint"]["external_path"], first);
  EXPECT_EQ(checkpoints["latest"]["savepoint"]["is_savepoint"], true);
  EXPECT_EQ(checkpoints["latest"]["savepoint"]["checkpoint_type"], "SAVEPOINT");

  auto [stopStatus, stopBody] = post("/stop", json{{"targetDirectory", (dir / "b").string()}, {"drain", true}}.dump());
  ASSERT_EQ(stopStatus, 202) << stopBody;
  EXPECT_EQ(post("/savepoints", json{{"target-directory", (dir / "c").string()}}.dump()).first, 409);
  operation = await(stopBody["request-id"].get<std::string>());
  ASSERT_TRUE(operation.contains("location")) << operation;
  EXPECT_TRUE(fs::exists(fs::path(operation["location"].get<std::string>()) / "_metadata"));
  EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
  EXPECT_EQ(post("/savepoints", json{{"target-directory", (dir / "c").string()}}.dump()).first, 409);
  fs::remove_all(dir);
}

// A stop-with-savepoint's outcome is answered after the job's last JobClient is gone,
// beside the job's kept answers.
TEST(RestServer, ASavepointsOutcomeIsAnsweredAfterTheJobsClientIsGone) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-stopped-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setCheckpointStorage(fs::temp_directory_path().string());
  std::optional<Server> server;
  std::string jid, trigger;
  {
    auto job = startKeyedSums(env, 20000, "stopped and dropped");
    server.emplace(job);
    jid = job.getJobID();
    auto r = server->client->Post("/jobs/" + jid + "/stop", json{{"targetDirectory", dir.string()}, {"drain", true}}.dump(),
                                  "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    trigger = json::parse(r->body)["request-id"];
    EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
  }
  const json status = server->get("/jobs/" + jid + "/savepoints/" + trigger);
  EXPECT_EQ(status["status"]["id"], "COMPLETED") << status;
  EXPECT_TRUE(fs::exists(fs::path(status["operation"].value("location", "")) / "_metadata")) << status;
  EXPECT_EQ(server->get("/jobs/" + jid)["state"], "FINISHED");  // from the kept answers
  fs::remove_all(dir);
}

TEST(RestServer, ExceptionHistoryKeepsEveryFailedAttempt) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.enableCheckpointing(20ms);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(2, 5ms));
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(10000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .map([](int64_t i) -> int64_t {
        if (i == 50) throw std::runtime_error("bad record 50");
        return i;
      })
      .name("picky")
      .sinkTo(DiscardingSink<int64_t>());
  auto job = env.executeAsync("failing job");
  Server server(job);
  EXPECT_THROW(job.wait(), JobExecutionError);
  EXPECT_EQ(job.getMetrics().numRestarts, 2);
  auto ex = server.get("/jobs/" + job.getJobID() + "/exceptions");
  const auto& entries = ex["exceptionHistory"]["entries"];
  ASSERT_EQ(entries.size(), 3u);  // the first run and both restarts
  for (const auto& entry : entries) {
    EXPECT_NE(entry["stacktrace"].get<std::string>().find("bad record 50"), std::string::npos);
    EXPECT_EQ(entry["taskName"], "picky");
  }
  EXPECT_GE(entries[0]["timestamp"].get<int64_t>(), entries[2]["timestamp"].get<int64_t>());
}

TEST(RestServer, ServesJobsVerticesPlanAndBackpressureWithFlinksNames) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startSlowJob(env);
  Server server(job);
  const std::string jid = job.getJobID();
  ASSERT_EQ(jid.size(), 32u);

  auto overview = server.get("/overview");
  EXPECT_EQ(overview["jobs-running"], 1);
  // Ended jobs of earlier tests are listed too (the server keeps their answers).
  const json jobs = server.get("/jobs")["jobs"];
  EXPECT_NE(std::find(jobs.begin(), jobs.end(), json{{"id", jid}, {"status", "RUNNING"}}), jobs.end()) << jobs.dump();

  auto detail = server.get("/jobs/" + jid);
  EXPECT_EQ(detail["name"], "slow job");
  // Flink's REST API is version 1 and answers under /v1/ as well; nothing else is a version.
  EXPECT_EQ(server.get("/v1/jobs/" + jid)["name"], "slow job");
  EXPECT_EQ(server.get("/v1/overview")["jobs-running"], 1);
  server.get("/v2/overview", 404);
  EXPECT_EQ(detail["state"], "RUNNING");
  ASSERT_EQ(detail["vertices"].size(), 3u);
  EXPECT_EQ(detail["vertices"][0]["name"], "Source: numbers");
  EXPECT_EQ(detail["vertices"][0]["uids"], json::array({"numbers-source"}));
  EXPECT_EQ(detail["vertices"][1]["name"], "count");
  EXPECT_EQ(detail["vertices"][2]["name"], "slow sink");
  for (auto& v : detail["vertices"]) {
    EXPECT_EQ(v["parallelism"], 2);
    EXPECT_EQ(v["maxParallelism"], 128);  // Flink's default: max(128, next power of two of 1.5 p)
  }

  auto plan = server.get("/jobs/" + jid + "/plan")["plan"];
  ASSERT_EQ(plan["nodes"].size(), 3u);
  EXPECT_TRUE(plan["nodes"][0]["inputs"].empty());
  EXPECT_EQ(plan["nodes"][1]["inputs"][0]["ship_strategy"], "HASH");
  EXPECT_EQ(plan["nodes"][1]["inputs"][0]["id"], plan["nodes"][0]["id"]);
  EXPECT_EQ(plan["nodes"][2]["inputs"][0]["ship_strategy"], "FORWARD");

  // The vertex feeding the slow sink waits for credit nearly all the time.
  std::string countVertex = detail["vertices"][1]["id"];
  ASSERT_TRUE(eventually([&] {
    return server.get("/jobs/" + jid + "/vertices/" + countVertex + "/backpressure")["backpressure-level"] == "high";
  }));
  auto bp = server.get("/jobs/" + jid + "/vertices/" + countVertex + "/backpressure");
  ASSERT_EQ(bp["subtasks"].size(), 2u);
  for (auto& s : bp["subtasks"]) EXPECT_GT(s["ratio"].get<double>(), 0.5);
  std::string sinkVertex = detail["vertices"][2]["id"];
  EXPECT_EQ(server.get("/jobs/" + jid + "/vertices/" + sinkVertex + "/backpressure")["backpressure-level"], "ok");

  // Subtask 0 of the slow sink gets its first record when the machine gets to it.
  const std::string metricsPath = "/jobs/" + jid + "/vertices/" + sinkVertex + "/metrics?get=0.numRecordsIn,0.busyTimeMsPerSecond";
  auto metrics = server.get(metricsPath);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_TRUE(eventually([&] { return std::stod(server.get(metricsPath)[0]["value"].get<std::string>()) > 0; }));
  auto jobMetrics = server.get("/jobs/" + jid + "/metrics?get=uptime,numRestarts");
  ASSERT_EQ(jobMetrics.size(), 2u);
  EXPECT_EQ(jobMetrics[1]["id"], "numRestarts");
  // No event time in this job: no subtask has a watermark yet.
  auto noWatermarks = server.get("/jobs/" + jid + "/vertices/" + sinkVertex + "/watermarks");
  ASSERT_EQ(noWatermarks.size(), 2u);
  EXPECT_EQ(noWatermarks[0]["value"], std::to_string(INT64_MIN));
  EXPECT_EQ(server.get("/jobs/" + jid + "/checkpoints")["counts"]["total"], 0);
  server.get("/jobs/" + jid + "/checkpoints/config", 404);

  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  EXPECT_TRUE(prometheusHas(prometheus->body, "weir_taskmanager_job_task_num_records_in_total", {"job_id=\"" + jid + "\""}));
  EXPECT_TRUE(
      prometheusHas(prometheus->body, "weir_taskmanager_job_task_back_pressured_time_ratio", {"job_id=\"" + jid + "\""}));

  // PATCH cancels (here under /v1/).
  auto r = server.client->Patch("/v1/jobs/" + jid + "?mode=cancel");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(job.wait().status, JobStatus::CANCELED);
  EXPECT_EQ(server.get("/jobs/" + jid)["state"], "CANCELED");
  // An ended job has nothing to cancel or stop: 409, naming its final state.
  for (bool cancel : {true, false}) {
    auto again = cancel ? server.client->Patch("/jobs/" + jid + "?mode=cancel")
                        : server.client->Post("/jobs/" + jid + "/stop", "{}", "application/json");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 409);
    EXPECT_NE(again->body.find("has already ended: it is CANCELED"), std::string::npos) << again->body;
  }
}

// A quarter of the numbers go to a side output, the rest on.
struct QuarterToTheSide : ProcessFunction<int64_t, int64_t> {
  const OutputTag<int64_t> side{"side"};
  void processElement(const int64_t& v, Context& ctx, Collector<int64_t>& out) override {
    if (v % 4 == 0) ctx.output(side, v);
    else out.collect(v);
  }
};

// Each edge of the plan carries what crosses it, counted where the upstream operator
// emits it: the two edges out of a split into a main and a side output carry three
// quarters and one quarter, an input that merges both carries their sum, and each input
// of a union carries what its own source sends.
TEST(RestServer, EachEdgeCarriesWhatCrossesIt) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.setParallelism(1);
  auto numbers = [&](const std::string& name, double perSecond) {
    return env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount,
                                              RateLimiterStrategy::perSecond(perSecond)),
                          WatermarkStrategy<int64_t>::noWatermarks(), name);
  };
  auto split = numbers("numbers", 8000).process(QuarterToTheSide{}).name("split");
  const OutputTag<int64_t> side("side");
  split.rebalance().sinkTo(DiscardingSink<int64_t>()).name("main");
  split.getSideOutput(side).rebalance().sinkTo(DiscardingSink<int64_t>()).name("side");
  split.unionWith(split.getSideOutput(side)).rebalance().sinkTo(DiscardingSink<int64_t>()).name("both");
  numbers("other", 1000).unionWith(numbers("more", 3000)).rebalance().sinkTo(DiscardingSink<int64_t>()).name("union");
  auto job = env.executeAsync("edges");
  Server server(job);
  const std::string jid = job.getJobID();
  bool checked = false;
  EXPECT_TRUE(eventually([&] {
    const json detail = server.get("/jobs/" + jid);  // plan and vertices from one sample
    std::map<std::string, std::string> nameOf;
    std::map<std::string, double> written;
    for (const auto& v : detail["vertices"]) {
      const std::string name = v["name"];
      nameOf[v["id"]] = name.substr(name.rfind(" -> ") == std::string::npos ? 0 : name.rfind(" -> ") + 4);
      written[nameOf[v["id"]]] = v["metrics"]["write-records-per-second"].get<double>();
    }
    std::map<std::string, double> into;  // "<target> < <source>" -> its rate
    for (const auto& node : detail["plan"]["nodes"])
      for (const auto& in : node["inputs"]) {
        into[nameOf[node["id"]] + " < " + nameOf[in["id"]]] = in["records-per-second"].get<double>();
      }
    const double mainRate = into["main < split"], sideRate = into["side < split"];
    if (mainRate < 1000 || written["Source: other"] < 500 || written["Source: more"] < 1500) return false;  // warming up
    checked = true;
    EXPECT_EQ(into.size(), 5u) << ::testing::PrintToString(into);
    EXPECT_NEAR(mainRate / sideRate, 3, 0.5) << mainRate << " / " << sideRate;
    EXPECT_EQ(into["both < split"], mainRate + sideRate);
    for (const char* source : {"other", "more"}) {
      const double rate = into[std::string("union < Source: ") + source];
      const double sent = written[std::string("Source: ") + source];
      EXPECT_NEAR(rate, sent, 0.1 * sent + 50) << source;
    }
    return true;
  })) << server.get("/jobs/" + jid + "/plan").dump();
  EXPECT_TRUE(checked);
  job.cancel();
  job.wait();
}

// The job's configuration, its vertices, the one task manager of the embedded runtime and
// the process's own metrics, with the fields Flink's REST API documents for each route.
TEST(RestServer, AnswersFlinksConfigTaskManagerAndJobManagerRoutes) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startSlowJob(env);
  Server server(job);
  const std::string jid = job.getJobID();
  auto keys = [](const json& object) {
    std::set<std::string> out;
    for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
    return out;
  };

  auto vertices = server.get("/jobs/" + jid + "/vertices")["vertices"];
  auto detail = server.get("/jobs/" + jid)["vertices"];
  ASSERT_EQ(vertices.size(), detail.size());
  for (size_t i = 0; i < vertices.size(); ++i) EXPECT_EQ(vertices[i]["id"], detail[i]["id"]);

  // GET /jobs/:jobid/vertices/:vertexid (Flink: JobVertexDetailsInfo, each subtask a
  // SubtaskExecutionAttemptDetailsInfo with its IOMetricsInfo).
  auto vertex = server.get("/jobs/" + jid + "/vertices/" + detail[1]["id"].get<std::string>());
  EXPECT_EQ(keys(vertex), (std::set<std::string>{"id", "name", "parallelism", "maxParallelism", "now", "subtasks"}));
  ASSERT_EQ(vertex["subtasks"].size(), 2u);
  for (const auto& subtask : vertex["subtasks"]) {
    EXPECT_EQ(keys(subtask), (std::set<std::string>{"subtask", "status", "attempt", "endpoint", "start-time", "end-time",
                                                    "duration", "metrics", "taskmanager-id"}));
    EXPECT_EQ(keys(subtask["metrics"]),
              (std::set<std::string>{"read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete",
                                     "read-records", "read-records-complete", "write-records", "write-records-complete",
                                     "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"}));
    const auto& m = subtask["metrics"];
    EXPECT_LE(m["accumulated-backpressured-time"].get<int64_t>() + m["accumulated-idle-time"].get<int64_t>() +
                  m["accumulated-busy-time"].get<int64_t>(),
              subtask["duration"].get<int64_t>() + 1);
  }
  EXPECT_EQ(vertex["subtasks"][1]["subtask"], 1);
  EXPECT_EQ(vertex["subtasks"][0]["status"], "RUNNING");
  EXPECT_EQ(vertex["subtasks"][0]["attempt"], 0);

  // GET /jobs/:jobid/config (Flink: JobConfigInfo).
  auto config = server.get("/jobs/" + jid + "/config");
  EXPECT_EQ(keys(config), (std::set<std::string>{"jid", "name", "execution-config"}));
  EXPECT_EQ(config["jid"], jid);
  EXPECT_EQ(config["name"], "slow job");
  EXPECT_EQ(keys(config["execution-config"]), (std::set<std::string>{"execution-mode", "restart-strategy",
                                                                    "job-parallelism", "object-reuse-mode",
                                                                    "user-config"}));
  EXPECT_EQ(config["execution-config"]["job-parallelism"], 2);
  EXPECT_FALSE(config["execution-config"]["restart-strategy"].get<std::string>().empty());

  // GET /jobs/:jobid/accumulators (Flink: JobAccumulatorsInfo): weir has none.
  auto accumulators = server.get("/jobs/" + jid + "/accumulators");
  EXPECT_EQ(keys(accumulators), (std::set<std::string>{"job-accumulators", "user-task-accumulators",
                                                        "serialized-user-task-accumulators"}));

  // GET /taskmanagers (Flink: TaskManagersInfo): this process, its slots taken by the job.
  auto tms = server.get("/taskmanagers")["taskmanagers"];
  ASSERT_EQ(tms.size(), 1u);
  for (const char* field : {"id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber", "freeSlots",
                            "hardware"})
    EXPECT_TRUE(tms[0].contains(field)) << field;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(tms[0]["slotsNumber"], cores);
  EXPECT_EQ(tms[0]["freeSlots"], std::max(0, cores - 2));
  EXPECT_EQ(keys(tms[0]["hardware"]), (std::set<std::string>{"cpuCores", "physicalMemory", "freeMemory", "managedMemory"}));
  EXPECT_GT(tms[0]["hardware"]["physicalMemory"].get<int64_t>(), tms[0]["hardware"]["freeMemory"].get<int64_t>());

  // GET /jobmanager/config: a list of {key, value}.
  bool port = false;
  for (auto& entry : server.get("/jobmanager/config")) {
    EXPECT_EQ(keys(entry), (std::set<std::string>{"key", "value"}));
    if (entry["key"] == "rest.port") port = entry["value"] == std::to_string(server.port);
  }
  EXPECT_TRUE(port) << "rest.port is not this server's";

  // GET /jobmanager/metrics: the process's CPU time, resident memory and threads.
  auto process = server.get("/jobmanager/metrics?get=Status.Process.Threads.Count,Status.Process.Memory.RSS");
  ASSERT_EQ(process.size(), 2u);
  EXPECT_GT(std::stod(process[0]["value"].get<std::string>()), 3);  // the job's tasks, at least
  EXPECT_GT(std::stod(process[1]["value"].get<std::string>()), 1e6);
  EXPECT_EQ(server.get("/jobmanager/metrics").size(), 3u);

  server.get("/jobs/00000000000000000000000000000000/config", 404);
  job.cancel();
  job.wait();
}

// Keyed sums of event-timed pairs (key, 1,000,000 + i) at 20,000 records per second.
JobClient startWatermarkedJob(StreamExecutionEnvironment& env, const std::string& name) {
  env.setAutoWatermarkInterval(10ms);
  env.fromSource(DataGeneratorSource([](int64_t i) { return std::pair<int64_t, int64_t>{i % 10, 1'000'000 + i}; },
                                     kUnboundedCount, RateLimiterStrategy::perSecond(20000)),
                 WatermarkStrategy<std::pair<int64_t, int64_t>>::forBoundedOutOfOrderness(5ms).withTimestampAssigner(
                     [](const std::pair<int64_t, int64_t>& p) { return p.second; }),
                 "timed")
      .keyBy([](const std::pair<int64_t, int64_t>& p) { return p.first; })
      .sum<1>()
      .name("sum")
      .sinkTo(DiscardingSink<std::pair<int64_t, int64_t>>());
  return env.executeAsync(name);
}

TEST(RestServer, ShowsTheWatermarkOfEveryVertex) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startWatermarkedJob(env, "watermarked");
  Server server(job);
  const std::string jid = job.getJobID();
  json detail;
  ASSERT_TRUE(eventually([&] {
    detail = server.get("/jobs/" + jid);
    return !detail["vertices"][1]["current-input-watermark"].is_null();
  }));
  int64_t w = detail["vertices"][1]["current-input-watermark"];
  EXPECT_GE(w, 1'000'000 - 6);  // a real event time, from the records
  EXPECT_FALSE(detail["vertices"][0]["current-input-watermark"].is_null());  // the source's own
  std::string sumVertex = detail["vertices"][1]["id"];
  auto watermarks = server.get("/jobs/" + jid + "/vertices/" + sumVertex + "/watermarks");
  ASSERT_EQ(watermarks.size(), 1u);
  EXPECT_EQ(watermarks[0]["id"], "0.currentInputWatermark");
  EXPECT_GE(std::stoll(watermarks[0]["value"].get<std::string>()), 1'000'000 - 6);
  // The lag is the wall clock less the watermark, both read in the same answer.
  auto lagged = server.get("/jobs/" + jid + "/vertices/" + sumVertex + "/metrics?get=0.currentInputWatermark,0.watermarkLag");
  ASSERT_EQ(lagged.size(), 2u);
  const double clock = std::stod(lagged[0]["value"].get<std::string>()) + std::stod(lagged[1]["value"].get<std::string>());
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(clock, static_cast<double>(now), 60'000.0);
  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  EXPECT_TRUE(prometheusHas(prometheus->body, "weir_taskmanager_job_task_watermark_lag_seconds", {"job_id=\"" + jid + "\""}));
  job.cancel();
  job.wait();
}

// docs/grafana/weir-dashboard.json asks only for what /metrics serves: every metric its
// queries name is a family of a job with watermarks and checkpoints, and that page is
// clean under promtool.
TEST(RestServer, TheGrafanaDashboardQueriesWhatMetricsServes) {
  std::ifstream file(std::string(WEIR_DOCS_DIR) + "/grafana/weir-dashboard.json");
  ASSERT_TRUE(file) << "no docs/grafana/weir-dashboard.json";
  const json dashboard = json::parse(file);
  std::set<std::string> asked;
  const std::regex name(R"(\b(weir_[a-z0-9_]+|process_[a-z0-9_]+))");
  auto collect = [&](const std::string& query) {
    for (std::sregex_iterator it(query.begin(), query.end(), name), end; it != end; ++it) asked.insert((*it)[1]);
  };
  size_t queries = 0;
  for (const auto& panel : dashboard.at("panels"))
    for (const auto& target : panel.at("targets")) {
      collect(target.at("expr").get<std::string>());
      ++queries;
    }
  for (const auto& variable : dashboard.at("templating").at("list"))
    if (variable.contains("definition")) collect(variable.at("definition").get<std::string>());
  ASSERT_GE(queries, 10u);
  ASSERT_GE(asked.size(), 10u);

  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.enableCheckpointing(50ms);
  auto job = startWatermarkedJob(env, "dashboard");
  Server server(job);
  const std::string ofJob = "job_id=\"" + job.getJobID() + "\"";
  std::string page;
  EXPECT_TRUE(eventually([&] {
    auto r = server.client->Get("/metrics");
    page = r ? r->body : "";
    // (Rates, busy time among them, once the sampler has two samples to compare.)
    return prometheusHas(page, "weir_taskmanager_job_task_checkpoint_alignment_time_seconds", {ofJob}) &&
           prometheusHas(page, "weir_taskmanager_job_task_watermark_lag_seconds", {ofJob}) &&
           prometheusHas(page, "weir_taskmanager_job_task_busy_time_ratio", {ofJob});
  })) << page;
  for (const auto& metric : asked)
    EXPECT_NE(page.find("# TYPE " + metric + " "), std::string::npos) << metric << " is not in /metrics";
  auto [code, said] = test::promtoolCheck(page);
  EXPECT_EQ(code, 0) << said;
  EXPECT_EQ(said, "");
  job.cancel();
  job.wait();
}

// The bytes a file source read and a text file sink wrote, and the bad records the
// source skipped, as Flink names them, on the job page, per subtask and in Prometheus;
// they match the files on disk.
TEST(RestServer, ShowsTheBytesSourcesReadAndSinksWrote) {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("weir-rest-bytes-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string input;
  uint64_t goodBytes = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line = "line " + std::to_string(i) + "\n";
    goodBytes += line.size();
    input += line;
    if (i % 5000 == 17) input += std::string(200, 'x') + "\n";  // 4 lines over the limit
  }
  std::ofstream(dir / "in.txt", std::ios::binary) << input;

  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), (dir / "in.txt").string())
                     .setMaxLineLength(100)
                     .setBadRecordPolicy(BadRecordPolicy::SKIP)
                     .build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "lines")
      .rebalance()
      .map([](const std::string& line) { return line + "!"; })
      .sinkTo(FileSink<std::string>::forRowFormat((dir / "out").string(), SimpleStringEncoder<std::string>())
                  .withBucketAssigner(BasePathBucketAssigner<std::string>())
                  .build());
  auto job = env.executeAsync("bytes");
  job.wait();
  uint64_t written = 0;
  for (const auto& part : fs::directory_iterator(dir / "out")) written += part.file_size();
  EXPECT_EQ(written, goodBytes + 20000);  // one "!" more per line

  Server server(job);
  const std::string jid = job.getJobID();
  json detail;
  ASSERT_TRUE(eventually([&] {
    detail = server.get("/jobs/" + jid);
    return detail["vertices"][1]["metrics"]["write-bytes"] == written;
  })) << detail.dump();
  EXPECT_EQ(detail["vertices"][0]["metrics"]["read-bytes"], input.size());
  EXPECT_EQ(detail["vertices"][0]["metrics"]["write-bytes"], 0);
  EXPECT_EQ(detail["vertices"][1]["metrics"]["read-bytes"], 0);
  EXPECT_EQ(detail["vertices"][0]["metrics"]["records-in-errors"], 4);
  EXPECT_EQ(detail["vertices"][1]["metrics"]["records-in-errors"], 0);

  std::string source = detail["vertices"][0]["id"];
  auto perSubtask =
      server.get("/jobs/" + jid + "/vertices/" + source + "/metrics?get=0.numBytesIn,0.numBytesOut,0.numRecordsInErrors");
  ASSERT_EQ(perSubtask.size(), 3u);
  // Flink writes a count as a whole number: "4", not "4.000000".
  EXPECT_EQ(perSubtask[0]["value"], std::to_string(input.size()));
  EXPECT_EQ(perSubtask[1]["value"], "0");
  EXPECT_EQ(perSubtask[2]["value"], "4");
  // Flink's aggregated subtask metrics: the sink's subtasks together wrote every byte and
  // took every good line.
  const std::string sink = detail["vertices"][1]["id"];
  const int parallelism = detail["vertices"][1]["parallelism"];
  auto aggregated = server.get("/jobs/" + jid + "/vertices/" + sink + "/subtasks/metrics?get=numBytesOut,numRecordsIn");
  ASSERT_EQ(aggregated.size(), 2u) << aggregated.dump();
  EXPECT_EQ(aggregated[0]["id"], "numBytesOut");
  EXPECT_EQ(aggregated[0]["sum"], written);
  EXPECT_EQ(aggregated[1]["sum"], 20000);
  EXPECT_DOUBLE_EQ(aggregated[1]["avg"].get<double>() * parallelism, 20000);
  EXPECT_LE(aggregated[1]["min"].get<double>(), aggregated[1]["avg"].get<double>());
  EXPECT_GE(aggregated[1]["max"].get<double>(), aggregated[1]["avg"].get<double>());
  EXPECT_TRUE(aggregated[1].contains("skew"));
  const json subtask0 = server.get("/jobs/" + jid + "/vertices/" + sink + "/subtasks/metrics?get=numRecordsIn&agg=sum&subtasks=0");
  EXPECT_EQ(subtask0, json::parse(R"([{"id":"numRecordsIn","sum":)" +
                                  server.get("/jobs/" + jid + "/vertices/" + sink + "/metrics?get=0.numRecordsIn")[0]["value"]
                                      .get<std::string>() + "}]"));
  server.get("/jobs/" + jid + "/vertices/" + sink + "/subtasks/metrics?get=numRecordsIn&agg=median", 400);
  server.get("/jobs/" + jid + "/vertices/" + sink + "/subtasks/metrics?get=numRecordsIn&subtasks=1-0", 400);
  EXPECT_EQ(server.get("/jobs/" + jid + "/vertices/" + source)["subtasks"][0]["metrics"]["read-bytes"], input.size());

  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  auto line = [&](const std::string& metric, const std::string& vertex) {
    return prometheusSum(prometheus->body, "weir_taskmanager_job_task_" + metric,
                         {"job_id=\"" + jid + "\"", "job_name=\"bytes\"", "subtask_index=\"0\"", "task_id=\"" + vertex + "\""});
  };
  EXPECT_EQ(line("num_bytes_in_total", source), static_cast<double>(input.size())) << prometheus->body;
  EXPECT_EQ(line("num_bytes_out_total", detail["vertices"][1]["id"]), static_cast<double>(written));
  EXPECT_EQ(line("num_records_in_errors_total", source), 4);
  fs::remove_all(dir);
}

// RocksDB's native metrics (state.backend.rocksdb.metrics.*) show with the operator's
// metrics: in REST per subtask, and in Prometheus with the state as a label.
TEST(RestServer, RocksDBNativeMetricsShowAsOperatorMetrics) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  EmbeddedRocksDBStateBackend::Options rocks;
  rocks.nativeMetrics = {"estimate-num-keys", "block-cache-usage"};
  rocks.metricsColumnFamilyAsVariable = true;
  env.setStateBackend(std::make_shared<EmbeddedRocksDBStateBackend>(rocks));
  env.setParallelism(1);
  auto job = startKeyedSums(env, 20000, "native metrics");  // 100 keys
  Server server(job);
  const std::string jid = job.getJobID();
  std::string vertex, id;
  ASSERT_TRUE(eventually([&] {
    const json detail = server.get("/jobs/" + jid);  // (held: a temporary's member would dangle in the loop)
    for (const auto& v : detail["vertices"]) {
      const json ids = server.get("/jobs/" + jid + "/vertices/" + v["id"].get<std::string>() + "/metrics");
      for (const auto& m : ids) {
        const std::string name = m["id"];
        if (name.ends_with(".rocksdb.estimate-num-keys")) vertex = v["id"], id = name;
      }
    }
    if (id.empty()) return false;
    const json value = server.get("/jobs/" + jid + "/vertices/" + vertex + "/metrics?get=" + httplib::detail::encode_query_param(id));
    return value.size() == 1 && std::stod(value[0]["value"].get<std::string>()) >= 100;  // each key written once at least
  })) << "no estimate-num-keys of 100 or more; found: " << id;
  EXPECT_NE(id.find(".column_family."), std::string::npos) << id;
  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  EXPECT_TRUE(prometheusHas(prometheus->body, "weir_taskmanager_job_task_operator_column_family_rocksdb_estimate_num_keys",
                            {"job_id=\"" + jid + "\"", "column_family=\""}))
      << prometheus->body;
  EXPECT_TRUE(prometheusHas(prometheus->body, "weir_taskmanager_job_task_operator_column_family_rocksdb_block_cache_usage",
                            {"job_id=\"" + jid + "\""}));
  auto [code, said] = test::promtoolCheck(prometheus->body);
  EXPECT_EQ(code, 0) << said;
  job.cancel();
  job.wait();
}

TEST(RestServer, MetricsThatOperatorsRegisterShowPerSubtaskAndInPrometheus) {
  constexpr int64_t kCount = 100000;
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  const auto started = std::chrono::steady_clock::now();
  auto job = testing::startUserMetricsJob(env, kCount, "user metrics");
  job.wait();
  const double ranSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Server server(job);
  const std::string jid = job.getJobID();
  // The vertex whose subtasks ran the counting map (its chain holds the filter too),
  // once a sample after the job's end shows its metrics.
  std::string vertex;
  eventually([&] {
    const json detail = server.get("/jobs/" + jid);
    for (const auto& v : detail["vertices"]) {
      for (const auto& m : server.get("/jobs/" + jid + "/vertices/" + v["id"].get<std::string>() + "/metrics"))
        if (m["id"] == "0.counting map.evens") vertex = v["id"];
    }
    return !vertex.empty();
  });
  ASSERT_FALSE(vertex.empty()) << "no vertex lists 0.counting map.evens";
  auto value = [&](const std::string& id) {
    std::string query;
    for (char c : id) query += c == ' ' ? std::string("%20") : std::string(1, c);
    json r = server.get("/jobs/" + jid + "/vertices/" + vertex + "/metrics?get=" + query);
    return r.size() == 1 ? std::stod(r[0]["value"].get<std::string>()) : -1.0;
  };
  // Brute force over the input: what each function saw, summed over both subtasks.
  int64_t evens = 0, odds = 0, kept = 0;
  for (int64_t i = 0; i < kCount; ++i) (i % 2 == 0 ? evens : odds) += 1, kept += i % 3 == 0 ? 1 : 0;
  EXPECT_EQ(value("0.counting map.evens") + value("1.counting map.evens"), evens);
  EXPECT_EQ(value("0.counting map.parity.odd.records") + value("1.counting map.parity.odd.records"), odds);
  EXPECT_EQ(value("0.keeping filter.kept") + value("1.keeping filter.kept"), kept);
  // Each subtask's gauge kept the last value it read before its operators closed.
  EXPECT_EQ(std::max(value("0.counting map.maxSeen"), value("1.counting map.maxSeen")), kCount - 1);
  EXPECT_GT(std::min(value("0.counting map.maxSeen"), value("1.counting map.maxSeen")), 0);

  auto prometheus = server.client->Get("/metrics");
  ASSERT_TRUE(prometheus);
  const std::string& page = prometheus->body;
  EXPECT_NE(page.find("# TYPE weir_taskmanager_job_task_operator_evens_total counter"), std::string::npos) << page;
  EXPECT_NE(page.find("# TYPE weir_taskmanager_job_task_operator_max_seen gauge"), std::string::npos);
  const std::string ofJob = "job_id=\"" + jid + "\"";
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_evens_total", {ofJob, "operator_name=\"counting map\""}), evens);
  // A key-value group is a label, its key a part of the name.
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_parity_records_total", {ofJob, "parity=\"odd\""}), odds);
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_kept_total", {ofJob, "operator_name=\"keeping filter\""}),
            kept);
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_max_seen", {ofJob, "subtask_index=\"0\""}),
            value("0.counting map.maxSeen"));
  // A group key that is one of weir's labels, or no label name, gets a prefix; the job's
  // own job_id stands.
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_job_id_clash_total", {ofJob, "group_job_id=\"mine\""}),
            2);
  EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator___lder_age_total", {ofJob, "group___lder=\"3\""}), 2);

  // The histogram of each subtask holds the last 1,000 numbers of its range, the n
  // consecutive integers a .. a + n - 1: the q-quantile of Commons Math's legacy estimate
  // is a - 1 + q * (n + 1), the mean a + (n - 1) / 2, the sample standard deviation
  // sqrt(n (n + 1) / 12).
  const double n = 1000;
  for (int s = 0; s < 2; ++s) {
    const std::string id = std::to_string(s) + ".counting map.values";
    const std::string subtask = "subtask_index=\"" + std::to_string(s) + "\"";
    const double end = static_cast<double>(kCount) * (s + 1) / 2, a = end - n;
    EXPECT_EQ(value(id + "_min"), a) << id;
    EXPECT_EQ(value(id + "_max"), end - 1);
    EXPECT_NEAR(value(id + "_mean"), a + (n - 1) / 2, 1e-6);
    EXPECT_NEAR(value(id + "_stddev"), std::sqrt(n * (n + 1) / 12), 1e-3);
    const std::vector<std::pair<std::string, double>> quantiles{
        {"_median", 0.5}, {"_p75", 0.75}, {"_p90", 0.9}, {"_p95", 0.95}, {"_p98", 0.98}, {"_p99", 0.99}, {"_p999", 0.999}};
    for (const auto& [suffix, q] : quantiles) EXPECT_NEAR(value(id + suffix), a - 1 + q * (n + 1), 1e-3) << id + suffix;
    // Prometheus: a summary of Flink's quantiles, with the count and sum of every value.
    for (double q : {0.5, 0.75, 0.95, 0.98, 0.99, 0.999}) {
      std::ostringstream label;
      label << "quantile=\"" << q << "\"";
      EXPECT_NEAR(prometheusSum(page, "weir_taskmanager_job_task_operator_values", {ofJob, subtask, label.str()}),
                  a - 1 + q * (n + 1), 1e-3)
          << label.str();
    }
    EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_values_count", {ofJob, subtask}), kCount / 2);
    const double first = end - static_cast<double>(kCount) / 2;
    EXPECT_EQ(prometheusSum(page, "weir_taskmanager_job_task_operator_values_sum", {ofJob, subtask}),
              (first + end - 1) * (static_cast<double>(kCount) / 2) / 2);
    // The meter: every number of the subtask marked between its open and its last read,
    // which the job's run holds, so at least that many per second of the run.
    EXPECT_GE(value(std::to_string(s) + ".counting map.numbersPerSecond"), kCount / 2 / ranSeconds);
    EXPECT_GE(prometheusSum(page, "weir_taskmanager_job_task_operator_numbers_per_second", {ofJob, subtask}),
              kCount / 2 / ranSeconds);
  }
  EXPECT_NE(page.find("# TYPE weir_taskmanager_job_task_operator_values summary"), std::string::npos);
  EXPECT_NE(page.find("# TYPE weir_taskmanager_job_task_operator_numbers_per_second gauge"), std::string::npos);
  // Every name and label, the user's included, as Prometheus's linter wants them.
  auto [code, said] = test::promtoolCheck(page);
  EXPECT_EQ(code, 0) << said;
  EXPECT_EQ(said, "");
}

// weir.metrics.prometheus.prefix: flink gives Flink's PrometheusReporter's names, scopes
// and labels (Flink's metrics documentation), so that a Flink dashboard reads weir.
TEST(RestServer, TheFlinkPrefixExportsWhatFlinksReporterWould) {
  constexpr int64_t kCount = 20000;
  RestOptions options = testOptions();
  options.address = "127.0.0.2";  // a server of its own: jobs that share one share its names
  options.prometheusPrefix = "flink";
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  const auto started = std::chrono::steady_clock::now();
  auto job = testing::startUserMetricsJob(env, kCount, "flink names");
  job.wait();
  const auto ranMillis =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  Server server(job);
  const std::string ofJob = "job_id=\"" + job.getJobID() + "\"";
  int64_t evens = 0, odds = 0;
  for (int64_t i = 0; i < kCount; ++i) (i % 2 == 0 ? evens : odds) += 1;
  std::string page;
  EXPECT_TRUE(eventually([&] {
    auto r = server.client->Get("/metrics");
    page = r ? r->body : "";
    return prometheusSum(page, "flink_taskmanager_job_task_operator_evens", {ofJob}) == evens;
  })) << page;
  EXPECT_EQ(prometheusSum(page, "flink_taskmanager_job_task_operator_parity_records", {ofJob, "parity=\"odd\""}), odds);
  EXPECT_NE(page.find("# TYPE flink_taskmanager_job_task_operator_evens counter"), std::string::npos);
  EXPECT_EQ(prometheusSum(page, "flink_taskmanager_job_task_numRecordsOut", {ofJob}), kCount);
  // Flink's reporter filters label values as names: "flink names" is flink_names.
  EXPECT_EQ(prometheusSum(page, "flink_jobmanager_job_numRestarts", {ofJob, "job_name=\"flink_names\""}), 0);
  // The job's run in whole milliseconds, which may be 0: this one can end within one.
  EXPECT_NE(page.find("\nflink_jobmanager_job_uptime{"), std::string::npos) << page;
  const auto uptime = prometheusSum(page, "flink_jobmanager_job_uptime", {ofJob});
  EXPECT_GE(uptime, 0);
  EXPECT_LE(uptime, ranMillis + 1);
  // Flink's task scope variables.
  for (const char* label : {"host=\"", "tm_id=\"embedded\"", "task_attempt_num=\"0\"", "task_attempt_id=\"",
                            "subtask_index=\"1\"", "task_name=\"Source:_numbers____counting_map"})
    EXPECT_TRUE(prometheusHas(page, "flink_taskmanager_job_task_numRecordsOut", {ofJob, label})) << label;
  EXPECT_EQ(page.find("weir_"), std::string::npos);
}

// `value` without the members that say when it was asked ("now", "end-timestamp").
json withoutClock(json value) {
  if (value.is_object()) {
    value.erase("now");
    value.erase("end-timestamp");
    for (auto& [key, member] : value.items()) member = withoutClock(member);
  } else if (value.is_array()) {
    for (auto& member : value) member = withoutClock(member);
  }
  return value;
}

// Flink's HistoryServer: what the API answered when the job ended is written to the
// archive folder before wait() returns, and the archive answers every path the Web UI
// reads as the server did.
TEST(RestServer, AnEndedJobIsArchivedAndTheArchiveAnswersAsTheServerDid) {
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-archive-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RestOptions options = testOptions();
  options.archiveDir = dir.string();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  env.setParallelism(2);
  env.enableCheckpointing(50ms);
  auto job = startKeyedSums(env, 100000, "archived job");
  Server server(job);
  const std::string jid = job.getJobID();
  ASSERT_TRUE(eventually([&] { return server.get("/jobs/" + jid + "/checkpoints")["counts"]["completed"] >= 2; }));
  ::testing::internal::CaptureStderr();
  job.cancel();
  job.wait();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(fs::exists(dir / jid)) << err;
  EXPECT_NE(err.find("weir: job " + jid + " archived to " + (dir / jid).string()), std::string::npos) << err;

  rest::ArchiveFolder archive(dir.string());
  ASSERT_TRUE(archive.hasJob(jid));
  auto same = [&](const std::string& path, const std::optional<std::string>& get = std::nullopt) {
    const json live = server.get(path + (get ? "?get=" + *get : ""));
    auto archived = archive.answer(path, rest::MetricsQuery{get});
    ASSERT_TRUE(archived) << path;
    EXPECT_EQ(archived->status, 200) << path;
    EXPECT_EQ(withoutClock(json::parse(archived->body)), withoutClock(live)) << path;
  };
  const std::string job_ = "/jobs/" + jid;
  same(job_);
  EXPECT_EQ(server.get(job_)["state"], "CANCELED");
  for (const char* sub : {"/plan", "/exceptions", "/config", "/accumulators", "/vertices", "/checkpoints", "/checkpoints/config"})
    same(job_ + sub);
  same(job_ + "/metrics", "uptime,numRestarts,numberOfCompletedCheckpoints,lastCheckpointSize");
  same(job_ + "/metrics");
  const json checkpoints = server.get(job_ + "/checkpoints");
  const std::string cid = std::to_string(checkpoints["latest"]["completed"]["id"].get<int64_t>());
  same(job_ + "/checkpoints/details/" + cid);
  const json detail = server.get(job_);
  ASSERT_EQ(detail["vertices"].size(), 2u);  // the source's chain and the keyed sum's
  for (const auto& v : detail["vertices"]) {
    const std::string vertex = job_ + "/vertices/" + v["id"].get<std::string>();
    same(vertex);
    same(vertex + "/watermarks");
    same(vertex + "/backpressure");
    same(vertex + "/metrics");
    std::string all;
    for (const auto& m : server.get(vertex + "/metrics")) all += (all.empty() ? "" : ",") + m["id"].get<std::string>();
    same(vertex + "/metrics", all);
    same(vertex + "/subtasks/metrics");
    same(vertex + "/subtasks/metrics", "numRecordsIn,numRecordsOut,currentInputWatermark");
    same(job_ + "/checkpoints/details/" + cid + "/subtasks/" + v["id"].get<std::string>());
  }
  // The overview the archive keeps is this job's alone.
  const auto overviews = archive.overviews();
  ASSERT_EQ(overviews.size(), 1u);
  EXPECT_EQ(overviews[0]["jid"], jid);
  EXPECT_EQ(overviews[0]["state"], "CANCELED");
  fs::remove_all(dir);
}

// Dropping a job's last JobClient cancels it; it is archived all the same (by the time
// the JobClient's destructor returns, unless the server was sampling the job just then:
// the sample's release then ends it).
TEST(RestServer, AJobWhoseLastClientIsDroppedIsArchivedAsCancelled) {
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-archive-dropped-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RestOptions options = testOptions();
  options.archiveDir = dir.string();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  std::string jid;
  {
    auto job = startKeyedSums(env, 1000, "dropped job");
    jid = job.getJobID();
    std::this_thread::sleep_for(300ms);  // a sample or two: the server holds the job meanwhile
  }
  ASSERT_TRUE(eventually([&] { return fs::exists(dir / jid); }));
  rest::ArchiveFolder archive(dir.string());
  auto detail = archive.answer("/jobs/" + jid, {});
  ASSERT_TRUE(detail);
  EXPECT_EQ(json::parse(detail->body)["state"], "CANCELED");
  fs::remove_all(dir);
}

// A folder the archive cannot be written to: the job's result stands, stderr says why.
TEST(RestServer, AnArchiveThatCannotBeWrittenIsSaidAndTheJobEndsAsItWould) {
  const fs::path file = fs::temp_directory_path() / ("weir-rest-archive-file-" + std::to_string(::getpid()));
  std::ofstream(file) << "a file, not a folder";
  RestOptions options = testOptions();
  options.archiveDir = file.string();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  auto job = testing::startUserMetricsJob(env, 1000, "unarchivable");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("weir: job " + job.getJobID() + " was not archived: cannot make the archive folder " +
                     file.string() + ": Not a directory"),
            std::string::npos)
      << err;
  fs::remove(file);
  // Without the REST API there is nothing to archive: said before the job starts.
  RestOptions off;
  off.archiveDir = file.string();
  EXPECT_THROW(StreamExecutionEnvironment().setRestOptions(off), Error);
}

TEST(RestServer, AJobThatEndsAtOnceStillShowsItsFinalFigures) {
  // Each job ends within milliseconds of the sample taken when it started: its last
  // sample comes too soon after that one for rates, and must still carry its counts.
  for (int run = 0; run < 10; ++run) {
    // Start at phases spread over the sampling interval (100 ms), which polling below
    // would otherwise keep in step with.
    std::this_thread::sleep_for(std::chrono::milliseconds(run * 37 % 100));
    auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
    auto job = testing::startUserMetricsJob(env, 1000, "short " + std::to_string(run));
    job.wait();
    Server server(job);
    const std::string jid = job.getJobID();
    const json detail = server.get("/jobs/" + jid);
    const std::string vertex = detail["vertices"][0]["id"];
    json evens;
    EXPECT_TRUE(eventually([&] {
      evens = server.get("/jobs/" + jid + "/vertices/" + vertex + "/metrics?get=0.counting%20map.evens,1.counting%20map.evens");
      return evens.size() == 2 && std::stod(evens[0]["value"].get<std::string>()) +
                                          std::stod(evens[1]["value"].get<std::string>()) == 500;
    })) << "run " << run << ": " << evens.dump();
  }
}

// Emits `count` records for every input, counting them in a gauge.
struct Multiplying : RichFlatMapFunction<int64_t, int64_t> {
  explicit Multiplying(int64_t count) : count_(count) {}
  void open() override {
    getRuntimeContext().getMetricGroup().gauge("emitted", [this] { return static_cast<double>(emitted_); });
  }
  void flatMap(const int64_t& v, Collector<int64_t>& out) override {
    for (int64_t i = 0; i < count_; ++i, ++emitted_) out.collect(v * count_ + i);
  }
  int64_t count_, emitted_ = 0;
};

TEST(RestServer, AGaugeAnswersWhileItsTaskIsBlockedInTheMiddleOfARecord) {
  // One input record makes a million: the flatMap's task waits for credit inside that
  // record, never between records, for as long as the gate downstream stays shut.
  constexpr int64_t kPerRecord = 1000000;
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.setParallelism(1);
  auto open = std::make_shared<std::atomic<bool>>(false);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1), WatermarkStrategy<int64_t>::noWatermarks(), "one")
      .flatMap(Multiplying(kPerRecord))
      .name("multiplying")
      .rebalance()
      .map(test::GatedMap<int64_t>(open))
      .sinkTo(DiscardingSink<int64_t>());
  auto job = env.executeAsync("blocked gauge");
  struct Release {  // a failed expectation below must not leave the job blocked
    std::shared_ptr<std::atomic<bool>> open;
    ~Release() { open->store(true); }
  } release{open};
  std::map<std::string, double> m;
  const bool shown = eventually([&] {
    m = test::operatorMetrics(job);
    return m.count("0.multiplying.emitted") == 1 && m["0.multiplying.emitted"] > 0;
  });
  EXPECT_TRUE(shown) << ::testing::PrintToString(m);
  EXPECT_LT(m["0.multiplying.emitted"], kPerRecord);  // read while it was blocked
  open->store(true);
  job.wait();
  // Once the job ended, the last read before the operators closed shows every record.
  EXPECT_TRUE(eventually([&] {
    m = test::operatorMetrics(job);
    return m["0.multiplying.emitted"] == kPerRecord;
  })) << ::testing::PrintToString(m);
}

TEST(RestServer, StopDrainsTheJobAndItFinishes) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(5000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .map([](int64_t v) { return v; })
      .setParallelism(2)
      .sinkTo(sink);
  auto job = env.executeAsync("stoppable");
  Server server(job);
  ASSERT_TRUE(eventually([&] { return !sink.getResults().empty(); }));
  auto r = server.client->Post("/jobs/" + job.getJobID() + "/stop", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
  // Drained: everything the source produced reached the sink.
  uint64_t produced = 0;
  for (auto& v : job.getMetrics().vertices) produced += v.numSourceRecords;
  EXPECT_EQ(sink.getResults().size(), produced);
}

// A batch job's stages: while its second stage runs (held by a gate), the first shows
// FINISHED with what it wrote to its blocking exchange, the third CREATED; Flink's
// status-counts count them, the plan is BATCH with blocking exchanges, and the
// progress figures of the finished stage stay. Once released, every stage finishes.
TEST(RestServer, ABatchJobShowsItsStages) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto gate = std::make_shared<std::atomic<bool>>(false);
  auto job = testing::startStagedBatchJob(env, gate);
  test::OpenOnExit release{gate};
  Server server(job);
  const std::string jid = job.getJobID();
  ASSERT_TRUE(eventually([&] { return server.get("/jobs/" + jid)["vertices"][1]["status"] == "RUNNING"; }));
  auto detail = server.get("/jobs/" + jid);
  ASSERT_EQ(detail["vertices"].size(), 3u);
  std::vector<std::string> status;
  for (const auto& v : detail["vertices"]) status.push_back(v["status"]);
  EXPECT_EQ(status, (std::vector<std::string>{"FINISHED", "RUNNING", "CREATED"}));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(detail["vertices"][k]["stage"], k + 1);
  // A finished stage keeps its figures (the sampler may still have to read them).
  EXPECT_TRUE(eventually([&] { return server.get("/jobs/" + jid)["vertices"][0]["metrics"]["write-records"] == 10000; }));
  EXPECT_EQ(detail["vertices"][2]["start-time"], -1);
  EXPECT_EQ(detail["status-counts"]["FINISHED"], 1);
  EXPECT_EQ(detail["status-counts"]["RUNNING"], 1);
  EXPECT_EQ(detail["status-counts"]["CREATED"], 1);
  ASSERT_EQ(detail["stages"].size(), 3u);
  EXPECT_EQ(detail["stages"][0]["status"], "FINISHED");
  EXPECT_GT(detail["stages"][0]["written-bytes"].get<int64_t>(), 10000 * 8);
  EXPECT_EQ(detail["stages"][1]["status"], "RUNNING");
  EXPECT_EQ(detail["stages"][1]["vertices"], json::array({detail["vertices"][1]["id"]}));
  EXPECT_EQ(detail["stages"][2]["status"], "CREATED");
  const auto plan = server.get("/jobs/" + jid + "/plan")["plan"];
  EXPECT_EQ(plan["type"], "BATCH");
  EXPECT_EQ(plan["nodes"][1]["inputs"][0]["exchange"], "blocking");
  const auto vertex = server.get("/jobs/" + jid + "/vertices/" + detail["vertices"][2]["id"].get<std::string>());
  EXPECT_EQ(vertex["subtasks"][0]["status"], "CREATED");
  EXPECT_EQ(job.getMetrics().numStages, 3);
  EXPECT_EQ(job.getMetrics().currentStage, 2);
  gate->store(true);
  EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
  ASSERT_TRUE(eventually([&] { return server.get("/jobs/" + jid)["status-counts"]["FINISHED"] == 3; }));
  detail = server.get("/jobs/" + jid);
  for (const auto& stage : detail["stages"]) EXPECT_EQ(stage["status"], "FINISHED");
  EXPECT_EQ(detail["vertices"][2]["metrics"]["read-records"], 10000);
}

TEST(RestServer, AFailedJobShowsItsRootCause) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.fromElements(1, 2, 3)
      .map([](int v) {
        if (v == 2) throw std::invalid_argument("two is not allowed");
        return v;
      })
      .name("picky")
      .sinkTo(DiscardingSink<int>());
  auto job = env.executeAsync("failing");
  EXPECT_THROW(job.wait(), JobExecutionError);
  Server server(job);
  auto ex = server.get("/jobs/" + job.getJobID() + "/exceptions");
  EXPECT_NE(ex["root-exception"].get<std::string>().find("two is not allowed"), std::string::npos);
  auto& entry = ex["exceptionHistory"]["entries"][0];
  EXPECT_EQ(entry["exceptionName"], "std::invalid_argument");
  EXPECT_EQ(entry["taskName"], "picky");
  EXPECT_EQ(entry["location"], "subtask 1/1");
  EXPECT_GT(entry["timestamp"].get<int64_t>(), 0);
  // Flink's older form of the same, which some tools still read.
  ASSERT_EQ(ex["all-exceptions"].size(), 1u);
  EXPECT_NE(ex["all-exceptions"][0]["exception"].get<std::string>().find("two is not allowed"), std::string::npos);
  EXPECT_EQ(ex["all-exceptions"][0]["task"], "picky");
  EXPECT_EQ(ex["all-exceptions"][0]["location"], "subtask 1/1");
  EXPECT_EQ(ex["all-exceptions"][0]["timestamp"], entry["timestamp"]);
  EXPECT_EQ(server.get("/jobs/" + job.getJobID())["state"], "FAILED");
}

TEST(RestServer, BadRequestsGetJsonErrors) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startSlowJob(env);
  Server server(job);
  const std::string jid = job.getJobID();
  EXPECT_FALSE(server.get("/jobs/00000000000000000000000000000000", 404)["errors"].empty());
  EXPECT_FALSE(server.get("/jobs/" + jid + "/vertices/nope/backpressure", 404)["errors"].empty());
  EXPECT_FALSE(server.get("/no/such/path", 404)["errors"].empty());

  auto malformed = server.client->Post("/jobs/" + jid + "/stop", "{not json", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  auto badPatch = server.client->Patch("/jobs/" + jid, "[1, 2", "application/json");
  ASSERT_TRUE(badPatch);
  EXPECT_EQ(badPatch->status, 400);

  auto huge = server.client->Post("/jobs/" + jid + "/savepoints", std::string((1 << 20) + 10, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);

  // The job runs without checkpointing, which savepoints need.
  auto savepoint = server.client->Post("/jobs/" + jid + "/savepoints", "{\"cancel-job\": false}", "application/json");
  ASSERT_TRUE(savepoint);
  EXPECT_EQ(savepoint->status, 400);
  EXPECT_NE(savepoint->body.find("without checkpointing"), std::string::npos) << savepoint->body;
  server.get("/jobs/" + jid + "/savepoints/123", 404);
  EXPECT_EQ(job.getJobStatus(), JobStatus::RUNNING);  // none of it touched the job
  job.cancel();
  job.wait();
}

// Sends raw bytes on a new loopback connection and returns what comes back (at most 64 KB,
// waiting at most `wait`).
std::string raw(int port, const std::string& request, std::chrono::milliseconds wait = 2000ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  timeval tv{static_cast<time_t>(wait.count() / 1000), static_cast<suseconds_t>((wait.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while (out.size() < 65536 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// What `curl -X PATCH` and `curl -X POST` without -d send: no body, and no length.
TEST(RestServer, PatchAndPostWithoutABodyOrLengthAreAnswered) {
  auto request = [](const std::string& method, const std::string& target, int port) {
    return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
           "\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  };
  struct Case {
    std::string method, path;  // after /jobs/<id>
    JobStatus ends;
  };
  for (const Case& c : {Case{"PATCH", "?mode=cancel", JobStatus::CANCELED}, Case{"POST", "/stop", JobStatus::FINISHED}}) {
    auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
    auto job = startSlowJob(env);
    Server server(job);
    const std::string answer = raw(server.port, request(c.method, "/jobs/" + job.getJobID() + c.path, server.port));
    const bool accepted = answer.rfind("HTTP/1.1 202", 0) == 0;
    EXPECT_TRUE(accepted) << c.method << ": " << answer;
    if (!accepted) job.cancel();  // so that the test fails rather than waits
    EXPECT_EQ(job.wait().status, c.ends) << c.method;
  }
}

TEST(RestServer, PathTraversalNeverReachesAFile) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.fromElements(1).sinkTo(DiscardingSink<int>());
  auto job = env.executeAsync();
  job.wait();
  Server server(job);
  auto index = server.client->Get("/");
  ASSERT_TRUE(index);
  ASSERT_EQ(index->status, 200);
  const std::vector<std::string> payloads{
      "/../../../../etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd",
      "/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/%252e%252e%252f%252e%252e%252fetc%252fpasswd", "/..%252f..%252fetc/passwd",
      "/....//....//etc/passwd", "/..\\..\\..\\etc\\passwd", "/%2e%2e%5c%2e%2e%5cetc%5cpasswd", "//etc/passwd",
      "/etc/passwd", "/index.html/../../etc/passwd", "/index.html%00.html", "/index.html%00/../../etc/passwd",
      "/%00", "/assets/../../../etc/passwd", "/jobs/..%2f..%2f..%2fetc%2fpasswd", "/jobs/../../etc/passwd",
      "/jobs/%2e%2e%2f%2e%2e%2fetc%2fpasswd/plan", "/jobs/abc/vertices/..%2f..%2fetc%2fpasswd/backpressure",
      "/jobs/abc/vertices/%2e%2e%2f%2e%2e%2fetc%2fpasswd/metrics", "/jobs/abc/savepoints/..%2f..%2fetc%2fpasswd",
      "/metrics/../../etc/passwd", "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd", "/%uff0e%uff0e/etc/passwd",
      "/..;/..;/etc/passwd", "/.%2e/.%2e/etc/passwd", "/%2e./%2e./etc/passwd", "/proc/self/environ",
      "/..%c1%9c..%c1%9cetc%c1%9cpasswd", "/jobs/overview/../../../../etc/shadow", "/config/..%2f..%2froot%2f.bashrc",
      "/?file=../../etc/passwd", "/jobs?get=../../etc/passwd", "/jobs/x/metrics?get=..%2f..%2fetc%2fpasswd"};
  ASSERT_GE(payloads.size(), 30u);
  for (const auto& p : payloads) {
    std::string response = raw(server.port, "GET " + p + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    ASSERT_FALSE(response.empty()) << p;
    EXPECT_EQ(response.find("root:"), std::string::npos) << p;  // /etc/passwd
    EXPECT_EQ(response.find("PATH="), std::string::npos) << p;  // /proc/self/environ
    int status = std::stoi(response.substr(9, 3));
    if (status == 200) {
      // Only an embedded asset or a JSON answer of the API, never a file.
      bool asset = response.find(index->body.substr(0, 200)) != std::string::npos;
      bool api = response.find("application/json") != std::string::npos;
      EXPECT_TRUE(asset || api) << p << "\n" << response.substr(0, 300);
    } else {
      EXPECT_TRUE(status == 400 || status == 404) << p << " -> " << status;
    }
  }
}

TEST(RestServer, AThousandBadConnectionsDoNotStopTheServerOrTheJob) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startSlowJob(env);
  Server server(job);
  std::vector<int> sockets;
  for (int i = 0; i < 1000; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << i;
    if (i % 2 == 0) {
      std::string garbage = "\x16\x03\x01 not http at all " + std::string(static_cast<size_t>(i % 97), '\xff') + "\r\n\r\n";
      ::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    }  // odd ones connect and then say nothing
    sockets.push_back(fd);
  }
  auto start = std::chrono::steady_clock::now();
  auto overview = server.get("/overview");
  EXPECT_EQ(overview["jobs-running"], 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(job.getJobStatus(), JobStatus::RUNNING);
  for (int fd : sockets) ::close(fd);
  EXPECT_EQ(server.get("/jobs/" + job.getJobID())["state"], "RUNNING");
  job.cancel();
  job.wait();
}

TEST(RestServer, RequestsForAnotherHostAndCrossOriginChangesAreRefused) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  auto job = startSlowJob(env);
  Server server(job);
  // DNS rebinding: a page of evil.example resolved to 127.0.0.1.
  httplib::Headers rebound{{"Host", "evil.example"}};
  auto r = server.client->Get("/jobs/overview", rebound);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  httplib::Headers crossOrigin{{"Origin", "http://evil.example"}};
  r = server.client->Post("/jobs/" + job.getJobID() + "/stop", crossOrigin, "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(job.getJobStatus(), JobStatus::RUNNING);
  r = server.client->Get("/jobs/overview");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  job.cancel();
  job.wait();
}

// The server does not keep a job alive: dropping the last JobClient cancels the job, as
// without a server. What the API answered for it stays, until the process exits.
TEST(RestServer, TheServerDoesNotKeepAJobAliveButKeepsItsAnswers) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  std::string url, jid;
  {
    auto job = startSlowJob(env);
    url = job.getWebInterfaceURL();
    jid = job.getJobID();
  }
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  std::string body;
  // Eventually: the sampler may hold the job's last reference for a moment.
  EXPECT_TRUE(eventually([&] {
    auto r = client.Get("/jobs");
    body = r ? r->body : "";
    const json jobs = r ? json::parse(r->body)["jobs"] : json::array();
    return std::find(jobs.begin(), jobs.end(), json{{"id", jid}, {"status", "CANCELED"}}) != jobs.end();
  })) << body;
}

// A sink each of whose writes takes 300 ms, so that cancelling its job takes a while.
struct SlowWritesSink : Sink<int64_t> {
  struct Writer : SinkWriter<int64_t> {
    void write(const int64_t&) override { std::this_thread::sleep_for(300ms); }
  };
  std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext&) const override {
    return std::make_unique<Writer>();
  }
};

// A job whose last JobClient is dropped while it runs is served all along as it is
// cancelled: never "not found" between the drop and its end.
TEST(RestServer, AJobDroppedWhileRunningIsServedUntilItIsCancelled) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.setParallelism(1);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(100)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .sinkTo(SlowWritesSink{})
      .disableChaining();
  std::optional<JobClient> job(env.executeAsync("dropped while running"));
  const std::string url = job->getWebInterfaceURL(), jid = job->getJobID();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  ASSERT_TRUE(eventually([&] { return job->getMetrics().vertices.back().numRecordsIn > 0; }));  // a write is under way
  std::thread dropper([&] { job.reset(); });  // returns once the job is cancelled
  std::vector<std::string> seen;  // each answer: its status, and the state
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline && (seen.empty() || !seen.back().ends_with("CANCELED"))) {
    auto r = client.Get("/jobs/" + jid);
    const json body = r ? json::parse(r->body, nullptr, false) : json();
    seen.push_back(!r ? "no answer" : std::to_string(r->status) + " " + (body.is_object() ? body.value("state", "") : ""));
  }
  dropper.join();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "200 CANCELED");
  for (const auto& answer : seen) EXPECT_TRUE(answer.starts_with("200 ")) << answer;
  EXPECT_GT(std::count_if(seen.begin(), seen.end(), [](const auto& a) { return a == "200 CANCELLING"; }), 0)
      << "no answer came while it was cancelled";
}

// A job that ended and whose last JobClient is gone is served as it was when it ended:
// every path the Web UI reads answers as before, and the overviews still list it.
TEST(RestServer, AnEndedJobIsServedAfterItsLastClientIsGone) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  std::optional<Server> server;
  std::string jid;
  std::map<std::string, json> before;
  {
    auto job = testing::startUserMetricsJob(env, 10000, "ended and dropped");
    job.wait();
    server.emplace(job);
    jid = job.getJobID();
    const json detail = server->get("/jobs/" + jid);
    ASSERT_EQ(detail["state"], "FINISHED");
    std::vector<std::string> paths{"/jobs/" + jid, "/jobs/" + jid + "/plan", "/jobs/" + jid + "/exceptions",
                                   "/jobs/" + jid + "/checkpoints"};
    for (const auto& v : detail["vertices"]) {
      paths.push_back("/jobs/" + jid + "/vertices/" + v["id"].get<std::string>());
      paths.push_back("/jobs/" + jid + "/vertices/" + v["id"].get<std::string>() + "/metrics?get=0.counting%20map.evens");
    }
    ASSERT_GE(paths.size(), 6u);
    for (const auto& p : paths) before[p] = withoutClock(server->get(p));
    before["/overview"] = server->get("/overview")["jobs-finished"];
  }  // the last JobClient is gone
  EXPECT_EQ(server->get("/overview")["jobs-finished"], before["/overview"]);  // counted once, as before
  before.erase("/overview");
  auto head = server->client->Head("/jobs/" + jid);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  for (const auto& [path, answer] : before) EXPECT_EQ(withoutClock(server->get(path)), answer) << path;
  // Nothing is left to cancel or stop: 409 naming its final state, as for a job still held.
  for (bool cancel : {true, false}) {
    auto again = cancel ? server->client->Patch("/jobs/" + jid + "?mode=cancel")
                        : server->client->Post("/jobs/" + jid + "/savepoints", "{}", "application/json");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 409);
    EXPECT_NE(again->body.find("has already ended: it is FINISHED"), std::string::npos) << again->body;
  }
  bool listed = false;
  const json overview = server->get("/jobs/overview");
  for (const auto& j : overview["jobs"]) listed = listed || (j["jid"] == jid && j["state"] == "FINISHED");
  EXPECT_TRUE(listed) << overview.dump();
}

TEST(RestServer, APortInUseIsAClearErrorBeforeTheJobStarts) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(testOptions());
  env.fromElements(1).sinkTo(DiscardingSink<int>());
  auto first = env.executeAsync();
  first.wait();
  int port = std::stoi(first.getWebInterfaceURL().substr(first.getWebInterfaceURL().rfind(':') + 1));
  // Another process-wide server on the same port is the same server; a foreign socket is not.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  RestOptions taken = testOptions();
  taken.port = ntohs(addr.sin_port);
  ASSERT_NE(taken.port, port);
  auto env2 = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(taken);
  env2.fromElements(1).sinkTo(DiscardingSink<int>());
  try {
    env2.executeAsync();
    FAIL() << "expected the port to be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(std::to_string(taken.port)), std::string::npos) << e.what();
  }
  ::close(fd);
  // Nor a socket that allows its port to be shared (SO_REUSEPORT), as another weir
  // process's server would be: two servers would take turns answering.
  fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int yes = 1;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes), 0);
  addr.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  RestOptions shared = testOptions();
  shared.port = ntohs(addr.sin_port);
  auto env3 = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(shared);
  env3.fromElements(1).sinkTo(DiscardingSink<int>());
  EXPECT_THROW(env3.executeAsync(), Error) << "a second server listened on port " << shared.port;
  ::close(fd);
  // A job that asks for the port a server of this process picked shares that server.
  RestOptions same = testOptions();
  same.port = port;
  auto env4 = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(same);
  env4.fromElements(1).sinkTo(DiscardingSink<int>());
  auto fourth = env4.executeAsync();
  fourth.wait();
  EXPECT_EQ(fourth.getWebInterfaceURL(), first.getWebInterfaceURL());
}

// What executeAsync throws for a job with these REST options, or "" when it starts.
// Whether this machine has `address` (a TCP socket can be bound to it).
bool canBind(const char* address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  ::inet_pton(AF_INET, address, &at.sin_addr);
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0;
  ::close(fd);
  return bound;
}

std::string refusalOf(const RestOptions& options) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  env.fromElements(1).sinkTo(DiscardingSink<int>());
  try {
    env.executeAsync().wait();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// security.ssl.rest.*: with a certificate and its key the API speaks https only; a client
// that trusts the certificate reads the job, one that does not refuses the server.
TEST(RestServer, WithACertificateTheApiIsServedOverTls) {
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-tls-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto tls = test::makeSelfSignedCertificate(dir, "127.0.0.3");
  RestOptions options = testOptions();
  options.address = "127.0.0.3";  // a server of its own
  options.sslCertificate = tls.certificate;
  options.sslPrivateKey = tls.privateKey;
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  auto job = startSlowJob(env);
  const std::string url = job.getWebInterfaceURL();
  ASSERT_EQ(url.rfind("https://127.0.0.3:", 0), 0u) << url;
  httplib::Client trusting(url);
  trusting.set_ca_cert_path(tls.certificate);
  auto r = trusting.Get("/jobs/" + job.getJobID());
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["jid"], job.getJobID());
  httplib::Client doubting(url);  // the system's CAs only
  EXPECT_FALSE(doubting.Get("/jobs"));
  httplib::Client plain("http://127.0.0.3:" + url.substr(url.rfind(':') + 1));
  plain.set_read_timeout(2, 0);
  EXPECT_FALSE(plain.Get("/jobs")) << "plain http got an answer";
  job.cancel();
  job.wait();
  fs::remove_all(dir);
}

// rest.authentication.token: reading needs no token; cancelling, stopping and savepoints
// need it as Authorization: Bearer, and a wrong one is refused as a missing one is.
TEST(RestServer, WithATokenChangingAJobNeedsIt) {
  RestOptions options = testOptions();
  options.address = "127.0.0.4";  // a server of its own
  options.authenticationToken = "s3cret-token";
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  auto job = startSlowJob(env);
  Server server(job);
  const std::string jid = job.getJobID();
  EXPECT_EQ(server.get("/jobs/" + jid)["state"], "RUNNING");
  auto head = server.client->Head("/jobs/" + jid);  // a read too
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  auto refused = [&](httplib::Result r, const std::string& why) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << r->body;
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer realm=\"weir\"");
    EXPECT_NE(json::parse(r->body)["errors"][0].get<std::string>().find(why), std::string::npos) << r->body;
  };
  refused(server.client->Patch("/jobs/" + jid + "?mode=cancel"), "needs the REST token");
  refused(server.client->Post("/jobs/" + jid + "/stop", "{}", "application/json"), "needs the REST token");
  refused(server.client->Post("/jobs/" + jid + "/savepoints", "{}", "application/json"), "needs the REST token");
  server.client->set_bearer_token_auth("s3cret-tokeN");
  refused(server.client->Patch("/jobs/" + jid + "?mode=cancel"), "not this server's");
  EXPECT_EQ(server.get("/jobs/" + jid)["state"], "RUNNING");
  // Another job cannot share the server without the token.
  RestOptions without = options;
  without.authenticationToken.clear();
  EXPECT_NE(refusalOf(without).find("another TLS certificate or token"), std::string::npos);
  // With the token, the requests get past the check (the job has no checkpointing, so no
  // savepoint: 400, not 401); the scheme's case does not matter (RFC 7235).
  httplib::Client holder("127.0.0.4", server.port);
  const httplib::Headers token{{"Authorization", "bEaReR s3cret-token"}};
  auto savepoint = holder.Post("/jobs/" + jid + "/savepoints", token, R"({"target-directory": "/tmp"})", "application/json");
  ASSERT_TRUE(savepoint);
  EXPECT_EQ(savepoint->status, 400) << savepoint->body;
  auto r = holder.Patch("/jobs/" + jid + "?mode=cancel", token, std::string(), "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(job.wait().status, JobStatus::CANCELED);
}

TEST(RestServer, AnAddressBeyondLoopbackNeedsTlsAndATokenUnlessInsecure) {
  RestOptions open = testOptions();
  open.address = "0.0.0.0";
  std::string e = refusalOf(open);
  EXPECT_NE(e.find("listening on 0.0.0.0"), std::string::npos) << e;
  EXPECT_NE(e.find("--rest-insecure"), std::string::npos) << e;
  open.authenticationToken = "t";
  EXPECT_NE(refusalOf(open).find("listening on 0.0.0.0"), std::string::npos);
  open.authenticationToken.clear();
  open.sslCertificate = "/no/cert.pem";  // the policy comes before the files
  open.sslPrivateKey = "/no/key.pem";
  EXPECT_NE(refusalOf(open).find("listening on 0.0.0.0"), std::string::npos);
  // Insecure, it gets past the check: it listens, or, where this address (TEST-NET-1)
  // is no local one, as is usual, the bind fails and says so.
  RestOptions insecure = testOptions();
  insecure.address = "192.0.2.1";
  insecure.insecure = true;
  e = refusalOf(insecure);
  if (canBind("192.0.2.1")) EXPECT_EQ(e, "");
  else EXPECT_NE(e.find("cannot listen on 192.0.2.1"), std::string::npos) << e;
  // A certificate that is not there, or is not one, is named.
  const fs::path dir = fs::temp_directory_path() / ("weir-rest-badtls-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  RestOptions tls = testOptions();
  tls.address = "127.0.0.5";
  tls.sslCertificate = (dir / "absent.pem").string();
  tls.sslPrivateKey = (dir / "absent-key.pem").string();
  e = refusalOf(tls);
  EXPECT_NE(e.find("cannot read the TLS certificate '" + tls.sslCertificate + "'"), std::string::npos) << e;
  std::ofstream(dir / "junk.pem") << "not a certificate\n";
  tls.sslCertificate = tls.sslPrivateKey = (dir / "junk.pem").string();
  e = refusalOf(tls);
  EXPECT_NE(e.find("are not a PEM certificate and its private key"), std::string::npos) << e;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
