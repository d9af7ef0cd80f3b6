// expect: connect(...).map(f): f must derive from CoMapFunction<IN1, IN2, OUT>
#include "weir/weir.h"
struct OnlyOne {
  using OutputType = int;
  int map1(const int& v) { return v; }
};
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).connect(env.fromElements(std::string("a"))).map(OnlyOne{});
}
