#include "rest/prometheus_exposition.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <cstdint>

#include "core/printable.h"
#include "rest/process_figures.h"
#include "weir/error.h"

namespace weir::rest {

namespace {

bool isUpper(char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; }
bool isLower(char c) { return std::islower(static_cast<unsigned char>(c)) != 0; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// camelCase to snake_case: maxSeen -> max_seen, HTTPServer -> http_server.
std::string snakeCase(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (isUpper(c) && i > 0) {
      const char before = s[i - 1];
      const bool lowerNext = i + 1 < s.size() && isLower(s[i + 1]);
      if (isLower(before) || isDigit(before) || (isUpper(before) && lowerNext)) out += '_';
    }
    out += isUpper(c) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
  }
  return out;
}

// Flink's filter: what is not [a-zA-Z0-9:_] becomes _ (a label name drops : too, and so
// does a weir name: promtool calls it reserved).
std::string filtered(const std::string& s, bool colonAllowed) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c == ':' && colonAllowed) ? c : '_';
  return out;
}

}  // namespace

PrometheusExposition::PrometheusExposition(const std::string& prefix) : flink_(prefix == "flink") {
  if (!validPrefix(prefix))
    throw Error(ErrorCode::kInvalidArgument,
                "Prometheus prefix must be weir (Prometheus's names) or flink (Flink's names), got '" + prefix + "'");
}

std::string PrometheusExposition::part(const std::string& s, bool labelName) const {
  return flink_ ? filtered(s, !labelName) : filtered(snakeCase(s), false);
}

std::string PrometheusExposition::fullName(Scope scope, const std::string& name) const {
  switch (scope) {
    case Scope::kProcess: return "process_" + name;
    case Scope::kJob: return std::string(flink_ ? "flink" : "weir") + "_jobmanager_job_" + name;
    case Scope::kTask: return std::string(flink_ ? "flink" : "weir") + "_taskmanager_job_task_" + name;
    case Scope::kOperator: return std::string(flink_ ? "flink" : "weir") + "_taskmanager_job_task_operator_" + name;
  }
  return name;
}

prometheus::MetricFamily* PrometheusExposition::family(const std::string& name, const std::string& help, Kind kind) {
  if (auto it = index_.find(name); it != index_.end()) return kinds_[name] == kind ? &families_[it->second] : nullptr;
  std::vector<std::string> samples{name};
  if (kind == Kind::kSummary) samples = {name, name + "_count", name + "_sum"};
  for (const auto& s : samples)
    if (sampleNames_.count(s)) return nullptr;
  if (!prometheus::CheckMetricName(name)) return nullptr;
  sampleNames_.insert(samples.begin(), samples.end());
  const auto type = kind == Kind::kCounter ? prometheus::MetricType::Counter
                    : kind == Kind::kGauge ? prometheus::MetricType::Gauge
                                           : prometheus::MetricType::Summary;
  index_[name] = families_.size();
  kinds_[name] = kind;
  families_.push_back({name, help, type, {}});
  return &families_.back();
}

void PrometheusExposition::sample(const std::string& name, const std::string& help, Kind kind, const Labels& labels,
                                  prometheus::ClientMetric m) {
  // Flink's reporter filters label values as it filters names (filterLabelValueCharacters);
  // two values that filter alike are one series.
  Labels shown = labels;
  if (flink_)
    for (auto& [key, v] : shown) v = filtered(v, true);
  auto* f = family(name, help, kind);
  if (!f || !series_.insert({name, shown}).second) return;
  for (const auto& [key, v] : shown) m.label.push_back({key, v});
  f->metric.push_back(std::move(m));
}

void PrometheusExposition::sample(const std::string& name, const std::string& help, Kind kind, const Labels& labels,
                                  double value) {
  prometheus::ClientMetric m;
  if (kind == Kind::kCounter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  sample(name, help, kind, labels, std::move(m));
}

void PrometheusExposition::counter(Scope scope, const Name& name, const std::string& help, const Labels& labels,
                                   double value) {
  if (flink_)
    sample(fullName(scope, name.flink), help, Kind::kCounter, labels, value);
  else
    sample(fullName(scope, std::string(name.weir) + "_total"), help, Kind::kCounter, labels, value * name.weirScale);
}

void PrometheusExposition::gauge(Scope scope, const Name& name, const std::string& help, const Labels& labels,
                                 double value) {
  if (flink_)
    sample(fullName(scope, name.flink), help, Kind::kGauge, labels, value);
  else
    sample(fullName(scope, name.weir), help, Kind::kGauge, labels, value * name.weirScale);
}

void PrometheusExposition::add(Labels labels, const detail::MetricValue& metric) {
  if (metric.kind == detail::MetricKind::kWatermark && metric.value == static_cast<double>(INT64_MIN))
    return;  // no watermark yet: no sample, as for the task's
  if (!metric.operatorId.empty()) labels["operator_id"] = metric.operatorId;
  std::string name;
  for (const auto& [key, value] : metric.groups) {
    name += part(key, false) + "_";
    if (value.empty()) continue;
    // A key that is not a label name, is reserved (__*) or is one of ours gets a prefix.
    std::string labelName = part(key, true);
    if (!prometheus::CheckLabelName(labelName) || labels.count(labelName) || labelName == "operator_name" ||
        labelName == "quantile")
      labelName = "group_" + labelName;
    labels[labelName] = core::printableAscii(value);
  }
  name += part(metric.name, false);
  labels["operator_name"] = core::printableAscii(metric.operatorName);
  const std::string help = "Operator metric " + core::printableAscii(metric.name);
  switch (metric.kind) {
    case detail::MetricKind::kCounter:
      sample(fullName(Scope::kOperator, flink_ ? name : name + "_total"), help, Kind::kCounter, labels, metric.value);
      return;
    case detail::MetricKind::kGauge:
    case detail::MetricKind::kWatermark:
    case detail::MetricKind::kMeter:  // a rate: a gauge, as Flink's reporter has it
      sample(fullName(Scope::kOperator, name), help, Kind::kGauge, labels, metric.value);
      return;
    case detail::MetricKind::kHistogram: {
      const auto& h = metric.histogram;
      prometheus::ClientMetric m;
      m.summary.sample_count = h.count;
      m.summary.sample_sum = h.sum;
      // Flink's reporter's quantiles.
      m.summary.quantile = {{0.5, h.p50}, {0.75, h.p75}, {0.95, h.p95}, {0.98, h.p98}, {0.99, h.p99}, {0.999, h.p999}};
      sample(fullName(Scope::kOperator, name), help, Kind::kSummary, labels, std::move(m));
      return;
    }
  }
}

void PrometheusExposition::addProcess() {
  auto figures = readProcessFigures();
  if (!figures) return;
  // The names every Prometheus client library gives them.
  sample("process_cpu_seconds_total", "User and system CPU time spent in seconds", Kind::kCounter, {},
         figures->cpuSeconds);
  sample("process_resident_memory_bytes", "Resident memory size in bytes", Kind::kGauge, {}, figures->residentBytes);
  sample("process_virtual_memory_bytes", "Virtual memory size in bytes", Kind::kGauge, {}, figures->virtualBytes);
  if (figures->startTimeSeconds)
    sample("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds", Kind::kGauge, {},
           *figures->startTimeSeconds);
  sample("process_threads", "Threads of the process", Kind::kGauge, {}, figures->threads);
  if (figures->openFds) sample("process_open_fds", "Open file descriptors", Kind::kGauge, {}, *figures->openFds);
  if (figures->maxFds) sample("process_max_fds", "Most open file descriptors allowed", Kind::kGauge, {}, *figures->maxFds);
}

std::string PrometheusExposition::text() const {
  std::vector<prometheus::MetricFamily> nonEmpty;
  for (const auto& f : families_)
    if (!f.metric.empty()) nonEmpty.push_back(f);
  return prometheus::TextSerializer().Serialize(nonEmpty);
}

}  // namespace weir::rest
