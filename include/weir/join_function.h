// The functions a window join or coGroup calls (Flink's JoinFunction, FlatJoinFunction
// and CoGroupFunction). Lambdas work too: see joined_streams.h.
#pragma once

#include <span>

#include "weir/functions.h"

namespace weir {

// Called for every pair of records with equal keys in the same window.
template <class IN1, class IN2, class OUT>
class JoinFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual OUT join(const IN1& first, const IN2& second) = 0;
};

// Like JoinFunction, but emits any number of records per pair.
template <class IN1, class IN2, class OUT>
class FlatJoinFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual void join(const IN1& first, const IN2& second, Collector<OUT>& out) = 0;
};

// Called once per key and window with the records of both inputs (either may be
// empty, not both): in arrival order, except that sliding windows combine their panes
// oldest first and merged sessions their parts by start.
template <class IN1, class IN2, class OUT>
class CoGroupFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual void coGroup(std::span<const IN1> first, std::span<const IN2> second, Collector<OUT>& out) = 0;
};

}  // namespace weir
