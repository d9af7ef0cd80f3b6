// A batch job's blocking exchange as the typed channel code sees it: where a producer's
// buffers go as frames, and where a consumer reads them back. The storage is the
// runtime's (runtime::BlockingResultPartition, docs/batch.md "Stages").
#pragma once

#include <cstdint>
#include <string_view>

namespace weir::detail {

// What a frame of a blocking exchange holds: its first byte.
enum class FrameKind : uint8_t {
  kRecords = 1,    // then a batch of records (record_frames.h)
  kWatermark = 2,  // then the watermark, 8 bytes
};

// Takes one producer subtask's frames, per consumer subtask (a subpartition), in order.
class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // Throws weir::Error (kIo) when the frame cannot be kept.
  virtual void append(int subpartition, std::string_view frame) = 0;
};

// Gives one subpartition's frames back, in the order they were appended.
class BlockReader {
 public:
  virtual ~BlockReader() = default;
  // The next frame, valid until the next call; false after the last. Throws weir::Error
  // (kIo) when it cannot be read.
  virtual bool next(std::string_view& frame) = 0;
};

}  // namespace weir::detail
