// Restart strategies (Flink's RestartStrategies): whether and when a failed job is
// restarted from its latest completed checkpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <string>

namespace weir {

class RestartStrategy {
 public:
  using Millis = std::chrono::milliseconds;
  enum class Kind { kDefault, kNone, kFixedDelay, kExponentialDelay, kFailureRate };

  // Never restart: the first failure fails the job.
  static RestartStrategy noRestart();
  // Up to `attempts` restarts, each `delay` after the failure.
  static RestartStrategy fixedDelayRestart(int attempts, Millis delay);
  // Without limit; the delay starts at `initialBackoff` and is multiplied by
  // `backoffMultiplier` after each failure, up to `maxBackoff`; it goes back to
  // `initialBackoff` after `resetBackoffThreshold` without a failure. Each delay is
  // varied at random by up to +-`jitterFactor` of itself (0..1).
  static RestartStrategy exponentialDelayRestart(Millis initialBackoff, Millis maxBackoff, double backoffMultiplier,
                                                 Millis resetBackoffThreshold, double jitterFactor);
  // Restarts after `delay` unless more than `maxFailuresPerInterval` failures happened
  // within `failureInterval`.
  static RestartStrategy failureRateRestart(int maxFailuresPerInterval, Millis failureInterval, Millis delay);
  // Flink's default: no restart without checkpointing, with it exponential delay (Flink
  // 1.19's defaults: from 1 s, times 1.5 per failure, at most 1 min, back to 1 s after 1 h
  // without a failure, +-10% jitter).
  static RestartStrategy fallback() { return RestartStrategy(); }

  // Gives up (the job fails) after `n` failures in a row with the same cause (the same
  // message, numbers aside), whatever the strategy would allow: a failure that recurs on
  // every attempt, a full disk or a path that is gone, ends the job instead of restarting
  // it forever. 0 (the default): no such limit. `weir run` sets 5 unless
  // --restart-strategy is given.
  RestartStrategy& stopAfterIdenticalFailures(int n);
  int identicalFailureLimit() const { return identicalFailureLimit_; }
  // The strategy as a log line shows it, e.g. "exponential-delay".
  std::string name() const;

  // Parses the --restart-strategy option: none | fixed-delay:ATTEMPTS:DELAY_MS |
  // exponential-delay:INITIAL_MS:MAX_MS | failure-rate:MAX:INTERVAL_MS:DELAY_MS.
  static RestartStrategy parse(const std::string& text);

  Kind kind() const { return kind_; }
  // What the default turns into for a job with or without checkpointing.
  RestartStrategy resolve(bool checkpointing) const;

  int attempts = 0;
  Millis delay{0};
  Millis initialBackoff{0};
  Millis maxBackoff{0};
  double backoffMultiplier = 1;
  Millis resetBackoffThreshold{0};
  double jitterFactor = 0;
  int maxFailuresPerInterval = 0;
  Millis failureInterval{0};

 private:
  RestartStrategy() = default;
  Kind kind_ = Kind::kDefault;
  int identicalFailureLimit_ = 0;
};

namespace detail {

// Applies a (resolved) strategy to a job's failures, one after another.
class RestartBackoff {
 public:
  explicit RestartBackoff(RestartStrategy strategy, uint64_t seed = std::random_device{}())
      : strategy_(std::move(strategy)), rng_(seed) {}
  // A failure at `nowMillis` with `cause`: how long to wait before restarting, or nullopt
  // when the strategy allows no more restarts (whyNot() says why).
  std::optional<std::chrono::milliseconds> onFailure(int64_t nowMillis, const std::string& cause = "");
  int restarts() const { return restarts_; }
  std::string strategyName() const { return strategy_.name(); }
  // Why the last onFailure() allowed no restart.
  const std::string& whyNot() const { return whyNot_; }

 private:
  RestartStrategy strategy_;
  std::mt19937_64 rng_;
  int restarts_ = 0;
  std::deque<int64_t> failures_;  // failure-rate: failure times within the interval
  double backoff_ = 0;            // exponential: the next base delay
  int64_t lastFailure_ = -1;
  std::string lastCause_;         // the last failure's cause, numbers masked
  int identicalInARow_ = 0;
  std::string whyNot_;
};

}  // namespace detail
}  // namespace weir
