// Session windows: a fixed gap or one per record, on event time and on processing time.
#include "golden/golden_windows.h"

namespace weir::golden {

namespace {

// withDynamicGap's extractor: the gap of the first rule whose "key" (and "value", if
// given) the record matches.
struct GapRules {
  struct Rule {
    std::optional<std::string> key;
    std::optional<int64_t> value;
    int64_t gap;
  };
  std::vector<Rule> rules;
  int64_t operator()(const Rec& r) const {
    for (const Rule& rule : rules)
      if ((!rule.key || *rule.key == r.first) && (!rule.value || *rule.value == r.second)) return rule.gap;
    return 0;  // no rule: a gap the operator refuses
  }
};

GapRules gapRules(const Json& assigner, const std::string& where) {
  const Json& list = field(assigner, "gaps", where);
  if (!list.is_array()) throw Malformed(where + ".gaps: must be an array of {\"key\", \"value\", \"gap\"}");
  GapRules rules;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + ".gaps[" + std::to_string(i) + "]";
    onlyKeys(list[i], {"key", "value", "gap"}, at);
    GapRules::Rule rule{std::nullopt, std::nullopt, integerField(list[i], "gap", at)};
    if (list[i].contains("key")) rule.key = stringField(list[i], "key", at);
    if (list[i].contains("value")) rule.value = integerField(list[i], "value", at);
    rules.rules.push_back(rule);
  }
  return rules;
}

}  // namespace

std::unique_ptr<GoldenOperator> makeSessionWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options) {
  const std::string type = stringField(spec.assigner, "type", spec.where + ".assigner");
  const std::string where = spec.where + ".assigner";
  const std::string trigger = triggerName(spec);
  if (type == "event_time_session") {
    onlyKeys(spec.assigner, {"type", "gap"}, where);
    auto windowed = keyedRecords().window(EventTimeSessionWindows::withGap(millis(spec.assigner, "gap", where)));
    if (trigger == "default") return finish<true, TimeWindow>(windowed, spec, options);
    if (trigger == "event_time") return finish<false, TimeWindow>(windowed.trigger(EventTimeTrigger::create()), spec, options);
    if (trigger == "purging event_time")
      return finish<false, TimeWindow>(windowed.trigger(PurgingTrigger<EventTimeTrigger>::of(EventTimeTrigger::create())),
                                       spec, options);
    if (trigger == "purging count")
      return finish<false, TimeWindow>(
          windowed.trigger(PurgingTrigger<CountTrigger>::of(CountTrigger::of(integerField(spec.trigger, "count", spec.where + ".trigger")))),
          spec, options);
    if (trigger == "continuous_event_time")
      return finish<false, TimeWindow>(
          windowed.trigger(ContinuousEventTimeTrigger::of(millis(spec.trigger, "interval", spec.where + ".trigger"))),
          spec, options);
  } else if (type == "dynamic_event_time_session") {
    onlyKeys(spec.assigner, {"type", "gaps"}, where);
    auto windowed = keyedRecords().window(EventTimeSessionWindows::withDynamicGap(gapRules(spec.assigner, where)));
    if (trigger == "default") return finish<false, TimeWindow>(windowed, spec, options);
  } else if (type == "processing_time_session") {
    onlyKeys(spec.assigner, {"type", "gap"}, where);
    auto windowed = keyedRecords().window(ProcessingTimeSessionWindows::withGap(millis(spec.assigner, "gap", where)));
    if (trigger == "default") return finish<false, TimeWindow>(windowed, spec, options);
  } else {
    return nullptr;
  }
  throw unregistered(spec);
}

}  // namespace weir::golden
