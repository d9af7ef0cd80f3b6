// Keyed window operators for the golden cases: the window functions a case names, and
// how a WindowedStream is finished into an operator in a harness. Each
// golden_windows_*.cc instantiates the assigners and triggers it registers; every
// combination is a window operator the compiler builds, so only the ones cases use are
// registered (README.md lists them).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include "golden/golden.h"

namespace weir::golden {

// reduce: "sum" is Flink's SumReducer (the later record's key, the sum of the values);
// "max" keeps the largest value.
struct ReduceByName {
  std::string op;
  Rec operator()(const Rec& a, const Rec& b) const {
    if (op == "sum") return {b.first, a.second + b.second};
    return {b.first, std::max(a.second, b.second)};
  }
};

// aggregate: "sum" of the values or "count" of the records, as (key, result).
struct AggregateByName : AggregateFunction<Rec, Rec, Rec> {
  explicit AggregateByName(std::string o) : op(std::move(o)) {}
  std::string op;
  Rec createAccumulator() override { return {"", 0}; }
  Rec add(const Rec& value, Rec acc) override { return {value.first, acc.second + (op == "count" ? 1 : value.second)}; }
  Rec getResult(const Rec& acc) override { return acc; }
  Rec merge(Rec a, const Rec& b) override { return {a.first.empty() ? b.first : a.first, a.second + b.second}; }
};

// process (a ProcessWindowFunction), by mode:
//   "sum":            [key, sum of values]               (Flink's RichSumReducer)
//   "key_sum_window": ["<key>-<sum>", start, end]         (Flink's SessionWindowFunction)
//   "describe":       [key, start, end, count, sum]
//   "values":         [key, start, end, [values in the order the function gets them]]
// Behind aggregate, its one element is the aggregate's result.
template <class W>
struct WindowProcess : ProcessWindowFunction<Rec, Json, std::string, W> {
  using Context = typename ProcessWindowFunction<Rec, Json, std::string, W>::Context;
  explicit WindowProcess(std::string m) : mode(std::move(m)) {}
  std::string mode;
  bool opened = false;

  void open() override { opened = true; }
  void process(const std::string& key, Context& ctx, std::span<const Rec> elements, Collector<Json>& out) override {
    if (!opened) throw std::logic_error("the window function was called before open()");
    int64_t sum = 0;
    Json values = Json::array();
    for (const Rec& r : elements) {
      sum += r.second;
      values.push_back(r.second);
    }
    if (mode == "sum") return out.collect(Json::array({key, sum}));
    if constexpr (std::is_same_v<W, TimeWindow>) {
      const TimeWindow& w = ctx.window();
      if (mode == "key_sum_window") return out.collect(Json::array({key + "-" + std::to_string(sum), w.start, w.end}));
      if (mode == "describe")
        return out.collect(Json::array({key, w.start, w.end, static_cast<int64_t>(elements.size()), sum}));
      return out.collect(Json::array({key, w.start, w.end, values}));
    }
  }
};

// What "operator" says of a window.
struct WindowSpec {
  Json assigner;
  Json trigger;  // null: the assigner's default
  Json function;
  int64_t lateness = 0;
  std::optional<std::string> lateOutput;
  std::string where;
};

// The trigger's registry name: "default", or the type with "purging " in front.
std::string triggerName(const WindowSpec& spec);
// The error for an assigner and trigger that no golden_windows_*.cc registers.
Malformed unregistered(const WindowSpec& spec);
// Checks the function's names; `timeWindows`: whether the windows have a start and end.
void checkFunction(const WindowSpec& spec, bool allFunctions, bool timeWindows);

// windowed.allowedLateness(...).sideOutputLateData(...) then the function, in a harness.
// Registered with kAllFunctions, the combination takes every function; otherwise reduce
// and process only (each is one more window operator to compile).
template <bool kAllFunctions, class W, class Windowed>
std::unique_ptr<GoldenOperator> finish(Windowed windowed, const WindowSpec& spec, const test::HarnessOptions& options) {
  checkFunction(spec, kAllFunctions, std::is_same_v<W, TimeWindow>);
  windowed.allowedLateness(std::chrono::milliseconds(spec.lateness));
  std::optional<OutputTag<Rec>> tag;
  if (spec.lateOutput) {
    tag = recTag(*spec.lateOutput);
    windowed.sideOutputLateData(*tag);
  }
  auto harnessed = [&](auto stream) -> std::unique_ptr<GoldenOperator> {
    using OUT = typename decltype(stream)::Type;
    auto op = std::make_unique<HarnessedOperator<Rec, void, OUT>>(stream, options);
    if (tag) op->captureSideOutput(*spec.lateOutput, *tag);
    return op;
  };
  const Json& f = spec.function;
  if (f.contains("reduce")) return harnessed(windowed.reduce(ReduceByName{f["reduce"].get<std::string>()}));
  if constexpr (kAllFunctions) {
    if (f.contains("aggregate") && f.contains("process"))
      return harnessed(windowed.aggregate(AggregateByName(f["aggregate"].get<std::string>()),
                                          WindowProcess<W>(f["process"].get<std::string>())));
    if (f.contains("aggregate")) return harnessed(windowed.aggregate(AggregateByName(f["aggregate"].get<std::string>())));
  }
  return harnessed(windowed.process(WindowProcess<W>(f["process"].get<std::string>())));
}

// The window operators by assigner, split over files that compile in parallel; each
// returns null for an assigner that is not its own.
std::unique_ptr<GoldenOperator> makeTimeWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options);
std::unique_ptr<GoldenOperator> makeSessionWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options);
std::unique_ptr<GoldenOperator> makeGlobalWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options);

inline std::chrono::milliseconds millis(const Json& object, const char* name, const std::string& where) {
  return std::chrono::milliseconds(integerField(object, name, where));
}

}  // namespace weir::golden
