// Channels: bounded, credit-based transport of record batches between two subtasks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "weir/detail/operators/task_metrics.h"
#include "weir/detail/runtime/blocking_exchange.h"
#include "weir/detail/runtime/record_frames.h"
#include "weir/error.h"

namespace weir::detail {

// Wakes a subtask thread that waits for input or mail. Shared by the subtask's input
// channels and its mailbox; safe to notify from any thread. A notify costs one atomic
// store unless the subtask is asleep, so producers may notify on every buffer.
class TaskSignal {
 public:
  void notify() {
    pending_.store(true);
    if (sleeping_.load()) {
      std::lock_guard lock(mutex_);
      cv_.notify_one();
    }
  }

  // Waits until notified (or until `deadline`), consuming the notification.
  template <class Clock, class Duration>
  void waitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    if (spin()) return;
    std::unique_lock lock(mutex_);
    sleeping_.store(true);
    // pending_ is read after sleeping_ is set: a notify() either sees sleeping_ and wakes
    // us through the condition variable, or set pending_ before we read it here.
    cv_.wait_until(lock, deadline, [&] { return pending_.exchange(false); });
    sleeping_.store(false);
  }

  void wait() {
    if (spin()) return;
    std::unique_lock lock(mutex_);
    sleeping_.store(true);
    cv_.wait(lock, [&] { return pending_.exchange(false); });
    sleeping_.store(false);
  }

 private:
  // Polls for a notification for a few microseconds before sleeping: a producer that
  // sends the next buffer soon then pays no wake-up system call. Yielding rather than
  // only pausing lets the other subtasks run when there are more threads than cores.
  bool spin() {
    for (int i = 0; i < 64; ++i) {
      if (pending_.exchange(false)) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    for (int i = 0; i < 16; ++i) {
      if (pending_.exchange(false)) return true;
      std::this_thread::yield();
    }
    return pending_.exchange(false);
  }

  std::atomic<bool> pending_{false};
  std::atomic<bool> sleeping_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

// What travels in a channel besides records, in order with them.
enum class EventKind : uint8_t {
  kWatermark,        // `timestamp` holds the watermark
  kIdle,             // the producer's stream went idle
  kActive,           // ... and became active again
  kEndOfPartition,   // the producer will send nothing more
  kBarrier,          // checkpoint barrier; `timestamp` holds the checkpoint id
};

// Untyped part of a channel: credits, wake-ups and accounting.
class ChannelBase {
 public:
  virtual ~ChannelBase() = default;

  // Stops waiting producers for good (job cancelled or failed).
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    creditCv_.notify_all();
  }

  int credits() const { return initialCredits_; }
  // Whether the producer could send a buffer now without waiting (any thread; a hint,
  // as the consumer may return a credit just after).
  bool hasCredit() const { return available_.load(std::memory_order_relaxed) > 0; }
  // The producer's signal, notified whenever a credit comes back: a producer that waits
  // for credit in its task loop, rather than in send(), wakes up then.
  void setProducer(TaskSignal* producer) { producer_ = producer; }
  // Largest number of record buffers that were ever queued at once.
  int maxBuffersInFlight() const { return maxInFlight_.load(std::memory_order_relaxed); }
  // The id of the newest barrier queued so far (0: none); any thread.
  int64_t announcedBarrier() const { return announced_.load(std::memory_order_acquire); }
  // Records sent through this channel so far.
  uint64_t recordsSent() const { return recordsSent_.load(std::memory_order_relaxed); }
  // The most records a buffer of this channel holds (the job's network memory decides,
  // JobPlan::bufferRecords); 0: as many as a batch (kBatchRecords).
  size_t bufferRecords() const { return bufferRecords_; }

 protected:
  ChannelBase(int credits, TaskSignal* consumer, size_t bufferRecords)
      : initialCredits_(credits), credits_(credits), bufferRecords_(bufferRecords), consumer_(consumer),
        available_(credits) {}

  // How often a producer waiting for credit looks whether its gauges are to be read.
  static constexpr std::chrono::milliseconds kGaugeCheck{100};

  std::mutex mutex_;
  std::condition_variable creditCv_;
  const int initialCredits_;
  int credits_;            // buffers the producer may still send; guarded by mutex_
  const size_t bufferRecords_;
  int inFlight_ = 0;       // record buffers queued or being processed; guarded by mutex_
  bool producerWaiting_ = false;  // guarded by mutex_
  bool cancelled_ = false; // guarded by mutex_
  TaskSignal* consumer_;
  TaskSignal* producer_ = nullptr;
  alignas(64) std::atomic<int> available_{0};  // credits_, readable without the lock; its own cache line
  std::atomic<int> maxInFlight_{0};
  std::atomic<uint64_t> recordsSent_{0};
  std::atomic<int64_t> announced_{0};
};

// One producer subtask to one consumer subtask. The consumer owns `credits` buffers; the
// producer sends a buffer only against a credit and otherwise blocks (back-pressure). A
// consumed buffer goes back to the producer for reuse, with its capacity and with what
// the consumer left of its records, which the producer destroys.
//
// A channel into a blocking exchange (a batch job's, between stages) has no consumer
// yet: each buffer is written at once, as a frame, to the exchange's storage, and its
// producer never waits for credit.
template <class T>
class Channel final : public ChannelBase {
 public:
  struct Message {
    bool isEvent = false;
    EventKind event = EventKind::kEndOfPartition;
    int64_t timestamp = 0;
    std::vector<T> records;
    std::vector<int64_t> timestamps;  // one per record, or empty
  };

  // The empty buffers a producer fills next.
  struct Buffers {
    std::vector<T> records;
    std::vector<int64_t> timestamps;
  };

  Channel(int credits, TaskSignal* consumer, size_t bufferRecords = 0)
      : ChannelBase(credits, consumer, bufferRecords) {}

  // Into a blocking exchange: buffers and watermarks go to `sink` as frames of consumer
  // subtask `subpartition`. The exchange is read once its producers ended, so idleness
  // is not written, and checkpoint barriers never come (a batch job takes none).
  Channel(BlockSink* sink, int subpartition, size_t bufferRecords)
      : ChannelBase(kUnlimitedCredits, nullptr, bufferRecords), sink_(sink), subpartition_(subpartition) {}

  // Producer: queues a non-empty buffer (with its timestamps, or none), blocking while no
  // credit is left. Returns empty buffers to fill next (recycled ones when available), or
  // nullopt when the channel was cancelled. Counts the time spent blocked as
  // back-pressured.
  std::optional<Buffers> send(std::vector<T>&& records, std::vector<int64_t>&& timestamps, TaskMetrics& metrics) {
    if (sink_ != nullptr) return write(std::move(records), std::move(timestamps));
    size_t n = records.size();
    Buffers next;
    {
      std::unique_lock lock(mutex_);
      if (credits_ == 0 && !cancelled_) {
        int64_t start = steadyNanos();
        metrics.backPressuredSinceNanos.store(start, std::memory_order_relaxed);
        producerWaiting_ = true;
        // A task blocked here, in the middle of a batch, does not get to its mailbox:
        // it still reads its gauges when asked, so a back-pressured source shows its lag.
        while (!creditCv_.wait_for(lock, kGaugeCheck, [&] { return credits_ > 0 || cancelled_; })) {
          if (!metrics.metricsUpdateWanted.load(std::memory_order_relaxed)) continue;
          lock.unlock();
          metrics.updateMetricsIfWanted();
          lock.lock();
        }
        producerWaiting_ = false;
        metrics.backPressuredSinceNanos.store(0, std::memory_order_relaxed);
        metrics.backPressuredTimeNanos.fetch_add(steadyNanos() - start, std::memory_order_relaxed);
      }
      if (cancelled_) return std::nullopt;
      available_.store(--credits_, std::memory_order_relaxed);
      ++inFlight_;
      if (inFlight_ > maxInFlight_.load(std::memory_order_relaxed))
        maxInFlight_.store(inFlight_, std::memory_order_relaxed);
      queue_.push_back(Message{false, EventKind::kEndOfPartition, 0, std::move(records), std::move(timestamps)});
      if (!free_.empty()) {
        next = std::move(free_.back());
        free_.pop_back();
      }
    }
    recordsSent_.fetch_add(n, std::memory_order_relaxed);
    consumer_->notify();
    // What the consumer left of the records is destroyed here, by the thread that made
    // them: their memory goes back to this thread's allocator cache, where its next
    // records come from. Freed by the consumer instead, every string of a Nexmark bid
    // cost the producer a slow path through malloc (a fifth of q7's time).
    next.records.clear();
    next.timestamps.clear();
    return next;
  }

  // Producer: queues an event; events need no credit. A barrier is also announced at
  // once (announcedBarrier()), so an unaligned consumer can take it before the records
  // queued ahead of it.
  void sendEvent(EventKind kind, int64_t timestamp = 0) {
    if (sink_ != nullptr) {
      if (kind == EventKind::kBarrier)
        throw Error(ErrorCode::kInternal, "a checkpoint barrier cannot cross a blocking exchange");
      if (kind != EventKind::kWatermark) return;  // idleness; the end is the exchange's end
      frame_.clear();
      frame_.write(static_cast<uint8_t>(FrameKind::kWatermark));
      frame_.write(timestamp);
      sink_->append(subpartition_, frame_.data());
      return;
    }
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(Message{true, kind, timestamp, {}, {}});
      if (kind == EventKind::kBarrier) announced_.store(timestamp, std::memory_order_release);
    }
    consumer_->notify();
  }

  // Consumer: calls `fn(records, timestamps)` for every record buffer queued ahead of
  // barrier `checkpointId` (all of them if it is not queued), oldest first. The
  // producer waits meanwhile.
  template <class F>
  void forEachQueuedBefore(int64_t checkpointId, F&& fn) {
    std::lock_guard lock(mutex_);
    for (const Message& m : queue_) {
      if (m.isEvent) {
        if (m.event == EventKind::kBarrier && m.timestamp >= checkpointId) return;
        continue;
      }
      fn(m.records, m.timestamps);
    }
  }

  // Consumer: takes the oldest message, if any.
  bool poll(Message& out) {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

  // Consumer: hands a processed buffer back, which returns its credit to the producer.
  // The records stay in it (moved from, or not) until the producer reuses it.
  void recycle(Message& message) {
    bool wake, firstCredit;
    {
      std::lock_guard lock(mutex_);
      available_.store(++credits_, std::memory_order_relaxed);
      firstCredit = credits_ == 1;
      --inFlight_;
      free_.push_back(Buffers{std::move(message.records), std::move(message.timestamps)});
      wake = producerWaiting_;
    }
    if (wake) creditCv_.notify_one();
    // Only the producer takes credits, and it waits only after seeing none on a channel.
    if (firstCredit && producer_ != nullptr) producer_->notify();
  }

 private:
  static constexpr int kUnlimitedCredits = 1 << 30;

  // A blocking channel's send(): the buffer becomes a frame of the sink, and comes back
  // empty at once.
  std::optional<Buffers> write(std::vector<T>&& records, std::vector<int64_t>&& timestamps) {
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return std::nullopt;
    }
    if constexpr (Serializable<T>) {
      frame_.clear();
      frame_.write(static_cast<uint8_t>(FrameKind::kRecords));
      writeRecords(records, timestamps, frame_);
      sink_->append(subpartition_, frame_.data());
    } else {
      // The job's plan keeps such edges pipelined.
      throw Error(ErrorCode::kInternal, "records of a type without a weir::Serializer cannot cross a blocking exchange");
    }
    recordsSent_.fetch_add(records.size(), std::memory_order_relaxed);
    records.clear();
    timestamps.clear();
    return Buffers{std::move(records), std::move(timestamps)};
  }

  std::deque<Message> queue_;     // guarded by mutex_
  std::vector<Buffers> free_;     // recycled buffers; guarded by mutex_
  BlockSink* const sink_ = nullptr;  // a blocking channel's (producer thread)
  const int subpartition_ = 0;
  DataOutput frame_;                 // producer thread
};

}  // namespace weir::detail
