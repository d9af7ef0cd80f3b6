// Time to live of keyed state (Flink's StateTtlConfig): entries not written (or read)
// for `ttl` of processing time expire. Enable it per state with
// descriptor.enableTimeToLive(StateTtlConfig::newBuilder(ttl).build()).
#pragma once

#include <chrono>
#include <cstdint>

#include "weir/error.h"

namespace weir {

class StateTtlConfig {
 public:
  // What refreshes an entry's time to live.
  enum class UpdateType {
    OnCreateAndWrite,  // default: creating and writing it
    OnReadAndWrite,    // reading it as well
  };
  // Whether an expired entry that was not cleaned up yet can still be read.
  enum class StateVisibility {
    NeverReturnExpired,           // default
    ReturnExpiredIfNotCleanedUp,  // returned once, then it is cleaned up
  };

  class Builder;

  static Builder newBuilder(std::chrono::milliseconds ttl);

  std::chrono::milliseconds getTtl() const { return ttl_; }
  UpdateType getUpdateType() const { return updateType_; }
  StateVisibility getStateVisibility() const { return visibility_; }
  bool isCleanupInFullSnapshot() const { return cleanupFullSnapshot_; }
  bool isCleanupInBackground() const { return cleanupInBackground_; }
  // Entries checked per access on the heap; 0: no incremental cleanup.
  int getIncrementalCleanupSize() const {
    if (incrementalCleanupSize_ >= 0) return incrementalCleanupSize_;
    return cleanupInBackground_ ? 5 : 0;
  }
  bool runCleanupForEveryRecord() const { return cleanupEveryRecord_; }
  // Whether RocksDB compactions drop expired entries, and how often they read the clock.
  bool isCleanupInRocksdbCompactFilter() const { return compactionFilterQueryEvery_ >= 0 || cleanupInBackground_; }
  int64_t getCompactionFilterQueryTimeAfterNumEntries() const {
    return compactionFilterQueryEvery_ >= 0 ? compactionFilterQueryEvery_ : 1000;
  }

 private:
  friend class Builder;
  StateTtlConfig() = default;

  std::chrono::milliseconds ttl_{0};
  UpdateType updateType_ = UpdateType::OnCreateAndWrite;
  StateVisibility visibility_ = StateVisibility::NeverReturnExpired;
  bool cleanupFullSnapshot_ = false;
  bool cleanupInBackground_ = true;
  int incrementalCleanupSize_ = -1;  // -1: not configured
  bool cleanupEveryRecord_ = false;
  int64_t compactionFilterQueryEvery_ = -1;  // -1: not configured
};

class StateTtlConfig::Builder {
 public:
  explicit Builder(std::chrono::milliseconds ttl) { config_.ttl_ = ttl; }
  Builder& setUpdateType(UpdateType type) {
    config_.updateType_ = type;
    return *this;
  }
  Builder& updateTtlOnCreateAndWrite() { return setUpdateType(UpdateType::OnCreateAndWrite); }
  Builder& updateTtlOnReadAndWrite() { return setUpdateType(UpdateType::OnReadAndWrite); }
  Builder& setStateVisibility(StateVisibility visibility) {
    config_.visibility_ = visibility;
    return *this;
  }
  Builder& neverReturnExpired() { return setStateVisibility(StateVisibility::NeverReturnExpired); }
  Builder& returnExpiredIfNotCleanedUp() { return setStateVisibility(StateVisibility::ReturnExpiredIfNotCleanedUp); }
  // Leaves expired entries out of full snapshots (and whatever reads a state whole).
  Builder& cleanupFullSnapshot() {
    config_.cleanupFullSnapshot_ = true;
    return *this;
  }
  // Heap: every access to the state checks `cleanupSize` more entries of it and removes
  // the expired ones; with `runCleanupForEveryRecord`, every record of the operator
  // does too.
  Builder& cleanupIncrementally(int cleanupSize, bool runCleanupForEveryRecord) {
    if (cleanupSize < 0)
      throw Error(ErrorCode::kInvalidArgument, "StateTtlConfig: cleanupIncrementally needs a size of at least 0");
    config_.incrementalCleanupSize_ = cleanupSize;
    config_.cleanupEveryRecord_ = runCleanupForEveryRecord;
    return *this;
  }
  // RocksDB: compactions drop expired entries; the filter reads the clock again every
  // `queryTimeAfterNumEntries` entries (default 1000).
  Builder& cleanupInRocksdbCompactFilter(int64_t queryTimeAfterNumEntries = 1000) {
    if (queryTimeAfterNumEntries < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "StateTtlConfig: cleanupInRocksdbCompactFilter needs queryTimeAfterNumEntries of at least 0");
    config_.compactionFilterQueryEvery_ = queryTimeAfterNumEntries;
    return *this;
  }
  // Without this, expired entries are also removed in the background as Flink does
  // by default: incrementally (5 entries per access) on the heap, by the compaction
  // filter (clock read every 1000 entries) on RocksDB, unless configured otherwise.
  Builder& disableCleanupInBackground() {
    config_.cleanupInBackground_ = false;
    return *this;
  }
  StateTtlConfig build() const {
    if (config_.ttl_.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "StateTtlConfig: the time to live must be positive, got " + std::to_string(config_.ttl_.count()) + " ms");
    return config_;
  }

 private:
  StateTtlConfig config_;
};

inline StateTtlConfig::Builder StateTtlConfig::newBuilder(std::chrono::milliseconds ttl) { return Builder(ttl); }

}  // namespace weir
