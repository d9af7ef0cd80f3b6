// expect: has no member named
// The non-broadcast side sees broadcast state read-only: writing it does not compile.
#include "weir/weir.h"

using namespace weir;

struct Rules : KeyedBroadcastProcessFunction<int, int, int, int> {
  MapStateDescriptor<int, int> rules{"rules"};
  void processElement(const int& v, ReadOnlyContext& ctx, Collector<int>& out) override {
    ctx.getBroadcastState(rules).put(v, v);
  }
  void processBroadcastElement(const int& v, Context& ctx, Collector<int>&) override {
    ctx.getBroadcastState(rules).put(v, v);
  }
};

int main() {
  Rules r;
  return 0;
}
