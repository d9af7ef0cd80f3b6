// The Web UI in a real browser: headless Chromium opens the page of a job and the drawn
// graph must show every vertex and the back-pressure of a slow sink; a clicked vertex
// shows the metrics its functions registered.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/operator_metrics.h"
#include "support/refusing_snapshot.h"
#include "support/slow_sink.h"
#include "support/staged_batch_job.h"
#include "support/tls_files.h"
#include "support/user_metrics_job.h"
#include "support/web_driver.h"
#include "support/weir_process.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(path)) return path;
  return "";
}

// Skips a test when Chromium is not installed; fails it when WEIR_REQUIRE_BROWSER is set
// (CI installs it).
#define WEIR_REQUIRE_CHROMIUM()                                                                         \
  do {                                                                                                  \
    if (chromium().empty()) {                                                                           \
      if (std::getenv("WEIR_REQUIRE_BROWSER")) FAIL() << "chromium is not installed (scripts/setup --browser)"; \
      GTEST_SKIP() << "chromium is not installed; scripts/setup --browser installs it";                 \
    }                                                                                                   \
  } while (0)

// The same for ChromeDriver, which the tests that click through pages drive.
#define WEIR_REQUIRE_DRIVER()                                                                           \
  do {                                                                                                  \
    WEIR_REQUIRE_CHROMIUM();                                                                            \
    if (test::WebDriver::chromedriverPath().empty()) {                                                  \
      if (std::getenv("WEIR_REQUIRE_BROWSER")) FAIL() << "chromedriver is not installed (scripts/setup --browser)"; \
      GTEST_SKIP() << "chromedriver is not installed; scripts/setup --browser installs it";             \
    }                                                                                                   \
  } while (0)

// The REST API of `job`, as the tests read it beside the page.
nlohmann::json restGet(const JobClient& job, const std::string& path) {
  const std::string url = job.getWebInterfaceURL();
  const auto colon = url.rfind(':');
  httplib::Client client(url.substr(url.find("//") + 2, colon - url.find("//") - 2), std::stoi(url.substr(colon + 1)));
  auto r = client.Get(path);
  return r && r->status == 200 ? nlohmann::json::parse(r->body) : nlohmann::json();
}

// "1,234" as the page writes a count.
int64_t shownCount(std::string s) {
  std::erase(s, ',');
  return std::stoll(s);
}

fs::path artifact(const std::string& name) { return fs::current_path() / "test-artifacts" / name; }

// Runs headless Chromium on `url` with extra `args`; returns its stdout.
std::string runChromium(const std::string& url, const std::string& args) {
  auto profile = fs::temp_directory_path() / ("weir-chromium-" + std::to_string(::getpid()));
  std::string command = chromium() +
                        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                        " --disable-background-networking --disable-component-update --disable-sync"
                        " --user-data-dir=" + profile.string() + " --virtual-time-budget=5000 " + args + " " + url +
                        " 2>/dev/null";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  ::pclose(pipe);
  fs::remove_all(profile);
  return out;
}

TEST(WebUi, DrawsEveryVertexAndShowsTheBackPressureOfTheSlowSinksInput) {
  WEIR_REQUIRE_CHROMIUM();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  auto job = testing::startSlowJob(env, "web ui test");
  // Waits until the REST API, which the page reads, has sampled the sink's input as
  // back-pressured.
  {
    std::string url = job.getWebInterfaceURL();
    httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
    auto deadline = std::chrono::steady_clock::now() + 30s;
    bool high = false;
    while (!high && std::chrono::steady_clock::now() < deadline) {
      if (auto r = client.Get("/jobs/" + job.getJobID()); r && r->status == 200) {
        const auto page = nlohmann::json::parse(r->body);
        for (const auto& v : page["vertices"])
          high = high || (v["name"] == "count" && v["backpressure-level"] == "high");
      }
      if (!high) std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(high) << "the REST API never sampled the count vertex as back-pressured";
  }

  std::string dom = runChromium(job.getWebInterfaceURL() + "/", "--dump-dom");
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  EXPECT_NE(dom.find(R"(id="job-status" class="state state-RUNNING">RUNNING<)"), std::string::npos);

  std::regex vertexRe(R"re(<g class="vertex" data-vertex-id="([0-9a-f]{32})" data-backpressure="(OK|LOW|HIGH)")re");
  std::map<std::string, std::string> drawn;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), vertexRe); it != std::sregex_iterator(); ++it)
    drawn[(*it)[1]] = (*it)[2];
  // Every vertex of the job is drawn, and the one feeding the slow sink ("count") is HIGH.
  auto metrics = job.getMetrics();
  ASSERT_EQ(metrics.vertices.size(), 3u);
  EXPECT_EQ(drawn.size(), 3u) << dom.substr(0, 2000);
  for (const char* name : {"Source: numbers", "count", "slow sink"})
    EXPECT_NE(dom.find(std::string("<title>") + name + "</title>"), std::string::npos) << name;
  int high = 0;
  for (auto& [id, level] : drawn) high += level == "HIGH" ? 1 : 0;
  EXPECT_GE(high, 1);
  std::smatch countVertex;
  std::regex countRe(R"re(<g class="vertex" data-vertex-id="[0-9a-f]{32}" data-backpressure="(OK|LOW|HIGH)"[^>]*><title>count</title>)re");
  ASSERT_TRUE(std::regex_search(dom, countVertex, countRe)) << "no vertex named count";
  EXPECT_EQ(countVertex[1], "HIGH");

  // Keep a screenshot as a test artifact.
  auto artifacts = fs::current_path() / "test-artifacts";
  fs::create_directories(artifacts);
  auto png = artifacts / "web-ui.png";
  fs::remove(png);
  runChromium(job.getWebInterfaceURL() + "/", "--window-size=1280,900 --screenshot=" + png.string());
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 10000u);

  job.cancel();
  job.wait();
}

// An address naming a job the server does not know says so; it used to show another
// job in its place, silently.
TEST(WebUi, AnUnknownJobInTheAddressIsSaidSoNotReplacedByAnother) {
  WEIR_REQUIRE_CHROMIUM();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  auto job = testing::startSlowJob(env, "known job");
  const std::string unknown(32, 'f');
  std::string dom = runChromium(job.getWebInterfaceURL() + "/#" + unknown, "--dump-dom");
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  EXPECT_NE(dom.find(R"(<p id="no-job" class="muted">This server has no job )" + unknown +
                     "; its jobs are listed above.</p>"),
            std::string::npos)
      << dom.substr(0, 3000);
  EXPECT_NE(dom.find(R"(<div id="job-view" hidden="">)"), std::string::npos) << "another job is shown";
  EXPECT_NE(dom.find("data-jid=\"" + job.getJobID() + "\""), std::string::npos) << "the known job is not listed";
  // Without a job in the address, the running job is shown.
  dom = runChromium(job.getWebInterfaceURL() + "/", "--dump-dom");
  EXPECT_NE(dom.find(R"(<p id="no-job" class="muted" hidden="">)"), std::string::npos);
  EXPECT_NE(dom.find(R"(id="job-name">known job<)"), std::string::npos) << dom.substr(0, 3000);
  job.cancel();
  job.wait();
}

// The counting map's "evens" over both subtasks, as the vertex's metric table shows it
// (a row per metric, a column per subtask); -1 without the row.
int64_t evensInTable(const std::string& dom) {
  std::smatch row;
  const std::regex evens(R"re(<tr data-metric="counting map.evens"><td>counting map.evens</td><td class="num">([0-9,]+)</td><td class="num">([0-9,]+)</td></tr>)re");
  if (!std::regex_search(dom, row, evens)) return -1;
  auto number = [](std::string s) {
    std::erase(s, ',');
    return std::stoll(s);
  };
  return number(row[1]) + number(row[2]);
}

TEST(WebUi, AClickedOperatorShowsTheMetricsItsFunctionsRegistered) {
  WEIR_REQUIRE_CHROMIUM();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  constexpr int64_t kCount = 10000;
  auto job = testing::startUserMetricsJob(env, kCount, "web ui metrics");
  job.wait();
  std::string url = job.getWebInterfaceURL();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  // The vertex that ran the counting map, once the REST API lists its metric.
  std::string vertex;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (vertex.empty() && std::chrono::steady_clock::now() < deadline) {
    auto r = client.Get("/jobs/" + job.getJobID());
    ASSERT_TRUE(r && r->status == 200);
    const auto detail = nlohmann::json::parse(r->body);
    for (const auto& v : detail["vertices"]) {
      auto m = client.Get("/jobs/" + job.getJobID() + "/vertices/" + v["id"].get<std::string>() + "/metrics");
      if (m && m->body.find("\"0.counting map.evens\"") != std::string::npos) vertex = v["id"];
    }
    if (vertex.empty()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(vertex.empty()) << "no vertex lists the counting map's metrics";

  // The address a click on the vertex leads to: the job and the vertex.
  std::string dom = runChromium(url + "/#" + job.getJobID() + "/" + vertex, "--dump-dom");
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  // One row per metric, a column per subtask; evens counted over both subtasks.
  EXPECT_EQ(evensInTable(dom), kCount / 2) << dom.substr(dom.find("vertex-metric-table"), 3000);
  EXPECT_NE(dom.find(R"(<tr data-metric="counting map.parity.odd.records">)"), std::string::npos);
  EXPECT_NE(dom.find(R"(<tr data-metric="keeping filter.kept">)"), std::string::npos);
  EXPECT_NE(dom.find(R"(<tr data-metric="counting map.maxSeen">)"), std::string::npos);
  EXPECT_EQ(dom.find("data-metric=\"numRecordsIn\""), std::string::npos) << "the fixed metrics belong to the table above";

  auto png = fs::current_path() / "test-artifacts" / "web-ui-operator-metrics.png";
  fs::create_directories(png.parent_path());
  runChromium(url + "/#" + job.getJobID() + "/" + vertex, "--window-size=1280,1400 --screenshot=" + png.string());
  EXPECT_TRUE(fs::exists(png));

  // A click on a metric's row charts it, a line per subtask, and the legend gives each
  // subtask's value: the job has ended, so exactly what the REST API says.
  WEIR_REQUIRE_DRIVER();
  test::WebDriver browser;
  browser.open(url + "/#" + job.getJobID() + "/" + vertex);
  ASSERT_FALSE(browser.await("#vertex-metric-table tr[data-metric='counting map.evens']").empty());
  browser.clickOn("#vertex-metric-table tr[data-metric='counting map.evens']");
  ASSERT_TRUE(browser.awaitTrue("return document.querySelectorAll('#metric-chart polyline.metric-line').length === 2 && "
                                "document.querySelector('#metric-chart polyline').getAttribute('points').split(' ').length >= 2;"));
  EXPECT_EQ(browser.run("return document.getElementById('metric-pick').value;"), "counting map.evens");
  const auto values = restGet(job, "/jobs/" + job.getJobID() + "/vertices/" + vertex + "/metrics?get=0.counting%20map.evens,1.counting%20map.evens");
  ASSERT_EQ(values.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const std::string legend = browser.textOf("#metric-chart-legend span[data-subtask='" + std::to_string(s) + "']");
    ASSERT_EQ(legend.rfind("subtask " + std::to_string(s) + ": ", 0), 0u) << legend;
    EXPECT_EQ(shownCount(legend.substr(legend.find(": ") + 2)), std::stoll(values[s]["value"].get<std::string>())) << legend;
  }
  browser.screenshot(artifact("web-ui-metric-chart.png"));
  EXPECT_GT(fs::file_size(artifact("web-ui-metric-chart.png")), 10000u);
}

// The checkpoint chart leaves a failed checkpoint out of its lines (not a drop to zero)
// and marks it on the axis with its reason; its row in the table says why too.
TEST(WebUi, AFailedCheckpointIsMarkedWithItsReasonNotPlottedAsZero) {
  WEIR_REQUIRE_CHROMIUM();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  env.enableCheckpointing(50ms);
  env.getCheckpointConfig().setTolerableCheckpointFailureNumber(100);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(1000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .map(test::RefusesCheckpoint2{})
      .sinkTo(DiscardingSink<int64_t>());
  auto job = env.executeAsync("failed checkpoint");
  std::string url = job.getWebInterfaceURL();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  auto deadline = std::chrono::steady_clock::now() + 20s;
  int64_t completed = 0;
  while (completed < 3 && std::chrono::steady_clock::now() < deadline) {
    if (auto r = client.Get("/jobs/" + job.getJobID() + "/checkpoints"); r && r->status == 200)
      completed = nlohmann::json::parse(r->body)["counts"]["completed"].get<int64_t>();
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(completed, 3);
  job.cancel();  // the chart stays as it is, with checkpoint 2 in its history
  job.wait();

  std::string dom = runChromium(url + "/", "--dump-dom");
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  const auto chart = dom.find("id=\"checkpoint-chart\"");
  ASSERT_NE(chart, std::string::npos);
  std::regex failedRe(R"re(<g class="cp-failed" data-checkpoint-id="2">(<line[^>]*></line>){2}<title>#2 failed: [^<]*snapshot refused)re");
  EXPECT_TRUE(std::regex_search(dom, failedRe)) << dom.substr(chart, 3000);
  EXPECT_EQ(dom.find("<title>#2: "), std::string::npos) << "checkpoint 2 is plotted as if it completed";
  EXPECT_NE(dom.find("<title>#1: "), std::string::npos) << "checkpoint 1 is not plotted";
  std::regex rowRe(R"re(<tr data-checkpoint-id="2" title="failed: [^"]*snapshot refused)re");
  EXPECT_TRUE(std::regex_search(dom, rowRe)) << dom.substr(dom.find("checkpoint-table"), 2000);

  // A click on a checkpoint opens its details: the failed one says why; the completed
  // one lists each task's acknowledgements, and a click on a task its subtasks, all as the
  // REST API has them.
  WEIR_REQUIRE_DRIVER();
  test::WebDriver browser;
  browser.open(url + "/#" + job.getJobID());
  ASSERT_FALSE(browser.await("#checkpoint-table tr[data-checkpoint-id='2']").empty());
  browser.clickOn("#checkpoint-table tr[data-checkpoint-id='2']");
  ASSERT_TRUE(browser.awaitTrue("return !document.getElementById('checkpoint-detail').hidden && "
                                "document.getElementById('cpd-title').textContent.startsWith('Checkpoint #2');"));
  EXPECT_EQ(browser.run("return document.getElementById('cpd-title').textContent;"), "Checkpoint #2 — FAILED");
  EXPECT_NE(browser.textOf("#cp-failure").find("snapshot refused"), std::string::npos);
  EXPECT_TRUE(browser.run("return location.hash;").get<std::string>().ends_with("/checkpoint-2"));

  browser.clickOn("#checkpoint-table tr[data-checkpoint-id='1']");
  ASSERT_TRUE(browser.awaitTrue("return document.getElementById('cpd-title').textContent === 'Checkpoint #1 — COMPLETED' && "
                                "document.querySelectorAll('#cp-task-table tbody tr').length > 0;"));
  const auto details = restGet(job, "/jobs/" + job.getJobID() + "/checkpoints/details/1");
  ASSERT_TRUE(details.is_object());
  const auto rows = browser.run("return [...document.querySelectorAll('#cp-task-table tbody tr')]"
                                ".map(tr => [tr.dataset.vertexId, tr.cells[1].textContent]);");
  ASSERT_EQ(rows.size(), details["tasks"].size());
  for (const auto& row : rows) {
    const auto& task = details["tasks"][row[0].get<std::string>()];
    EXPECT_EQ(row[1], std::to_string(task["num_acknowledged_subtasks"].get<int>()) + "/" +
                          std::to_string(task["num_subtasks"].get<int>()));
  }
  const std::string first = rows[0][0];
  browser.clickOn("#cp-task-table tr[data-vertex-id='" + first + "']");
  ASSERT_TRUE(browser.awaitTrue("return !document.getElementById('cp-subtask-table').hidden && "
                                "document.querySelectorAll('#cp-subtask-table tbody tr').length > 0;"));
  const auto subtasks = restGet(job, "/jobs/" + job.getJobID() + "/checkpoints/details/1/subtasks/" + first)["subtasks"];
  const auto shown = browser.run("return [...document.querySelectorAll('#cp-subtask-table tbody tr')]"
                                 ".map(tr => [tr.cells[0].textContent, tr.cells[1].textContent]);");
  ASSERT_EQ(shown.size(), subtasks.size());
  for (size_t i = 0; i < shown.size(); ++i) {
    EXPECT_EQ(shown[i][0], std::to_string(subtasks[i]["index"].get<int>()));
    EXPECT_EQ(shown[i][1], subtasks[i]["status"]);
  }
  browser.screenshot(artifact("web-ui-checkpoint.png"));
  EXPECT_GT(fs::file_size(artifact("web-ui-checkpoint.png")), 10000u);
}

// Flink's HistoryServer: `weir history` serves the archive of an ended job, and the page
// of a vertex shows what its functions counted, as the job's own server did.
TEST(WebUi, TheHistoryServerShowsAnArchivedJobsOperatorMetrics) {
  WEIR_REQUIRE_CHROMIUM();
  const fs::path dir = fs::temp_directory_path() / ("weir-web-ui-history-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  RestOptions options = test::restOnAnyPort();
  options.archiveDir = (dir / "archive").string();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  constexpr int64_t kCount = 10000;
  auto job = testing::startUserMetricsJob(env, kCount, "archived metrics");
  job.wait();
  const std::string jid = job.getJobID();
  ASSERT_TRUE(fs::exists(dir / "archive" / jid));

  pid_t history = test::spawnWeir("history --port 0 --archive-dir " + (dir / "archive").string(), dir / "out", dir / "err");
  std::smatch at;
  std::string said;
  for (int i = 0; i < 500 && !std::regex_search(said, at, std::regex("Web UI at (http://127\\.0\\.0\\.1:([0-9]+))")); ++i) {
    std::this_thread::sleep_for(20ms);
    std::ifstream in(dir / "err");
    said.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_FALSE(at.empty()) << said;
  const std::string url = at[1];
  httplib::Client client("127.0.0.1", std::stoi(at[2]));
  auto detail = client.Get("/jobs/" + jid);
  ASSERT_TRUE(detail && detail->status == 200);
  std::string vertex;
  const auto parsed = nlohmann::json::parse(detail->body);
  for (const auto& v : parsed["vertices"]) {
    auto m = client.Get("/jobs/" + jid + "/vertices/" + v["id"].get<std::string>() + "/metrics");
    if (m && m->body.find("\"0.counting map.evens\"") != std::string::npos) vertex = v["id"];
  }
  ASSERT_FALSE(vertex.empty()) << "no archived vertex lists the counting map's metrics";

  std::string dom = runChromium(url + "/#" + jid + "/" + vertex, "--dump-dom");
  ::kill(history, SIGTERM);
  int status = 0;
  ::waitpid(history, &status, 0);
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  EXPECT_NE(dom.find(R"(id="job-name">archived metrics<)"), std::string::npos) << dom.substr(0, 3000);
  EXPECT_EQ(evensInTable(dom), kCount / 2) << dom.substr(dom.find("vertex-metric-table"), 3000);
  // The histogram's figures, as Flink's REST API names them.
  EXPECT_NE(dom.find(R"(<tr data-metric="counting map.values_p99">)"), std::string::npos);
  fs::remove_all(dir);
}

// With a certificate the Web UI is served over https and reads the API there too.
TEST(WebUi, ServedOverTlsItShowsTheJob) {
  WEIR_REQUIRE_CHROMIUM();
  const fs::path dir = fs::temp_directory_path() / ("weir-web-ui-tls-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto tls = test::makeSelfSignedCertificate(dir, "127.0.0.6");
  RestOptions options = test::restOnAnyPort();
  options.address = "127.0.0.6";  // a server of its own
  options.sslCertificate = tls.certificate;
  options.sslPrivateKey = tls.privateKey;
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  auto job = testing::startSlowJob(env, "tls job");
  ASSERT_EQ(job.getWebInterfaceURL().rfind("https://", 0), 0u);
  // The certificate is self-signed: Chromium is told to take it.
  std::string dom = runChromium(job.getWebInterfaceURL() + "/#" + job.getJobID(), "--ignore-certificate-errors --dump-dom");
  ASSERT_FALSE(dom.empty()) << "chromium printed nothing";
  EXPECT_NE(dom.find(R"(id="job-name">tls job<)"), std::string::npos) << dom.substr(0, 3000);
  EXPECT_NE(dom.find(R"(id="job-status" class="state state-RUNNING">RUNNING<)"), std::string::npos);
  job.cancel();
  job.wait();
  fs::remove_all(dir);
}

// A click on a vertex shows its chain (each operator's records in and out) and a row
// per subtask (records, rates, back-pressure, busy / idle / back-pressured ms per
// second, watermarks), and any of its metrics picked from the menu is charted per
// subtask.
TEST(WebUi, AClickedVertexShowsItsSubtasksAndChartsAMetric) {
  WEIR_REQUIRE_DRIVER();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  auto job = testing::startSlowJob(env, "drill down");
  const std::string jid = job.getJobID();
  std::string count;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (count.empty() && std::chrono::steady_clock::now() < deadline) {
    const auto detail = restGet(job, "/jobs/" + jid);  // held: a temporary's member would dangle in the loop
    for (const auto& v : detail["vertices"])
      if (v["name"] == "count" && v["backpressure-level"] == "high") count = v["id"];
    if (count.empty()) std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(count.empty()) << "the REST API never sampled the count vertex as back-pressured";
  auto readRecords = [&] {
    std::vector<int64_t> out;
    const auto vertex = restGet(job, "/jobs/" + jid + "/vertices/" + count);
    for (const auto& s : vertex["subtasks"]) out.push_back(s["metrics"]["read-records"].get<int64_t>());
    return out;
  };
  const auto before = readRecords();

  test::WebDriver browser;
  browser.open(job.getWebInterfaceURL() + "/#" + jid);
  const auto box = browser.await("g.vertex[data-vertex-id='" + count + "'] rect");
  ASSERT_FALSE(box.empty());
  browser.click(box);
  ASSERT_TRUE(browser.awaitTrue("return location.hash.endsWith('/" + count + "') && "
                                "document.querySelectorAll('#subtask-table tbody tr').length === 2;"));
  EXPECT_EQ(browser.run("return [...document.querySelectorAll('#vertex-chain li .op-name')].map(s => s.textContent);"),
            nlohmann::json::array({"count"}));
  const std::string chainIo = browser.textOf("#vertex-chain li[data-operator='count'] .op-io");  // "in N · out M"
  const auto rows = browser.run("return [...document.querySelectorAll('#subtask-table tbody tr')]"
                                ".map(tr => [...tr.cells].map(td => td.textContent));");
  const auto after = readRecords();
  // The operator's records in, over its subtasks, between the REST API's readings.
  ASSERT_EQ(chainIo.rfind("in ", 0), 0u) << chainIo;
  const int64_t operatorIn = shownCount(chainIo.substr(3, chainIo.find(" · ") - 3));
  EXPECT_GE(operatorIn, before[0] + before[1]) << chainIo;
  EXPECT_LE(operatorIn, after[0] + after[1]) << chainIo;
  EXPECT_NE(chainIo.find(" · out "), std::string::npos) << chainIo;
  // Its operator's watermarks, none yet (Flink's Long.MIN_VALUE), say so.
  EXPECT_EQ(browser.run("return [...document.querySelectorAll(\"#vertex-metric-table tr[data-metric='count.currentInputWatermark'] "
                        "td\")].map(td => td.textContent);"),
            nlohmann::json::array({"count.currentInputWatermark", "no watermark", "no watermark"}));
  ASSERT_EQ(rows.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    const auto& row = rows[s];
    EXPECT_EQ(row[0], std::to_string(s));
    EXPECT_EQ(row[1], "RUNNING");
    const int64_t in = shownCount(row[2]);  // a count the REST API passed through
    EXPECT_GE(in, before[s]);
    EXPECT_LE(in, after[s]);
    EXPECT_TRUE(row[6].get<std::string>().ends_with("HIGH")) << row.dump();  // waits for the slow sink
    EXPECT_GT(std::stoi(row[9].get<std::string>()), 500) << row.dump();     // back-pressured ms/s
    const int busy = std::stoi(row[7].get<std::string>()), idle = std::stoi(row[8].get<std::string>());
    EXPECT_GE(busy, 0);
    EXPECT_LE(busy + idle + std::stoi(row[9].get<std::string>()), 1010) << row.dump();
    EXPECT_EQ(row[10], "no watermark") << "no event time in this job";
  }
  // The vertex table shows the same as ms per second, averaged over the subtasks.
  const std::string shares = browser.textOf("#vertex-table tr[data-vertex-id='" + count + "'] td.time-shares");
  EXPECT_GT(std::stoi(shares.substr(shares.rfind('/') + 1)), 500) << shares;

  // Any metric of the vertex is charted, a line per subtask, from the menu.
  browser.clickOn("#metric-pick option[value='numRecordsIn']");
  ASSERT_TRUE(browser.awaitTrue("const lines = [...document.querySelectorAll('#metric-chart polyline.metric-line')];"
                                "return lines.length === 2 && lines.every(p => p.getAttribute('points').split(' ').length >= 3);",
                                20s));
  std::vector<std::string> legends;  // read first: the REST API's reading after them bounds them
  for (int s = 0; s < 2; ++s)
    legends.push_back(browser.textOf("#metric-chart-legend span[data-subtask='" + std::to_string(s) + "']"));
  const auto last = readRecords();
  for (size_t s = 0; s < 2; ++s) {
    const int64_t shown = shownCount(legends[s].substr(legends[s].find(": ") + 2));
    EXPECT_GE(shown, before[s]) << legends[s];
    EXPECT_LE(shown, last[s]) << legends[s];
  }
  browser.screenshot(artifact("web-ui-subtasks.png"));
  EXPECT_GT(fs::file_size(artifact("web-ui-subtasks.png")), 10000u);
  job.cancel();
  job.wait();
}

// A batch job's page shows its stages: while the second of three runs, the header says
// "stage 2/3", each vertex its stage and state, and the blocking exchanges are dashed.
TEST(WebUi, ABatchJobsPageShowsItsStages) {
  WEIR_REQUIRE_DRIVER();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  auto gate = std::make_shared<std::atomic<bool>>(false);
  auto job = testing::startStagedBatchJob(env, gate);
  test::OpenOnExit release{gate};
  const std::string jid = job.getJobID();
  test::WebDriver browser;
  browser.open(job.getWebInterfaceURL() + "/#" + jid);
  ASSERT_TRUE(browser.awaitTrue("return document.getElementById('job-stage').textContent === 'stage 2/3';"));
  EXPECT_EQ(browser.run("return [...document.querySelectorAll('g.vertex text.status')].map(t => t.textContent);"),
            nlohmann::json::array({"stage 1 · FINISHED", "stage 2 · RUNNING", "stage 3 · CREATED"}));
  EXPECT_EQ(browser.run("return [...document.querySelectorAll('g.edge')].map(e => e.dataset.exchange + ' ' + "
                        "getComputedStyle(e.querySelector('path')).strokeDasharray);"),
            nlohmann::json::array({"blocking 6px, 4px", "blocking 6px, 4px"}));
  gate->store(true);
  EXPECT_EQ(job.wait().status, JobStatus::FINISHED);
}

// A server with a REST token: Cancel asks for it, asks again when it is refused, and the
// job is cancelled once it is right.
TEST(WebUi, CancelAsksForTheRestTokenUntilItIsRight) {
  WEIR_REQUIRE_DRIVER();
  RestOptions options = test::restOnAnyPort();
  options.address = "127.0.0.7";  // a server of its own
  options.authenticationToken = "s3cret";
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(options);
  auto job = testing::startSlowJob(env, "guarded job");
  test::WebDriver browser;
  browser.open(job.getWebInterfaceURL() + "/#" + job.getJobID());
  const auto cancel = browser.await("#cancel-job:not([disabled])");
  ASSERT_FALSE(cancel.empty());
  browser.click(cancel);
  EXPECT_EQ(browser.awaitDialog(), "Cancel job \"guarded job\" (" + job.getJobID() + ")?");
  browser.acceptDialog();
  EXPECT_EQ(browser.awaitDialog(), "This server asks for its REST token to change a job:");
  browser.typeInDialog("wrong");
  browser.acceptDialog();
  EXPECT_EQ(browser.awaitDialog(), "The REST token was refused. This server asks for its REST token to change a job:");
  EXPECT_EQ(job.getJobStatus(), JobStatus::RUNNING);
  browser.typeInDialog("s3cret");
  browser.acceptDialog();
  EXPECT_EQ(job.wait().status, JobStatus::CANCELED);
  EXPECT_TRUE(browser.awaitTrue("return document.getElementById('job-status').textContent === 'CANCELED';"));
}

}  // namespace
}  // namespace weir
