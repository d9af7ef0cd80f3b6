// The answers of the REST API's metrics routes, for a live job and an archived one
// alike: a list of ids, their values, or (Flink's AggregatingSubtasksMetricsHandler)
// a vertex's subtask metrics aggregated over its subtasks.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace weir::rest {

// A metrics route's query parameters, as Flink names them.
struct MetricsQuery {
  std::optional<std::string> get = std::nullopt;       // the ids wanted, comma separated; none: list the ids
  std::optional<std::string> agg = std::nullopt;       // min, max, avg, sum, skew, comma separated; none: all
  std::optional<std::string> subtasks = std::nullopt;  // "0,2-3"; none: every subtask
};

// A query parameter Flink would refuse (400); what() names it and says what it takes.
struct BadMetricsQuery : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A metric value as Flink's REST API writes it: a string, a whole number as an integer
// ("7", "-9223372036854775808"), another as the shortest text that reads back the same
// ("0.25"), "NaN", "Infinity".
std::string metricText(double value);

// Without `get`: [{"id": ...}] for every metric; with it, [{"id", "value"}] for each id
// asked for that there is, in the order asked.
nlohmann::json metricValues(const std::map<std::string, double>& all, const std::optional<std::string>& get);

// `perSubtask` holds "<subtask>.<name>" ids. Without `get`, the names; with it, for each
// name asked for that a chosen subtask has, {"id", and each aggregation asked for}.
// skew is Flink's: the mean absolute deviation over the mean, in percent, at most 100.
// Throws BadMetricsQuery for an unknown aggregation or a malformed subtask range.
nlohmann::json aggregatedSubtaskMetrics(const std::map<std::string, double>& perSubtask, const MetricsQuery& query);

// The values of an answer metricValues() gave with every id ("value" strings parsed);
// what is not such an answer gives what of it parses.
std::map<std::string, double> parseMetricValues(const nlohmann::json& answer);

}  // namespace weir::rest
