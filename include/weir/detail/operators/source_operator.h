// The operator at the head of a source chain (SourceOperator) and what it needs: the
// reader of a Source, event timestamps and watermarks, idleness, and the source's share
// of a checkpoint (its splits).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/operators/tracking_split_enumerator.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/time/watermark_alignment.h"
#include "weir/functions.h"
#include "weir/source.h"
#include "weir/watermark_strategy.h"

namespace weir::detail {

// The head of a source chain: pulls batches from a reader, stamps them with event
// timestamps, generates watermarks, and pushes both down the chain.
class SourceOperatorBase : public StreamOperator {
 public:
  using Clock = std::chrono::steady_clock;
  OutputBase* input() override { return nullptr; }
  void setEnumerator(TrackingSplitEnumerator* enumerator) { enumerator_ = enumerator; }
  void setAutoWatermarkInterval(std::chrono::milliseconds interval) { watermarkInterval_ = interval; }
  // Before the job starts: where the source reports its watermark when its strategy
  // aligns watermarks (WatermarkStrategy::withWatermarkAlignment).
  virtual void joinWatermarkAlignment(WatermarkAlignment& alignment) {}
  // What wakes the subtask when its reader has records again (SourceReaderContext).
  void setWakeUp(std::function<void()> wakeUp) { wakeUp_ = std::move(wakeUp); }
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
  std::function<void()> wakeUp_;
};

template <class T>
class SourceOperator final : public SourceOperatorBase, private WatermarkOutput {
 public:
  SourceOperator(std::shared_ptr<const Source<T>> source, WatermarkStrategy<T> strategy)
      : source_(std::move(source)), strategy_(std::move(strategy)) {}

  void setOutput(OutputBase* out) override { out_ = &dynamic_cast<Output<T>&>(*out); }
  // The dead-letter output (bad_record.h), the only side output a source has.
  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    sideOutputs_.add(tagIndex, std::move(out));
  }

  void open() override {
    badRecords_ = BadRecordHandler(source_->badRecordPolicy(), name(),
                                   context_->getMetricGroup().getNumRecordsInErrorsCounter(), &deadLetters_);
    reader_ = callUser([&] {
      return source_->createReader(SourceReaderContext{context_->getIndexOfThisSubtask(),
                                                       context_->getNumberOfParallelSubtasks(), enumerator_,
                                                       context_->getMetricGroup(), &badRecords_, wakeUp_});
    });
    if (auto* restored = context_->restored()) {
      if (auto* splits = restored->operatorList(kSourceSplitsState)) callUser([&] { reader_->addSplits(*splits); });
    }
    batch_.reserve(kBatchRecords<T>);
    // A batch job has no watermark but the final one (docs/batch.md): nothing is late.
    if (strategy_.generator() && !context_->isBatch()) generator_ = callUser([&] { return strategy_.generator()(); });
    metrics_->registry.builtInGauge(metricScope(), "currentEmitEventTimeLag", &emitEventTimeLag_);
    lastRecord_ = nextWatermark_ = Clock::now();
  }

  void joinWatermarkAlignment(WatermarkAlignment& alignment) override {
    if (!strategy_.alignment() || context_->isBatch()) return;  // no watermarks to align
    alignment_ = &alignment;
    member_ = alignment.join(strategy_.alignment()->group);
  }

  InputStatus emitNext() override {
    batch_.clear();
    timestamps_.clear();
    if (waitsForAlignment()) {
      waitedForAlignment_ = true;
      return InputStatus::NOTHING_AVAILABLE;
    }
    if (waitedForAlignment_) {  // the wait is not idleness: its clocks start again
      waitedForAlignment_ = false;
      lastRecord_ = Clock::now();
      for (auto& [id, split] : splits_) split.lastRecord = lastRecord_;
    }
    InputStatus status = callUser([&] { return reader_->pollNext(batch_, kBatchRecords<T>); });
    if (!batch_.empty()) {
      metrics_->numSourceRecords.fetch_add(batch_.size(), std::memory_order_relaxed);
      if (strategy_.assigner()) {
        timestamps_.resize(batch_.size());
        callUser([&] { strategy_.assigner()(std::span<const T>(batch_), timestamps_); });
      } else if (auto carried = reader_->recordTimestamps(); carried.size() == batch_.size()) {
        timestamps_.assign(carried.begin(), carried.end());
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
    if (!batch_.empty()) {
      // FLIP-33's currentEmitEventTimeLag: when the batch left, less its last record's
      // event time (read first: operators downstream may reorder the timestamps).
      const int64_t eventTime = timestamps_.empty() ? INT64_MIN : timestamps_.back();
      out_->processBatch(batch_, timestamps_);
      if (eventTime != INT64_MIN) {
        const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        emitEventTimeLag_.store(now - eventTime, std::memory_order_relaxed);
      }
    }
    if (!deadLetters_.empty()) {
      for (auto& letter : deadLetters_) sideOutputs_.collect(deadLetterOutput(), std::move(letter));
      deadLetters_.clear();
      sideOutputs_.flush();
    }
    if (perSplit_) emitSplitsWatermark();
    else if (pendingWatermark_ > watermark_) emitWatermark(pendingWatermark_);
    return status;
  }

  Clock::time_point nextPollTime() const override {
    return waitsForAlignment() ? nextAlignment_ : reader_->nextPollTime();
  }

  Clock::time_point onTime(Clock::time_point now) override {
    if (!generator_) return Clock::time_point::max();
    if (now >= nextWatermark_) {
      auto timeout = strategy_.idleTimeout();
      if (perSplit_) {
        for (auto& [id, split] : splits_) {
          callUser([&] { split.generator->onPeriodicEmit(split); });
          // A split paused by alignment reads nothing, but is not idle: it waits.
          if (timeout.count() > 0 && now - split.lastRecord >= timeout && !pausedSplits_.contains(id) &&
              !waitsForAlignment())
            split.idle = true;
        }
        emitSplitsWatermark();
      } else {
        if (!idle_) callUser([&] { generator_->onPeriodicEmit(*this); });
        if (timeout.count() > 0 && !idle_ && now - lastRecord_ >= timeout && !waitsForAlignment()) markIdle();
      }
      nextWatermark_ = now + watermarkInterval_;
    }
    if (alignment_ && now >= nextAlignment_) {
      // An idle source, or one without a watermark yet, holds no one back, as in Flink.
      const int64_t own = alignmentWatermark();
      const int64_t groupMin = alignment_->report(member_, idle_ || own == kMinWatermark ? kMaxWatermark : own);
      const int64_t drift = strategy_.alignment()->maxAllowedDrift.count();
      maxAllowed_ = groupMin >= kMaxWatermark - drift ? kMaxWatermark : groupMin + drift;
      pauseOrResumeSplits();
      nextAlignment_ = now + strategy_.alignment()->updateInterval;
    }
    return alignment_ ? std::min(nextWatermark_, nextAlignment_) : nextWatermark_;
  }

  void endInput() override {
    // A finished source holds its group back no more.
    if (alignment_) alignment_->report(member_, kMaxWatermark);
    // A bounded input ends with the final watermark: every window fires downstream.
    emitWatermark(kMaxWatermark);
    out_->endInput();
    sideOutputs_.endInput();
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
      out.operatorState.push_back({kSplitParallelismState, OperatorStateMode::kUnion,
                                   {std::to_string(enumerator_->splitParallelism())}});
    }
  }

  void notifyCheckpointComplete(int64_t checkpointId) override {
    if (reader_) callUser([&] { reader_->notifyCheckpointComplete(checkpointId); });
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
    out_->processWatermark(watermark);
    sideOutputs_.processWatermark(watermark);
  }
  void markIdle() override {
    if (idle_) return;
    idle_ = true;
    out_->processIdleness(true);
    sideOutputs_.processIdleness(true);
  }
  void markActive() override {
    if (!idle_) return;
    idle_ = false;
    out_->processIdleness(false);
    sideOutputs_.processIdleness(false);
  }

  // Watermark alignment: the whole subtask waits when its watermark is past the largest
  // its group allows (its splits may run no further either).
  bool waitsForAlignment() const { return alignment_ != nullptr && alignmentWatermark() > maxAllowed_; }
  // What the subtask reports to its group: with per-split watermarks, the smallest over
  // its active splits now, which moves back when a split behind appears (the emitted
  // watermark never does, so a late split could not pull its group back). A split
  // without a watermark yet holds no one back, like a subtask without one.
  int64_t alignmentWatermark() const { return perSplit_ ? splitsWatermark_ : watermark_; }
  // Pauses the splits whose watermarks are past the largest the group allows and
  // resumes the others (Flink's: only while the reader holds two splits or more). A
  // reader that cannot pause splits is asked once; then its subtask alone waits.
  void pauseOrResumeSplits() {
    if (!alignment_ || !splitPausing_ || !perSplit_) return;
    for (auto it = pausedSplits_.begin(); it != pausedSplits_.end();)  // finished splits
      it = splits_.contains(*it) ? std::next(it) : pausedSplits_.erase(it);
    std::vector<std::string> pause, resume;
    for (const auto& [id, split] : splits_) {
      const bool ahead = splits_.size() >= 2 && !split.idle && split.watermark > maxAllowed_;
      if (ahead && !pausedSplits_.contains(id)) pause.push_back(id);
      else if (!ahead && pausedSplits_.contains(id)) resume.push_back(id);
    }
    if (pause.empty() && resume.empty()) return;
    if (!callUser([&] { return reader_->pauseOrResumeSplits(pause, resume); })) {
      splitPausing_ = false;
      pausedSplits_.clear();
      return;
    }
    for (const auto& id : resume) {
      pausedSplits_.erase(id);
      splits_.at(id).lastRecord = Clock::now();  // the pause was not idleness
    }
    pausedSplits_.insert(pause.begin(), pause.end());
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
    int64_t known = kMaxWatermark;  // over the splits with a watermark (alignment's view)
    bool active = false;
    for (const auto& [id, split] : splits_) {
      if (split.idle) continue;
      active = true;
      combined = std::min(combined, split.watermark);
      if (split.watermark != kMinWatermark) known = std::min(known, split.watermark);
    }
    // With no active split it is idle (reported as the largest) and never waits.
    splitsWatermark_ = known == kMaxWatermark ? kMinWatermark : known;
    if (!active) markIdle();
    else if (combined > watermark_) emitWatermark(combined);
    else markActive();
    pauseOrResumeSplits();  // a split is paused as soon as it passes what the group allows
  }

  std::shared_ptr<const Source<T>> source_;
  WatermarkStrategy<T> strategy_;
  std::unique_ptr<SourceReader<T>> reader_;
  std::unique_ptr<WatermarkGenerator<T>> generator_;
  std::vector<T> batch_;
  std::vector<int64_t> timestamps_;
  Output<T>* out_ = nullptr;
  BadRecordHandler badRecords_;
  std::vector<BadRecord> deadLetters_;  // reported during a pollNext, sent after its batch
  SideOutputs sideOutputs_;
  int64_t watermark_ = kMinWatermark;
  int64_t pendingWatermark_ = kMinWatermark;  // decided during a batch, sent after it
  bool deferWatermarks_ = false;
  bool idle_ = false;
  bool perSplit_ = false;  // the reader reports splitRuns(): splits_ decide the watermark
  int64_t splitsWatermark_ = kMinWatermark;  // see alignmentWatermark()
  std::map<std::string, SplitWatermarks> splits_;
  Clock::time_point lastRecord_{};
  Clock::time_point nextWatermark_{};
  // Watermark alignment: null when the strategy has none.
  WatermarkAlignment* alignment_ = nullptr;
  WatermarkAlignment::Member member_;
  int64_t maxAllowed_ = kMaxWatermark;  // until the first report
  Clock::time_point nextAlignment_{};
  std::set<std::string> pausedSplits_;
  bool splitPausing_ = true;  // false once the reader said it cannot pause splits
  bool waitedForAlignment_ = false;
  std::atomic<int64_t> emitEventTimeLag_{INT64_MIN};  // ms; INT64_MIN until a stamped batch left
};

}  // namespace weir::detail
