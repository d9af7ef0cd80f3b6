// How a source assigns event timestamps and watermarks. Event time is not built yet:
// only noWatermarks() exists, which is what a job on processing time uses.
#pragma once

namespace weir {

template <class T>
class WatermarkStrategy {
 public:
  // Records carry no event time and no watermarks are emitted.
  static WatermarkStrategy noWatermarks() { return WatermarkStrategy(); }

 private:
  WatermarkStrategy() = default;
};

}  // namespace weir
