// expect: join(...).apply(f): f must be callable as OUT f(const IN1&, const IN2&)
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  auto key = [](int v) { return v; };
  env.fromElements(1, 2)
      .join(env.fromElements(3, 4))
      .where(key)
      .equalTo(key)
      .window(weir::TumblingEventTimeWindows::of(std::chrono::seconds(1)))
      .apply([](const std::string& a, int b) { return a.size() + b; });
}
