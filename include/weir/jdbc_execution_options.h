// How a database sink sends its statements (Flink's JdbcExecutionOptions): in batches of
// at most batchSize records, a batch at most batchIntervalMs old, and a batch that fails
// for a reason that may pass (a lost connection, a deadlock) tried again up to
// maxRetries times, waiting 1 s, 2 s, … before each.
#pragma once

#include <cstdint>
#include <string>

#include "weir/error.h"

namespace weir {

class JdbcExecutionOptions {
 public:
  static constexpr int kDefaultBatchSize = 5000;          // records
  static constexpr int64_t kDefaultBatchIntervalMs = 0;   // 0: only size and barriers end a batch
  static constexpr int kDefaultMaxRetries = 3;

  class Builder {
   public:
    Builder& withBatchSize(int size) {
      batchSize_ = size;
      return *this;
    }
    Builder& withBatchIntervalMs(int64_t intervalMs) {
      batchIntervalMs_ = intervalMs;
      return *this;
    }
    Builder& withMaxRetries(int retries) {
      maxRetries_ = retries;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming a value out of range.
    JdbcExecutionOptions build() const {
      if (batchSize_ < 1)
        throw Error(ErrorCode::kInvalidArgument, "jdbc execution options: batch size must be at least 1, not " +
                                                     std::to_string(batchSize_));
      if (batchIntervalMs_ < 0)
        throw Error(ErrorCode::kInvalidArgument, "jdbc execution options: batch interval must be at least 0 ms, not " +
                                                     std::to_string(batchIntervalMs_));
      if (maxRetries_ < 0)
        throw Error(ErrorCode::kInvalidArgument, "jdbc execution options: max retries must be at least 0, not " +
                                                     std::to_string(maxRetries_));
      JdbcExecutionOptions options;
      options.batchSize_ = batchSize_;
      options.batchIntervalMs_ = batchIntervalMs_;
      options.maxRetries_ = maxRetries_;
      return options;
    }

   private:
    int batchSize_ = kDefaultBatchSize;
    int64_t batchIntervalMs_ = kDefaultBatchIntervalMs;
    int maxRetries_ = kDefaultMaxRetries;
  };

  static Builder builder() { return Builder(); }
  static JdbcExecutionOptions defaults() { return JdbcExecutionOptions(); }

  int getBatchSize() const { return batchSize_; }
  int64_t getBatchIntervalMs() const { return batchIntervalMs_; }
  int getMaxRetries() const { return maxRetries_; }

 private:
  int batchSize_ = kDefaultBatchSize;
  int64_t batchIntervalMs_ = kDefaultBatchIntervalMs;
  int maxRetries_ = kDefaultMaxRetries;
};

}  // namespace weir
