// Reads the metrics a job's operators registered (MetricGroup) back from its REST API,
// as a user's dashboard would.
#pragma once

#include <httplib.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "weir/job_client.h"
#include "weir/rest_options.h"

namespace weir::test {

// The REST API on any free loopback port, sampling every 100 ms.
inline RestOptions restOnAnyPort() {
  RestOptions rest;
  rest.enabled = true;
  rest.port = 0;
  rest.metricsInterval = std::chrono::milliseconds(100);
  return rest;
}

// Every operator metric of `job` (started with the REST API on), by its REST id
// "<subtask>.<operator>.<groups>.<name>", as the last sample showed it.
inline std::map<std::string, double> operatorMetrics(const JobClient& job) {
  const std::string url = job.getWebInterfaceURL();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  auto get = [&](const std::string& path) {
    auto r = client.Get(path);
    if (!r || r->status != 200) throw std::runtime_error("GET " + path + " failed");
    return nlohmann::json::parse(r->body);
  };
  auto encode = [](const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '.' || c == '-' || c == '_') {
        out += static_cast<char>(c);
      } else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        out += hex;
      }
    }
    return out;
  };
  std::map<std::string, double> out;
  const std::string jobPath = "/jobs/" + job.getJobID();
  const nlohmann::json detail = get(jobPath);
  for (const auto& vertex : detail["vertices"]) {
    const std::string path = jobPath + "/vertices/" + vertex["id"].get<std::string>() + "/metrics";
    std::vector<std::string> ids;
    for (const auto& m : get(path)) {
      const std::string id = m["id"];
      if (id.find('.', id.find('.') + 1) != std::string::npos) ids.push_back(id);  // not "<subtask>.<name>"
    }
    for (size_t i = 0; i < ids.size(); i += 20) {
      std::string query;
      for (size_t j = i; j < ids.size() && j < i + 20; ++j) {
        if (j > i) query += ',';
        query += encode(ids[j]);
      }
      for (const auto& m : get(path + "?get=" + query)) out[m["id"]] = std::stod(m["value"].get<std::string>());
    }
  }
  return out;
}

// The sum of the metrics whose id ends with `suffix`, and how many there were.
struct MetricSum {
  double sum = 0;
  int count = 0;
};
inline MetricSum sumOf(const std::map<std::string, double>& metrics, const std::string& suffix) {
  MetricSum s;
  for (const auto& [id, value] : metrics) {
    if (id.size() >= suffix.size() && id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0) {
      s.sum += value;
      ++s.count;
    }
  }
  return s;
}

}  // namespace weir::test
