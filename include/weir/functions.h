// User function interfaces with Flink's names. Lambdas work everywhere a function object
// does; derive from a Rich* class to get open(), close() and the runtime context.
#pragma once

#include <concepts>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/detail/output.h"
#include "weir/output_tag.h"
#include "weir/runtime_context.h"

namespace weir {

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
// batches downstream, so a function may emit any number of records per input.
template <class T>
class Collector {
 public:
  Collector(std::vector<T>* buffer, detail::Output<T>* out, size_t batchSize)
      : buffer_(buffer), out_(out), batchSize_(batchSize) {}

  void collect(T value) {
    buffer_->push_back(std::move(value));
    if (buffer_->size() >= batchSize_) flush();
  }

  void flush() {
    if (buffer_->empty()) return;
    out_->emitBatch(*buffer_);
    buffer_->clear();
  }

 private:
  std::vector<T>* buffer_;
  detail::Output<T>* out_;
  size_t batchSize_;
};

namespace detail {

// Buffered, typed side output of one operator instance.
class SideOutputBase {
 public:
  virtual ~SideOutputBase() = default;
  virtual void flush() = 0;
  virtual void endInput() = 0;
};

template <class T>
class SideOutput final : public SideOutputBase {
 public:
  SideOutput(Output<T>* out, size_t batchSize) : out_(out), collector_(&buffer_, out, batchSize) {}
  void collect(T value) { collector_.collect(std::move(value)); }
  void flush() override { collector_.flush(); }
  void endInput() override {
    flush();
    out_->endInput();
  }

 private:
  Output<T>* out_;
  std::vector<T> buffer_;
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

  // What processElement may use besides the record: side outputs.
  class Context {
   public:
    explicit Context(detail::SideOutputs* sideOutputs) : sideOutputs_(sideOutputs) {}
    // Emits `value` to the side output named by `tag`.
    template <class X>
    void output(const OutputTag<X>& tag, X value) {
      sideOutputs_->collect(tag, std::move(value));
    }

   private:
    detail::SideOutputs* sideOutputs_;
  };

  virtual void processElement(const IN& value, Context& ctx, Collector<OUT>& out) = 0;
};

}  // namespace weir
