// The logical job graph the API builds (Flink's transformations) and the typed
// factories the runtime uses to instantiate it without knowing record types.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weir/detail/channel.h"
#include "weir/detail/record_writer.h"
#include "weir/detail/stream_operator.h"
#include "weir/sink.h"
#include "weir/source.h"

namespace weir::detail {

// Feeds the messages of one input channel to the operator at the head of a chain.
class ChannelInputBase {
 public:
  enum class Poll { kEmpty, kProcessed, kEnded };
  virtual ~ChannelInputBase() = default;
  // Processes at most one message.
  virtual Poll pollOnce() = 0;
};

template <class T>
class ChannelInput final : public ChannelInputBase {
 public:
  ChannelInput(Channel<T>* channel, Output<T>* target, TaskMetrics* metrics)
      : channel_(channel), target_(target), metrics_(metrics) {}

  Poll pollOnce() override {
    if (!channel_->poll(message_)) return Poll::kEmpty;
    if (message_.isEvent) {
      // Watermarks are combined per input once event time lands; end ends this channel.
      return message_.event == EventKind::kEndOfPartition ? Poll::kEnded : Poll::kProcessed;
    }
    metrics_->numRecordsIn.fetch_add(message_.records.size(), std::memory_order_relaxed);
    target_->emitBatch(message_.records);
    channel_->recycle(std::move(message_.records));
    return Poll::kProcessed;
  }

 private:
  Channel<T>* channel_;
  Output<T>* target_;
  TaskMetrics* metrics_;
  typename Channel<T>::Message message_;
};

// The head of a source chain: pulls batches from a reader and pushes them down the chain.
class SourceOperatorBase : public StreamOperator {
 public:
  OutputBase* input() override { return nullptr; }
  void setEnumerator(SplitEnumerator* enumerator) { enumerator_ = enumerator; }
  // Emits at most one batch.
  virtual InputStatus emitNext() = 0;
  // After NOTHING_AVAILABLE: when to call emitNext() again.
  virtual std::chrono::steady_clock::time_point nextPollTime() const = 0;
  // End of input: passes it down the chain.
  virtual void endInput() = 0;

 protected:
  SplitEnumerator* enumerator_ = nullptr;
};

template <class T>
class SourceOperator final : public SourceOperatorBase {
 public:
  explicit SourceOperator(std::shared_ptr<const Source<T>> source) : source_(std::move(source)) {}

  void setOutput(OutputBase* out) override { out_ = &dynamic_cast<Output<T>&>(*out); }

  void open() override {
    reader_ = callUser([&] {
      return source_->createReader(SourceReaderContext{context_->getIndexOfThisSubtask(),
                                                       context_->getNumberOfParallelSubtasks(), enumerator_});
    });
    batch_.reserve(kBatchSize);
  }

  InputStatus emitNext() override {
    batch_.clear();
    InputStatus status = callUser([&] { return reader_->pollNext(batch_, kBatchSize); });
    if (!batch_.empty()) {
      metrics_->numSourceRecords.fetch_add(batch_.size(), std::memory_order_relaxed);
      out_->emitBatch(batch_);
    }
    return status;
  }

  std::chrono::steady_clock::time_point nextPollTime() const override { return reader_->nextPollTime(); }
  void endInput() override { out_->endInput(); }

  void close() override {
    if (reader_) callUser([&] { reader_->close(); });
  }

 private:
  std::shared_ptr<const Source<T>> source_;
  std::unique_ptr<SourceReader<T>> reader_;
  std::vector<T> batch_;
  Output<T>* out_ = nullptr;
};

// The tail of a chain that ends in a sink: hands batches to the sink's writer.
template <class T>
class SinkOperator final : public StreamOperator, public Output<T> {
 public:
  explicit SinkOperator(std::shared_ptr<const Sink<T>> sink) : sink_(std::move(sink)) {}

  OutputBase* input() override { return this; }
  void setOutput(OutputBase*) override {}

  void open() override {
    writer_ = callUser([&] { return sink_->createWriter(*context_); });
  }

  void emitBatch(std::span<T> records) override {
    metrics_->numRecordsOut.fetch_add(records.size(), std::memory_order_relaxed);
    callUser([&] { writer_->writeBatch(records); });
  }

  void endInput() override {
    callUser([&] { writer_->flush(true); });
  }

  void close() override {
    if (writer_) callUser([&] { writer_->close(); });
  }

 private:
  std::shared_ptr<const Sink<T>> sink_;
  std::unique_ptr<SinkWriter<T>> writer_;
};

// Factories for everything the runtime builds around a stream of one record type.
class StreamType {
 public:
  virtual ~StreamType() = default;
  virtual std::unique_ptr<ChannelBase> createChannel(int credits, TaskSignal* consumer) const = 0;
  virtual std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target,
                                                        TaskMetrics* metrics) const = 0;
  virtual std::unique_ptr<OutputBase> createFanOut(const std::vector<OutputBase*>& targets) const = 0;
  virtual std::unique_ptr<OutputBase> createNullOutput() const = 0;
  // A writer for every partitioner but kKeyGroup (which needs the key selector).
  virtual std::unique_ptr<OutputBase> createWriter(PartitionerKind kind,
                                                   const std::vector<ChannelBase*>& channels,
                                                   TaskMetrics* metrics) const = 0;
  virtual std::unique_ptr<SideOutputBase> createSideOutput(OutputBase* target) const = 0;
};

template <class T>
class TypedStream final : public StreamType {
 public:
  static std::shared_ptr<const StreamType> get() {
    static const auto instance = std::make_shared<const TypedStream<T>>();
    return instance;
  }

  static std::vector<Channel<T>*> typed(const std::vector<ChannelBase*>& channels) {
    std::vector<Channel<T>*> out;
    for (auto* c : channels) out.push_back(static_cast<Channel<T>*>(c));
    return out;
  }

  std::unique_ptr<ChannelBase> createChannel(int credits, TaskSignal* consumer) const override {
    return std::make_unique<Channel<T>>(credits, consumer);
  }
  std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target,
                                                TaskMetrics* metrics) const override {
    return std::make_unique<ChannelInput<T>>(static_cast<Channel<T>*>(channel),
                                             &dynamic_cast<Output<T>&>(*target), metrics);
  }
  std::unique_ptr<OutputBase> createFanOut(const std::vector<OutputBase*>& targets) const override {
    std::vector<Output<T>*> typedTargets;
    for (auto* t : targets) typedTargets.push_back(&dynamic_cast<Output<T>&>(*t));
    return std::make_unique<FanOut<T>>(std::move(typedTargets));
  }
  std::unique_ptr<OutputBase> createNullOutput() const override { return std::make_unique<NullOutput<T>>(); }
  std::unique_ptr<OutputBase> createWriter(PartitionerKind kind, const std::vector<ChannelBase*>& channels,
                                           TaskMetrics* metrics) const override {
    switch (kind) {
      case PartitionerKind::kBroadcast:
        return std::make_unique<RecordWriter<T, BroadcastSelector>>(typed(channels), BroadcastSelector{}, metrics);
      case PartitionerKind::kShuffle:
        return std::make_unique<RecordWriter<T, RandomSelector>>(typed(channels), RandomSelector{}, metrics);
      default:
        return std::make_unique<RecordWriter<T, RoundRobinSelector>>(typed(channels), RoundRobinSelector{}, metrics);
    }
  }
  std::unique_ptr<SideOutputBase> createSideOutput(OutputBase* target) const override {
    return std::make_unique<SideOutput<T>>(&dynamic_cast<Output<T>&>(*target), kBatchSize);
  }
};

// Creates the key-group writer of a keyBy edge: (channels, maxParallelism, metrics).
using KeyedWriterFactory = std::function<std::unique_ptr<OutputBase>(
    const std::vector<ChannelBase*>&, int, TaskMetrics*)>;

// One node of the logical graph. Sources and operators become operator instances; union,
// partition and side-output nodes only shape the edges between them.
struct Transformation {
  enum class Kind { kSource, kOperator, kUnion, kPartition, kSideOutput };

  int id = 0;
  Kind kind = Kind::kOperator;
  std::string name;
  std::string uid;
  int parallelism = 0;  // 0: the environment's default
  std::vector<int> inputs;
  std::shared_ptr<const StreamType> outputType;
  bool isSink = false;
  bool chainingDisabled = false;  // disableChaining(): never chained either side
  bool startsNewChain = false;    // startNewChain(): not chained to its input

  // kSource and kOperator: a fresh instance for one subtask.
  std::function<std::unique_ptr<StreamOperator>()> createOperator;
  // kSource: splits for the given parallelism (may throw weir::Error); null: none needed.
  std::function<std::unique_ptr<SplitEnumerator>(int)> createEnumerator;
  int maxSourceParallelism = 0;  // 0: any

  // kPartition.
  PartitionerKind partitioner = PartitionerKind::kForward;
  KeyedWriterFactory keyedWriter;

  // kSideOutput: the tag whose records this stream carries (inputs[0] is the operator).
  int sideOutputTag = -1;
};

// Everything execute() hands to the runtime.
struct StreamGraph {
  std::vector<std::shared_ptr<Transformation>> nodes;  // nodes[i]->id == i
  int defaultParallelism = 1;
  int maxParallelism = 128;
  int buffersPerChannel = 4;  // credits per channel (exclusive buffers)
};

}  // namespace weir::detail
