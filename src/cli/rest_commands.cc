#include "cli/rest_commands.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/loopback.h"
#include "core/printable.h"
#include "weir/savepoint_format_type.h"

namespace weir::cli {

namespace {

using json = nlohmann::json;

int fail(const std::string& message) {
  std::fprintf(stderr, "weir: %s\n", message.c_str());
  return 1;
}

// A client for "host:port", "http://host:port" or "https://host:port" that sends the
// token and trusts the CA file, when given; nullopt when the address is malformed.
std::optional<httplib::Client> client(const RestEndpoint& rest) {
  std::string scheme = "http", hostPort = rest.address;
  for (const char* s : {"http", "https"})
    if (rest.address.starts_with(std::string(s) + "://")) scheme = s, hostPort = rest.address.substr(scheme.size() + 3);
  auto colon = hostPort.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  try {
    size_t used = 0;
    port = std::stoi(hostPort.substr(colon + 1), &used);
    if (used != hostPort.size() - colon - 1) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  if (port < 1 || port > 65535) return std::nullopt;
  std::optional<httplib::Client> c(std::in_place, scheme + "://" + hostPort);
  if (!c->is_valid()) return std::nullopt;
  c->set_connection_timeout(3, 0);
  c->set_read_timeout(10, 0);
  if (!rest.caFile.empty()) c->set_ca_cert_path(rest.caFile);
  return c;
}

// Whether the token may go to `rest`: over https, or to this machine.
bool tokenStaysPrivate(const RestEndpoint& rest) {
  if (rest.address.starts_with("https://")) return true;
  std::string hostPort = rest.address.starts_with("http://") ? rest.address.substr(7) : rest.address;
  return core::isLoopbackAddress(hostPort.substr(0, hostPort.rfind(':')));
}

// The JSON answer of a request, or nullopt after printing why there is none. A refusal
// (4xx) exits with `refusedCode`.
std::optional<json> call(const RestEndpoint& rest, const std::string& method, const std::string& path,
                         int* exitCode, const std::string& body = "", int refusedCode = 1) {
  auto c = client(rest);
  if (!c) {
    *exitCode = 2;
    std::fprintf(stderr, "weir: --address must be host:port or https://host:port, got '%s'\n", rest.address.c_str());
    return std::nullopt;
  }
  // Only a request that changes a job carries the token, and never in clear text to
  // another machine.
  if (method != "GET" && !rest.token.empty()) {
    if (!tokenStaysPrivate(rest)) {
      *exitCode = fail("not sending the REST token in clear text to " + rest.address + "; use https://");
      return std::nullopt;
    }
    c->set_bearer_token_auth(rest.token);
  }
  httplib::Result r = method == "GET"     ? c->Get(path)
                      : method == "PATCH" ? c->Patch(path)
                                          : c->Post(path, body, "application/json");
  if (!r) {
    *exitCode = fail("cannot reach the REST API at " + rest.address + ": " + httplib::to_string(r.error()) +
                     " (is a job running with --rest-port?)");
    return std::nullopt;
  }
  json answer = json::parse(r->body, nullptr, false);
  if (r->status >= 400) {
    std::string why = "HTTP " + std::to_string(r->status);
    if (answer.is_object() && answer.contains("errors") && answer["errors"].is_array() && !answer["errors"].empty() &&
        answer["errors"][0].is_string())
      why = core::printableAscii(answer["errors"][0].get<std::string>());
    if (r->status == 401 && rest.token.empty()) why += " Give it with --token-file or $WEIR_REST_TOKEN.";
    *exitCode = fail(why);
    // Refused by the job (2 where the caller says so); not allowed (401) is as unreachable.
    if (r->status < 500 && r->status != 404 && r->status != 401) *exitCode = refusedCode;
    return std::nullopt;
  }
  if (answer.is_discarded()) {
    *exitCode = fail("the REST API at " + rest.address + " answered something that is not JSON");
    return std::nullopt;
  }
  return answer;
}

// Waits for savepoint operation `trigger` of the job and prints where it went.
int awaitSavepoint(const RestEndpoint& rest, const std::string& jobId, const std::string& trigger) {
  for (;;) {
    int code = 0;
    auto status = call(rest, "GET", "/jobs/" + jobId + "/savepoints/" + trigger, &code);
    if (!status) return code;
    if (!status->is_object() || !(*status)["status"].is_object())
      return fail("the REST API at " + rest.address + " answered an unexpected document");
    if ((*status)["status"].value("id", "") != "COMPLETED") {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    json operation = (*status)["operation"];
    if (operation.is_object() && operation.contains("location") && operation["location"].is_string()) {
      std::printf("Savepoint completed. Path: %s\n", core::printableAscii(operation["location"].get<std::string>()).c_str());
      return 0;
    }
    std::string why = "the savepoint failed";
    if (operation.is_object() && operation["failure-cause"].is_object() &&
        operation["failure-cause"]["stack-trace"].is_string())
      why = core::printableAscii(operation["failure-cause"]["stack-trace"].get<std::string>());
    return fail(why);
  }
}

std::optional<SavepointFormatType> formatOf(const std::string& type, int* exitCode) {
  auto format = parseSavepointFormatType(type);
  if (!format) {
    std::fprintf(stderr, "weir: --type must be canonical or native, got '%s'\n", type.c_str());
    *exitCode = 2;
  }
  return format;
}

// A job id as the REST API names jobs: 32 hexadecimal digits.
bool validJobId(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

int badJobId(const std::string& id) {
  std::fprintf(stderr, "weir: '%s' is not a job id (32 hexadecimal digits, as `weir list` prints them)\n", id.c_str());
  return 2;
}

std::string duration(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace

int listJobs(const RestEndpoint& rest, ListFilter filter) {
  int code = 0;
  auto body = call(rest, "GET", "/jobs/overview", &code);
  if (!body) return code;
  json jobs = body->is_object() ? body->value("jobs", json::array()) : json::array();
  if (!jobs.is_array()) jobs = json::array();
  json shown = json::array();
  for (auto& j : jobs) {
    if (!j.is_object()) continue;
    const std::string state = j.value("state", "");
    const bool ended = state == "FINISHED" || state == "CANCELED" || state == "FAILED";
    if ((filter == ListFilter::kNotEnded && ended) || (filter == ListFilter::kRunning && state != "RUNNING")) continue;
    shown.push_back(j);
  }
  if (shown.empty()) {
    std::printf(filter == ListFilter::kAll ? "no jobs\n" : filter == ListFilter::kRunning ? "no running jobs\n"
                                                                                           : "no jobs that have not ended (-a lists all)\n");
    return 0;
  }
  std::printf("%-32s  %-10s  %10s  %s\n", "JOB ID", "STATE", "DURATION", "NAME");
  for (auto& j : shown)
    std::printf("%-32s  %-10s  %10s  %s\n", core::printableAscii(j.value("jid", "?")).c_str(), core::printableAscii(j.value("state", "?")).c_str(),
                duration(j.value("duration", int64_t{0})).c_str(), core::printableAscii(j.value("name", "")).c_str());
  return 0;
}

int jobStatus(const RestEndpoint& rest, const std::string& jobId) {
  if (!validJobId(jobId)) return badJobId(jobId);
  int code = 0;
  auto body = call(rest, "GET", "/jobs/" + jobId, &code);
  if (!body) return code;
  if (!body->is_object()) return fail("the REST API at " + rest.address + " answered an unexpected document");
  auto& j = *body;
  std::printf("%s  %s  %s  %s\n", core::printableAscii(j.value("jid", "?")).c_str(), core::printableAscii(j.value("state", "?")).c_str(),
              duration(j.value("duration", int64_t{0})).c_str(), core::printableAscii(j.value("name", "")).c_str());
  for (auto& v : j.value("vertices", json::array())) {
    if (!v.is_object()) continue;
    json m = v.value("metrics", json::object());
    if (!m.is_object()) m = json::object();
    // The vertex's watermark: the least over its subtasks; none until each has one.
    std::string watermark = "-";
    if (v["id"].is_string()) {
      int ignored = 0;
      auto marks = call(rest, "GET", "/jobs/" + jobId + "/vertices/" + v["id"].get<std::string>() + "/watermarks",
                        &ignored);
      std::optional<int64_t> least;
      bool all = marks && marks->is_array() && !marks->empty();
      for (auto& w : marks && marks->is_array() ? *marks : json::array()) {
        int64_t value = INT64_MIN;
        if (w.is_object() && w["value"].is_string()) value = std::strtoll(w["value"].get<std::string>().c_str(), nullptr, 10);
        else if (w.is_object() && w["value"].is_number_integer()) value = w["value"].get<int64_t>();
        if (value == INT64_MIN) all = false;
        else least = least ? std::min(*least, value) : value;
      }
      if (all && least) watermark = std::to_string(*least);
    }
    std::printf("  %-40s  p=%-3d  in %12llu  out %12llu  %10.0f rec/s  backpressure %-4s  watermark %s\n",
                core::printableAscii(v.value("name", "?")).c_str(), v.value("parallelism", 0),
                static_cast<unsigned long long>(m.value("read-records", uint64_t{0})),
                static_cast<unsigned long long>(m.value("write-records", uint64_t{0})),
                m.value("write-records-per-second", 0.0), core::printableAscii(v.value("backpressure-level", "?")).c_str(),
                watermark.c_str());
  }
  // A batch job's stages, in the order they run.
  if (auto stages = j.value("stages", json::array()); stages.is_array() && !stages.empty()) {
    std::string line;
    for (auto& s : stages) {
      if (!s.is_object()) continue;
      line += (line.empty() ? "" : ", ") + std::to_string(s.value("id", 0)) + " " +
              core::printableAscii(s.value("status", "?"));
    }
    std::printf("stages: %s\n", line.c_str());
  }
  int ignored = 0;
  if (auto cps = call(rest, "GET", "/jobs/" + jobId + "/checkpoints", &ignored); cps && cps->is_object()) {
    json counts = cps->value("counts", json::object());
    json latest = cps->value("latest", json::object());
    std::string last = "none yet";
    if (latest.is_object() && latest["completed"].is_object())
      last = "#" + std::to_string(latest["completed"].value("id", int64_t{0})) + ", " +
             std::to_string(latest["completed"].value("state_size", int64_t{0})) + " bytes";
    if (counts.is_object())
      std::printf("checkpoints: %lld completed, %lld failed, %lld in progress; latest %s\n",
                  static_cast<long long>(counts.value("completed", int64_t{0})),
                  static_cast<long long>(counts.value("failed", int64_t{0})),
                  static_cast<long long>(counts.value("in_progress", int64_t{0})), last.c_str());
  }
  // Flink's job metric: a list of {id, value}, the value a string.
  if (auto metrics = call(rest, "GET", "/jobs/" + jobId + "/metrics?get=numRestarts", &ignored);
      metrics && metrics->is_array() && !metrics->empty() && (*metrics)[0].value("value", json()).is_string()) {
    std::printf("restarts: %.0f\n", std::strtod((*metrics)[0]["value"].get<std::string>().c_str(), nullptr));
  }
  return 0;
}

int cancelJob(const RestEndpoint& rest, const std::string& jobId) {
  if (!validJobId(jobId)) return badJobId(jobId);
  int code = 0;
  if (!call(rest, "PATCH", "/jobs/" + jobId + "?mode=cancel", &code)) return code;
  std::printf("cancelling %s\n", jobId.c_str());
  return 0;
}

int stopJob(const RestEndpoint& rest, const std::string& jobId, const StopOptions& stop) {
  if (!validJobId(jobId)) return badJobId(jobId);
  int code = 0;
  auto format = formatOf(stop.type, &code);
  if (!format) return code;
  json request = {{"drain", stop.drain}, {"formatType", toString(*format)}};
  if (!stop.savepointPath.empty())
    request["targetDirectory"] = std::filesystem::absolute(stop.savepointPath).lexically_normal().string();
  auto answer = call(rest, "POST", "/jobs/" + jobId + "/stop", &code, request.dump(), 2);
  if (!answer) return code;
  if (answer->is_object() && (*answer)["request-id"].is_string()) {
    std::fprintf(stderr, "weir: stopping %s with a savepoint%s\n", jobId.c_str(),
                 stop.drain ? " after draining" : "");
    return awaitSavepoint(rest, jobId, (*answer)["request-id"].get<std::string>());
  }
  std::printf("stopping %s: its sources end and every operator drains\n", jobId.c_str());
  return 0;
}

int triggerSavepoint(const RestEndpoint& rest, const std::string& jobId, const std::string& directory,
                     const std::string& type) {
  if (!validJobId(jobId)) return badJobId(jobId);
  int code = 0;
  auto format = formatOf(type, &code);
  if (!format) return code;
  json request = {{"cancel-job", false}, {"formatType", toString(*format)}};
  if (!directory.empty()) request["target-directory"] = std::filesystem::absolute(directory).lexically_normal().string();
  auto answer = call(rest, "POST", "/jobs/" + jobId + "/savepoints", &code, request.dump(), 2);
  if (!answer) return code;
  if (!answer->is_object() || !(*answer)["request-id"].is_string())
    return fail("the REST API at " + rest.address + " answered an unexpected document");
  std::fprintf(stderr, "weir: triggering a savepoint of %s\n", jobId.c_str());
  return awaitSavepoint(rest, jobId, (*answer)["request-id"].get<std::string>());
}

}  // namespace weir::cli
