// Keyed process functions with timers, and interval joins, for the golden cases.
#include <chrono>

#include "golden/golden.h"

namespace weir::golden {

namespace {

// A KeyedProcessFunction by "function" (README.md): the functions of Flink's
// KeyedProcessOperatorTest, over (key, value) records.
struct KeyedProcess : KeyedProcessFunction<std::string, Rec, Json> {
  std::string mode;
  TimeDomain domain = TimeDomain::EVENT_TIME;
  int64_t delay = 5;
  int64_t processingAt = 5;
  int64_t eventAt = 6;
  ValueState<int64_t>* seen = nullptr;

  void open() override {
    if (mode == "stateful_timer") seen = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("seen-element"));
  }

  // The current time of the function's domain: the watermark or the clock.
  int64_t now(Context& ctx) {
    return domain == TimeDomain::EVENT_TIME ? ctx.timerService().currentWatermark()
                                            : ctx.timerService().currentProcessingTime();
  }
  void registerTimer(Context& ctx, int64_t time) {
    if (domain == TimeDomain::EVENT_TIME) ctx.timerService().registerEventTimeTimer(time);
    else ctx.timerService().registerProcessingTimeTimer(time);
  }

  void processElement(const Rec& r, Context& ctx, Collector<Json>& out) override {
    if (ctx.getCurrentKey() != r.first) throw std::logic_error("the current key is not the record's");
    if (mode == "query_time") {
      std::string ts = ctx.timestamp() ? std::to_string(*ctx.timestamp()) : "null";
      out.collect(std::to_string(r.second) + "TIME:" + std::to_string(now(ctx)) + " TS:" + ts);
    } else if (mode == "echo_then_timer") {
      out.collect(r.second);
      registerTimer(ctx, now(ctx) + delay);
    } else if (mode == "stateful_timer") {
      out.collect("INPUT:" + std::to_string(r.second));
      seen->update(r.second);
      registerTimer(ctx, now(ctx) + delay);
    } else if (mode == "both_timers") {
      ctx.timerService().registerProcessingTimeTimer(processingAt);
      ctx.timerService().registerEventTimeTimer(eventAt);
    } else {  // timer_after_timestamp
      if (domain == TimeDomain::EVENT_TIME) {
        if (!ctx.timestamp()) throw std::logic_error("timer_after_timestamp needs records with timestamps");
        registerTimer(ctx, *ctx.timestamp() + delay);
      } else {
        registerTimer(ctx, now(ctx) + delay);
      }
    }
  }

  void onTimer(int64_t time, OnTimerContext& ctx, Collector<Json>& out) override {
    const bool event = ctx.timeDomain() == TimeDomain::EVENT_TIME;
    if (mode == "both_timers") return out.collect(event ? "EVENT:1777" : "PROC:1777");
    if (ctx.timeDomain() != domain) throw std::logic_error("a timer fired in the other time domain");
    if (mode == "echo_then_timer") return out.collect(1777);
    if (mode == "stateful_timer") return out.collect("STATE:" + std::to_string(seen->value().value_or(-1)));
    if (mode == "timer_after_timestamp") return out.collect(Json::array({ctx.getCurrentKey(), time}));
  }
};

// An interval join's function: "pair" emits [left, right]; "pair_with_timestamps"
// emits [left, right, left timestamp, right timestamp] as the context gives them.
struct JoinPairs : ProcessJoinFunction<Rec, Rec2, Json> {
  explicit JoinPairs(std::string m) : mode(std::move(m)) {}
  std::string mode;
  void processElement(const Rec& left, const Rec2& right, Context& ctx, Collector<Json>& out) override {
    if (mode == "pair") return out.collect(Json::array({toJson(left), toJson(right)}));
    out.collect(Json::array({toJson(left), toJson(right), ctx.getLeftTimestamp(), ctx.getRightTimestamp()}));
  }
};

TimeDomain domainOf(const Json& spec, const std::string& where) {
  std::string d = stringField(spec, "domain", where);
  if (d == "event_time") return TimeDomain::EVENT_TIME;
  if (d == "processing_time") return TimeDomain::PROCESSING_TIME;
  throw Malformed(where + ".domain: \"" + d + "\" is neither \"event_time\" nor \"processing_time\"");
}

}  // namespace

std::unique_ptr<GoldenOperator> makeKeyedProcessOperator(const Json& spec, const test::HarnessOptions& options) {
  const std::string where = "operator";
  onlyKeys(spec, {"kind", "function", "domain", "delay", "processing_at", "event_at"}, where);
  KeyedProcess fn;
  fn.mode = stringField(spec, "function", where);
  if (fn.mode == "both_timers") {
    if (spec.contains("processing_at")) fn.processingAt = integerField(spec, "processing_at", where);
    if (spec.contains("event_at")) fn.eventAt = integerField(spec, "event_at", where);
  } else if (fn.mode == "query_time" || fn.mode == "echo_then_timer" || fn.mode == "stateful_timer" ||
             fn.mode == "timer_after_timestamp") {
    fn.domain = domainOf(spec, where);
    if (spec.contains("delay")) fn.delay = integerField(spec, "delay", where);
  } else {
    throw Malformed(where + ".function: \"" + fn.mode +
                    "\" is not a keyed process function of the driver (query_time, echo_then_timer, stateful_timer, "
                    "both_timers, timer_after_timestamp)");
  }
  return std::make_unique<HarnessedOperator<Rec, void, Json>>(keyedRecords().process(fn), options);
}

std::unique_ptr<GoldenOperator> makeIntervalJoinOperator(const Json& spec, const test::HarnessOptions& options) {
  const std::string where = "operator";
  onlyKeys(spec,
           {"kind", "function", "lower", "upper", "lower_inclusive", "upper_inclusive", "left_late_output",
            "right_late_output"},
           where);
  std::string mode = spec.contains("function") ? stringField(spec, "function", where) : "pair";
  if (mode != "pair" && mode != "pair_with_timestamps")
    throw Malformed(where + ".function: \"" + mode + "\" is not an interval join function (pair, pair_with_timestamps)");
  auto flag = [&](const char* name) {
    if (!spec.contains(name)) return true;
    if (!spec[name].is_boolean()) throw Malformed(where + "." + name + ": must be true or false");
    return spec[name].get<bool>();
  };
  StreamExecutionEnvironment env;
  auto left = env.fromCollection(std::vector<Rec>{}).keyBy(KeyOf{});
  auto right = env.fromCollection(std::vector<Rec2>{}).keyBy(KeyOf{});
  auto joined = left.intervalJoin(right).between(std::chrono::milliseconds(integerField(spec, "lower", where)),
                                                 std::chrono::milliseconds(integerField(spec, "upper", where)));
  if (!flag("lower_inclusive")) joined.lowerBoundExclusive();
  if (!flag("upper_inclusive")) joined.upperBoundExclusive();
  std::optional<std::string> leftName, rightName;
  if (spec.contains("left_late_output")) {
    leftName = stringField(spec, "left_late_output", where);
    joined.sideOutputLeftLateData(recTag(*leftName));
  }
  if (spec.contains("right_late_output")) {
    rightName = stringField(spec, "right_late_output", where);
    joined.sideOutputRightLateData(rec2Tag(*rightName));
  }
  auto op = std::make_unique<HarnessedOperator<Rec, Rec2, Json>>(joined.process(JoinPairs(mode)), options);
  if (leftName) op->captureSideOutput(*leftName, recTag(*leftName));
  if (rightName) op->captureSideOutput(*rightName, rec2Tag(*rightName));
  return op;
}

}  // namespace weir::golden
