// The input side of a channel: feeds its batches to the operator at the head of a chain
// and reports the events between them.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/detail/core/output.h"
#include "weir/detail/operators/task_metrics.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/record_frames.h"
#include "weir/serializer.h"

namespace weir::detail {

// Feeds the messages of one input channel to the operator at the head of a chain.
//
// For unaligned checkpoints it also persists the channel's in-flight records: those
// queued ahead of a barrier (captureQueuedBefore) and, while a checkpoint records this
// channel, every record processed before its barrier arrives. Persisted records are
// batches as record_frames.h writes them.
class ChannelInputBase {
 public:
  // What pollOnce() found. kWatermark: see watermark(); kIdle, kActive: the channel's
  // producer went idle or became active again; kBarrier: see barrierId().
  enum class Poll { kEmpty, kProcessed, kWatermark, kIdle, kActive, kEnded, kBarrier };
  virtual ~ChannelInputBase() = default;
  // Processes at most one message: a batch goes to the operator; an event is reported
  // for the stream task to act on (its watermark valve combines the inputs').
  virtual Poll pollOnce() = 0;
  int64_t barrierId() const { return barrierId_; }
  int64_t watermark() const { return watermark_; }

  // The newest barrier queued in the channel, processed or not (0: none).
  virtual int64_t announcedBarrier() const = 0;
  // Appends the records queued ahead of barrier `checkpointId` to `out`.
  virtual void captureQueuedBefore(int64_t checkpointId, std::string& out) = 0;
  // Until stopRecording(checkpointId), every record processed is appended to `out` too.
  void startRecording(int64_t checkpointId, std::string* out) { recordings_.emplace_back(checkpointId, out); }
  void stopRecording(int64_t checkpointId) {
    std::erase_if(recordings_, [&](const auto& r) { return r.first == checkpointId; });
  }
  // Processes persisted records (of a restored checkpoint) as if they had arrived;
  // with `keep`, only those for which keep(&record) holds.
  virtual void replay(std::string_view persisted, const std::function<bool(const void*)>& keep = {}) = 0;

 protected:
  int64_t barrierId_ = 0;
  int64_t watermark_ = 0;
  std::vector<std::pair<int64_t, std::string*>> recordings_;
};

template <class T>
class ChannelInput final : public ChannelInputBase {
 public:
  ChannelInput(Channel<T>* channel, Output<T>* target, TaskMetrics* metrics)
      : channel_(channel), target_(target), metrics_(metrics) {}

  Poll pollOnce() override {
    if (!channel_->poll(message_)) return Poll::kEmpty;
    if (message_.isEvent) {
      switch (message_.event) {
        case EventKind::kWatermark: watermark_ = message_.timestamp; return Poll::kWatermark;
        case EventKind::kIdle: return Poll::kIdle;
        case EventKind::kActive: return Poll::kActive;
        case EventKind::kEndOfPartition: return Poll::kEnded;
        case EventKind::kBarrier: barrierId_ = message_.timestamp; return Poll::kBarrier;
      }
      return Poll::kProcessed;
    }
    if (!recordings_.empty()) {
      scratch_.clear();
      persist(message_.records, message_.timestamps, scratch_);
      for (auto& [id, out] : recordings_) out->append(scratch_);
    }
    const size_t count = message_.records.size();
    target_->processBatch(message_.records, message_.timestamps);
    // Counted once processed: a reader that sees the count sees the records' effects.
    metrics_->numRecordsIn.fetch_add(count, std::memory_order_release);
    channel_->recycle(message_);
    return Poll::kProcessed;
  }

  int64_t announcedBarrier() const override { return channel_->announcedBarrier(); }

  void captureQueuedBefore(int64_t checkpointId, std::string& out) override {
    channel_->forEachQueuedBefore(checkpointId, [&](const std::vector<T>& records, const std::vector<int64_t>& ts) {
      persist(records, ts, out);
    });
  }

  void replay(std::string_view persisted, const std::function<bool(const void*)>& keep) override {
    if constexpr (Serializable<T>) {
      DataInput in(persisted);
      std::vector<T> records;
      std::vector<int64_t> timestamps;
      while (!in.atEnd()) {
        readRecords(in, records, timestamps, keep);
        target_->processBatch(records, timestamps);
        metrics_->numRecordsIn.fetch_add(records.size(), std::memory_order_release);
      }
    } else {
      throw Error(ErrorCode::kCheckpoint, "in-flight records of a type without a weir::Serializer cannot be restored");
    }
  }

 private:
  static void persist(const std::vector<T>& records, const std::vector<int64_t>& timestamps, std::string& out) {
    if constexpr (Serializable<T>) {
      DataOutput data;
      writeRecords(records, timestamps, data);
      out += data.data();
    } else {
      // The job's planning refuses unaligned checkpoints for such channels.
      throw Error(ErrorCode::kInternal, "in-flight records of a type without a weir::Serializer cannot be persisted");
    }
  }

  Channel<T>* channel_;
  Output<T>* target_;
  TaskMetrics* metrics_;
  typename Channel<T>::Message message_;
  std::string scratch_;
};

}  // namespace weir::detail
