#include "rest/metrics_query.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace weir::rest {

using json = nlohmann::json;

namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::optional<int> subtaskNumber(const std::string& s) {
  int n = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (error != std::errc() || end != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

// Flink's SubtasksFilterParameter: "1,3,5-9".
std::set<int> subtaskSet(const std::string& ranges) {
  std::set<int> out;
  for (const auto& range : splitList(ranges)) {
    const size_t dash = range.find('-');
    auto first = subtaskNumber(range.substr(0, dash));
    auto last = dash == std::string::npos ? first : subtaskNumber(range.substr(dash + 1));
    if (!first || !last || *last < *first || *last - *first > 1 << 16)
      throw BadMetricsQuery("subtasks takes subtask indexes and ranges, as 0,2-3; not '" + range + "'");
    for (int s = *first; s <= *last; ++s) out.insert(s);
  }
  return out;
}

struct Aggregations {
  bool min = false, max = false, avg = false, sum = false, skew = false;
};

Aggregations aggregationsOf(const std::optional<std::string>& agg) {
  if (!agg) return {true, true, true, true, true};
  Aggregations out;
  for (auto name : splitList(*agg)) {
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "min") out.min = true;
    else if (name == "max") out.max = true;
    else if (name == "avg") out.avg = true;
    else if (name == "sum") out.sum = true;
    else if (name == "skew") out.skew = true;
    else throw BadMetricsQuery("agg takes min, max, avg, sum and skew; not '" + name + "'");
  }
  return out;
}

}  // namespace

std::string metricText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  // A whole number as an integer: counts, and watermarks (Long.MIN_VALUE before the first).
  if (value == std::trunc(value) && value >= -9223372036854775808.0 && value < 9223372036854775808.0) {
    auto [end, error] = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
    return std::string(buf, end);
  }
  auto [end, error] = std::to_chars(buf, buf + sizeof buf, value);  // the shortest that reads back the same
  return error == std::errc() ? std::string(buf, end) : std::to_string(value);
}

json metricValues(const std::map<std::string, double>& all, const std::optional<std::string>& get) {
  json out = json::array();
  if (!get) {
    for (const auto& [id, value] : all) out.push_back({{"id", id}});
    return out;
  }
  for (const auto& id : splitList(*get))
    if (auto it = all.find(id); it != all.end()) out.push_back({{"id", id}, {"value", metricText(it->second)}});
  return out;
}

json aggregatedSubtaskMetrics(const std::map<std::string, double>& perSubtask, const MetricsQuery& query) {
  const Aggregations wanted = aggregationsOf(query.agg);
  const std::optional<std::set<int>> chosen =
      query.subtasks ? std::optional(subtaskSet(*query.subtasks)) : std::nullopt;
  std::map<std::string, std::vector<double>> byName;  // over the chosen subtasks
  for (const auto& [id, value] : perSubtask) {
    const size_t dot = id.find('.');
    if (dot == std::string::npos) continue;
    auto subtask = subtaskNumber(id.substr(0, dot));
    if (!subtask || (chosen && !chosen->count(*subtask))) continue;
    byName[id.substr(dot + 1)].push_back(value);
  }
  json out = json::array();
  if (!query.get) {
    for (const auto& [name, values] : byName) out.push_back({{"id", name}});
    return out;
  }
  for (const auto& name : splitList(*query.get)) {
    auto it = byName.find(name);
    if (it == byName.end()) continue;
    const auto& v = it->second;
    double sum = 0;
    for (double x : v) sum += x;
    const double avg = sum / static_cast<double>(v.size());
    json m{{"id", name}};
    if (wanted.min) m["min"] = *std::min_element(v.begin(), v.end());
    if (wanted.max) m["max"] = *std::max_element(v.begin(), v.end());
    if (wanted.avg) m["avg"] = avg;
    if (wanted.sum) m["sum"] = sum;
    if (wanted.skew) {
      double deviation = 0;
      for (double x : v) deviation += std::abs(avg - x);
      deviation /= static_cast<double>(v.size());
      m["skew"] = avg == 0 ? 0.0 : std::min(deviation / avg * 100.0, 100.0);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::map<std::string, double> parseMetricValues(const json& answer) {
  std::map<std::string, double> out;
  if (!answer.is_array()) return out;
  for (const auto& m : answer) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string() || !m.contains("value")) continue;
    const auto& value = m["value"];
    if (value.is_number()) {
      out[m["id"]] = value.get<double>();
    } else if (value.is_string()) {
      const std::string text = value;
      if (text == "NaN") out[m["id"]] = std::nan("");
      else if (text == "Infinity" || text == "-Infinity") out[m["id"]] = text[0] == '-' ? -INFINITY : INFINITY;
      else {
        double d = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), d);
        if (error == std::errc() && end == text.data() + text.size()) out[m["id"]] = d;
      }
    }
  }
  return out;
}

}  // namespace weir::rest
