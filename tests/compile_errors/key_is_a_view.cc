// expect: keyBy(f): return a key that owns its data
#include "weir/weir.h"
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements<std::string>("a").keyBy([](const std::string& s) { return std::string_view(s); });
}
