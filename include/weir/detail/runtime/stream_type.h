// The typed factories the runtime builds a stream of one record type with, without
// knowing the type: channels, their inputs and writers, fan-outs, counting outputs and
// side outputs.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "weir/detail/core/counting_output.h"
#include "weir/detail/core/output.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/runtime/blocking_exchange.h"
#include "weir/detail/runtime/blocking_input.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/channel_input.h"
#include "weir/detail/runtime/record_writer.h"
#include "weir/serializer.h"

namespace weir::detail {

// Factories for everything the runtime builds around a stream of one record type.
class StreamType {
 public:
  virtual ~StreamType() = default;
  // A channel whose buffers hold up to `bufferRecords` records.
  virtual std::unique_ptr<ChannelBase> createChannel(int credits, size_t bufferRecords,
                                                     TaskSignal* consumer) const = 0;
  // The bytes of one record in a buffer (with its timestamp), and the most records a
  // buffer holds (kBatchRecords: about 32 KiB).
  virtual size_t recordBytes() const = 0;
  virtual size_t maxBufferRecords() const = 0;
  virtual std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target,
                                                        TaskMetrics* metrics) const = 0;
  // A channel into a blocking exchange, writing to `sink` for consumer `subpartition`,
  // and the input that reads one producer's frames back (blocking_input.h).
  virtual std::unique_ptr<ChannelBase> createBlockingChannel(BlockSink* sink, int subpartition,
                                                             size_t bufferRecords) const = 0;
  virtual std::unique_ptr<ChannelInputBase> createBlockingInput(std::unique_ptr<BlockReader> reader, OutputBase* target,
                                                                TaskMetrics* metrics) const = 0;
  virtual std::unique_ptr<OutputBase> createFanOut(const std::vector<OutputBase*>& targets) const = 0;
  virtual std::unique_ptr<OutputBase> createNullOutput() const = 0;
  // Counts into `counts` what passes on to `target`.
  virtual std::unique_ptr<OutputBase> createCountingOutput(OutputBase* target, EmittedCounts* counts) const = 0;
  // A writer for every partitioner but kKeyGroup and kCustom (which need the key
  // selector), for producer `index` of `producers`.
  virtual std::unique_ptr<OutputBase> createWriter(PartitionerKind kind,
                                                   const std::vector<ChannelBase*>& channels,
                                                   TaskMetrics* metrics, int index, int producers) const = 0;
  virtual std::unique_ptr<SideOutputBase> createSideOutput(OutputBase* target) const = 0;
  // Whether records of this type can be persisted (unaligned checkpoints and blocking
  // exchanges need it).
  virtual bool serializable() const = 0;
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

  std::unique_ptr<ChannelBase> createChannel(int credits, size_t bufferRecords,
                                             TaskSignal* consumer) const override {
    return std::make_unique<Channel<T>>(credits, consumer, bufferRecords);
  }
  size_t recordBytes() const override { return sizeof(T) + sizeof(int64_t); }
  size_t maxBufferRecords() const override { return kBatchRecords<T>; }
  std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target,
                                                TaskMetrics* metrics) const override {
    return std::make_unique<ChannelInput<T>>(static_cast<Channel<T>*>(channel), &dynamic_cast<Output<T>&>(*target),
                                             metrics);
  }
  std::unique_ptr<ChannelBase> createBlockingChannel(BlockSink* sink, int subpartition,
                                                     size_t bufferRecords) const override {
    return std::make_unique<Channel<T>>(sink, subpartition, bufferRecords);
  }
  std::unique_ptr<ChannelInputBase> createBlockingInput(std::unique_ptr<BlockReader> reader, OutputBase* target,
                                                        TaskMetrics* metrics) const override {
    return std::make_unique<BlockingInput<T>>(std::move(reader), &dynamic_cast<Output<T>&>(*target), metrics);
  }
  std::unique_ptr<OutputBase> createFanOut(const std::vector<OutputBase*>& targets) const override {
    std::vector<Output<T>*> typedTargets;
    for (auto* t : targets) typedTargets.push_back(&dynamic_cast<Output<T>&>(*t));
    return std::make_unique<FanOut<T>>(std::move(typedTargets));
  }
  std::unique_ptr<OutputBase> createNullOutput() const override { return std::make_unique<NullOutput<T>>(); }
  std::unique_ptr<OutputBase> createCountingOutput(OutputBase* target, EmittedCounts* counts) const override {
    return std::make_unique<CountingOutput<T>>(&dynamic_cast<Output<T>&>(*target), counts);
  }
  std::unique_ptr<OutputBase> createWriter(PartitionerKind kind, const std::vector<ChannelBase*>& channels,
                                           TaskMetrics* metrics, int index, int producers) const override {
    switch (kind) {
      case PartitionerKind::kRescale:
        return std::make_unique<RecordWriter<T, RescaleSelector>>(typed(channels), RescaleSelector{index, producers},
                                                                  metrics);
      case PartitionerKind::kGlobal:
        return std::make_unique<RecordWriter<T, GlobalSelector>>(typed(channels), GlobalSelector{}, metrics);
      case PartitionerKind::kBroadcast:
        return std::make_unique<RecordWriter<T, BroadcastSelector>>(typed(channels), BroadcastSelector{}, metrics);
      case PartitionerKind::kShuffle:
        return std::make_unique<RecordWriter<T, RandomSelector>>(typed(channels), RandomSelector{}, metrics);
      default:
        return std::make_unique<RecordWriter<T, RoundRobinSelector>>(typed(channels), RoundRobinSelector{}, metrics);
    }
  }
  std::unique_ptr<SideOutputBase> createSideOutput(OutputBase* target) const override {
    return std::make_unique<SideOutput<T>>(&dynamic_cast<Output<T>&>(*target), kBatchRecords<T>);
  }
  bool serializable() const override { return Serializable<T>; }
};

// Creates the key-group writer of a keyBy edge: (channels, maxParallelism, metrics).
using KeyedWriterFactory = std::function<std::unique_ptr<OutputBase>(
    const std::vector<ChannelBase*>&, int, TaskMetrics*)>;

}  // namespace weir::detail
