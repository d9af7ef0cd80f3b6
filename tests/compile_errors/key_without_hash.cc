// expect: keyBy(f): the key type has no weir::KeyHash
#include "weir/weir.h"
struct Opaque {
  int x;
  bool operator==(const Opaque&) const = default;
};
int main() {
  weir::StreamExecutionEnvironment env;
  env.fromElements(1, 2).keyBy([](int v) { return Opaque{v}; });
}
