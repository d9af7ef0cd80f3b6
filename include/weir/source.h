// Sources (Flink's FLIP-27 shape): a Source splits its input, an enumerator hands splits
// to parallel readers, and each reader turns its splits into records.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "weir/bad_record.h"
#include "weir/metrics.h"

namespace weir {

enum class Boundedness { BOUNDED, CONTINUOUS_UNBOUNDED };

// What a reader's pollNext() found.
enum class InputStatus {
  MORE_AVAILABLE,     // call again right away
  NOTHING_AVAILABLE,  // call again at nextPollTime()
  END_OF_INPUT,       // this reader is done
};

// A piece of a source's input that one reader processes (a file, a range of sequence numbers).
class SourceSplit {
 public:
  virtual ~SourceSplit() = default;
  virtual std::string splitId() const = 0;
};

// Hands splits to the parallel readers of one source. Shared by their threads: thread-safe.
class SplitEnumerator {
 public:
  virtual ~SplitEnumerator() = default;
  // The next split for reader `subtask`, or null when it gets no more.
  virtual std::unique_ptr<SourceSplit> nextSplit(int subtask) = 0;
};

// Splits fixed up front, each owned by one reader (deterministic: same input, same reader).
class StaticSplitEnumerator final : public SplitEnumerator {
 public:
  // `splits[i]` go to reader i.
  explicit StaticSplitEnumerator(std::vector<std::deque<std::unique_ptr<SourceSplit>>> splits)
      : splits_(std::move(splits)) {}
  std::unique_ptr<SourceSplit> nextSplit(int subtask) override {
    std::lock_guard lock(mutex_);
    auto& queue = splits_.at(static_cast<size_t>(subtask));
    if (queue.empty()) return nullptr;
    auto split = std::move(queue.front());
    queue.pop_front();
    return split;
  }

 private:
  std::mutex mutex_;
  std::vector<std::deque<std::unique_ptr<SourceSplit>>> splits_;
};

// Splits handed out on request to whichever reader asks first (balances uneven splits).
class SharedSplitEnumerator final : public SplitEnumerator {
 public:
  explicit SharedSplitEnumerator(std::deque<std::unique_ptr<SourceSplit>> splits)
      : splits_(std::move(splits)) {}
  std::unique_ptr<SourceSplit> nextSplit(int) override {
    std::lock_guard lock(mutex_);
    if (splits_.empty()) return nullptr;
    auto split = std::move(splits_.front());
    splits_.pop_front();
    return split;
  }

 private:
  std::mutex mutex_;
  std::deque<std::unique_ptr<SourceSplit>> splits_;
};

// Consecutive records of one split among those a reader's pollNext appended.
struct SplitRun {
  std::string splitId;
  size_t records = 0;
  bool finished = false;  // the split ended after these records (which may be none)
};

// What a reader knows about where it runs.
struct SourceReaderContext {
  int subtaskIndex = 0;
  int parallelism = 1;
  SplitEnumerator* enumerator = nullptr;
  // Where the reader counts the bytes it reads (numBytesIn).
  OperatorMetricGroup metricGroup;
  // Where the reader reports a record it cannot read; it applies the source's
  // badRecordPolicy(). Null outside a job: the reader fails on a bad record.
  BadRecordHandler* badRecords = nullptr;
  // Wakes the subtask if it waits after NOTHING_AVAILABLE; any thread (Flink's
  // SourceReader#isAvailable future completing). A reader whose records arrive on a
  // thread of its own calls it when some do, and may then poll less often. Empty
  // outside a job.
  std::function<void()> wakeUp;
};

// Reads the splits of one parallel instance. Called only by its subtask's thread.
template <class T>
class SourceReader {
 public:
  virtual ~SourceReader() = default;
  // Appends at most `maxRecords` records to `out`.
  virtual InputStatus pollNext(std::vector<T>& out, size_t maxRecords) = 0;
  // After NOTHING_AVAILABLE: when to poll again.
  virtual std::chrono::steady_clock::time_point nextPollTime() const {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  }
  virtual void close() {}

  // Per-split watermarks (Flink's): a reader that reads several splits at once says,
  // after each pollNext, which split each record it appended came from, as runs in
  // order that cover them all; a run marked finished releases its split. The watermark
  // strategy then runs per split, and the source's watermark is the smallest over its
  // splits that are not idle, so a split behind the others holds it back rather than
  // having its records turn late. A reader that reads one split after another leaves
  // this empty: one generator serves it.
  virtual std::span<const SplitRun> splitRuns() const { return {}; }

  // Watermark alignment (WatermarkStrategy::withWatermarkAlignment): stop reading the
  // splits `toPause` and read `toResume` again (Flink's pauseOrResumeSplits); called
  // between two pollNext, with ids splitRuns() named. Records of a paused split already
  // fetched may still come, or wait until it resumes. Returns false when the reader
  // cannot pause single splits: the source then pauses its whole subtask when that is
  // ahead of its group, and its splits are not held back one by one.
  virtual bool pauseOrResumeSplits(const std::vector<std::string>& toPause, const std::vector<std::string>& toResume) {
    (void)toPause;
    (void)toResume;
    return false;
  }

  // The event timestamps the input itself carries (Flink's source-assigned timestamps, a
  // Kafka record's), one per record the last pollNext appended, or empty when it has
  // none. A WatermarkStrategy's timestamp assigner, when there is one, takes precedence.
  virtual std::span<const int64_t> recordTimestamps() const { return {}; }

  // Checkpoints (for sources whose supportsCheckpointing() is true). The splits this
  // reader holds, each as bytes that say how far it got; called between two pollNext.
  virtual std::vector<std::string> snapshotState(int64_t checkpointId) { return {}; }
  // Splits from a checkpoint (what snapshotState returned, perhaps by other readers), to
  // be read from where they stopped before any new split. Called once, before pollNext.
  virtual void addSplits(std::vector<std::string> splits) {}
  // Checkpoint `checkpointId` completed (Flink's CheckpointListener): what its snapshot
  // covers may be acknowledged outside, as a Kafka reader commits its offsets to the
  // group. Called between two pollNext.
  virtual void notifyCheckpointComplete(int64_t checkpointId) {}
};

// A source of records of type T.
template <class T>
class Source {
 public:
  using OutputType = T;
  virtual ~Source() = default;
  virtual Boundedness getBoundedness() const = 0;
  // Checks the configuration and splits the input for `parallelism` readers. Throws
  // weir::Error naming the problem (a missing file, a bad option) before the job starts.
  virtual std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const = 0;
  virtual std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext& context) const = 0;
  // The largest parallelism this source can run at; 0 when any.
  virtual int maxParallelism() const { return 0; }
  // Whether its readers implement snapshotState / addSplits, so a job reading it can
  // take checkpoints. Split ids must then be the same each time the input is split.
  virtual bool supportsCheckpointing() const { return false; }
  // Whether its readers give each record a timestamp (SourceReader::recordTimestamps),
  // which event time then uses when the WatermarkStrategy has no timestamp assigner.
  virtual bool carriesTimestamps() const { return false; }
  // What its readers do with a record they cannot read (bad_record.h).
  virtual BadRecordPolicy badRecordPolicy() const { return BadRecordPolicy::FAIL; }
};

}  // namespace weir
