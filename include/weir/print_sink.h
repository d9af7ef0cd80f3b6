// Prints each record on its own line to stdout (or stderr), as Flink's print() does:
// with parallelism above 1 each line starts with "<subtask>> " (1-based).
#pragma once

#include <string>

#include "weir/detail/core/format.h"
#include "weir/sink.h"

namespace weir {

namespace detail {
// Writes whole lines atomically with respect to other print sinks in the process.
void writeLines(const std::string& lines, bool toStderr);
void flushLines(bool toStderr);
}  // namespace detail

template <class T>
class PrintSink final : public Sink<T> {
 public:
  explicit PrintSink(bool toStderr = false) : toStderr_(toStderr) {}

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    std::string prefix;
    if (context.getNumberOfParallelSubtasks() > 1)
      prefix = std::to_string(context.getIndexOfThisSubtask() + 1) + "> ";
    return std::make_unique<Writer>(std::move(prefix), toStderr_,
                                    context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter());
  }

 private:
  struct Writer final : SinkWriter<T> {
    Writer(std::string p, bool e, Counter b) : prefix(std::move(p)), toStderr(e), bytesOut(b) {}
    void write(const T& record) override {
      T copy = record;
      writeBatch(std::span<T>(&copy, 1));
    }
    void writeBatch(std::span<T> records) override {
      text.clear();
      for (const auto& r : records) {
        text += prefix;
        text += toDisplayString(r);
        text += '\n';
      }
      detail::writeLines(text, toStderr);
      bytesOut.inc(text.size());
    }
    // At every checkpoint barrier and at the end: what was printed reaches the stream
    // (at-least-once output across a restart).
    void flush(bool) override { detail::flushLines(toStderr); }
    std::string prefix;
    bool toStderr;
    Counter bytesOut;
    std::string text;
  };

  bool toStderr_;
};

}  // namespace weir
