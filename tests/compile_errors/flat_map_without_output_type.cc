// expect: flatMap(f): name the output type, flatMap<OUT>(f)
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).flatMap([](const int& v, weir::Collector<int>& out) { out.collect(v); });
}
