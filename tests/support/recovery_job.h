// The job the recovery tests run and the check of its output: keyed counts with
// event-time timers, tumbling, sliding and session windows and a rolling reduce over
// generated events, into an exactly-once sink by two-phase commit (TransactionalSink);
// check() compares what the sink committed with a brute force over the input.
// tests/recovery/recovery_test.cc and fault_injection_test.cc share it.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/async_lookup.h"
#include "weir/weir.h"

namespace weir::test {

using namespace std::chrono_literals;

constexpr int64_t kKeys = 97;
constexpr int64_t kWindow = 1000;  // a timer fires at the end of each key's 1000 ms window

struct Event {
  int64_t key = 0;
  int64_t time = 0;
};
WEIR_STRUCT(Event, key, time);
inline Event eventAt(int64_t i) { return Event{(i * 7919) % kKeys, i}; }

enum Kind : int32_t { kCount = 0, kTimer = 1, kWindowResult = 2, kSessionResult = 3, kSlidingResult = 4, kRolling = 5 };
struct Out {
  int64_t key = 0;
  int64_t value = 0;  // kCount: the key's count so far; kTimer: its time; window or session: records
  int32_t kind = kCount;
  int64_t window = 0;  // a window's or session's last timestamp
  bool operator==(const Out&) const = default;
};
WEIR_STRUCT(Out, key, value, kind, window);

// Throws at the records whose global sequence number (over all attempts) is listed; or,
// spaced by checkpoints (resetAfterCheckpoints), `gaps[i]` records after a checkpoint
// completed since failure i - 1, so that each restart restores a checkpoint the failed
// attempt took, however slow the machine. (Under ThreadSanitizer an attempt starts its
// threads so slowly that failures at fixed records can all come before any checkpoint.)
struct Failures {
  static constexpr int64_t kNone = -1, kClaimed = -2;  // values of `due` that are not records
  static inline std::atomic<int64_t> processed{0};
  static inline std::vector<int64_t> at;
  static inline std::atomic<int> thrown{0};
  static inline std::vector<int64_t> gaps;
  static inline std::atomic<int64_t> due{kNone};            // the record of the next spaced failure
  static inline std::atomic<int64_t> newestCompleted{0};    // the newest checkpoint reported complete
  static inline std::atomic<int64_t> completedAtFailure{0};  // newestCompleted at the last failure
  static void reset(std::vector<int64_t> positions) {
    processed = 0;
    thrown = 0;
    at = std::move(positions);
    std::sort(at.begin(), at.end());
    gaps.clear();
    due = kNone;
    newestCompleted = 0;
    completedAtFailure = 0;
  }
  static void resetAfterCheckpoints(std::vector<int64_t> spacing) {
    reset({});
    gaps = std::move(spacing);
  }
  static void maybeThrow() {
    int64_t k = processed.fetch_add(1);
    if (std::binary_search(at.begin(), at.end(), k)) fail(k);
    int64_t d = due.load();
    if (d >= 0 && k >= d && due.compare_exchange_strong(d, kClaimed)) {
      completedAtFailure = newestCompleted.load();
      due = kNone;  // after completedAtFailure: no checkpoint older than it schedules the next
      fail(k);
    }
  }
  // A subtask was told checkpoint `id` completed (CountWithTimers).
  static void onCheckpointComplete(int64_t id) {
    int64_t seen = newestCompleted.load();
    while (id > seen && !newestCompleted.compare_exchange_weak(seen, id)) {
    }
    const int next = thrown.load();
    if (id <= completedAtFailure.load() || next >= static_cast<int>(gaps.size())) return;
    int64_t none = kNone;
    due.compare_exchange_strong(none, processed.load() + gaps[static_cast<size_t>(next)]);
  }

 private:
  [[noreturn]] static void fail(int64_t k) {
    ++thrown;
    throw std::runtime_error("injected failure at record " + std::to_string(k));
  }
};

struct CountWithTimers : KeyedProcessFunction<int64_t, Event, Out>, CheckpointListener {
  void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement(const Event& e, Context& ctx, Collector<Out>& out) override {
    Failures::maybeThrow();
    int64_t count = *count_->value() + 1;
    count_->update(count);
    out.collect({e.key, count, kCount, 0});
    ctx.timerService().registerEventTimeTimer((e.time / kWindow + 1) * kWindow - 1);
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<Out>& out) override {
    out.collect({ctx.getCurrentKey(), time, kTimer, 0});
  }
  void notifyCheckpointComplete(int64_t id) override { Failures::onCheckpointComplete(id); }

 private:
  ValueState<int64_t>* count_ = nullptr;
};

// Rules on a broadcast stream that flows all along: every subtask keeps the newest
// rule number per key in broadcast state; the events pass on unchanged.
struct Rule {
  int64_t key = 0;
  int64_t number = 0;
};
WEIR_STRUCT(Rule, key, number);
inline Rule ruleAt(int64_t i) { return Rule{i % kKeys, i}; }
inline const MapStateDescriptor<int64_t, int64_t> kRuleState("rules");

struct PassWithRules : KeyedBroadcastProcessFunction<int64_t, Event, Rule, Event> {
  void processElement(const Event& e, ReadOnlyContext&, Collector<Event>& out) override { out.collect(e); }
  void processBroadcastElement(const Rule& r, Context& ctx, Collector<Event>&) override {
    ctx.getBroadcastState(kRuleState).put(r.key, r.number);
  }
};

// What the sinks made visible, in order.
// The checkpoint a transaction was pre-committed at; TransactionalSink names them
// "<subtask>-<checkpoint id>".
inline int64_t checkpointOf(const std::string& transaction) {
  return std::stoll(transaction.substr(transaction.find('-') + 1));
}

struct Committed {
  std::mutex mutex;
  std::vector<Out> out;
  std::set<std::string> transactions;
  std::function<void()> onFinalNotification;  // a sink subtask was told the output is final
  void add(const std::vector<Out>& records) {
    std::lock_guard lock(mutex);
    out.insert(out.end(), records.begin(), records.end());
  }
  // Commits a transaction once, however often it is asked to (idempotent, as a
  // two-phase-commit sink's commit must be).
  void commit(const std::string& transaction, const std::vector<Out>& records) {
    std::lock_guard lock(mutex);
    if (transactions.insert(transaction).second) out.insert(out.end(), records.begin(), records.end());
  }

};

// An exactly-once sink by two-phase commit: what arrives between two barriers is one
// transaction, pre-committed into operator state at the second barrier and committed
// when that checkpoint completes (or again on restore, if the failure came first).
class TransactionalSink final : public Sink<Out> {
 public:
  // `sleepEvery` > 0: the writer sleeps 1 ms every `sleepEvery` records, so that it
  // back-pressures the job (32 does under a plain build; 8 under sanitizers too).
  explicit TransactionalSink(std::shared_ptr<Committed> committed, int sleepEvery = 0)
      : committed_(std::move(committed)), sleepEvery_(sleepEvery) {}
  std::unique_ptr<SinkWriter<Out>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(committed_, context.getIndexOfThisSubtask(), sleepEvery_);
  }

 private:
  using Transaction = std::pair<std::string, std::vector<Out>>;

  static std::string encode(const Transaction& t) {
    std::string s = t.first;
    for (const Out& o : t.second)
      s += "|" + std::to_string(o.key) + "," + std::to_string(o.value) + "," + std::to_string(o.kind) + "," +
           std::to_string(o.window);
    return s;
  }
  static Transaction decode(const std::string& s) {
    Transaction t;
    std::stringstream in(s);
    std::getline(in, t.first, '|');
    for (std::string part; std::getline(in, part, '|');) {
      Out o;
      char c;
      std::stringstream(part) >> o.key >> c >> o.value >> c >> o.kind >> c >> o.window;
      t.second.push_back(o);
    }
    return t;
  }

  class Writer final : public SinkWriter<Out>, public CheckpointedFunction, public CheckpointListener {
   public:
    Writer(std::shared_ptr<Committed> committed, int subtask, int sleepEvery)
        : committed_(std::move(committed)), subtask_(subtask), sleepEvery_(sleepEvery) {}
    void write(const Out& r) override {
      pending_.push_back(r);
      if (sleepEvery_ > 0 && ++written_ % sleepEvery_ == 0) std::this_thread::sleep_for(1ms);
    }
    // The rest goes into the next transaction: the final notification commits it, or
    // a checkpoint taken after the end (others are still running) pre-commits it.
    void flush(bool endOfInput) override {
      if (endOfInput) preCommit(lastSnapshot_ + 1);
    }
    // Union state: every subtask sees every restored transaction, commits them all (a
    // repeat is ignored) and names its next ones after the newest. With a split list, a
    // subtask could restore only older ones and reuse a name the first run committed (a
    // checkpoint's barrier may overtake the previous one's completion notice).
    void initializeState(FunctionInitializationContext& context) override {
      state_ = &context.getOperatorStateStore().getUnionListState(ListStateDescriptor<std::string>("transactions"));
      for (const auto& s : state_->get()) {
        Transaction t = decode(s);
        committed_->commit(t.first, t.second);
        // Names go on from the restored checkpoint's ids, so they stay unique.
        lastSnapshot_ = std::max(lastSnapshot_, checkpointOf(t.first));
      }
      state_->clear();
    }
    void snapshotState(const FunctionSnapshotContext& context) override {
      lastSnapshot_ = context.getCheckpointId();
      preCommit(lastSnapshot_);
      std::vector<std::string> encoded;
      for (const auto& [id, t] : open_) encoded.push_back(encode(t));
      state_->update(std::move(encoded));
    }
    void notifyCheckpointComplete(int64_t id) override {
      while (!open_.empty() && open_.begin()->first <= id) {
        committed_->commit(open_.begin()->second.first, open_.begin()->second.second);
        open_.erase(open_.begin());
      }
      // The final notification names a checkpoint after every one this writer took.
      if (id > lastSnapshot_ && committed_->onFinalNotification) committed_->onFinalNotification();
    }

   private:
    std::string name(int64_t id) const { return std::to_string(subtask_) + "-" + std::to_string(id); }
    void preCommit(int64_t id) {
      auto& t = open_[id];
      t.first = name(id);
      t.second.insert(t.second.end(), pending_.begin(), pending_.end());
      pending_.clear();
    }

    std::shared_ptr<Committed> committed_;
    int subtask_;
    ListState<std::string>* state_ = nullptr;
    std::vector<Out> pending_;
    std::map<int64_t, Transaction> open_;  // pre-committed, by checkpoint id
    int64_t lastSnapshot_ = 0;
    int sleepEvery_;
    int64_t written_ = 0;
  };
  std::shared_ptr<Committed> committed_;
  int sleepEvery_;
};

// Makes every record visible at once (what a plain sink does).
class ImmediateSink final : public Sink<Out> {
 public:
  explicit ImmediateSink(std::shared_ptr<Committed> committed) : committed_(std::move(committed)) {}
  std::unique_ptr<SinkWriter<Out>> createWriter(RuntimeContext&) const override {
    struct Writer final : SinkWriter<Out> {
      std::shared_ptr<Committed> committed;
      void write(const Out& r) override {
        std::vector<Out> one{r};
        committed->add(one);
      }
    };
    auto w = std::make_unique<Writer>();
    w->committed = committed_;
    return w;
  }

 private:
  std::shared_ptr<Committed> committed_;
};

// The checker: each key's counts must be exactly 1, 2, ..., n(key) in order, each
// (key, window) that has records must fire its timer exactly once, and each tumbling
// window's count must come exactly once and be right.
struct Verdict {
  int64_t duplicates = 0;  // a count, timer or window result seen again
  int64_t losses = 0;      // a count, timer or window result never seen
  int64_t wrong = 0;       // a count not the previous + 1 or past the key's records, or a wrong window count
  std::map<int32_t, int64_t> duplicatesOfKind;  // by Kind
  std::vector<std::pair<size_t, Out>> firstDuplicates, firstWrong;  // (position in the output, record)
  bool exact() const { return duplicates == 0 && losses == 0 && wrong == 0; }
  void duplicate(size_t position, const Out& o) {
    ++duplicates;
    ++duplicatesOfKind[o.kind];
    if (firstDuplicates.size() < 3) firstDuplicates.emplace_back(position, o);
  }
  void wrongOne(size_t position, const Out& o) {
    ++wrong;
    if (firstWrong.size() < 3) firstWrong.emplace_back(position, o);
  }
};

inline std::ostream& operator<<(std::ostream& os, const Verdict& v) {
  static const char* const kNames[] = {"counts", "timers", "windows", "sessions", "sliding", "rolling"};
  os << v.duplicates << " duplicates";
  if (!v.duplicatesOfKind.empty()) {
    const char* separator = " (";
    for (const auto& [kind, count] : v.duplicatesOfKind) {
      os << separator << kNames[kind] << " " << count;
      separator = ", ";
    }
    os << ")";
  }
  os << ", " << v.losses << " losses, " << v.wrong << " wrong";
  auto print = [&](const char* what, const std::vector<std::pair<size_t, Out>>& records) {
    for (const auto& [position, o] : records)
      os << "; " << what << " " << kNames[o.kind] << " key " << o.key << " value " << o.value << " window "
         << o.window << " at " << position;
  };
  print("duplicate", v.firstDuplicates);
  print("wrong", v.firstWrong);
  return os;
}

inline int64_t windowOf(int64_t time) { return (time / kWindow + 1) * kWindow - 1; }

// Sessions per key: a key's records are kKeys ms apart; a gap of kKeys joins them (the
// windows touch) except in every third second, where each record is a session alone.
inline int64_t sessionGap(int64_t time) { return (time / kWindow) % 3 == 2 ? kKeys - 10 : kKeys; }

// (key, session's last timestamp) -> records, by the definition of sessions.
inline std::map<std::pair<int64_t, int64_t>, int64_t> expectedSessions(int64_t n) {
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> sessions;  // key -> [start, end) in order
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;                  // (key, start) -> records
  for (int64_t i = 0; i < n; ++i) {  // each key's records come in time order
    Event e = eventAt(i);
    auto& list = sessions[e.key];
    int64_t end = e.time + sessionGap(e.time);
    if (!list.empty() && e.time <= list.back().second) {
      list.back().second = std::max(list.back().second, end);
      ++counts[{e.key, list.back().first}];
    } else {
      list.push_back({e.time, end});
      ++counts[{e.key, e.time}];
    }
  }
  std::map<std::pair<int64_t, int64_t>, int64_t> expected;
  for (auto& [key, list] : sessions)
    for (auto& [start, end] : list) expected[{key, end - 1}] = counts[{key, start}];
  return expected;
}

inline Verdict check(const std::vector<Out>& out, int64_t n) {
  std::map<int64_t, int64_t> expectedCount;
  std::map<std::pair<int64_t, int64_t>, int64_t> expectedWindows;  // (key, window) -> records
  std::map<std::pair<int64_t, int64_t>, int64_t> expectedSliding;  // (key, window) -> records
  for (int64_t i = 0; i < n; ++i) {
    Event e = eventAt(i);
    ++expectedCount[e.key];
    ++expectedWindows[{e.key, windowOf(e.time)}];
    // Sliding windows of 2 kWindow every kWindow: the record's tumbling window's end, and
    // the next one's.
    ++expectedSliding[{e.key, windowOf(e.time)}];
    ++expectedSliding[{e.key, windowOf(e.time) + kWindow}];
  }
  auto expectedSessionCounts = expectedSessions(n);
  Verdict v;
  std::map<int64_t, int64_t> last, lastRolling;
  std::map<int64_t, std::set<int64_t>> seen, seenRolling;
  std::set<std::pair<int64_t, int64_t>> timers, windows, sessions, sliding;
  for (size_t i = 0; i < out.size(); ++i) {
    const Out& o = out[i];
    if (o.kind == kTimer) {
      if (!timers.insert({o.key, o.value}).second) v.duplicate(i, o);
      continue;
    }
    if (o.kind == kWindowResult) {
      if (!windows.insert({o.key, o.window}).second) v.duplicate(i, o);
      else if (expectedWindows[{o.key, o.window}] != o.value) v.wrongOne(i, o);
      continue;
    }
    if (o.kind == kSlidingResult) {
      if (!sliding.insert({o.key, o.window}).second) v.duplicate(i, o);
      else if (expectedSliding[{o.key, o.window}] != o.value) v.wrongOne(i, o);
      continue;
    }
    if (o.kind == kSessionResult) {
      if (!sessions.insert({o.key, o.window}).second) v.duplicate(i, o);
      else if (expectedSessionCounts[{o.key, o.window}] != o.value) v.wrongOne(i, o);
      continue;
    }
    auto& seenOfKind = o.kind == kRolling ? seenRolling : seen;
    auto& lastOfKind = o.kind == kRolling ? lastRolling : last;
    if (!seenOfKind[o.key].insert(o.value).second) {
      v.duplicate(i, o);
    } else if (o.value != lastOfKind[o.key] + 1 || o.value > expectedCount[o.key]) {
      v.wrongOne(i, o);  // out of sequence, or beyond the key's records (some counted twice)
    }
    lastOfKind[o.key] = std::max(lastOfKind[o.key], o.value);
  }
  // A loss is a record whose count never showed (the key's final count falls short).
  for (const auto& [key, count] : expectedCount) {
    v.losses += std::max<int64_t>(0, count - last[key]);
    v.losses += std::max<int64_t>(0, count - lastRolling[key]);
  }
  for (const auto& [kw, count] : expectedWindows) {
    v.losses += timers.count(kw) == 0 ? 1 : 0;
    v.losses += windows.count(kw) == 0 ? 1 : 0;
  }
  for (const auto& [kw, count] : expectedSessionCounts) v.losses += sessions.count(kw) == 0 ? 1 : 0;
  for (const auto& [kw, count] : expectedSliding) v.losses += sliding.count(kw) == 0 ? 1 : 0;
  return v;
}

// Stamps a window's result with the window (its timestamp is the window's last one).
// The tumbling windows keep their records (on RocksDB: a ListState per window) and
// count them when they fire.
struct CountRecords : ProcessWindowFunction<Out, Out, int64_t> {
  void process(const int64_t& key, Context&, std::span<const Out> records, Collector<Out>& out) override {
    int64_t count = 0;
    for (const Out& o : records) count += o.value;
    out.collect({key, count, kWindowResult, 0});
  }
};

struct StampWindow : ProcessFunction<Out, Out> {
  void processElement(const Out& o, Context& ctx, Collector<Out>& out) override {
    Out stamped = o;
    stamped.window = *ctx.timestamp();
    out.collect(stamped);
  }
};

// What the job has besides its keyed counts and windows (see addJob).
enum class Extra {
  kNone,
  kRefuseSnapshots,
  kProbeOverlap,
  kBroadcastRules,
  kHoldUntilACheckpoint,
  kAsyncLookup,  // the events pass through async I/O (unordered), answered out of order by a pool
};

// Refuses every third snapshot (a snapshotState that throws declines the checkpoint).
struct ThrowingSnapshot : RichMapFunction<Event, Event>, CheckpointedFunction {
  static inline std::atomic<int> snapshots{0};
  Event map(const Event& e) override { return e; }
  void initializeState(FunctionInitializationContext&) override {}
  void snapshotState(const FunctionSnapshotContext&) override {
    if (++snapshots % 3 == 2) throw std::runtime_error("snapshot refused");
  }
};

// Counts the snapshots a subtask took while an earlier checkpoint had not yet been
// reported to it as complete or aborted: checkpoints in progress at once.
struct OverlapProbe : RichMapFunction<Event, Event>, CheckpointedFunction, CheckpointListener {
  static inline std::atomic<int> overlapping{0};
  int64_t lastSnapshot = 0, lastReported = 0;
  Event map(const Event& e) override { return e; }
  void initializeState(FunctionInitializationContext&) override {}
  void snapshotState(const FunctionSnapshotContext& ctx) override {
    if (lastSnapshot > lastReported) ++overlapping;
    lastSnapshot = ctx.getCheckpointId();
  }
  void notifyCheckpointComplete(int64_t id) override { lastReported = std::max(lastReported, id); }
  void notifyCheckpointAborted(int64_t id) override { lastReported = std::max(lastReported, id); }
};

// Once its subtask took a snapshot, holds the records until `checkpointCompleted()`
// (at most a minute): the input cannot end before a checkpoint completes, however slow
// the machine (ThreadSanitizer, a busy disk). Its subtask acknowledged the snapshot
// before the next record, so the checkpoint does not wait for it.
struct HoldUntilACheckpoint : RichMapFunction<Event, Event>, CheckpointedFunction {
  static inline std::function<bool()> checkpointCompleted;  // set before the job runs
  bool snapshotted = false, held = false;
  Event map(const Event& e) override {
    if (!snapshotted || held) return e;
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!checkpointCompleted() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    held = true;
    return e;
  }
  void initializeState(FunctionInitializationContext&) override {}
  void snapshotState(const FunctionSnapshotContext&) override { snapshotted = true; }
};

// The job under test: per key a count and a timer per window (CountWithTimers), and
// each key's records per tumbling window, both into `sink`.
template <class S>
DataStream<Event> addJob(StreamExecutionEnvironment& env, int64_t n, double rate, S sink, Extra extra = Extra::kNone,
                         int sinkParallelism = 0) {
  auto source = env.fromSource(DataGeneratorSource(eventAt, n, RateLimiterStrategy::perSecond(rate)),
                               WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                                   [](const Event& e) { return e.time; }),
                               "events");
  DataStream<Event> events = source;
  if (extra == Extra::kRefuseSnapshots) events = source.map(ThrowingSnapshot{});
  if (extra == Extra::kProbeOverlap) events = source.map(OverlapProbe{});
  if (extra == Extra::kHoldUntilACheckpoint) events = source.map(HoldUntilACheckpoint{});
  if (extra == Extra::kAsyncLookup)
    // 16 threads answering after 0-2 ms: about 16,000 answers a second per subtask, so
    // the operator is near its capacity of 64 whenever a checkpoint is taken.
    events = AsyncDataStream::unorderedWait(
        source, answerLater<Event, Event>([](const Event& e) { return e; }, 16, 2000), 60s, 64);
  if (extra == Extra::kBroadcastRules) {
    // One rule for every 20 events, at most 2,000 a second: still flowing while the
    // checkpoints are taken, so some are queued when the operator is back-pressured.
    const double perSecond = std::min(rate, 40000.0) / 20;
    auto rules = env.fromSource(DataGeneratorSource(ruleAt, n / 20, RateLimiterStrategy::perSecond(perSecond)),
                                WatermarkStrategy<Rule>::noWatermarks(), "rules")
                     .broadcast(kRuleState);
    events = source.keyBy([](const Event& e) { return e.key; }).connect(rules).process(PassWithRules{});
  }
  auto counts = events.keyBy([](const Event& e) { return e.key; }).process(CountWithTimers{});
  auto windows = events.map([](const Event& e) { return Out{e.key, 1, kWindowResult, 0}; })
                     .keyBy([](const Out& o) { return o.key; })
                     .window(TumblingEventTimeWindows::of(std::chrono::milliseconds(kWindow)))
                     .process(CountRecords{})
                     .process(StampWindow{});
  auto sessions = events.map([](const Event& e) { return Out{e.key, 1, kSessionResult, e.time}; })
                      .keyBy([](const Out& o) { return o.key; })
                      .window(EventTimeSessionWindows::withDynamicGap(
                          [](const Out& o) { return sessionGap(o.window); }))
                      .allowedLateness(std::chrono::milliseconds(3 * kKeys))  // fired sessions live on a while
                      .reduce([](const Out& a, const Out& b) { return Out{a.key, a.value + b.value, kSessionResult, 0}; })
                      .process(StampWindow{});
  auto sliding = events.map([](const Event& e) { return Out{e.key, 1, kSlidingResult, 0}; })
                     .keyBy([](const Out& o) { return o.key; })
                     .window(SlidingEventTimeWindows::of(std::chrono::milliseconds(2 * kWindow),
                                                         std::chrono::milliseconds(kWindow)))
                     .reduce([](const Out& a, const Out& b) { return Out{a.key, a.value + b.value, kSlidingResult, 0}; })
                     .process(StampWindow{});
  // A rolling count per key (KeyedStream::reduce), like CountWithTimers' count.
  auto rolling = events.map([](const Event& e) { return Out{e.key, 1, kRolling, 0}; })
                     .keyBy([](const Out& o) { return o.key; })
                     .reduce([](const Out& a, const Out& b) { return Out{a.key, a.value + b.value, kRolling, 0}; });
  auto out = counts.unionWith(windows, sessions, sliding, rolling).sinkTo(std::move(sink));
  if (sinkParallelism > 0) out.setParallelism(sinkParallelism);
  return source;
}

// "heap", "rocksdb", or "rocksdb_incremental" (RocksDB with incremental checkpoints).
inline std::shared_ptr<StateBackend> backendNamed(const std::string& name) {
  if (name == "rocksdb_incremental") return std::make_shared<EmbeddedRocksDBStateBackend>(true);
  return stateBackendFromName(name);
}

}  // namespace weir::test
