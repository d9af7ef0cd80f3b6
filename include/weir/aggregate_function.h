// Flink's AggregateFunction: the accumulator behind window aggregate() and
// AggregatingState.
#pragma once

namespace weir {

// Incremental aggregation with an accumulator (Flink's AggregateFunction): IN and OUT
// may differ.
template <class IN, class ACC, class OUT>
class AggregateFunction {
 public:
  using InputType = IN;
  using AccumulatorType = ACC;
  using OutputType = OUT;
  virtual ~AggregateFunction() = default;
  virtual ACC createAccumulator() = 0;
  virtual ACC add(const IN& value, ACC accumulator) = 0;
  virtual OUT getResult(const ACC& accumulator) = 0;
  virtual ACC merge(ACC a, const ACC& b) = 0;
};

}  // namespace weir
