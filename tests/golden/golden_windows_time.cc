// Tumbling and sliding windows, on event time and on processing time.
#include "golden/golden_windows.h"

namespace weir::golden {

std::unique_ptr<GoldenOperator> makeTimeWindowOperator(const WindowSpec& spec, const test::HarnessOptions& options) {
  const std::string type = stringField(spec.assigner, "type", spec.where + ".assigner");
  const std::string where = spec.where + ".assigner";
  const std::string trigger = triggerName(spec);
  auto offset = [&] {
    return spec.assigner.contains("offset") ? millis(spec.assigner, "offset", where) : std::chrono::milliseconds(0);
  };
  if (type == "tumbling_event_time") {
    onlyKeys(spec.assigner, {"type", "size", "offset"}, where);
    auto windowed = keyedRecords().window(TumblingEventTimeWindows::of(millis(spec.assigner, "size", where), offset()));
    if (trigger == "default") return finish<true, TimeWindow>(windowed, spec, options);
    if (trigger == "purging event_time")
      return finish<false, TimeWindow>(windowed.trigger(PurgingTrigger<EventTimeTrigger>::of(EventTimeTrigger::create())),
                                       spec, options);
  } else if (type == "sliding_event_time") {
    onlyKeys(spec.assigner, {"type", "size", "slide", "offset"}, where);
    auto windowed = keyedRecords().window(
        SlidingEventTimeWindows::of(millis(spec.assigner, "size", where), millis(spec.assigner, "slide", where), offset()));
    if (trigger == "default") return finish<true, TimeWindow>(windowed, spec, options);
  } else if (type == "tumbling_processing_time") {
    onlyKeys(spec.assigner, {"type", "size", "offset"}, where);
    auto windowed =
        keyedRecords().window(TumblingProcessingTimeWindows::of(millis(spec.assigner, "size", where), offset()));
    if (trigger == "default") return finish<false, TimeWindow>(windowed, spec, options);
  } else if (type == "sliding_processing_time") {
    onlyKeys(spec.assigner, {"type", "size", "slide", "offset"}, where);
    auto windowed = keyedRecords().window(SlidingProcessingTimeWindows::of(
        millis(spec.assigner, "size", where), millis(spec.assigner, "slide", where), offset()));
    if (trigger == "default") return finish<false, TimeWindow>(windowed, spec, options);
  } else {
    return nullptr;
  }
  throw unregistered(spec);
}

}  // namespace weir::golden
