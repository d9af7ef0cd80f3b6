#include "weir/detail/core/metric_registry.h"

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
  return detail::MetricValue{operator_, groups_, name}.identifier();
}

namespace detail {

std::string MetricValue::identifier() const {
  std::string id = operatorName;
  for (const auto& [key, value] : groups) {
    id += (id.empty() ? "" : ".") + key;
    if (!value.empty()) id += "." + value;
  }
  return id + (id.empty() ? "" : ".") + name;
}

MetricRegistry::Entry* MetricRegistry::find(const std::string& operatorName, const MetricGroups& groups,
                                            const std::string& name) {
  for (Entry& e : entries_)
    if (e.name == name && e.operatorName == operatorName && e.groups == groups) return &e;
  return nullptr;
}

std::atomic<uint64_t>* MetricRegistry::counter(const std::string& operatorName, const MetricGroups& groups,
                                               const std::string& name) {
  std::lock_guard lock(mutex_);
  Entry* e = find(operatorName, groups, name);
  if (e == nullptr) {
    e = &entries_.emplace_back();
    e->operatorName = operatorName;
    e->groups = groups;
    e->name = name;
    e->counter = true;
    e->hasValue.store(true);
  } else if (!e->counter) {
    throw invalidName("'" + MetricValue{operatorName, groups, name}.identifier() +
                      "' is a gauge already; a counter needs another name");
  }
  return &e->count;
}

void MetricRegistry::gauge(const std::string& operatorName, const MetricGroups& groups, const std::string& name,
                           std::function<double()> value) {
  std::lock_guard lock(mutex_);
  Entry* e = find(operatorName, groups, name);
  if (e != nullptr && e->counter)
    throw invalidName("'" + MetricValue{operatorName, groups, name}.identifier() +
                      "' is a counter already; a gauge needs another name");
  if (e == nullptr) {
    e = &entries_.emplace_back();
    e->operatorName = operatorName;
    e->groups = groups;
    e->name = name;
  }
  e->read = frozen_ ? nullptr : std::move(value);
  e->failing = false;
  hasGauges_.store(true, std::memory_order_relaxed);
}

void MetricRegistry::updateGauges() {
  if (!frozen_) readGauges();
}

void MetricRegistry::readGauges() {
  if (!hasGauges()) return;
  std::vector<Entry*> gauges;
  {
    std::lock_guard lock(mutex_);
    for (Entry& e : entries_)
      if (e.read) gauges.push_back(&e);
  }
  // Outside the lock: a gauge's function may register metrics, even its own again (so a
  // copy is called).
  for (Entry* e : gauges) {
    const std::function<double()> read = e->read;
    std::string failure;
    try {
      const double v = read();
      e->failing = false;
      if (!std::isnan(v)) e->last.store(v, std::memory_order_relaxed);
      e->hasValue.store(!std::isnan(v), std::memory_order_release);
      continue;
    } catch (const std::exception& ex) {
      failure = ex.what();
    } catch (...) {
      failure = "an exception that is not a std::exception";
    }
    if (!e->failing)
      std::fprintf(stderr, "weir: gauge '%s' failed: %s; it shows no value until it returns one\n",
                   MetricValue{e->operatorName, e->groups, e->name}.identifier().c_str(), failure.c_str());
    e->failing = true;
    e->hasValue.store(false, std::memory_order_release);
  }
}

void MetricRegistry::freeze(bool lastRead) {
  if (frozen_) return;
  frozen_ = true;
  if (lastRead) readGauges();
  std::lock_guard lock(mutex_);
  for (Entry& e : entries_) e.read = nullptr;
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
    out.push_back({e.operatorName, e.groups, e.name, e.counter,
                   e.counter ? static_cast<double>(e.count.load(std::memory_order_relaxed))
                             : e.last.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace detail
}  // namespace weir
