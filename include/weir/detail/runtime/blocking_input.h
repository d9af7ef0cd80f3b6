// The input side of a blocking exchange: feeds the frames one producer subtask wrote for
// this consumer subtask to the operator at the head of its chain, as a ChannelInput does
// a channel's messages. The exchange was written whole before it is read: it never runs
// empty, and carries no barriers and no idleness.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/detail/core/output.h"
#include "weir/detail/operators/task_metrics.h"
#include "weir/detail/runtime/blocking_exchange.h"
#include "weir/detail/runtime/channel_input.h"
#include "weir/detail/runtime/record_frames.h"
#include "weir/error.h"
#include "weir/serializer.h"

namespace weir::detail {

template <class T>
class BlockingInput final : public ChannelInputBase {
 public:
  BlockingInput(std::unique_ptr<BlockReader> reader, Output<T>* target, TaskMetrics* metrics)
      : reader_(std::move(reader)), target_(target), metrics_(metrics) {}

  Poll pollOnce() override {
    std::string_view frame;
    if (!reader_->next(frame)) return Poll::kEnded;
    DataInput in(frame);
    const auto kind = static_cast<FrameKind>(in.read<uint8_t>());
    if (kind == FrameKind::kWatermark) {
      watermark_ = in.read<int64_t>();
      return Poll::kWatermark;
    }
    if constexpr (Serializable<T>) {
      readRecords(in, records_, timestamps_);
      const size_t count = records_.size();
      target_->processBatch(records_, timestamps_);
      metrics_->numRecordsIn.fetch_add(count, std::memory_order_release);
      return Poll::kProcessed;
    } else {
      throw Error(ErrorCode::kInternal, "records of a type without a weir::Serializer cannot cross a blocking exchange");
    }
  }

  int64_t announcedBarrier() const override { return 0; }
  void captureQueuedBefore(int64_t, std::string&) override {}
  void replay(std::string_view, const std::function<bool(const void*)>&) override {
    throw Error(ErrorCode::kInternal, "a blocking exchange has no records in flight to restore");
  }

 private:
  std::unique_ptr<BlockReader> reader_;
  Output<T>* target_;
  TaskMetrics* metrics_;
  std::vector<T> records_;
  std::vector<int64_t> timestamps_;
};

}  // namespace weir::detail
