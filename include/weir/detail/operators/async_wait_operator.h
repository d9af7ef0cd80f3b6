// Async I/O (Flink's AsyncWaitOperator): calls an AsyncFunction for each record without
// waiting, keeps up to `capacity` requests in flight, and emits their results when they
// come back — in input order (ordered), or as they complete but never across a watermark
// (unordered). Requests that time out go to the function's timeout(); answers the retry
// strategy rejects are asked again after a backoff.
//
// Everything happens on the subtask's thread: answers from other threads wait in the
// operator's inbox and reach it as mail; timeouts and backoffs are processing-time
// timers. At capacity the operator holds the subtask's input, so the records waiting to
// be sent are at most one batch; checkpoints, timers and mail go on meanwhile. A
// checkpoint keeps every record whose results were not emitted yet, and a restore sends
// them again. Watermarks waiting in the queue are not kept: the sources send new ones.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weir/async_function.h"
#include "weir/async_retry_strategy.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/state/operator_state.h"
#include "weir/serializer.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

template <class OUT>
struct AsyncSettings {
  bool ordered = true;
  int64_t timeoutMs = 0;
  size_t capacity = 100;
  std::shared_ptr<const AsyncRetryStrategy<OUT>> retry;  // null: no retries
};

// An async function for records IN and results OUT: an object with asyncInvoke, or a
// callable void(const IN&, ResultFuture<OUT>).
template <class F, class IN, class OUT>
concept AsyncFunctionFor = requires(F& f, const IN& v, ResultFuture<OUT> r) { f.asyncInvoke(v, r); } ||
                           std::invocable<F&, const IN&, ResultFuture<OUT>>;

template <class F, class IN, class OUT>
void callAsyncInvoke(F& fn, const IN& input, ResultFuture<OUT> future) {
  if constexpr (requires { fn.asyncInvoke(input, future); }) fn.asyncInvoke(input, std::move(future));
  else fn(input, std::move(future));
}
// timeout() where the function has one, else the default's TimeoutException.
template <class F, class IN, class OUT>
void callAsyncTimeout(F& fn, const IN& input, ResultFuture<OUT> future) {
  if constexpr (requires { fn.timeout(input, future); }) fn.timeout(input, std::move(future));
  else completeWithTimeout(future);
}

template <class IN, class OUT, class F>
class AsyncWaitOperator final : public UdfOperator<IN, OUT, F>, public ProcessingTimeCallback {
 public:
  // What a checkpoint keeps of a request: the record and its timestamp, if it has one.
  using Element = std::pair<IN, std::optional<int64_t>>;
  static constexpr const char* kStateName = "_async_wait_operator_state_";  // Flink's

  AsyncWaitOperator(F fn, AsyncSettings<OUT> settings)
      : UdfOperator<IN, OUT, F>(std::move(fn)), settings_(std::move(settings)) {}
  ~AsyncWaitOperator() override {
    if (inbox_) inbox_->close();
  }

  std::string checkpointUnsupportedReason() const override {
    if constexpr (!Serializable<IN>)
      return "its input type " + demangledTypeName(typeid(IN)) +
             " has no weir::Serializer, which checkpoints need for the requests in flight";
    return "";
  }

  void open() override {
    mailbox_ = &this->context_->mailboxExecutor();
    clock_ = this->context_->clock().get();
    timerService_ = &this->context_->processingTimeService();
    inbox_ = std::make_shared<AsyncInbox<OUT>>(mailbox_, [this] { takeAnswers(); });
    if (settings_.retry) {
      retryPredicate_ = this->callUser([&] { return settings_.retry->getRetryPredicate(); });
    }
    UdfOperator<IN, OUT, F>::open();
    if constexpr (Serializable<IN>) {
      state_ = &this->context_->operatorState().list(ListStateDescriptor<Element>(kStateName),
                                                     OperatorStateMode::kSplitDistribute);
      for (auto& [record, timestamp] : state_->get()) enqueue(std::move(record), timestamp);
      state_->clear();
      startRequests();
    }
  }
  void close() override {
    if (inbox_) inbox_->close();
    holdInput(false);
    UdfOperator<IN, OUT, F>::close();
  }

  void processBatch(std::span<IN> records, Timestamps timestamps) override {
    for (size_t i = 0; i < records.size(); ++i)
      enqueue(std::move(records[i]), timestamps.empty() ? std::nullopt : std::optional<int64_t>(timestamps[i]));
    startRequests();
  }
  void processWatermark(int64_t watermark) override {
    if (queue_.empty()) {
      this->out_->processWatermark(watermark);
      return;
    }
    Entry& e = append();
    e.isWatermark = true;
    e.time = watermark;
    ++segment_;  // records after it wait for it
  }
  // Going idle waits until the queue is empty: a watermark still behind unanswered
  // requests would reach an idle channel downstream, which ignores it.
  void processIdleness(bool idle) override {
    idleUpstream_ = idle;
    forwardIdleness();
  }
  // Waits for every request (the subtask's timers stopped: timeouts and backoffs are
  // kept here), then ends the output.
  void endInput() override {
    while (!queue_.empty()) {
      fireDue(clock_->currentTimeMillis() - 1);
      if (queue_.empty()) break;
      auto now = std::chrono::steady_clock::now();
      auto wake = timers_.empty() ? now + std::chrono::milliseconds(100)
                                  : now + clock_->sleepUntil(std::get<0>(*timers_.begin()) + 1);
      mailbox_->yieldUntil(wake);
    }
    flush();
    this->out_->endInput();
  }

  void onProcessingTime(int64_t time) override { fireDue(time); }

  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    if constexpr (Serializable<IN>) {
      std::vector<Element> elements;
      for (const Entry& e : queue_)
        if (!e.isWatermark) elements.emplace_back(*e.input, e.timestamp);
      state_->update(std::move(elements));
    }
    UdfOperator<IN, OUT, F>::snapshotState(checkpointId, timestamp, out);  // the function's, then the lists
  }

 private:
  using Slot = AsyncResultSlot<OUT>;
  enum class Status { kWaiting, kInFlight, kBackoff, kDone };
  // A record whose results were not emitted yet, or a watermark behind such records.
  struct Entry {
    uint64_t id = 0;
    bool isWatermark = false;
    int64_t time = 0;  // the watermark
    std::optional<int64_t> timestamp;
    std::optional<IN> input;
    uint64_t segment = 0;  // records between two watermarks share one
    Status status = Status::kWaiting;
    int attempts = 0;
    bool timedOut = false;       // timeout() answers for it: no more retries
    int64_t deadline = 0;        // its timeout, once sent
    int64_t retryAt = 0;         // kBackoff: when it is sent again
    std::shared_ptr<Slot> slot;  // the attempt whose answer counts
    std::vector<OUT> results;
  };
  using Iterator = typename std::list<Entry>::iterator;
  enum class TimerKind { kTimeout, kRetry };
  // A timeout or retry of an entry, removed when the entry no longer needs it.
  using Timer = std::tuple<int64_t, uint64_t, TimerKind>;  // time, entry, kind

  Entry& append() {
    Entry& e = queue_.emplace_back();
    e.id = nextId_++;
    e.segment = segment_;
    byId_.emplace(e.id, std::prev(queue_.end()));
    return e;
  }
  void enqueue(IN record, std::optional<int64_t> timestamp) {
    Entry& e = append();
    e.input.emplace(std::move(record));
    e.timestamp = timestamp;
    waiting_.push_back(e.id);
    ++records_;
  }

  // Sends the waiting records while fewer than `capacity` are unanswered, then holds the
  // input when the queue is full.
  void startRequests() {
    while (started_ < settings_.capacity && !waiting_.empty()) {
      Entry& e = *byId_.at(waiting_.front());
      waiting_.pop_front();
      ++started_;
      e.deadline = clock_->currentTimeMillis() + settings_.timeoutMs;
      schedule({e.deadline, e.id, TimerKind::kTimeout});
      invoke(e);
    }
    holdInput(records_ >= settings_.capacity);
  }
  void invoke(Entry& e) {
    ++e.attempts;
    e.status = Status::kInFlight;
    e.slot = std::make_shared<Slot>(inbox_, e.id);
    ResultFuture<OUT> future(e.slot);
    this->callUser([&] { callAsyncInvoke(this->fn_, *e.input, std::move(future)); });
  }
  void holdInput(bool hold) {
    if (hold == holding_ || mailbox_ == nullptr) return;
    holding_ = hold;
    mailbox_->holdInput(hold);
  }
  // The timers live here; the subtask's timer service holds one registration at a time,
  // for the earliest (deadlines grow as requests are sent, so it rarely moves back), and
  // a timer whose entry was answered is removed, so they stay within the capacity.
  void schedule(Timer timer) {
    timers_.insert(timer);
    armTimer();
  }
  void unschedule(const Entry& e) {
    timers_.erase({e.deadline, e.id, TimerKind::kTimeout});
    if (e.status == Status::kBackoff) timers_.erase({e.retryAt, e.id, TimerKind::kRetry});
  }
  void armTimer() {
    if (timers_.empty()) return;
    const int64_t earliest = std::get<0>(*timers_.begin());
    if (earliest >= registered_) return;
    registered_ = earliest;
    timerService_->registerTimer(earliest, this);
  }

  // A mail: the answers that came back.
  void takeAnswers() {
    for (auto& slot : inbox_->take()) {
      auto found = byId_.find(slot->entry);
      if (found == byId_.end()) continue;
      Entry& e = *found->second;
      if (e.slot != slot || e.status != Status::kInFlight) continue;  // an attempt already given up
      e.slot.reset();
      if (!e.timedOut && shouldRetry(*slot, e.attempts)) {
        e.status = Status::kBackoff;
        const int64_t backoff = this->callUser([&] { return settings_.retry->getBackoffTimeMillis(e.attempts); });
        e.retryAt = clock_->currentTimeMillis() + backoff;
        schedule({e.retryAt, e.id, TimerKind::kRetry});
        continue;
      }
      if (slot->error) this->callUser([&] { std::rethrow_exception(slot->error); });
      unschedule(e);
      e.results = std::move(slot->results);
      e.status = Status::kDone;
      if (!settings_.ordered && e.segment == queue_.front().segment) emit(found->second);
    }
    emitReady();
    startRequests();
    flush();
  }
  // Whether the retry strategy asks again after this answer to attempt `attempts`.
  bool shouldRetry(const Slot& slot, int attempts) {
    if (!settings_.retry) return false;
    return this->callUser([&] {
      bool retry = false;
      if (slot.error) {
        if (retryPredicate_.exceptionPredicate) {
          try {
            std::rethrow_exception(slot.error);
          } catch (const std::exception& e) {
            retry = retryPredicate_.exceptionPredicate(e);
          } catch (...) {
            retry = retryPredicate_.exceptionPredicate(std::runtime_error("unknown exception"));
          }
        }
      } else if (retryPredicate_.resultPredicate) {
        retry = retryPredicate_.resultPredicate(slot.results);
      }
      return retry && settings_.retry->canRetry(attempts);
    });
  }

  // Timeouts and retries due at `time`.
  void fireDue(int64_t time) {
    if (registered_ <= time) registered_ = std::numeric_limits<int64_t>::max();  // that registration fired
    while (!timers_.empty() && std::get<0>(*timers_.begin()) <= time) {
      const auto [at, id, kind] = *timers_.begin();
      timers_.erase(timers_.begin());
      Entry& e = *byId_.at(id);
      if (kind == TimerKind::kRetry) {
        invoke(e);
        continue;
      }
      e.timedOut = true;
      if (e.status == Status::kBackoff) {  // the retry it waited for is off: timeout() answers
        timers_.erase({e.retryAt, e.id, TimerKind::kRetry});
        e.status = Status::kInFlight;
        e.slot = std::make_shared<Slot>(inbox_, e.id);
      }
      ResultFuture<OUT> future(e.slot);
      this->callUser([&] { callAsyncTimeout(this->fn_, *e.input, std::move(future)); });
    }
    armTimer();
  }

  // Emits from the front of the queue what may go now: answered records in order
  // (ordered), and each watermark once every record before it went.
  void emitReady() {
    while (!queue_.empty()) {
      Entry& front = queue_.front();
      if (front.isWatermark) {
        flush();
        this->out_->processWatermark(front.time);
        erase(queue_.begin());
        if (!settings_.ordered) emitAnsweredOfFirstSegment();
        continue;
      }
      if (front.status != Status::kDone) break;
      emit(queue_.begin());
    }
    forwardIdleness();
  }
  // Unordered: the answered records before the first watermark go now.
  void emitAnsweredOfFirstSegment() {
    for (auto it = queue_.begin(); it != queue_.end() && !it->isWatermark;) {
      auto next = std::next(it);
      if (it->status == Status::kDone) emit(it);
      it = next;
    }
  }
  void emit(Iterator it) {
    for (OUT& r : it->results) {
      if (it->timestamp.has_value() != batchHasTimestamps_ || batch_.size() >= kBatchRecords<OUT>) {
        flush();
        batchHasTimestamps_ = it->timestamp.has_value();
      }
      batch_.push_back(std::move(r));
      if (it->timestamp) batchTimestamps_.push_back(*it->timestamp);
    }
    --started_;
    erase(it);
  }
  void erase(Iterator it) {
    if (!it->isWatermark) --records_;
    byId_.erase(it->id);
    queue_.erase(it);
  }
  // Idleness from upstream goes on once nothing waits in the queue; activity at once.
  void forwardIdleness() {
    const bool idle = idleUpstream_ && queue_.empty();
    if (idle == idleDownstream_) return;
    flush();
    idleDownstream_ = idle;
    this->out_->processIdleness(idle);
  }
  void flush() {
    if (batch_.empty()) return;
    this->out_->processBatch(std::span<OUT>(batch_), Timestamps(batchTimestamps_));
    batch_.clear();
    batchTimestamps_.clear();
  }

  AsyncSettings<OUT> settings_;
  AsyncRetryPredicate<OUT> retryPredicate_;
  MailboxExecutor* mailbox_ = nullptr;
  const Clock* clock_ = nullptr;
  ProcessingTimeService* timerService_ = nullptr;
  std::shared_ptr<AsyncInbox<OUT>> inbox_;
  ListState<Element>* state_ = nullptr;
  std::list<Entry> queue_;
  std::unordered_map<uint64_t, Iterator> byId_;
  std::deque<uint64_t> waiting_;  // records not sent yet, in order
  std::set<Timer> timers_;
  int64_t registered_ = std::numeric_limits<int64_t>::max();  // the timer service's earliest registration
  uint64_t nextId_ = 0;
  uint64_t segment_ = 0;
  size_t records_ = 0;  // records in the queue
  size_t started_ = 0;  // records sent and not emitted yet
  bool holding_ = false;
  bool idleUpstream_ = false;    // what the input says
  bool idleDownstream_ = false;  // what the output was told
  std::vector<OUT> batch_;
  std::vector<int64_t> batchTimestamps_;
  bool batchHasTimestamps_ = false;
};

}  // namespace weir::detail
