// Combines the watermarks of a subtask's input channels into its input watermark: the
// minimum over the channels that are not idle, never moving backwards (Flink's
// StatusWatermarkValve).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "weir/detail/core/output.h"

namespace weir::time {

class WatermarkValve {
 public:
  // `published`, when given, always holds the current input watermark (for metrics).
  WatermarkValve(int inputs, detail::OutputBase* out, std::atomic<int64_t>* published = nullptr);

  void inputWatermark(int input, int64_t watermark);
  void inputIdleness(int input, bool idle);
  // The current input watermark; INT64_MIN before the first.
  int64_t currentWatermark() const { return lastOutput_; }

 private:
  struct Channel {
    int64_t watermark = INT64_MIN;
    bool active = true;
    // Its watermark has reached the output: it may hold the output back.
    bool aligned = true;
  };
  void advance();

  std::vector<Channel> channels_;
  detail::OutputBase* out_;
  std::atomic<int64_t>* published_;
  int64_t lastOutput_ = INT64_MIN;
  bool idle_ = false;
};

}  // namespace weir::time
