#include "weir/restart_strategy.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "weir/error.h"

namespace weir {

namespace {

Error bad(const std::string& what) { return Error(ErrorCode::kInvalidArgument, "restart strategy: " + what); }

void nonNegative(std::chrono::milliseconds d, const char* what) {
  if (d.count() < 0) throw bad(std::string(what) + " must be >= 0 ms, got " + std::to_string(d.count()));
}

}  // namespace

RestartStrategy RestartStrategy::noRestart() {
  RestartStrategy s;
  s.kind_ = Kind::kNone;
  return s;
}

RestartStrategy RestartStrategy::fixedDelayRestart(int attempts, Millis delay) {
  if (attempts < 0) throw bad("fixed-delay attempts must be >= 0, got " + std::to_string(attempts));
  nonNegative(delay, "fixed-delay delay");
  RestartStrategy s;
  s.kind_ = Kind::kFixedDelay;
  s.attempts = attempts;
  s.delay = delay;
  return s;
}

RestartStrategy RestartStrategy::exponentialDelayRestart(Millis initialBackoff, Millis maxBackoff,
                                                         double backoffMultiplier, Millis resetBackoffThreshold,
                                                         double jitterFactor) {
  nonNegative(initialBackoff, "initial backoff");
  if (maxBackoff < initialBackoff) throw bad("max backoff must be >= the initial backoff");
  if (!(backoffMultiplier >= 1)) throw bad("backoff multiplier must be >= 1");
  if (resetBackoffThreshold.count() <= 0) throw bad("reset backoff threshold must be positive");
  if (!(jitterFactor >= 0 && jitterFactor <= 1)) throw bad("jitter factor must be between 0 and 1");
  RestartStrategy s;
  s.kind_ = Kind::kExponentialDelay;
  s.initialBackoff = initialBackoff;
  s.maxBackoff = maxBackoff;
  s.backoffMultiplier = backoffMultiplier;
  s.resetBackoffThreshold = resetBackoffThreshold;
  s.jitterFactor = jitterFactor;
  return s;
}

RestartStrategy RestartStrategy::failureRateRestart(int maxFailuresPerInterval, Millis failureInterval,
                                                    Millis delay) {
  if (maxFailuresPerInterval < 1) throw bad("failure-rate max failures per interval must be >= 1");
  if (failureInterval.count() <= 0) throw bad("failure-rate interval must be positive");
  nonNegative(delay, "failure-rate delay");
  RestartStrategy s;
  s.kind_ = Kind::kFailureRate;
  s.maxFailuresPerInterval = maxFailuresPerInterval;
  s.failureInterval = failureInterval;
  s.delay = delay;
  return s;
}

RestartStrategy RestartStrategy::resolve(bool checkpointing) const {
  if (kind_ != Kind::kDefault) return *this;
  RestartStrategy resolved = checkpointing ? exponentialDelayRestart(std::chrono::seconds(1), std::chrono::minutes(1),
                                                                     1.5, std::chrono::hours(1), 0.1)
                                           : noRestart();
  resolved.identicalFailureLimit_ = identicalFailureLimit_;
  return resolved;
}

RestartStrategy& RestartStrategy::stopAfterIdenticalFailures(int n) {
  if (n < 0) throw bad("the identical failure limit must be >= 0, got " + std::to_string(n));
  identicalFailureLimit_ = n;
  return *this;
}

std::string RestartStrategy::name() const {
  switch (kind_) {
    case Kind::kDefault: return "default";
    case Kind::kNone: return "none";
    case Kind::kFixedDelay: return "fixed-delay";
    case Kind::kExponentialDelay: return "exponential-delay";
    case Kind::kFailureRate: return "failure-rate";
  }
  return "unknown";
}

RestartStrategy RestartStrategy::parse(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  auto number = [&](size_t i) -> int64_t {
    try {
      size_t used = 0;
      int64_t v = std::stoll(parts.at(i), &used);
      if (used != parts[i].size()) throw std::invalid_argument("trailing");
      return v;
    } catch (const std::exception&) {
      throw bad("'" + text + "': field " + std::to_string(i + 1) + " is not a whole number");
    }
  };
  const std::string kind = parts.empty() ? "" : parts[0];
  if (kind == "none" && parts.size() == 1) return noRestart();
  if (kind == "fixed-delay" && parts.size() == 3)
    return fixedDelayRestart(static_cast<int>(std::min<int64_t>(number(1), std::numeric_limits<int>::max())),
                             Millis(number(2)));
  if (kind == "exponential-delay" && parts.size() == 3)
    return exponentialDelayRestart(Millis(number(1)), Millis(number(2)), 2.0, std::chrono::hours(1), 0.1);
  if (kind == "failure-rate" && parts.size() == 4)
    return failureRateRestart(static_cast<int>(number(1)), Millis(number(2)), Millis(number(3)));
  throw bad("'" + text + "' is not one of none, fixed-delay:ATTEMPTS:DELAY_MS, "
            "exponential-delay:INITIAL_MS:MAX_MS, failure-rate:MAX:INTERVAL_MS:DELAY_MS");
}

namespace detail {

std::optional<std::chrono::milliseconds> RestartBackoff::onFailure(int64_t nowMillis, const std::string& cause) {
  using Millis = std::chrono::milliseconds;
  const auto& s = strategy_;
  std::optional<Millis> result;
  whyNot_.clear();
  switch (s.kind()) {
    case RestartStrategy::Kind::kDefault:
    case RestartStrategy::Kind::kNone:
      whyNot_ = "the restart strategy is none";
      break;
    case RestartStrategy::Kind::kFixedDelay:
      if (restarts_ < s.attempts) result = s.delay;
      else whyNot_ = "fixed-delay allows " + std::to_string(s.attempts) + " restarts";
      break;
    case RestartStrategy::Kind::kFailureRate:
      failures_.push_back(nowMillis);
      while (!failures_.empty() && failures_.front() <= nowMillis - s.failureInterval.count()) failures_.pop_front();
      if (static_cast<int>(failures_.size()) <= s.maxFailuresPerInterval) result = s.delay;
      else
        whyNot_ = "failure-rate allows " + std::to_string(s.maxFailuresPerInterval) + " failures in " +
                  std::to_string(s.failureInterval.count()) + " ms";
      break;
    case RestartStrategy::Kind::kExponentialDelay: {
      if (lastFailure_ < 0 || nowMillis - lastFailure_ >= s.resetBackoffThreshold.count())
        backoff_ = static_cast<double>(s.initialBackoff.count());
      double base = std::min(backoff_, static_cast<double>(s.maxBackoff.count()));
      double jitter = 0;
      if (s.jitterFactor > 0 && base > 0) {
        std::uniform_real_distribution<double> dist(-s.jitterFactor * base, s.jitterFactor * base);
        jitter = dist(rng_);
      }
      result = Millis(static_cast<int64_t>(std::llround(std::max(0.0, base + jitter))));
      backoff_ = std::min(base * s.backoffMultiplier, static_cast<double>(s.maxBackoff.count()));
      break;
    }
  }
  lastFailure_ = nowMillis;
  // The same cause again (numbers aside: a checkpoint id or an offset may change).
  std::string masked;
  for (char c : cause) {
    if (c >= '0' && c <= '9') {
      if (masked.empty() || masked.back() != '#') masked += '#';
    } else {
      masked += c;
    }
  }
  identicalInARow_ = masked == lastCause_ ? identicalInARow_ + 1 : 1;
  lastCause_ = std::move(masked);
  if (result && s.identicalFailureLimit() > 0 && identicalInARow_ >= s.identicalFailureLimit()) {
    result.reset();
    whyNot_ = "it failed " + std::to_string(identicalInARow_) + " times in a row with the same cause";
  }
  if (result) ++restarts_;
  return result;
}

}  // namespace detail
}  // namespace weir
