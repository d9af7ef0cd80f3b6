// expect: reduce(f): f must be callable as T f(const T& accumulated, const T& value)
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).keyBy([](int v) { return v; }).reduce([](int a) { return a; });
}
