// When a file sink closes a part file and starts the next (Flink's RollingPolicy): a
// closed part file is published when the next checkpoint completes; the one being
// written stays hidden until it is closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace weir {

// What a rolling policy sees of the part file being written.
class PartFileInfo {
 public:
  PartFileInfo(const std::string& bucketId, int64_t creationTime, uint64_t size, int64_t lastUpdateTime)
      : bucketId_(bucketId), creationTime_(creationTime), size_(size), lastUpdateTime_(lastUpdateTime) {}
  const std::string& getBucketId() const { return bucketId_; }
  // Processing time (milliseconds) when it was opened, and when it was last written.
  int64_t getCreationTime() const { return creationTime_; }
  int64_t getLastUpdateTime() const { return lastUpdateTime_; }
  // Bytes written into it so far.
  uint64_t getSize() const { return size_; }

 private:
  const std::string& bucketId_;
  int64_t creationTime_;
  uint64_t size_;
  int64_t lastUpdateTime_;
};

class RollingPolicy {
 public:
  virtual ~RollingPolicy() = default;
  // At a checkpoint barrier.
  virtual bool shouldRollOnCheckpoint(const PartFileInfo& partFile) const = 0;
  // Before a record is written into it.
  virtual bool shouldRollOnEvent(const PartFileInfo& partFile) const = 0;
  // Every bucket check interval (FileSink's withBucketCheckInterval), at processing time
  // `currentTime`.
  virtual bool shouldRollOnProcessingTime(const PartFileInfo& partFile, int64_t currentTime) const = 0;
};

// Flink's default: a part file rolls when it is larger than the part size (128 MiB),
// when it is older than the rollover interval (60 s), or when nothing was written into
// it for the inactivity interval (60 s). The times are checked every bucket check
// interval; a file open across a checkpoint stays hidden, at its checkpointed length.
class DefaultRollingPolicy final : public RollingPolicy {
 public:
  class Builder;
  static Builder builder();

  bool shouldRollOnCheckpoint(const PartFileInfo& f) const override { return f.getSize() > partSize_; }
  bool shouldRollOnEvent(const PartFileInfo& f) const override { return f.getSize() > partSize_; }
  bool shouldRollOnProcessingTime(const PartFileInfo& f, int64_t now) const override {
    return now - f.getCreationTime() >= rolloverInterval_ || now - f.getLastUpdateTime() >= inactivityInterval_;
  }
  uint64_t getMaxPartSize() const { return partSize_; }
  int64_t getRolloverInterval() const { return rolloverInterval_; }
  int64_t getInactivityInterval() const { return inactivityInterval_; }

 private:
  uint64_t partSize_ = uint64_t{128} << 20;
  int64_t rolloverInterval_ = 60'000;
  int64_t inactivityInterval_ = 60'000;
};

class DefaultRollingPolicy::Builder {
 public:
  Builder& withMaxPartSize(uint64_t bytes) {
    policy_.partSize_ = bytes;
    return *this;
  }
  Builder& withRolloverInterval(std::chrono::milliseconds interval) {
    policy_.rolloverInterval_ = interval.count();
    return *this;
  }
  Builder& withInactivityInterval(std::chrono::milliseconds interval) {
    policy_.inactivityInterval_ = interval.count();
    return *this;
  }
  DefaultRollingPolicy build() const { return policy_; }

 private:
  DefaultRollingPolicy policy_;
};

inline DefaultRollingPolicy::Builder DefaultRollingPolicy::builder() { return {}; }

// Rolls at every checkpoint and only then: each checkpoint publishes one file per
// bucket written since the last (what bulk formats need).
class OnCheckpointRollingPolicy final : public RollingPolicy {
 public:
  static OnCheckpointRollingPolicy build() { return {}; }
  bool shouldRollOnCheckpoint(const PartFileInfo&) const override { return true; }
  bool shouldRollOnEvent(const PartFileInfo&) const override { return false; }
  bool shouldRollOnProcessingTime(const PartFileInfo&, int64_t) const override { return false; }
};

}  // namespace weir
