// expect: equalTo(f): f must return the same key type as where()'s selector
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2)
      .coGroup(env.fromElements(3, 4))
      .where([](int v) { return v; })
      .equalTo([](int v) { return std::to_string(v); });
}
