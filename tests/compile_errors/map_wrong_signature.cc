// expect: map(f): f must be callable as OUT f(const T&)
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).map([](const std::string& s) { return s.size(); });
}
