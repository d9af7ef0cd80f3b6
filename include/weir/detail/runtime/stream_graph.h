// The logical job graph the API builds (Flink's transformations) and the typed
// factories the runtime uses to instantiate it without knowing record types.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/record_writer.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/time/watermark_valve.h"
#include "weir/checkpoint_config.h"
#include "weir/clock.h"
#include "weir/restart_strategy.h"
#include "weir/serializer.h"
#include "weir/state_backend.h"
#include "weir/sink.h"
#include "weir/source.h"
#include "weir/watermark_strategy.h"

namespace weir::detail {

// Feeds the messages of one input channel to the operator at the head of a chain.
//
// For unaligned checkpoints it also persists the channel's in-flight records: those
// queued ahead of a barrier (captureQueuedBefore) and, while a checkpoint records this
// channel, every record processed before its barrier arrives. Persisted records are
// buffers, each a varint record count, a byte saying whether timestamps follow, then
// per record its timestamp (8 bytes, when stamped) and its serialized value.
class ChannelInputBase {
 public:
  enum class Poll { kEmpty, kProcessed, kEnded, kBarrier };
  virtual ~ChannelInputBase() = default;
  // Processes at most one message. kBarrier: a checkpoint barrier, see barrierId().
  virtual Poll pollOnce() = 0;
  int64_t barrierId() const { return barrierId_; }

  // The newest barrier queued in the channel, processed or not (0: none).
  virtual int64_t announcedBarrier() const = 0;
  // Appends the records queued ahead of barrier `checkpointId` to `out`.
  virtual void captureQueuedBefore(int64_t checkpointId, std::string& out) = 0;
  // Until stopRecording(checkpointId), every record processed is appended to `out` too.
  void startRecording(int64_t checkpointId, std::string* out) { recordings_.emplace_back(checkpointId, out); }
  void stopRecording(int64_t checkpointId) {
    std::erase_if(recordings_, [&](const auto& r) { return r.first == checkpointId; });
  }
  // Processes persisted records (of a restored checkpoint) as if they had arrived;
  // with `keep`, only those for which keep(&record) holds.
  virtual void replay(std::string_view persisted, const std::function<bool(const void*)>& keep = {}) = 0;

 protected:
  int64_t barrierId_ = 0;
  std::vector<std::pair<int64_t, std::string*>> recordings_;
};

template <class T>
class ChannelInput final : public ChannelInputBase {
 public:
  // `index` is this channel's input of `valve`, which combines the subtask's watermarks.
  ChannelInput(Channel<T>* channel, Output<T>* target, TaskMetrics* metrics, WatermarkValve* valve, int index)
      : channel_(channel), target_(target), metrics_(metrics), valve_(valve), index_(index) {}

  Poll pollOnce() override {
    if (!channel_->poll(message_)) return Poll::kEmpty;
    if (message_.isEvent) {
      switch (message_.event) {
        case EventKind::kWatermark: valve_->inputWatermark(index_, message_.timestamp); break;
        case EventKind::kIdle: valve_->inputIdleness(index_, true); break;
        case EventKind::kActive: valve_->inputIdleness(index_, false); break;
        case EventKind::kEndOfPartition: return Poll::kEnded;
        case EventKind::kBarrier: barrierId_ = message_.timestamp; return Poll::kBarrier;
      }
      return Poll::kProcessed;
    }
    if (!recordings_.empty()) {
      scratch_.clear();
      persist(message_.records, message_.timestamps, scratch_);
      for (auto& [id, out] : recordings_) out->append(scratch_);
    }
    const size_t count = message_.records.size();
    target_->emitBatch(message_.records, message_.timestamps);
    // Counted once processed: a reader that sees the count sees the records' effects.
    metrics_->numRecordsIn.fetch_add(count, std::memory_order_release);
    channel_->recycle(message_);
    return Poll::kProcessed;
  }

  int64_t announcedBarrier() const override { return channel_->announcedBarrier(); }

  void captureQueuedBefore(int64_t checkpointId, std::string& out) override {
    channel_->forEachQueuedBefore(checkpointId, [&](const std::vector<T>& records, const std::vector<int64_t>& ts) {
      persist(records, ts, out);
    });
  }

  void replay(std::string_view persisted, const std::function<bool(const void*)>& keep) override {
    if constexpr (Serializable<T>) {
      DataInput in(persisted);
      std::vector<T> records;
      std::vector<int64_t> timestamps;
      while (!in.atEnd()) {
        size_t count = in.readLength("records in flight", minEncodedSize<T>());
        bool stamped = in.read<bool>();
        records.clear();
        timestamps.clear();
        for (size_t i = 0; i < count; ++i) {
          int64_t timestamp = stamped ? in.read<int64_t>() : 0;
          T record = Serializer<T>::deserialize(in);
          if (keep && !keep(&record)) continue;
          if (stamped) timestamps.push_back(timestamp);
          records.push_back(std::move(record));
        }
        target_->emitBatch(records, timestamps);
        metrics_->numRecordsIn.fetch_add(records.size(), std::memory_order_release);
      }
    } else {
      throw Error(ErrorCode::kCheckpoint, "in-flight records of a type without a weir::Serializer cannot be restored");
    }
  }

 private:
  static void persist(const std::vector<T>& records, const std::vector<int64_t>& timestamps, std::string& out) {
    if constexpr (Serializable<T>) {
      DataOutput data;
      data.writeVarint(records.size());
      data.write(!timestamps.empty());
      for (size_t i = 0; i < records.size(); ++i) {
        if (!timestamps.empty()) data.write(timestamps[i]);
        Serializer<T>::serialize(records[i], data);
      }
      out += data.data();
    } else {
      // The job's planning refuses unaligned checkpoints for such channels.
      throw Error(ErrorCode::kInternal, "in-flight records of a type without a weir::Serializer cannot be persisted");
    }
  }

  Channel<T>* channel_;
  Output<T>* target_;
  TaskMetrics* metrics_;
  WatermarkValve* valve_;
  int index_;
  typename Channel<T>::Message message_;
  std::string scratch_;
};

// A source's enumerator as checkpoints need it: remembers which splits it handed to
// each reader, and skips the splits a restored checkpoint had handed out already (those
// come back through the readers' own state).
class TrackingSplitEnumerator final : public SplitEnumerator {
 public:
  TrackingSplitEnumerator(std::unique_ptr<SplitEnumerator> inner, std::vector<std::string> alreadyAssigned,
                          int parallelism)
      : inner_(std::move(inner)), restored_(std::move(alreadyAssigned)),
        skip_(restored_.begin(), restored_.end()), assigned_(static_cast<size_t>(parallelism)) {}

  std::unique_ptr<SourceSplit> nextSplit(int subtask) override {
    while (auto split = inner_->nextSplit(subtask)) {
      std::string id = split->splitId();
      if (skip_.contains(id)) continue;
      std::lock_guard lock(mutex_);
      assigned_.at(static_cast<size_t>(subtask)).push_back(std::move(id));
      return split;
    }
    return nullptr;
  }
  // What reader `subtask` writes into a checkpoint: the splits handed out before this
  // run, and those handed to it since.
  std::vector<std::string> assignedIds(int subtask) {
    std::vector<std::string> out = restored_;
    std::lock_guard lock(mutex_);
    const auto& mine = assigned_.at(static_cast<size_t>(subtask));
    out.insert(out.end(), mine.begin(), mine.end());
    return out;
  }

 private:
  std::unique_ptr<SplitEnumerator> inner_;
  std::vector<std::string> restored_;
  absl::flat_hash_set<std::string> skip_;
  std::mutex mutex_;
  std::vector<std::vector<std::string>> assigned_;  // guarded by mutex_
};

// The head of a source chain: pulls batches from a reader, stamps them with event
// timestamps, generates watermarks, and pushes both down the chain.
class SourceOperatorBase : public StreamOperator {
 public:
  using Clock = std::chrono::steady_clock;
  OutputBase* input() override { return nullptr; }
  void setEnumerator(TrackingSplitEnumerator* enumerator) { enumerator_ = enumerator; }
  void setAutoWatermarkInterval(std::chrono::milliseconds interval) { watermarkInterval_ = interval; }
  // Emits at most one batch.
  virtual InputStatus emitNext() = 0;
  // After NOTHING_AVAILABLE: when to call emitNext() again.
  virtual Clock::time_point nextPollTime() const = 0;
  // Emits the periodic watermark (and idleness) when due; returns when it is due next.
  virtual Clock::time_point onTime(Clock::time_point now) = 0;
  // End of input: the final watermark, then the end, down the chain.
  virtual void endInput() = 0;

 protected:
  TrackingSplitEnumerator* enumerator_ = nullptr;
  std::chrono::milliseconds watermarkInterval_{200};
};

template <class T>
class SourceOperator final : public SourceOperatorBase, private WatermarkOutput {
 public:
  SourceOperator(std::shared_ptr<const Source<T>> source, WatermarkStrategy<T> strategy)
      : source_(std::move(source)), strategy_(std::move(strategy)) {}

  void setOutput(OutputBase* out) override { out_ = &dynamic_cast<Output<T>&>(*out); }

  void open() override {
    reader_ = callUser([&] {
      return source_->createReader(SourceReaderContext{context_->getIndexOfThisSubtask(),
                                                       context_->getNumberOfParallelSubtasks(), enumerator_,
                                                       context_->getMetricGroup()});
    });
    if (auto* restored = context_->restored()) {
      if (auto* splits = restored->operatorList(kSourceSplitsState)) callUser([&] { reader_->addSplits(*splits); });
    }
    batch_.reserve(kBatchRecords<T>);
    if (strategy_.generator()) generator_ = callUser([&] { return strategy_.generator()(); });
    lastRecord_ = nextWatermark_ = Clock::now();
  }

  InputStatus emitNext() override {
    batch_.clear();
    timestamps_.clear();
    InputStatus status = callUser([&] { return reader_->pollNext(batch_, kBatchRecords<T>); });
    if (!batch_.empty()) {
      metrics_->numSourceRecords.fetch_add(batch_.size(), std::memory_order_relaxed);
      if (strategy_.assigner()) {
        timestamps_.resize(batch_.size());
        callUser([&] { strategy_.assigner()(std::span<const T>(batch_), timestamps_); });
      }
      if (idle_) markActive();
      if (strategy_.idleTimeout().count() > 0) lastRecord_ = Clock::now();
    }
    std::span<const SplitRun> runs;
    if (generator_) runs = callUser([&] { return reader_->splitRuns(); });
    if (!runs.empty()) {
      perSplit_ = true;
      onSplitRuns(runs);  // before the batch leaves: operators may move from it
    } else if (generator_ && !timestamps_.empty()) {
      // The generator sees the batch before it leaves (operators may move from it), and
      // a watermark it decides goes out after the batch, never ahead of its records.
      deferWatermarks_ = true;
      callUser([&] { generator_->onBatch(batch_, timestamps_, *this); });
      deferWatermarks_ = false;
    }
    if (!batch_.empty()) out_->emitBatch(batch_, timestamps_);
    if (perSplit_) emitSplitsWatermark();
    else if (pendingWatermark_ > watermark_) emitWatermark(pendingWatermark_);
    return status;
  }

  Clock::time_point nextPollTime() const override { return reader_->nextPollTime(); }

  Clock::time_point onTime(Clock::time_point now) override {
    if (!generator_) return Clock::time_point::max();
    if (now >= nextWatermark_) {
      auto timeout = strategy_.idleTimeout();
      if (perSplit_) {
        for (auto& [id, split] : splits_) {
          callUser([&] { split.generator->onPeriodicEmit(split); });
          if (timeout.count() > 0 && now - split.lastRecord >= timeout) split.idle = true;
        }
        emitSplitsWatermark();
      } else {
        if (!idle_) callUser([&] { generator_->onPeriodicEmit(*this); });
        if (timeout.count() > 0 && !idle_ && now - lastRecord_ >= timeout) markIdle();
      }
      nextWatermark_ = now + watermarkInterval_;
    }
    return nextWatermark_;
  }

  void endInput() override {
    // A bounded input ends with the final watermark: every window fires downstream.
    emitWatermark(kMaxWatermark);
    out_->endInput();
  }

  // The last watermark this source emitted.
  int64_t currentWatermark() const { return watermark_; }

  std::string checkpointUnsupportedReason() const override {
    return source_->supportsCheckpointing() ? "" : "its source does not support checkpointing";
  }
  // The reader's splits, and which splits it was handed (the enumerator's part).
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    StreamOperator::snapshotState(checkpointId, timestamp, out);
    auto splits = callUser([&] { return reader_->snapshotState(checkpointId); });
    out.operatorState.push_back({kSourceSplitsState, OperatorStateMode::kSplitDistribute, std::move(splits)});
    if (enumerator_) {
      out.operatorState.push_back({kAssignedSplitsState, OperatorStateMode::kUnion,
                                   enumerator_->assignedIds(context_->getIndexOfThisSubtask())});
    }
  }

  void close() override {
    if (reader_) callUser([&] { reader_->close(); });
  }

 private:
  // WatermarkOutput, for the generator.
  void emitWatermark(int64_t watermark) override {
    if (deferWatermarks_) {
      pendingWatermark_ = std::max(pendingWatermark_, watermark);
      return;
    }
    if (watermark <= watermark_) return;
    if (idle_) markActive();
    watermark_ = watermark;
    metrics_->currentOutputWatermark.store(watermark, std::memory_order_relaxed);
    out_->emitWatermark(watermark);
  }
  void markIdle() override {
    if (idle_) return;
    idle_ = true;
    out_->emitIdleness(true);
  }
  void markActive() override {
    if (!idle_) return;
    idle_ = false;
    out_->emitIdleness(false);
  }

  // Per-split watermarks: a split's own generator and what it decided so far.
  struct SplitWatermarks final : WatermarkOutput {
    std::unique_ptr<WatermarkGenerator<T>> generator;
    int64_t watermark = kMinWatermark;
    bool idle = false;
    Clock::time_point lastRecord{};
    void emitWatermark(int64_t w) override {
      watermark = std::max(watermark, w);
      idle = false;
    }
    void markIdle() override { idle = true; }
    void markActive() override { idle = false; }
  };

  // Hands each split's records of the batch to that split's generator.
  void onSplitRuns(std::span<const SplitRun> runs) {
    const auto now = Clock::now();
    size_t at = 0;
    for (const SplitRun& run : runs) {
      if (run.records > batch_.size() - at) break;
      auto [it, added] = splits_.try_emplace(run.splitId);
      SplitWatermarks& split = it->second;
      if (added) split.generator = callUser([&] { return strategy_.generator()(); });
      if (run.records > 0) {
        split.lastRecord = now;
        split.idle = false;
      }
      if (run.records > 0 && !timestamps_.empty()) {
        callUser([&] {
          split.generator->onBatch(std::span<const T>(batch_).subspan(at, run.records),
                                   std::span<const int64_t>(timestamps_).subspan(at, run.records), split);
        });
      }
      at += run.records;
      if (run.finished) splits_.erase(it);
    }
    size_t covered = 0;
    for (const SplitRun& run : runs) covered += run.records;
    if (covered != batch_.size()) {
      callUser([&] {
        throw std::logic_error("the source reader's splitRuns() cover " + std::to_string(covered) +
                               " records, but its pollNext appended " + std::to_string(batch_.size()));
      });
    }
  }

  // The source's watermark from its splits': the smallest over those not idle; idle
  // when every split is, or when it has none (waiting for new ones), as in Flink.
  void emitSplitsWatermark() {
    int64_t combined = kMaxWatermark;
    bool active = false;
    for (const auto& [id, split] : splits_) {
      if (split.idle) continue;
      active = true;
      combined = std::min(combined, split.watermark);
    }
    if (!active) markIdle();
    else if (combined > watermark_) emitWatermark(combined);
    else markActive();
  }

  std::shared_ptr<const Source<T>> source_;
  WatermarkStrategy<T> strategy_;
  std::unique_ptr<SourceReader<T>> reader_;
  std::unique_ptr<WatermarkGenerator<T>> generator_;
  std::vector<T> batch_;
  std::vector<int64_t> timestamps_;
  Output<T>* out_ = nullptr;
  int64_t watermark_ = kMinWatermark;
  int64_t pendingWatermark_ = kMinWatermark;  // decided during a batch, sent after it
  bool deferWatermarks_ = false;
  bool idle_ = false;
  bool perSplit_ = false;  // the reader reports splitRuns(): splits_ decide the watermark
  std::map<std::string, SplitWatermarks> splits_;
  Clock::time_point lastRecord_{};
  Clock::time_point nextWatermark_{};
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
    listener_ = dynamic_cast<CheckpointListener*>(writer_.get());
    checkpointed_ = dynamic_cast<CheckpointedFunction*>(writer_.get());
    if (checkpointed_) {
      auto& registry = context_->operatorState();
      FunctionInitializationContext init(registry.isRestored(), OperatorStateStore(&registry));
      callUser([&] { checkpointed_->initializeState(init); });
    }
  }

  // At the barrier the writer flushes (at-least-once: nothing before the barrier stays
  // buffered) and, if it is a CheckpointedFunction, snapshots.
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    callUser([&] {
      writer_->flush(false);
      if (checkpointed_) checkpointed_->snapshotState(FunctionSnapshotContext(checkpointId, timestamp));
    });
    StreamOperator::snapshotState(checkpointId, timestamp, out);
  }
  void notifyCheckpointComplete(int64_t checkpointId) override {
    if (listener_) callUser([&] { listener_->notifyCheckpointComplete(checkpointId); });
  }
  void notifyCheckpointAborted(int64_t checkpointId) override {
    if (listener_) callUser([&] { listener_->notifyCheckpointAborted(checkpointId); });
  }

  void emitBatch(std::span<T> records, Timestamps) override {
    metrics_->numRecordsOut.fetch_add(records.size(), std::memory_order_relaxed);
    callUser([&] { writer_->writeBatch(records); });
  }
  void emitWatermark(int64_t) override {}
  void emitIdleness(bool) override {}

  void endInput() override {
    callUser([&] { writer_->flush(true); });
  }

  void close() override {
    if (writer_) callUser([&] { writer_->close(); });
  }

 private:
  std::shared_ptr<const Sink<T>> sink_;
  std::unique_ptr<SinkWriter<T>> writer_;
  CheckpointListener* listener_ = nullptr;
  CheckpointedFunction* checkpointed_ = nullptr;
};

// Factories for everything the runtime builds around a stream of one record type.
class StreamType {
 public:
  virtual ~StreamType() = default;
  virtual std::unique_ptr<ChannelBase> createChannel(int credits, TaskSignal* consumer) const = 0;
  virtual std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target,
                                                        TaskMetrics* metrics, WatermarkValve* valve,
                                                        int index) const = 0;
  virtual std::unique_ptr<OutputBase> createFanOut(const std::vector<OutputBase*>& targets) const = 0;
  virtual std::unique_ptr<OutputBase> createNullOutput() const = 0;
  // A writer for every partitioner but kKeyGroup (which needs the key selector).
  virtual std::unique_ptr<OutputBase> createWriter(PartitionerKind kind,
                                                   const std::vector<ChannelBase*>& channels,
                                                   TaskMetrics* metrics) const = 0;
  virtual std::unique_ptr<SideOutputBase> createSideOutput(OutputBase* target) const = 0;
  // Whether records of this type can be persisted (unaligned checkpoints need it).
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

  std::unique_ptr<ChannelBase> createChannel(int credits, TaskSignal* consumer) const override {
    return std::make_unique<Channel<T>>(credits, consumer);
  }
  std::unique_ptr<ChannelInputBase> createInput(ChannelBase* channel, OutputBase* target, TaskMetrics* metrics,
                                                WatermarkValve* valve, int index) const override {
    return std::make_unique<ChannelInput<T>>(static_cast<Channel<T>*>(channel), &dynamic_cast<Output<T>&>(*target),
                                             metrics, valve, index);
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
    return std::make_unique<SideOutput<T>>(&dynamic_cast<Output<T>&>(*target), kBatchRecords<T>);
  }
  bool serializable() const override { return Serializable<T>; }
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
  bool nonParallel = false;  // forceNonParallel(): parallelism stays 1
  std::vector<int> inputs;
  std::shared_ptr<const StreamType> outputType;
  bool isSink = false;
  bool chainingDisabled = false;  // disableChaining(): never chained either side
  bool startsNewChain = false;    // startNewChain(): not chained to its input
  bool twoInput = false;          // inputs[0] and inputs[1] feed the operator's two inputs

  // kSource and kOperator: a fresh instance for one subtask.
  std::function<std::unique_ptr<StreamOperator>()> createOperator;
  // kOperator made by map or filter of a plain function right after others (fusion, see
  // fused_operator.h): nodes fusedFrom, ..., this one are a run, each the single input of
  // the next. createFused(names, k) makes one operator that runs the functions of the
  // run's nodes from the k-th (0: fusedFrom) to this one, taking their names in that
  // order, on the k-th node's input, and gives this node's output. The runtime uses it
  // for the part of the run that is chained one to one; fusedFrom -1: none.
  int fusedFrom = -1;
  std::function<std::unique_ptr<StreamOperator>(std::vector<std::string>, size_t)> createFused;
  // kSource: splits for the given parallelism (may throw weir::Error); null: none needed.
  std::function<std::unique_ptr<SplitEnumerator>(int)> createEnumerator;
  int maxSourceParallelism = 0;  // 0: any

  // kPartition.
  PartitionerKind partitioner = PartitionerKind::kForward;
  KeyedWriterFactory keyedWriter;
  // kKeyGroup: the key group of a record (a const T*) for a maxParallelism.
  std::function<int(const void*, int)> keyGroupOf;

  // kSideOutput: the tag whose records this stream carries (inputs[0] is the operator).
  int sideOutputTag = -1;
};

// Everything execute() hands to the runtime.
struct StreamGraph {
  std::vector<std::shared_ptr<Transformation>> nodes;  // nodes[i]->id == i
  int defaultParallelism = 1;
  int maxParallelism = 128;
  int buffersPerChannel = 4;  // credits per channel (exclusive buffers)
  std::chrono::milliseconds autoWatermarkInterval{200};  // periodic watermarks of sources
  std::chrono::milliseconds bufferTimeout{100};  // partial channel buffers; 0: every batch, -1: never
  std::shared_ptr<const StateBackend> stateBackend = std::make_shared<HashMapStateBackend>();
  std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>();  // processing time
  CheckpointConfig checkpointConfig;
  RestartStrategy restartStrategy = RestartStrategy::fallback();
  std::string restorePath;  // a checkpoint to start from; empty: from scratch
};

}  // namespace weir::detail
