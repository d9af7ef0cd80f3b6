#include "weir/detail/core/metric_registry.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <exception>

#include "weir/error.h"
#include "weir/metrics.h"

namespace weir {

namespace {

Error invalidName(const std::string& what) { return Error(ErrorCode::kInvalidArgument, "metric: " + what); }

void checkName(const std::string& name, const char* what) {
  if (name.empty()) throw invalidName(std::string("a ") + what + " needs a name that is not empty");
}

}  // namespace

Counter MetricGroup::counter(const std::string& name) const {
  checkName(name, "counter");
  if (registry_ == nullptr) return Counter();
  return Counter(registry_->counter(operator_, groups_, name));
}

void MetricGroup::gauge(const std::string& name, std::function<double()> value) const {
  checkName(name, "gauge");
  if (!value) throw invalidName("gauge '" + getMetricIdentifier(name) + "' needs a function");
  if (registry_ != nullptr) registry_->gauge(operator_, groups_, name, std::move(value));
}

Histogram MetricGroup::histogram(const std::string& name, size_t windowSize) const {
  checkName(name, "histogram");
  if (windowSize == 0) throw invalidName("histogram '" + getMetricIdentifier(name) + "' needs a window of 1 value or more");
  if (registry_ == nullptr) return Histogram();
  return Histogram(registry_->histogram(operator_, groups_, name, windowSize));
}

Meter MetricGroup::meter(const std::string& name, std::chrono::seconds timeSpan) const {
  checkName(name, "meter");
  if (timeSpan < std::chrono::seconds(1))
    throw invalidName("meter '" + getMetricIdentifier(name) + "' needs a time span of 1 second or more");
  if (registry_ == nullptr) return Meter();
  return Meter(registry_->meter(operator_, groups_, name, timeSpan));
}

MetricGroup MetricGroup::addGroup(const std::string& name) const {
  checkName(name, "group");
  MetricGroup g = *this;
  g.groups_.emplace_back(name, "");
  return g;
}

MetricGroup MetricGroup::addGroup(const std::string& key, const std::string& value) const {
  checkName(key, "group key");
  checkName(value, "group value");
  MetricGroup g = *this;
  g.groups_.emplace_back(key, value);
  return g;
}

std::string MetricGroup::getMetricIdentifier(const std::string& name) const {
  return detail::metricIdentifier(operator_, groups_, name);
}

namespace detail {

std::string MetricValue::identifier() const { return metricIdentifier(operatorName, groups, name); }

std::string metricIdentifier(const std::string& operatorName, const MetricGroups& groups, const std::string& name) {
  std::string id = operatorName;
  for (const auto& [key, value] : groups) {
    id += (id.empty() ? "" : ".") + key;
    if (!value.empty()) id += "." + value;
  }
  return id + (id.empty() ? "" : ".") + name;
}

namespace {

const char* kindName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kCounter: return "counter";
    case MetricKind::kGauge: return "gauge";
    case MetricKind::kMeter: return "meter";
    case MetricKind::kHistogram: return "histogram";
    case MetricKind::kWatermark: return "watermark";
  }
  return "metric";
}

HistogramFigures figuresOf(const HistogramWindow& window) {
  const HistogramStatistics statistics(window.values());
  HistogramFigures f;
  f.count = window.count();
  f.sum = window.sum();
  f.min = static_cast<double>(statistics.getMin());
  f.max = static_cast<double>(statistics.getMax());
  f.mean = statistics.getMean();
  f.stddev = statistics.getStdDev();
  f.p50 = statistics.getQuantile(0.5);
  f.p75 = statistics.getQuantile(0.75);
  f.p90 = statistics.getQuantile(0.9);
  f.p95 = statistics.getQuantile(0.95);
  f.p98 = statistics.getQuantile(0.98);
  f.p99 = statistics.getQuantile(0.99);
  f.p999 = statistics.getQuantile(0.999);
  return f;
}

}  // namespace

MetricRegistry::Entry& MetricRegistry::entry(const std::string& operatorName, const MetricGroups& groups,
                                             const std::string& name, MetricKind kind, bool builtIn) {
  for (Entry& e : entries_) {
    if (e.name != name || e.operatorName != operatorName || e.groups != groups) continue;
    if (e.builtIn != builtIn)
      throw invalidName("'" + metricIdentifier(operatorName, groups, name) +
                        "' is a metric weir keeps for every operator; a " + kindName(kind) + " needs another name");
    if (e.kind != kind)
      throw invalidName("'" + metricIdentifier(operatorName, groups, name) + "' is a " + kindName(e.kind) +
                        " already; a " + kindName(kind) + " needs another name");
    return e;
  }
  Entry& e = entries_.emplace_back();
  e.operatorName = operatorName;
  e.groups = groups;
  e.name = name;
  e.kind = kind;
  e.builtIn = builtIn;
  if (!builtIn && kind != MetricKind::kCounter) needsUpdates_.store(true, std::memory_order_relaxed);
  return e;
}

std::atomic<uint64_t>* MetricRegistry::counter(const std::string& operatorName, const MetricGroups& groups,
                                               const std::string& name) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, groups, name, MetricKind::kCounter);
  e.hasValue.store(true);
  return &e.count;
}

void MetricRegistry::gauge(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
                           std::function<double()> value) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, groups, name, MetricKind::kGauge);
  e.read = frozen_ ? nullptr : std::move(value);
  e.failing = false;
}

HistogramWindow* MetricRegistry::histogram(const std::string& operatorName, const MetricGroups& groups,
                                           const std::string& name, size_t windowSize) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, groups, name, MetricKind::kHistogram);
  if (!e.window) e.window = std::make_unique<HistogramWindow>(windowSize);
  return e.window.get();
}

MeterWindow* MetricRegistry::meter(const std::string& operatorName, const MetricGroups& groups,
                                   const std::string& name, std::chrono::seconds timeSpan) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, groups, name, MetricKind::kMeter);
  if (!e.meter) e.meter = std::make_unique<MeterWindow>(timeSpan, MeterWindow::Clock::now());
  return e.meter.get();
}

void MetricRegistry::builtInCounter(const std::string& operatorName, const std::string& name,
                                    std::vector<const std::atomic<uint64_t>*> counts) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, {}, name, MetricKind::kCounter, /*builtIn=*/true);
  e.counts = std::move(counts);
  e.hasValue.store(true);
}

std::atomic<uint64_t>* MetricRegistry::builtInCounter(const std::string& operatorName, const std::string& name) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, {}, name, MetricKind::kCounter, /*builtIn=*/true);
  e.hasValue.store(true);
  return &e.count;
}

void MetricRegistry::builtInWatermark(const std::string& operatorName, const std::string& name,
                                      std::vector<const std::atomic<int64_t>*> watermarks) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, {}, name, MetricKind::kWatermark, /*builtIn=*/true);
  e.values = std::move(watermarks);
  e.last.store(static_cast<double>(INT64_MIN));
  e.hasValue.store(true);
}

void MetricRegistry::builtInGauge(const std::string& operatorName, const std::string& name,
                                  const std::atomic<int64_t>* value) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(operatorName, {}, name, MetricKind::kGauge, /*builtIn=*/true);
  e.values = {value};
  e.last.store(static_cast<double>(INT64_MIN));
  e.hasValue.store(true);
}

void MetricRegistry::setOperatorId(const std::string& operatorName, std::string id) {
  std::lock_guard lock(mutex_);
  operatorIds_[operatorName] = std::move(id);
}

void MetricRegistry::update(MeterWindow::Clock::time_point now) {
  if (!frozen_) read(now);
}

void MetricRegistry::read(MeterWindow::Clock::time_point now) {
  if (!needsUpdates()) return;
  std::vector<Entry*> updated;
  {
    std::lock_guard lock(mutex_);
    for (Entry& e : entries_)
      if (e.kind != MetricKind::kCounter && e.kind != MetricKind::kWatermark && !e.builtIn) updated.push_back(&e);
  }
  // Outside the lock: a gauge's function may register metrics, even its own again.
  for (Entry* e : updated) {
    switch (e->kind) {
      case MetricKind::kGauge:
        if (e->read) readGauge(*e);
        break;
      case MetricKind::kMeter:
        e->last.store(e->meter->rate(now), std::memory_order_relaxed);
        e->hasValue.store(true, std::memory_order_release);
        break;
      case MetricKind::kHistogram:
        if (e->window->count() > 0) {
          HistogramFigures figures = figuresOf(*e->window);
          std::lock_guard lock(mutex_);
          e->figures = figures;
          e->hasValue.store(true, std::memory_order_release);
        }
        break;
      case MetricKind::kCounter:
      case MetricKind::kWatermark:
        break;
    }
  }
}

void MetricRegistry::readGauge(Entry& e) {
  const std::function<double()> read = e.read;  // a copy: the function may register itself again
  std::string failure;
  try {
    const double v = read();
    e.failing = false;
    if (!std::isnan(v)) e.last.store(v, std::memory_order_relaxed);
    e.hasValue.store(!std::isnan(v), std::memory_order_release);
    return;
  } catch (const std::exception& ex) {
    failure = ex.what();
  } catch (...) {
    failure = "an exception that is not a std::exception";
  }
  if (!e.failing)
    std::fprintf(stderr, "weir: gauge '%s' failed: %s; it shows no value until it returns one\n",
                 metricIdentifier(e.operatorName, e.groups, e.name).c_str(), failure.c_str());
  e.failing = true;
  e.hasValue.store(false, std::memory_order_release);
}

void MetricRegistry::freeze(bool lastRead) {
  if (frozen_) return;
  frozen_ = true;
  if (lastRead) read(MeterWindow::Clock::now());
  std::lock_guard lock(mutex_);
  for (Entry& e : entries_) {
    e.read = nullptr;
    if (!e.builtIn) continue;
    // What the built-ins point to goes with the operators: keep the last values.
    if (e.kind == MetricKind::kCounter) {
      for (const auto* c : e.counts) e.count.fetch_add(c->load(std::memory_order_relaxed));
    } else {
      e.last.store(valueOf(e));
    }
    e.counts.clear();
    e.values.clear();
  }
}

std::string MetricRegistry::operatorScope(const std::string& operatorName) {
  std::lock_guard lock(mutex_);
  int& seen = operatorNames_[operatorName];
  ++seen;
  return seen == 1 ? operatorName : operatorName + " (" + std::to_string(seen) + ")";
}

std::vector<MetricValue> MetricRegistry::values() const {
  std::lock_guard lock(mutex_);
  std::vector<MetricValue> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) {
    if (!e.hasValue.load(std::memory_order_acquire)) continue;
    const double value = valueOf(e);
    if (e.builtIn && e.kind == MetricKind::kGauge && value == static_cast<double>(INT64_MIN)) continue;  // none yet
    auto id = operatorIds_.find(e.operatorName);
    out.push_back({e.operatorName, e.groups, e.name, e.kind, value, e.figures,
                   id == operatorIds_.end() ? std::string() : id->second});
  }
  return out;
}

double MetricRegistry::valueOf(const Entry& e) const {
  switch (e.kind) {
    case MetricKind::kCounter: {
      uint64_t count = e.count.load(std::memory_order_relaxed);
      for (const auto* c : e.counts) count += c->load(std::memory_order_relaxed);
      return static_cast<double>(count);
    }
    default: {
      if (!e.builtIn || e.values.empty()) return e.last.load(std::memory_order_relaxed);
      int64_t least = INT64_MAX;  // a built-in watermark is the least of its inputs'
      for (const auto* v : e.values) least = std::min(least, v->load(std::memory_order_relaxed));
      return static_cast<double>(least);
    }
  }
}

}  // namespace detail
}  // namespace weir
