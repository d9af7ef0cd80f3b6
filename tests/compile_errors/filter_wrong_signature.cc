// expect: filter(f): f must be callable as bool f(const T&)
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).filter([](int a, int b) { return a < b; });
}
