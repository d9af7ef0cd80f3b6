// What /metrics answers: the metrics of the jobs in Prometheus's text format, named and
// labelled as Flink's PrometheusReporter does: <prefix>_<scope>_<name>, with the scope's
// variables (job_id, task_name, subtask_index, operator_name, ...) as labels.
//
// Two spellings (RestOptions::prometheusPrefix):
//  * "weir": Prometheus's conventions, clean under `promtool check metrics`: snake_case,
//    a counter's name ends in _total, durations are in seconds, sizes name bytes, and a
//    share of time is a ratio (busyTimeMsPerSecond becomes busy_time_ratio).
//  * "flink": Flink's names and units exactly (camelCase, milliseconds), so that a
//    dashboard made for Flink works unchanged.
#pragma once

#include <prometheus/metric_family.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "weir/detail/core/metric_registry.h"

namespace weir::rest {

class PrometheusExposition {
 public:
  // Flink's scopes, as its reporter spells them in a name.
  enum class Scope {
    kProcess,   // process_*: what every Prometheus client exports, without the prefix
    kJob,       // jobmanager_job
    kTask,      // taskmanager_job_task
    kOperator,  // taskmanager_job_task_operator
  };
  // Label values are printable ASCII (core::printableAscii): Prometheus rejects a whole
  // scrape for one label that is not UTF-8. The flink spelling filters them further, as
  // Flink's reporter does: what is not [a-zA-Z0-9:_] becomes _.
  using Labels = std::map<std::string, std::string>;
  // A metric's name in each spelling. The value given is in Flink's unit; the weir
  // spelling exports it times `weirScale` (0.001: milliseconds to seconds).
  struct Name {
    const char* flink;
    const char* weir;
    double weirScale = 1;
  };

  // Throws weir::Error (kInvalidArgument) for a prefix other than "weir" or "flink".
  explicit PrometheusExposition(const std::string& prefix);
  static bool validPrefix(const std::string& prefix) { return prefix == "weir" || prefix == "flink"; }

  void counter(Scope scope, const Name& name, const std::string& help, const Labels& labels, double value);
  void gauge(Scope scope, const Name& name, const std::string& help, const Labels& labels, double value);
  // A metric an operator registered (MetricGroup): named after its groups and name, a
  // key-value group a label too; `labels` are the operator's scope variables.
  void add(Labels labels, const detail::MetricValue& metric);

  // The process's own figures (CPU, memory, threads, open files) from /proc.
  void addProcess();

  // The text format; a family whose samples would take a name another one has is left
  // out, and so is a second series of one name and label set.
  std::string text() const;

 private:
  enum class Kind { kCounter, kGauge, kSummary };
  // The family of this name, made if there is none and the names its samples take are
  // free; null if another kind or another family took them.
  prometheus::MetricFamily* family(const std::string& name, const std::string& help, Kind kind);
  std::string fullName(Scope scope, const std::string& name) const;
  // A user's name or group in this spelling: snake_case for weir, Flink's filter for flink.
  std::string part(const std::string& s, bool labelName) const;
  void sample(const std::string& name, const std::string& help, Kind kind, const Labels& labels, double value);
  void sample(const std::string& name, const std::string& help, Kind kind, const Labels& labels,
              prometheus::ClientMetric m);

  bool flink_;
  std::vector<prometheus::MetricFamily> families_;
  std::map<std::string, size_t> index_;  // family name -> its place in families_
  std::map<std::string, Kind> kinds_;
  std::set<std::string> sampleNames_;    // every name a family writes samples under
  std::set<std::pair<std::string, Labels>> series_;
};

}  // namespace weir::rest
