#pragma once

#include <algorithm>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "weir/co_process_function.h"
#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/keyed_function_operator.h"
#include "weir/detail/operators/second_input.h"
#include "weir/output_tag.h"
#include "weir/state_descriptor.h"
#include "weir/windows.h"
#include "weir/keyed_process_function.h"

namespace weir::detail {

// Fills in the context an interval join's ProcessJoinFunction sees (its fields are
// private to the public API).
class JoinContextAccess {
 public:
  template <class JoinContext, class KeyedContext>
  static void set(JoinContext& ctx, int64_t left, int64_t right, KeyedContext& keyed) {
    ctx.left_ = left;
    ctx.right_ = right;
    ctx.sideOutputs_ = keyed.sideOutputs_;
  }
};

// The bounds of an interval join (IntervalJoined::process), both inclusive once
// lowerBoundExclusive() / upperBoundExclusive() moved them.
struct IntervalJoinBounds {
  int64_t lower;
  int64_t upper;
};

// An interval join as a KeyedCoProcessFunction (as Flink's IntervalJoinOperator): each
// side keeps its records per key in map state by timestamp; a record is matched against
// the other side's buffer, and dropped from its own once the watermark passed the last
// time a partner could have: left t + max(upper, 0), right t + max(-lower, 0).
template <class K, class IN1, class IN2, class F>
class IntervalJoinFunction final : public KeyedCoProcessFunction<K, IN1, IN2, typename F::OutputType> {
  using OUT = typename F::OutputType;
  using Base = KeyedCoProcessFunction<K, IN1, IN2, OUT>;
  static_assert(!std::is_base_of_v<CheckpointedFunction, F>,
                "intervalJoin(...).process(f): f cannot be a CheckpointedFunction; keep its state in keyed state");

 public:
  IntervalJoinFunction(F fn, IntervalJoinBounds bounds, std::optional<OutputTag<IN1>> leftLate,
                       std::optional<OutputTag<IN2>> rightLate)
      : fn_(std::move(fn)), bounds_(bounds), leftLate_(std::move(leftLate)), rightLate_(std::move(rightLate)) {}

  // Where dropped late records are counted: the subtask's count and the operator's.
  void countLateRecordsIn(std::atomic<uint64_t>* subtask, std::atomic<uint64_t>* own) {
    lateRecords_ = subtask;
    ownLateRecords_ = own;
  }

  void open() override {
    RuntimeContext& context = this->getRuntimeContext();
    left_ = &context.getMapState(MapStateDescriptor<int64_t, std::vector<IN1>>("_interval_join_left"));
    right_ = &context.getMapState(MapStateDescriptor<int64_t, std::vector<IN2>>("_interval_join_right"));
    openFunction(fn_, &context);
  }
  void close() override { closeFunction(fn_); }

  void processElement1(const IN1& left, typename Base::Context& ctx, Collector<OUT>& out) override {
    int64_t t = timestampOf(ctx);
    processSide<true>(left, t, *left_, *right_, leftLate_, saturatingAdd(t, bounds_.lower),
                      saturatingAdd(t, bounds_.upper), leftRetention(), ctx, out);
  }
  void processElement2(const IN2& right, typename Base::Context& ctx, Collector<OUT>& out) override {
    int64_t t = timestampOf(ctx);
    processSide<false>(right, t, *right_, *left_, rightLate_, saturatingSub(t, bounds_.upper),
                       saturatingSub(t, bounds_.lower), rightRetention(), ctx, out);
  }
  void onTimer(int64_t time, typename Base::OnTimerContext&, Collector<OUT>&) override {
    evict(*left_, time, leftRetention());
    evict(*right_, time, rightRetention());
  }

 private:
  int64_t leftRetention() const { return std::max<int64_t>(bounds_.upper, 0); }
  int64_t rightRetention() const { return bounds_.lower >= 0 ? 0 : saturatingSub(0, bounds_.lower); }
  static int64_t saturatingSub(int64_t a, int64_t b) {
    __int128 d = static_cast<__int128>(a) - b;
    if (d > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
    if (d < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(d);
  }
  // When a record at `t` leaves its buffer: once the watermark reaches t + retention, as
  // Flink's IntervalJoinOperator (its cleanup timer fires at that watermark). A partner
  // at exactly that time is not late yet, but Flink has dropped the record: no pair.
  static int64_t cleanupTime(int64_t t, int64_t retention) { return saturatingAdd(t, retention); }

  static int64_t timestampOf(typename Base::Context& ctx) {
    if (!ctx.timestamp())
      throw Error(ErrorCode::kInvalidArgument,
                  "an interval join needs timestamps on both inputs: give their sources a WatermarkStrategy "
                  "with withTimestampAssigner");
    return *ctx.timestamp();
  }
  static bool isLate(int64_t t, typename Base::Context& ctx) { return t < ctx.timerService().currentWatermark(); }

  // Too late for any partner: to the side output if the user asked, else counted.
  template <class X>
  void dropLate(const X& record, const std::optional<OutputTag<X>>& tag, typename Base::Context& ctx) {
    if (tag) ctx.output(*tag, record);
    else if (lateRecords_ != nullptr) {
      lateRecords_->fetch_add(1, std::memory_order_relaxed);
      ownLateRecords_->fetch_add(1, std::memory_order_relaxed);
    }
  }

  template <class X>
  static void add(MapState<int64_t, std::vector<X>>& buffer, int64_t t, const X& record) {
    std::vector<X> records = buffer.get(t).value_or(std::vector<X>{});
    records.push_back(record);
    buffer.put(t, std::move(records));
  }

  template <class X>
  static void evict(MapState<int64_t, std::vector<X>>& buffer, int64_t time, int64_t retention) {
    std::vector<int64_t> expired;
    for (int64_t t : buffer.keys())
      if (cleanupTime(t, retention) <= time) expired.push_back(t);
    for (int64_t t : expired) buffer.remove(t);
  }

  // A record of one side at time t: buffered, joined with the other side's records
  // from `from` to `to`, and evicted after `retention` (Flink's processElement).
  template <bool kLeft, class Own, class Other>
  void processSide(const Own& record, int64_t t, MapState<int64_t, std::vector<Own>>& own,
                   MapState<int64_t, std::vector<Other>>& other, const std::optional<OutputTag<Own>>& lateTag,
                   int64_t from, int64_t to, int64_t retention, typename Base::Context& ctx, Collector<OUT>& out) {
    if (isLate(t, ctx)) return dropLate(record, lateTag, ctx);
    add(own, t, record);
    for (const auto& [time, partners] : other.entries()) {
      if (time < from || time > to) continue;
      for (const Other& partner : partners) {
        if constexpr (kLeft) emit(record, partner, t, time, ctx, out);
        else emit(partner, record, time, t, ctx, out);
      }
    }
    ctx.timerService().registerEventTimeTimer(cleanupTime(t, retention));
  }

  void emit(const IN1& left, const IN2& right, int64_t leftTime, int64_t rightTime, typename Base::Context& ctx,
            Collector<OUT>& out) {
    typename F::Context joinCtx;
    JoinContextAccess::set(joinCtx, leftTime, rightTime, ctx);
    out.setTimestamp(true, joinCtx.getTimestamp());
    fn_.processElement(left, right, joinCtx, out);
    out.setTimestamp(true, *ctx.timestamp());
  }

  F fn_;
  IntervalJoinBounds bounds_;
  std::optional<OutputTag<IN1>> leftLate_;
  std::optional<OutputTag<IN2>> rightLate_;
  MapState<int64_t, std::vector<IN1>>* left_ = nullptr;
  MapState<int64_t, std::vector<IN2>>* right_ = nullptr;
  std::atomic<uint64_t>* lateRecords_ = nullptr;
  std::atomic<uint64_t>* ownLateRecords_ = nullptr;
};

}  // namespace weir::detail
