// expect: trigger(t): t needs TriggerResult onElement(const T&, int64_t, const W&, TriggerContext<W>&)
#include "weir/weir.h"
struct NotATrigger {
  weir::TriggerResult onElement(int) { return weir::TriggerResult::FIRE; }
};
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2)
      .keyBy([](int v) { return v; })
      .window(weir::GlobalWindows::create())
      .trigger(NotATrigger{});
}
