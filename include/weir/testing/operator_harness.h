// Test your own functions as Flink users do with OneInputStreamOperatorTestHarness,
// KeyedOneInputStreamOperatorTestHarness and ProcessFunctionTestHarnesses: one operator
// of a job, run by itself on the test's thread, with records, watermarks and processing
// time going in one at a time and everything it emits captured in order.
//
//   #include <weir/testing/operator_harness.h>
//
//   auto harness = weir::test::ProcessFunctionTestHarnesses::forKeyedProcessFunction<Click>(
//       CountPerUser{}, [](const Click& c) { return c.user; });
//   harness.open();
//   harness.processElement(Click{"ann", 10}, /*timestamp=*/10);
//   harness.processWatermark(100);                  // fires event-time timers up to 100
//   harness.setProcessingTime(5000);                // fires processing-time timers before 5000
//   harness.output().records();                     // what it emitted, in order
//   auto state = harness.snapshot();                // Flink's OperatorSubtaskState
//
// Any operator a job can have works: build it with the DataStream API and pass the
// stream it made (a window, a join, connect().process(...)):
//
//   StreamExecutionEnvironment env;
//   auto sums = env.fromElements(Rec{}).keyBy(KeyOf{}).window(TumblingEventTimeWindows::of(3s)).reduce(Sum{});
//   weir::test::OperatorHarness<Rec> harness(sums);
//
// A snapshot restores into a new harness, also at another parallelism: each subtask
// takes the keyed state (and timers) of its key groups, and operator list state is
// redistributed as a job's is (initializeState). The instance is wired as the runtime
// wires one: a RuntimeContext of the harness's subtask, the chosen state backend, a
// ManualClock and a processing-time service of its own. Time moves only when the test
// moves it. Records go in one batch per call, as a chain hands them on.
//
// Results that other threads send back to the operator (async I/O) wait in the harness's
// mailbox until the test calls processMail(), or until endInput() waits for them.
//
// The namespace is weir::test, not weir::testing: inside `using namespace weir;` the
// latter would hide GoogleTest's ::testing.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "weir/clock.h"
#include "weir/data_stream.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/operator_state.h"
#include "weir/detail/core/output.h"
#include "weir/detail/core/mailbox_executor.h"
#include "weir/detail/runtime/stream_graph.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/key_group.h"
#include "weir/output_tag.h"
#include "weir/runtime_context.h"
#include "weir/state_backend.h"
#include "weir/stream_execution_environment.h"

namespace weir::test {

// One thing an operator emitted: a record (with its timestamp, if it has one), a
// watermark, a change of idleness, or the end of its input.
template <class T>
struct Emitted {
  enum class Kind { kRecord, kWatermark, kIdle, kActive, kEndOfInput };
  Kind kind = Kind::kRecord;
  std::optional<T> record;            // kRecord
  std::optional<int64_t> timestamp;   // kRecord: none when the stream carries none
  int64_t watermark = 0;              // kWatermark
};

// Keeps everything handed to it, in order. A batch must carry a timestamp for every
// record or none; anything else is an error of the operator, reported as a logic_error.
template <class T>
class CapturingOutput final : public detail::Output<T> {
 public:
  void processBatch(std::span<T> records, detail::Timestamps timestamps) override {
    if (!timestamps.empty() && timestamps.size() != records.size())
      throw std::logic_error("a batch of " + std::to_string(records.size()) + " records came with " +
                             std::to_string(timestamps.size()) + " timestamps");
    for (size_t i = 0; i < records.size(); ++i) {
      Emitted<T> e;
      e.record = std::move(records[i]);
      if (!timestamps.empty()) e.timestamp = timestamps[i];
      events_.push_back(std::move(e));
    }
  }
  void processWatermark(int64_t watermark) override {
    Emitted<T> e;
    e.kind = Emitted<T>::Kind::kWatermark;
    e.watermark = watermark;
    events_.push_back(std::move(e));
  }
  void processIdleness(bool idle) override {
    Emitted<T> e;
    e.kind = idle ? Emitted<T>::Kind::kIdle : Emitted<T>::Kind::kActive;
    events_.push_back(std::move(e));
  }
  void endInput() override {
    Emitted<T> e;
    e.kind = Emitted<T>::Kind::kEndOfInput;
    events_.push_back(std::move(e));
  }

  const std::vector<Emitted<T>>& events() const { return events_; }
  // The records only, in order.
  std::vector<T> records() const {
    std::vector<T> out;
    for (const auto& e : events_)
      if (e.kind == Emitted<T>::Kind::kRecord) out.push_back(*e.record);
    return out;
  }
  void clear() { events_.clear(); }

 private:
  std::vector<Emitted<T>> events_;
};

// How the harness runs its operator.
struct HarnessOptions {
  // Where keyed state lives (default: the heap).
  std::shared_ptr<const StateBackend> stateBackend = std::make_shared<HashMapStateBackend>();
  // What the ManualClock reads until setProcessingTime (default 0).
  int64_t processingTime = 0;
  // Key groups of the job (default 128, as a job's).
  int maxParallelism = 128;
  // Which subtask of how many the harness is (default 0 of 1, which owns every key
  // group): keyed state it restores is that of its key groups.
  int parallelism = 1;
  int subtaskIndex = 0;
};

// What one operator instance's snapshot holds (Flink's OperatorSubtaskState): its keyed
// state (with its timers) by key group, and its operator list state.
struct OperatorSubtaskState {
  int maxParallelism = 0;
  int parallelism = 1;   // of the operator that took it
  int subtaskIndex = 0;  // and which of its subtasks
  std::map<std::string, std::vector<detail::OwnedStateEntry>> keyed;  // by state name
  std::vector<detail::OperatorStateSnapshot> operatorState;
  std::map<std::string, TypeSchema> keyedSchemas;
  // How many keyed entries `state` has (a key's value, list or map entry).
  size_t keyedEntries(const std::string& state) const {
    auto it = keyed.find(state);
    return it == keyed.end() ? 0 : it->second.size();
  }
};

// The harness's mailbox: mail from any thread, run on the test's thread when it asks.
class HarnessMailbox final : public detail::MailboxExecutor {
 public:
  void execute(std::function<void()> action) override {
    {
      std::lock_guard lock(mutex_);
      mail_.push_back(std::move(action));
    }
    arrived_.notify_all();
  }
  void yieldUntil(std::chrono::steady_clock::time_point deadline) override {
    {
      std::unique_lock lock(mutex_);
      arrived_.wait_until(lock, deadline, [&] { return !mail_.empty(); });
    }
    runPending();
  }
  void holdInput(bool hold) override { holds_ += hold ? 1 : -1; }

  // Runs the mail that is there; returns how many actions ran.
  size_t runPending() {
    std::deque<std::function<void()>> mail;
    {
      std::lock_guard lock(mutex_);
      mail.swap(mail_);
    }
    for (auto& action : mail) action();
    return mail.size();
  }
  bool inputHeld() const { return holds_ > 0; }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::function<void()>> mail_;  // guarded by mutex_
  int holds_ = 0;
};

// Runs the operator that produced a stream of OUT, alone. Call captureSideOutput for
// every side output to keep, then open(); then feed it. One-input operators take
// processElement / processBatch; two-input ones (connect, intervalJoin) take the first
// input by those and the second by processElement2 / processBatch2. Throws
// std::invalid_argument when the stream is not made by an operator or a record's type
// is not the input's.
template <class OUT>
class OperatorHarness {
 public:
  explicit OperatorHarness(const DataStream<OUT>& stream, HarnessOptions options = {})
      : graph_(stream.graph()), node_(graph_->node(stream.id())), options_(std::move(options)),
        clock_(std::make_shared<ManualClock>(options_.processingTime)) {
    if (node_.kind != detail::Transformation::Kind::kOperator || !node_.createOperator)
      throw std::invalid_argument("OperatorHarness: '" + node_.name + "' is not an operator; pass the stream it made");
    if (options_.parallelism < 1 || options_.parallelism > options_.maxParallelism || options_.subtaskIndex < 0 ||
        options_.subtaskIndex >= options_.parallelism)
      throw std::invalid_argument("OperatorHarness: subtask " + std::to_string(options_.subtaskIndex) + " of " +
                                  std::to_string(options_.parallelism) + " with max parallelism " +
                                  std::to_string(options_.maxParallelism) + " does not exist");
    create(nullptr);
  }
  OperatorHarness(const OperatorHarness&) = delete;
  OperatorHarness& operator=(const OperatorHarness&) = delete;
  ~OperatorHarness() {
    try {
      close();
    } catch (...) {
      // A failing close() in a destructor has nowhere to go; close() explicitly to see it.
    }
  }

  // Keeps what the operator emits to `tag`. Before open().
  template <class X>
  CapturingOutput<X>& captureSideOutput(const OutputTag<X>& tag) {
    if (opened_) throw std::logic_error("OperatorHarness: captureSideOutput after open()");
    auto capture = std::make_unique<SideCapture<X>>();
    auto* out = &capture->output;
    operator_->addSideOutput(tag.index(), capture->wrap());
    sideOutputs_.emplace_back(tag.index(), std::move(capture));
    return *out;
  }

  void open() {
    operator_->open();
    opened_ = true;
  }
  // Closes the operator (once); the destructor does it otherwise.
  void close() {
    if (!opened_) return;
    opened_ = false;
    operator_->close();
  }

  // A record of the (first) input, in a batch of its own; no timestamp: a stream without
  // them (no WatermarkStrategy upstream).
  template <class IN>
  void processElement(IN record, std::optional<int64_t> timestamp = std::nullopt) {
    std::vector<IN> records;
    records.push_back(std::move(record));
    std::vector<int64_t> timestamps;
    if (timestamp) timestamps.push_back(*timestamp);
    processBatch(std::move(records), std::move(timestamps));
  }
  // Records of the (first) input in one batch; `timestamps` has one per record, or is
  // empty.
  template <class IN>
  void processBatch(std::vector<IN> records, std::vector<int64_t> timestamps = {}) {
    feed(typedInput<IN>(operator_->input(), "first"), std::move(records), std::move(timestamps));
  }
  template <class IN2>
  void processElement2(IN2 record, std::optional<int64_t> timestamp = std::nullopt) {
    std::vector<IN2> records;
    records.push_back(std::move(record));
    std::vector<int64_t> timestamps;
    if (timestamp) timestamps.push_back(*timestamp);
    processBatch2(std::move(records), std::move(timestamps));
  }
  template <class IN2>
  void processBatch2(std::vector<IN2> records, std::vector<int64_t> timestamps = {}) {
    feed(typedInput<IN2>(operator_->secondInput(), "second"), std::move(records), std::move(timestamps));
  }

  // The operator's input watermark (both inputs of a two-input operator), as is.
  void processWatermark(int64_t watermark) {
    watermark1_ = watermark2_ = watermark;
    combined_ = watermark;
    operator_->input()->processWatermark(watermark);
  }
  // One input's watermark of a two-input operator: the operator gets the smaller of the
  // two whenever that moves forward, as the runtime's watermark valve hands it on.
  void processWatermark1(int64_t watermark) { inputWatermark(watermark1_, watermark); }
  void processWatermark2(int64_t watermark) { inputWatermark(watermark2_, watermark); }
  void processIdleness(bool idle) { operator_->input()->processIdleness(idle); }

  // The clock reads `now`: processing-time timers registered for times before it fire
  // (a timer for t fires once the clock reads t + 1, as in the runtime and in Flink's
  // SystemProcessingTimeService).
  void setProcessingTime(int64_t now) {
    clock_->setTime(now);
    processingTime_->fireDue(now);
  }
  // Runs what other threads sent back to the operator (the results of async requests);
  // returns how many mails ran.
  size_t processMail() { return mailbox_.runPending(); }
  // Runs mail as it arrives until `done()` holds or `timeout` passes; returns done().
  bool processMailUntil(const std::function<bool()>& done,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline)
      mailbox_.yieldUntil(std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
    return done();
  }
  // Whether the operator refuses more input for now (async I/O at its capacity); a
  // subtask would read none until it takes some again.
  bool inputHeld() const { return mailbox_.inputHeld(); }

  // The input ended: pending processing-time timers are dropped (as the subtask does)
  // and the operator finishes.
  void endInput() {
    processingTime_->quiesce();
    operator_->input()->endInput();
  }

  // The operator's state now (Flink's snapshot(checkpointId, timestamp)): a checkpoint
  // of it, read into memory. Incremental RocksDB checkpoints cannot be taken here.
  OperatorSubtaskState snapshot() {
    if (!opened_) throw std::logic_error("OperatorHarness: snapshot() before open()");
    OperatorSubtaskState out;
    out.maxParallelism = options_.maxParallelism;
    out.parallelism = options_.parallelism;
    out.subtaskIndex = options_.subtaskIndex;
    detail::OperatorSnapshot snapshot;
    operator_->snapshotState(++checkpointId_, clock_->currentTimeMillis(), snapshot);
    if (snapshot.rocksdb)
      throw std::invalid_argument("OperatorHarness: incremental RocksDB checkpoints cannot be taken here");
    for (auto& [name, state] : snapshot.keyed) {
      auto& entries = out.keyed[name];
      state->readEntries(keyGroups(), [&](const detail::StateEntry& e) {
        entries.push_back({e.keyGroup, std::string(e.key), std::string(e.value)});
      });
    }
    out.operatorState = std::move(snapshot.operatorState);
    out.keyedSchemas = std::move(snapshot.keyedSchemas);
    return out;
  }

  // Before open(): starts the operator from `snapshots`, one of each subtask of the
  // operator that took them, in any order (Flink's initializeState after
  // repackageState): the keyed state of this subtask's key groups, and operator list
  // state redistributed to it as a job's is at this parallelism. Throws
  // std::invalid_argument for snapshots of another max parallelism, or that are not one
  // of each subtask.
  void initializeState(const std::vector<OperatorSubtaskState>& snapshots) {
    if (opened_) throw std::logic_error("OperatorHarness: initializeState after open()");
    const int old = snapshots.empty() ? 0 : snapshots.front().parallelism;
    std::vector<std::vector<detail::OperatorStateSnapshot>> lists(static_cast<size_t>(old));
    std::vector<bool> seen(static_cast<size_t>(old), false);
    for (const OperatorSubtaskState& s : snapshots) {
      if (s.parallelism != old || s.subtaskIndex < 0 || s.subtaskIndex >= old || seen[static_cast<size_t>(s.subtaskIndex)])
        throw std::invalid_argument("OperatorHarness: initializeState takes one snapshot of each subtask of the "
                                    "operator that took them");
      seen[static_cast<size_t>(s.subtaskIndex)] = true;
      lists[static_cast<size_t>(s.subtaskIndex)] = s.operatorState;
    }
    if (static_cast<int>(snapshots.size()) != old)
      throw std::invalid_argument("OperatorHarness: initializeState needs the snapshots of all " + std::to_string(old) +
                                  " subtasks, got " + std::to_string(snapshots.size()));
    auto restored = restoredKeyedState(snapshots);
    if (!lists.empty())
      restored->operatorState =
          detail::redistributeOperatorState(lists, options_.parallelism).at(static_cast<size_t>(options_.subtaskIndex));
    create(std::move(restored));
  }
  void initializeState(const OperatorSubtaskState& snapshot) {
    initializeState(std::vector<OperatorSubtaskState>{snapshot});
  }

  // Checkpoints the operator and replaces it by a new instance restored from that
  // checkpoint (Flink's snapshot(), close(), initializeState(), open()), the same
  // subtask with its own state; outputs and metrics carry on.
  void snapshotAndRestore() {
    OperatorSubtaskState state = snapshot();  // read before close: it may hold on to its backend
    close();
    auto restored = restoredKeyedState({state});
    restored->operatorState = std::move(state.operatorState);
    create(std::move(restored));
    open();
  }

  // The key groups this subtask owns.
  KeyGroupRange keyGroups() const {
    return computeKeyGroupRangeForOperatorIndex(options_.maxParallelism, options_.parallelism, options_.subtaskIndex);
  }

  CapturingOutput<OUT>& output() { return output_; }
  template <class X>
  CapturingOutput<X>& sideOutput(const OutputTag<X>& tag) {
    for (auto& [index, capture] : sideOutputs_)
      if (index == tag.index()) return static_cast<SideCapture<X>&>(*capture).output;
    throw std::invalid_argument("OperatorHarness: side output '" + tag.getId() + "' is not captured");
  }
  // The subtask's counters (numLateRecordsDropped, ...), over every instance.
  detail::TaskMetrics& metrics() { return metrics_; }
  ManualClock& clock() { return *clock_; }
  detail::StreamOperator& op() { return *operator_; }

 private:
  struct SideCaptureBase {
    virtual ~SideCaptureBase() = default;
    virtual std::unique_ptr<detail::SideOutputBase> wrap() = 0;
  };
  template <class X>
  struct SideCapture final : SideCaptureBase {
    CapturingOutput<X> output;
    std::unique_ptr<detail::SideOutputBase> wrap() override {
      return std::make_unique<detail::SideOutput<X>>(&output, detail::kBatchRecords<X>);
    }
  };

  // The keyed state of `snapshots` in this subtask's key groups, in key group order.
  std::unique_ptr<detail::RestoredOperatorState> restoredKeyedState(const std::vector<OperatorSubtaskState>& snapshots) {
    auto restored = std::make_unique<detail::RestoredOperatorState>();
    restored->keyGroups = keyGroups();
    for (const OperatorSubtaskState& s : snapshots) {
      if (s.maxParallelism != options_.maxParallelism)
        throw std::invalid_argument("OperatorHarness: a snapshot of max parallelism " +
                                    std::to_string(s.maxParallelism) + " cannot restore at " +
                                    std::to_string(options_.maxParallelism));
      for (const auto& [name, entries] : s.keyed)
        for (const auto& e : entries)
          if (restored->keyGroups.contains(e.keyGroup)) restored->keyed[name].push_back(e);
      for (const auto& [name, schema] : s.keyedSchemas) restored->keyedSchemas.emplace(name, schema);
    }
    for (auto& [name, entries] : restored->keyed)
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.keyGroup < b.keyGroup; });
    return restored;
  }

  // A new operator instance, wired to the outputs (and side outputs captured so far).
  void create(std::unique_ptr<detail::RestoredOperatorState> restored) {
    operator_ = node_.createOperator();
    context_ = std::make_unique<RuntimeContext>(node_.name, options_.subtaskIndex, options_.parallelism,
                                                options_.maxParallelism);
    processingTime_ = std::make_unique<detail::ProcessingTimeService>();
    context_->setStateBackend(options_.stateBackend);
    context_->setClock(clock_);
    context_->setProcessingTimeService(processingTime_.get());
    context_->setMailboxExecutor(&mailbox_);
    context_->setRestored(std::move(restored));
    operator_->setup(context_.get(), &metrics_);
    if (!node_.isSink) operator_->setOutput(&output_);
    for (auto& [index, capture] : sideOutputs_) operator_->addSideOutput(index, capture->wrap());
  }

  template <class IN>
  static detail::Output<IN>& typedInput(detail::OutputBase* input, const char* which) {
    auto* typed = dynamic_cast<detail::Output<IN>*>(input);
    if (typed == nullptr)
      throw std::invalid_argument(std::string("OperatorHarness: the operator has no ") + which +
                                  " input of the record type given");
    return *typed;
  }
  template <class IN>
  static void feed(detail::Output<IN>& input, std::vector<IN> records, std::vector<int64_t> timestamps) {
    if (!timestamps.empty() && timestamps.size() != records.size())
      throw std::invalid_argument("OperatorHarness: a batch needs a timestamp for every record or none");
    input.processBatch(std::span<IN>(records), detail::Timestamps(timestamps));
  }
  void inputWatermark(int64_t& input, int64_t watermark) {
    input = watermark;
    int64_t combined = std::min(watermark1_, watermark2_);
    if (combined <= combined_) return;
    combined_ = combined;
    operator_->input()->processWatermark(combined);
  }

  std::shared_ptr<detail::GraphBuilder> graph_;  // keeps node_ alive
  detail::Transformation& node_;
  HarnessOptions options_;
  std::shared_ptr<ManualClock> clock_;
  detail::TaskMetrics metrics_;
  HarnessMailbox mailbox_;
  CapturingOutput<OUT> output_;
  std::vector<std::pair<int, std::unique_ptr<SideCaptureBase>>> sideOutputs_;
  std::unique_ptr<RuntimeContext> context_;
  std::unique_ptr<detail::ProcessingTimeService> processingTime_;
  std::unique_ptr<detail::StreamOperator> operator_;
  bool opened_ = false;
  int64_t checkpointId_ = 0;
  int64_t watermark1_ = std::numeric_limits<int64_t>::min();
  int64_t watermark2_ = std::numeric_limits<int64_t>::min();
  int64_t combined_ = std::numeric_limits<int64_t>::min();
};

// Flink's ProcessFunctionTestHarnesses: a harness around one function.
struct ProcessFunctionTestHarnesses {
  // A ProcessFunction<IN, OUT> (or, naming OUT, a lambda that process<OUT> takes).
  template <class IN, class OUT = void, class F>
  static auto forProcessFunction(F function, HarnessOptions options = {}) {
    StreamExecutionEnvironment env;
    auto stream = env.fromCollection(std::vector<IN>{}).template process<OUT>(std::move(function));
    return OperatorHarness<typename decltype(stream)::Type>(stream, std::move(options));
  }
  // A KeyedProcessFunction<K, IN, OUT> on records keyed by `keySelector`.
  template <class IN, class OUT = void, class F, class KeySelector>
  static auto forKeyedProcessFunction(F function, KeySelector keySelector, HarnessOptions options = {}) {
    StreamExecutionEnvironment env;
    auto stream =
        env.fromCollection(std::vector<IN>{}).keyBy(std::move(keySelector)).template process<OUT>(std::move(function));
    return OperatorHarness<typename decltype(stream)::Type>(stream, std::move(options));
  }
};

}  // namespace weir::test
