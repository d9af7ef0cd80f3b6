// Sinks (Flink's Sink V2 shape): a Sink creates one SinkWriter per parallel instance.
#pragma once

#include <memory>
#include <span>

#include "weir/checkpoint_config.h"
#include "weir/restart_strategy.h"
#include "weir/runtime_context.h"
#include "weir/runtime_execution_mode.h"

namespace weir {

// Writes the records of one parallel instance. Called only by its subtask's thread.
template <class T>
class SinkWriter {
 public:
  virtual ~SinkWriter() = default;
  virtual void write(const T& record) = 0;
  // A whole batch; override to write it at once. The records may be moved from.
  virtual void writeBatch(std::span<T> records) {
    for (auto& r : records) write(r);
  }
  // Makes everything written so far durable or visible; `endOfInput` on the last call.
  virtual void flush(bool endOfInput) {}
  virtual void close() {}
};

// A destination for records of type T.
template <class T>
class Sink {
 public:
  using InputType = T;
  virtual ~Sink() = default;
  virtual std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const = 0;
  // Called before the job runs, with its checkpointing, its (resolved) restart settings
  // and the mode it runs in (STREAMING or BATCH, AUTOMATIC resolved): a sink that cannot
  // keep its promise under them throws weir::Error naming the conflict, and the job does
  // not start.
  virtual void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy& restarts,
                             RuntimeExecutionMode mode) const {}
};

}  // namespace weir
