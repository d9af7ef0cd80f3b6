// expect: session windows merge, so t also needs void onMerge
#include "weir/weir.h"
// A trigger without onMerge cannot take session windows, which merge.
struct FireOnEveryRecord {
  template <class T, class W>
  weir::TriggerResult onElement(const T&, int64_t, const W&, weir::TriggerContext<W>&) {
    return weir::TriggerResult::FIRE;
  }
  template <class W>
  weir::TriggerResult onEventTime(int64_t, const W&, weir::TriggerContext<W>&) {
    return weir::TriggerResult::CONTINUE;
  }
  template <class W>
  weir::TriggerResult onProcessingTime(int64_t, const W&, weir::TriggerContext<W>&) {
    return weir::TriggerResult::CONTINUE;
  }
  template <class W>
  void clear(const W&, weir::TriggerContext<W>&) {}
};
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2)
      .keyBy([](int v) { return v; })
      .window(weir::EventTimeSessionWindows::withGap(std::chrono::seconds(1)))
      .trigger(FireOnEveryRecord{});
}
