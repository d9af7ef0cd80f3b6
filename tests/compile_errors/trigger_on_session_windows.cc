// expect: trigger(): session windows take their default trigger only, for now
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2)
      .keyBy([](int v) { return v; })
      .window(weir::EventTimeSessionWindows::withGap(std::chrono::seconds(1)))
      .trigger(weir::CountTrigger::of(2));
}
