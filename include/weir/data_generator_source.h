// A deterministic source that turns sequence numbers 0, 1, 2, ... into records.
#pragma once

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>
#include <functional>
#include <limits>
#include <string>

#include "weir/detail/core/output.h"
#include "weir/error.h"
#include "weir/source.h"

namespace weir {

// Count that makes a DataGeneratorSource unbounded (Flink uses Long.MAX_VALUE too).
inline constexpr int64_t kUnboundedCount = std::numeric_limits<int64_t>::max();

// How fast a source may emit, over all its parallel readers together.
class RateLimiterStrategy {
 public:
  // At most `recordsPerSecond` records per second in total; must be > 0.
  static RateLimiterStrategy perSecond(double recordsPerSecond) {
    if (!(recordsPerSecond > 0) || !std::isfinite(recordsPerSecond))
      throw Error(ErrorCode::kInvalidArgument,
                  "rate limit must be a positive number of records per second, got " +
                      std::to_string(recordsPerSecond));
    return RateLimiterStrategy(recordsPerSecond);
  }
  // No limit (the default).
  static RateLimiterStrategy noOp() { return RateLimiterStrategy(0); }
  // Records per second, 0 when unlimited.
  double recordsPerSecond() const { return recordsPerSecond_; }

 private:
  explicit RateLimiterStrategy(double r) : recordsPerSecond_(r) {}
  double recordsPerSecond_;
};

namespace detail {
// Sequence numbers [from, to) of one generator reader.
struct SequenceSplit final : SourceSplit {
  SequenceSplit(int64_t f, int64_t t) : from(f), to(t) {}
  std::string splitId() const override { return std::to_string(from) + "-" + std::to_string(to); }
  int64_t from;
  int64_t to;
};
}  // namespace detail

// Emits generator(i) for i in [0, count), split into contiguous ranges, one per reader;
// the same count and parallelism always give the same records on the same subtasks.
// `generator` is any callable T(int64_t); it is copied into each reader.
template <class F>
  requires std::invocable<const F&, int64_t>
class DataGeneratorSource final : public Source<std::decay_t<std::invoke_result_t<const F&, int64_t>>> {
 public:
  using T = std::decay_t<std::invoke_result_t<const F&, int64_t>>;

  DataGeneratorSource(F generator, int64_t count,
                      RateLimiterStrategy rateLimiter = RateLimiterStrategy::noOp())
      : generator_(std::move(generator)), count_(count), rateLimiter_(rateLimiter) {
    if (count < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "DataGeneratorSource: count must be >= 0, got " + std::to_string(count));
  }

  Boundedness getBoundedness() const override {
    return count_ == kUnboundedCount ? Boundedness::CONTINUOUS_UNBOUNDED : Boundedness::BOUNDED;
  }

  bool supportsCheckpointing() const override { return true; }

  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override {
    std::vector<std::deque<std::unique_ptr<SourceSplit>>> splits(static_cast<size_t>(parallelism));
    for (int i = 0; i < parallelism; ++i) {
      splits[static_cast<size_t>(i)].push_back(std::make_unique<detail::SequenceSplit>(
          rangeBound(i, parallelism), rangeBound(i + 1, parallelism)));
    }
    return std::make_unique<StaticSplitEnumerator>(std::move(splits));
  }

  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext& context) const override {
    double rate = rateLimiter_.recordsPerSecond() / context.parallelism;
    return std::make_unique<Reader>(generator_, context.enumerator, context.subtaskIndex, rate);
  }

 private:
  int64_t rangeBound(int i, int parallelism) const {
    return static_cast<int64_t>(static_cast<__int128>(count_) * i / parallelism);
  }

  class Reader final : public SourceReader<T> {
   public:
    Reader(F generator, SplitEnumerator* enumerator, int subtask, double rate)
        : generator_(std::move(generator)), enumerator_(enumerator), subtask_(subtask), rate_(rate) {}

    InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
      while (next_ == end_) {
        if (!restored_.empty()) {
          std::tie(next_, end_) = restored_.front();
          restored_.pop_front();
          continue;
        }
        auto split = enumerator_->nextSplit(subtask_);
        if (!split) return InputStatus::END_OF_INPUT;
        auto& s = static_cast<detail::SequenceSplit&>(*split);
        next_ = s.from;
        end_ = s.to;
      }
      auto n = static_cast<int64_t>(maxRecords);
      if (rate_ > 0) {
        auto now = std::chrono::steady_clock::now();
        if (emitted_ == 0) start_ = now;
        double elapsed = std::chrono::duration<double>(now - start_).count();
        auto allowed = static_cast<int64_t>(elapsed * rate_) + 1 - emitted_;
        if (allowed <= 0) return InputStatus::NOTHING_AVAILABLE;
        n = std::min(n, allowed);
      }
      int64_t last = end_ - next_ < n ? end_ : next_ + n;
      if constexpr (detail::PlainRecord<T>) {
        // Indexed stores, so the compiler can unroll and vectorize the generator.
        size_t base = out.size();
        const int64_t count = last - next_, first = next_;
        out.resize(base + static_cast<size_t>(count));
        T* dst = out.data() + base;
        for (int64_t k = 0; k < count; ++k) dst[k] = generator_(first + k);
      } else {
        for (int64_t i = next_; i < last; ++i) out.push_back(generator_(i));
      }
      emitted_ += last - next_;
      next_ = last;
      return InputStatus::MORE_AVAILABLE;
    }

    std::chrono::steady_clock::time_point nextPollTime() const override {
      auto due = std::chrono::duration<double>(static_cast<double>(emitted_) / rate_);
      return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(due);
    }

    // The rest of the range being read and of restored ranges not yet begun: "next:end".
    std::vector<std::string> snapshotState(int64_t) override {
      std::vector<std::string> out;
      if (next_ < end_) out.push_back(std::to_string(next_) + ":" + std::to_string(end_));
      for (auto [from, to] : restored_) out.push_back(std::to_string(from) + ":" + std::to_string(to));
      return out;
    }
    void addSplits(std::vector<std::string> splits) override {
      for (const auto& s : splits) {
        auto colon = s.find(':');
        if (colon == std::string::npos)
          throw Error(ErrorCode::kCheckpoint, "DataGeneratorSource: bad split state '" + s + "'");
        restored_.emplace_back(std::stoll(s.substr(0, colon)), std::stoll(s.substr(colon + 1)));
      }
    }

   private:
    F generator_;
    SplitEnumerator* enumerator_;
    int subtask_;
    double rate_;
    std::deque<std::pair<int64_t, int64_t>> restored_;
    int64_t next_ = 0;
    int64_t end_ = 0;
    int64_t emitted_ = 0;
    std::chrono::steady_clock::time_point start_{};
  };

  F generator_;
  int64_t count_;
  RateLimiterStrategy rateLimiter_;
};

}  // namespace weir
