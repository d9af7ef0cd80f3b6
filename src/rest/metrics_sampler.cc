#include "rest/metrics_sampler.h"

#include <algorithm>

namespace weir::rest {

void MetricsSampler::update(const runtime::JobExecution& job) {
  auto now = std::chrono::steady_clock::now();
  auto current = job.sample();
  const double seconds = std::chrono::duration<double>(now - baselineTime_).count();
  // Rates over too short an interval are wild: they wait until 50 ms have passed since
  // their baseline. The counters are always the newest (a job's last sample may come
  // moments after the one before, and must not be lost).
  if (baseline_.empty() || seconds >= 0.05) {
    if (!baseline_.empty()) rates_ = ratesSince(current, seconds);
    baseline_ = current;
    baselineTime_ = now;
  }
  latest_ = std::move(current);
}

std::vector<std::vector<SubtaskRates>> MetricsSampler::ratesSince(
    const std::vector<std::vector<runtime::SubtaskSample>>& current, double seconds) const {
  std::vector<std::vector<SubtaskRates>> rates(current.size());
  for (size_t v = 0; v < current.size(); ++v) {
    for (size_t s = 0; s < current[v].size() && v < baseline_.size() && s < baseline_[v].size(); ++s) {
      const auto& a = baseline_[v][s];
      const auto& b = current[v][s];
      SubtaskRates r;
      if (b.finished) {  // its stage ended: nothing moves, it is neither busy nor idle
        rates[v].push_back(r);
        continue;
      }
      auto delta = [](uint64_t from, uint64_t to) { return to >= from ? static_cast<double>(to - from) : 0.0; };
      r.numRecordsInPerSecond = delta(a.numRecordsIn, b.numRecordsIn) / seconds;
      // What a vertex emits: records sent on, or produced by its source when it has
      // no output channel (a whole job in one chain).
      uint64_t outA = std::max(a.numRecordsOut, a.numSourceRecords);
      uint64_t outB = std::max(b.numRecordsOut, b.numSourceRecords);
      r.numRecordsOutPerSecond = delta(outA, outB) / seconds;
      r.numBytesInPerSecond = delta(a.numBytesIn, b.numBytesIn) / seconds;
      r.numBytesOutPerSecond = delta(a.numBytesOut, b.numBytesOut) / seconds;
      r.idleTimeMsPerSecond = std::clamp(static_cast<double>(b.idleTimeNanos - a.idleTimeNanos) / 1e6 / seconds, 0.0, 1000.0);
      r.backPressuredTimeMsPerSecond =
          std::clamp(static_cast<double>(b.backPressuredTimeNanos - a.backPressuredTimeNanos) / 1e6 / seconds, 0.0, 1000.0);
      r.busyTimeMsPerSecond = std::max(0.0, 1000.0 - r.idleTimeMsPerSecond - r.backPressuredTimeMsPerSecond);
      for (const auto& now : b.operatorMetrics) {
        // An operator's own numRecordsIn and numRecordsOut: no function may take these
        // names in its operator's group, so they are the built-ins.
        if (now.kind != detail::MetricKind::kCounter || !now.groups.empty() ||
            (now.name != "numRecordsIn" && now.name != "numRecordsOut"))
          continue;
        auto before = std::find_if(a.operatorMetrics.begin(), a.operatorMetrics.end(), [&](const auto& m) {
          return m.name == now.name && m.operatorName == now.operatorName && m.groups.empty();
        });
        if (before == a.operatorMetrics.end()) continue;
        detail::MetricValue rate = now;
        rate.kind = detail::MetricKind::kGauge;
        rate.name += "PerSecond";
        rate.value = now.value >= before->value ? (now.value - before->value) / seconds : 0.0;
        r.operatorRates.push_back(std::move(rate));
      }
      for (const auto& [output, records] : b.emitted) {
        auto before = a.emitted.find(output);
        r.emittedPerSecond[output] = delta(before == a.emitted.end() ? 0 : before->second, records) / seconds;
      }
      rates[v].push_back(r);
    }
  }
  return rates;
}

const char* backPressureLevel(double ratio) {
  if (ratio <= 0.10) return "ok";
  if (ratio <= 0.50) return "low";
  return "high";
}

}  // namespace weir::rest
