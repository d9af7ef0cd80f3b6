// User function interfaces with Flink's names. Lambdas work everywhere a function object
// does; derive from a Rich* class to get open(), close() and the runtime context.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/detail/core/output.h"
#include "weir/output_tag.h"
#include "weir/runtime_context.h"

namespace weir {

// Which clock a timer or window follows: the records' timestamps and watermarks, or the
// job's processing-time clock.
enum class TimeDomain { EVENT_TIME, PROCESSING_TIME };

// A function with a lifecycle: open() before the first record, close() after the last
// (also when the job fails or is cancelled). Each parallel instance gets its own copy.
class RichFunction {
 public:
  virtual ~RichFunction() = default;
  virtual void open() {}
  virtual void close() {}
  RuntimeContext& getRuntimeContext() { return *context_; }
  void setRuntimeContext(RuntimeContext* context) { context_ = context; }

 private:
  RuntimeContext* context_ = nullptr;
};

template <class IN, class OUT>
class RichMapFunction : public RichFunction {
 public:
  virtual OUT map(const IN& value) = 0;
};

template <class T>
class RichFilterFunction : public RichFunction {
 public:
  virtual bool filter(const T& value) = 0;
};

template <class T>
class Collector;

template <class IN, class OUT>
class RichFlatMapFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual void flatMap(const IN& value, Collector<OUT>& out) = 0;
};

template <class T>
class RichReduceFunction : public RichFunction {
 public:
  virtual T reduce(const T& accumulated, const T& value) = 0;
};

// Collects the outputs of a flatMap or process function. Buffers them and passes full
// batches downstream, so a function may emit any number of records per input. An output
// record carries the timestamp of the input record it was made from.
template <class T>
class Collector {
 public:
  Collector(std::vector<T>* buffer, std::vector<int64_t>* timestamps, detail::Output<T>* out, size_t batchSize)
      : buffer_(buffer), timestamps_(timestamps), out_(out), batchSize_(batchSize) {}

  // (Two overloads, not one by value: a record passed by value was moved twice.)
  void collect(const T& value) {
    buffer_->push_back(value);
    collected();
  }
  void collect(T&& value) {
    buffer_->push_back(std::move(value));
    collected();
  }

  void flush() {
    if (buffer_->empty()) return;
    out_->processBatch(*buffer_, *timestamps_);
    buffer_->clear();
    timestamps_->clear();
  }

  // The runtime sets the timestamp of the input record being processed, if any.
  void setTimestamp(bool has, int64_t timestamp) {
    hasTimestamp_ = has;
    timestamp_ = timestamp;
  }

 private:
  void collected() {
    if (hasTimestamp_) timestamps_->push_back(timestamp_);
    if (buffer_->size() >= batchSize_) flush();
  }

  std::vector<T>* buffer_;
  std::vector<int64_t>* timestamps_;
  detail::Output<T>* out_;
  size_t batchSize_;
  bool hasTimestamp_ = false;
  int64_t timestamp_ = 0;
};

namespace detail {

// Buffered, typed side output of one operator instance.
class SideOutputBase {
 public:
  virtual ~SideOutputBase() = default;
  virtual void flush() = 0;
  virtual void endInput() = 0;
  virtual void processWatermark(int64_t watermark) = 0;
  virtual void processIdleness(bool idle) = 0;
  virtual void setTimestamp(bool has, int64_t timestamp) = 0;
};

template <class T>
class SideOutput final : public SideOutputBase {
 public:
  SideOutput(Output<T>* out, size_t batchSize) : out_(out), collector_(&buffer_, &timestamps_, out, batchSize) {}
  void collect(T value) { collector_.collect(std::move(value)); }
  void flush() override { collector_.flush(); }
  void endInput() override {
    flush();
    out_->endInput();
  }
  void processWatermark(int64_t watermark) override {
    flush();
    out_->processWatermark(watermark);
  }
  void processIdleness(bool idle) override { out_->processIdleness(idle); }
  void setTimestamp(bool has, int64_t timestamp) override { collector_.setTimestamp(has, timestamp); }

 private:
  Output<T>* out_;
  std::vector<T> buffer_;
  std::vector<int64_t> timestamps_;
  Collector<T> collector_;
};

// The side outputs of one operator instance, by tag index.
class SideOutputs {
 public:
  template <class T>
  void collect(const OutputTag<T>& tag, T value) {
    for (auto& [index, out] : outputs_) {
      if (index == tag.index()) {
        static_cast<SideOutput<T>*>(out.get())->collect(std::move(value));
        return;
      }
    }
    // No consumer for this tag: the record goes nowhere, as in Flink.
  }
  void add(int tagIndex, std::unique_ptr<SideOutputBase> out) {
    outputs_.emplace_back(tagIndex, std::move(out));
  }
  void flush() {
    for (auto& [i, out] : outputs_) out->flush();
  }
  void endInput() {
    for (auto& [i, out] : outputs_) out->endInput();
  }
  void processWatermark(int64_t watermark) {
    for (auto& [i, out] : outputs_) out->processWatermark(watermark);
  }
  void processIdleness(bool idle) {
    for (auto& [i, out] : outputs_) out->processIdleness(idle);
  }
  void setTimestamp(bool has, int64_t timestamp) {
    for (auto& [i, out] : outputs_) out->setTimestamp(has, timestamp);
  }

 private:
  std::vector<std::pair<int, std::unique_ptr<SideOutputBase>>> outputs_;
};

}  // namespace detail

// Processes each element with access to side outputs (Flink's ProcessFunction).
template <class IN, class OUT>
class ProcessFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;

  // Time as the operator sees it. Timers need a keyed stream: see KeyedProcessFunction.
  class TimerService {
   public:
    TimerService(const int64_t* watermark, const Clock* clock) : watermark_(watermark), clock_(clock) {}
    // The operator's input watermark (INT64_MIN before the first).
    int64_t currentWatermark() const { return *watermark_; }
    // The job's processing-time clock (env.setClock), in ms since the epoch.
    int64_t currentProcessingTime() const { return clock_->currentTimeMillis(); }

   private:
    const int64_t* watermark_;
    const Clock* clock_;
  };

  // What processElement may use besides the record: its timestamp, time, side outputs.
  class Context {
   public:
    Context(detail::SideOutputs* sideOutputs, const int64_t* watermark, const Clock* clock)
        : sideOutputs_(sideOutputs), timerService_(watermark, clock) {}
    // The record's event timestamp (ms), or nullopt when the stream carries none.
    std::optional<int64_t> timestamp() const { return timestamp_; }
    const TimerService& timerService() const { return timerService_; }
    // Emits `value` to the side output named by `tag`, with the record's timestamp.
    template <class X>
    void output(const OutputTag<X>& tag, X value) {
      sideOutputs_->collect(tag, std::move(value));
    }
    void setTimestamp(std::optional<int64_t> timestamp) { timestamp_ = timestamp; }

   private:
    detail::SideOutputs* sideOutputs_;
    TimerService timerService_;
    std::optional<int64_t> timestamp_;
  };

  virtual void processElement(const IN& value, Context& ctx, Collector<OUT>& out) = 0;
};

}  // namespace weir
