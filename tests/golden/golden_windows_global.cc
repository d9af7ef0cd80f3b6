// GlobalWindows: one window per key that only a trigger fires.
#include "golden/golden_windows.h"

namespace weir::golden {

std::unique_ptr<GoldenOperator> makeGlobalWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options) {
  const std::string type = stringField(spec.assigner, "type", spec.where + ".assigner");
  if (type != "global") return nullptr;
  onlyKeys(spec.assigner, {"type"}, spec.where + ".assigner");
  const std::string trigger = triggerName(spec);
  const std::string at = spec.where + ".trigger";
  auto windowed = keyedRecords().window(GlobalWindows::create());
  if (trigger == "default") return finish<false, GlobalWindow>(windowed, spec, options);
  if (trigger == "count")
    return finish<false, GlobalWindow>(windowed.trigger(CountTrigger::of(integerField(spec.trigger, "count", at))), spec,
                                       options);
  if (trigger == "purging count")
    return finish<false, GlobalWindow>(
        windowed.trigger(PurgingTrigger<CountTrigger>::of(CountTrigger::of(integerField(spec.trigger, "count", at)))),
        spec, options);
  if (trigger == "continuous_event_time")
    return finish<false, GlobalWindow>(
        windowed.trigger(ContinuousEventTimeTrigger::of(millis(spec.trigger, "interval", at))), spec, options);
  throw unregistered(spec);
}

}  // namespace weir::golden
