// Window joins and coGroups of two streams (Flink's JoinedStreams and CoGroupedStreams):
//   orders.join(payments)
//       .where([](const Order& o) { return o.id; })
//       .equalTo([](const Payment& p) { return p.order; })
//       .window(TumblingEventTimeWindows::of(10s))
//       .apply([](const Order& o, const Payment& p) { return Paid{o.id, p.amount}; });
// join() calls the function for every pair with equal keys in the same window (an inner
// join); coGroup() calls it once per key and window with both sides' records, so it can
// also express outer joins. Both inputs are tagged, united, keyed and windowed: the
// window operator's rules hold as they are (results carry the window's end − 1, late
// records within allowedLateness fire the window again, its contents are checkpointed).
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "weir/checkpoint_listener.h"
#include "weir/checkpointed_function.h"
#include "weir/data_stream.h"
#include "weir/join_function.h"
#include "weir/keyed_stream.h"
#include "weir/serializer.h"
#include "weir/windows.h"

namespace weir {

namespace detail {

// A record of either input of a join: exactly one side is set.
template <class A, class B>
struct TaggedUnion {
  std::optional<A> one;
  std::optional<B> two;
};

// The key of a tagged record: the first input's selector or the second's.
template <class K, class S1, class S2>
struct TaggedKeySelector {
  mutable S1 first;
  mutable S2 second;
  template <class A, class B>
  K operator()(const TaggedUnion<A, B>& t) const {
    return t.one ? K(std::invoke(first, *t.one)) : K(std::invoke(second, *t.two));
  }
};

// Runs a coGroup call (a join's loops, or the user's coGroup) as the ProcessWindowFunction
// of the tagged, united stream: splits a window's records by input.
template <class IN1, class IN2, class K, class OUT, class F, class Call>
class CoGroupWindow final : public ProcessWindowFunction<TaggedUnion<IN1, IN2>, OUT, K, TimeWindow> {
  using Base = ProcessWindowFunction<TaggedUnion<IN1, IN2>, OUT, K, TimeWindow>;
  static_assert(!std::is_base_of_v<CheckpointedFunction, F> && !std::is_base_of_v<CheckpointListener, F>,
                "join/coGroup(...).apply(f): f cannot be a CheckpointedFunction or CheckpointListener yet");

 public:
  CoGroupWindow(F fn, Call call) : fn_(std::move(fn)), call_(std::move(call)) {}
  void open() override { openFunction(fn_, &this->getRuntimeContext()); }
  void close() override { closeFunction(fn_); }
  void process(const K&, typename Base::Context&, std::span<const TaggedUnion<IN1, IN2>> elements,
               Collector<OUT>& out) override {
    first_.clear();
    second_.clear();
    for (const auto& e : elements) {
      if (e.one) first_.push_back(*e.one);
      else second_.push_back(*e.two);
    }
    call_(fn_, std::span<const IN1>(first_), std::span<const IN2>(second_), out);
  }

 private:
  F fn_;
  Call call_;
  std::vector<IN1> first_;  // reused between windows
  std::vector<IN2> second_;
};

// OUT f(const IN1&, const IN2&) with a non-void OUT.
template <class F, class IN1, class IN2>
concept PairFunction = std::is_invocable_v<F&, const IN1&, const IN2&> &&
                       !std::is_void_v<std::invoke_result_t<F&, const IN1&, const IN2&>>;

}  // namespace detail

// A tagged record serializes as its two optionals, in order.
template <Serializable A, Serializable B>
struct Serializer<detail::TaggedUnion<A, B>> {
  static constexpr std::size_t kMinEncodedSize = 2;
  static void serialize(const detail::TaggedUnion<A, B>& value, DataOutput& out) {
    Serializer<std::optional<A>>::serialize(value.one, out);
    Serializer<std::optional<B>>::serialize(value.two, out);
  }
  static detail::TaggedUnion<A, B> deserialize(DataInput& in) {
    detail::TaggedUnion<A, B> value;
    value.one = Serializer<std::optional<A>>::deserialize(in);
    value.two = Serializer<std::optional<B>>::deserialize(in);
    if (value.one.has_value() == value.two.has_value())
      throw SerializationError("a join's tagged record must hold exactly one input's value");
    return value;
  }
  static TypeSchema schema() {
    return {"TaggedUnion",
            1,
            {{"one", Serializer<std::optional<A>>::schema()}, {"two", Serializer<std::optional<B>>::schema()}}};
  }
};

// The last step of join(...) / coGroup(...): the windows and the function. `kJoin`
// decides what apply() takes.
template <class IN1, class IN2, class K, class S1, class S2, class Assigner, bool kJoin>
class WindowedJoin {
  using Tagged = detail::TaggedUnion<IN1, IN2>;

 public:
  WindowedJoin(DataStream<IN1> first, DataStream<IN2> second, S1 s1, S2 s2, Assigner assigner)
      : first_(std::move(first)), second_(std::move(second)), s1_(std::move(s1)), s2_(std::move(s2)),
        assigner_(std::move(assigner)) {}

  // Records up to `lateness` behind the watermark still join, firing their window again.
  WindowedJoin& allowedLateness(std::chrono::milliseconds lateness) {
    if (lateness.count() < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "allowedLateness must not be negative, got " + std::to_string(lateness.count()) + " ms");
    lateness_ = lateness;
    return *this;
  }

  // join: `fn` is OUT fn(const IN1&, const IN2&) or a JoinFunction<IN1, IN2, OUT>; with
  // apply<OUT>(fn), also void fn(const IN1&, const IN2&, Collector<OUT>&) or a
  // FlatJoinFunction<IN1, IN2, OUT>.
  // coGroup: apply<OUT>(fn) with void fn(std::span<const IN1>, std::span<const IN2>,
  // Collector<OUT>&), or apply(fn) with a CoGroupFunction<IN1, IN2, OUT>.
  template <class OUT = void, class F>
  auto apply(F fn) {
    if constexpr (kJoin) return applyJoin<OUT>(std::move(fn));
    else return applyCoGroup<OUT>(std::move(fn));
  }

 private:
  template <class OUT, class F>
  auto applyJoin(F fn) {
    using Declared = typename detail::HasOutputTypeOr<F, void>::type;
    if constexpr (std::is_base_of_v<JoinFunction<IN1, IN2, Declared>, F>) {
      return joinPairs<Declared>(std::move(fn), [](F& f, const IN1& x, const IN2& y, Collector<Declared>& out) {
        out.collect(f.join(x, y));
      });
    } else if constexpr (std::is_base_of_v<FlatJoinFunction<IN1, IN2, Declared>, F>) {
      return joinPairs<Declared>(std::move(fn),
                                 [](F& f, const IN1& x, const IN2& y, Collector<Declared>& out) { f.join(x, y, out); });
    } else if constexpr (std::is_void_v<OUT> && detail::PairFunction<F, IN1, IN2>) {
      using O = std::decay_t<std::invoke_result_t<F&, const IN1&, const IN2&>>;
      return joinPairs<O>(std::move(fn), [](F& f, const IN1& x, const IN2& y, Collector<O>& out) {
        out.collect(std::invoke(f, x, y));
      });
    } else if constexpr (!std::is_void_v<OUT> && std::is_invocable_v<F&, const IN1&, const IN2&, Collector<OUT>&>) {
      return joinPairs<OUT>(std::move(fn),
                            [](F& f, const IN1& x, const IN2& y, Collector<OUT>& out) { std::invoke(f, x, y, out); });
    } else {
      static_assert(detail::kDependentFalse<F>,
                    "join(...).apply(f): f must be callable as OUT f(const IN1&, const IN2&), or, with apply<OUT>(f), as "
                    "void f(const IN1&, const IN2&, Collector<OUT>&); or derive from JoinFunction / FlatJoinFunction");
      return *this;
    }
  }

  // An inner join: `pair(f, x, y, out)` for every pair of a key's window.
  template <class O, class F, class Pair>
  SingleOutputStreamOperator<O> joinPairs(F fn, Pair pair) {
    return add<O>("Window Join", std::move(fn),
                  [pair](F& f, std::span<const IN1> a, std::span<const IN2> b, Collector<O>& out) {
                    for (const IN1& x : a)
                      for (const IN2& y : b) pair(f, x, y, out);
                  });
  }

  template <class OUT, class F>
  auto applyCoGroup(F fn) {
    if constexpr (std::is_base_of_v<CoGroupFunction<IN1, IN2, typename detail::HasOutputTypeOr<F, void>::type>, F>) {
      using O = typename F::OutputType;
      return add<O>("Window CoGroup", std::move(fn),
                    [](F& f, std::span<const IN1> a, std::span<const IN2> b, Collector<O>& out) { f.coGroup(a, b, out); });
    } else if constexpr (!std::is_void_v<OUT> &&
                         std::is_invocable_v<F&, std::span<const IN1>, std::span<const IN2>, Collector<OUT>&>) {
      return add<OUT>("Window CoGroup", std::move(fn),
                      [](F& f, std::span<const IN1> a, std::span<const IN2> b, Collector<OUT>& out) { std::invoke(f, a, b, out); });
    } else {
      static_assert(detail::kDependentFalse<F>,
                    "coGroup(...).apply<OUT>(f): f must be callable as void f(std::span<const IN1>, std::span<const IN2>, "
                    "Collector<OUT>&), or derive from CoGroupFunction<IN1, IN2, OUT>");
      return *this;
    }
  }

  // Tags both inputs (keeping each input's parallelism, so the tagging chains), unites
  // them, keys them by the two selectors and windows them.
  template <class OUT, class F, class Call>
  SingleOutputStreamOperator<OUT> add(const char* name, F fn, Call call) {
    auto one = first_.map([](const IN1& v) { return Tagged{v, std::nullopt}; });
    auto two = second_.map([](const IN2& v) { return Tagged{std::nullopt, v}; });
    if (int p = first_.graph()->node(first_.id()).parallelism; p > 0) one.setParallelism(p);
    if (int p = second_.graph()->node(second_.id()).parallelism; p > 0) two.setParallelism(p);
    one.name(std::string(name) + " Input 1");
    two.name(std::string(name) + " Input 2");
    auto windowed = one.unionWith(two)
                        .keyBy(detail::TaggedKeySelector<K, S1, S2>{s1_, s2_})
                        .window(assigner_)
                        .allowedLateness(lateness_);
    auto op = windowed.process(detail::CoGroupWindow<IN1, IN2, K, OUT, F, Call>(std::move(fn), std::move(call)));
    op.name(name);
    return op;
  }

  DataStream<IN1> first_;
  DataStream<IN2> second_;
  S1 s1_;
  S2 s2_;
  Assigner assigner_;
  std::chrono::milliseconds lateness_{0};
};

// join(...) / coGroup(...) with both key selectors, waiting for window(assigner).
template <class IN1, class IN2, class K, class S1, class S2, bool kJoin>
class EqualToStreams {
 public:
  EqualToStreams(DataStream<IN1> first, DataStream<IN2> second, S1 s1, S2 s2)
      : first_(std::move(first)), second_(std::move(second)), s1_(std::move(s1)), s2_(std::move(s2)) {}

  // Event-time windows by `assigner` (tumbling, sliding or sessions).
  template <class Assigner>
  WindowedJoin<IN1, IN2, K, S1, S2, Assigner, kJoin> window(Assigner assigner) {
    return {first_, second_, s1_, s2_, std::move(assigner)};
  }

 private:
  DataStream<IN1> first_;
  DataStream<IN2> second_;
  S1 s1_;
  S2 s2_;
};

// join(...) / coGroup(...) with the first input's key selector, waiting for equalTo().
template <class IN1, class IN2, class S1, bool kJoin>
class WhereStreams {
 public:
  WhereStreams(DataStream<IN1> first, DataStream<IN2> second, S1 s1)
      : first_(std::move(first)), second_(std::move(second)), s1_(std::move(s1)) {}

  // The second input's key: K f(const IN2&), of the same type as where()'s.
  template <class S2>
  auto equalTo(S2 s2) {
    using K = std::decay_t<std::invoke_result_t<S1&, const IN1&>>;
    static_assert(std::is_invocable_v<S2&, const IN2&>,
                  "equalTo(f): f must be callable as K f(const IN2&) on the second stream's records");
    static_assert(std::is_same_v<K, std::decay_t<std::invoke_result_t<S2&, const IN2&>>>,
                  "equalTo(f): f must return the same key type as where()'s selector");
    return EqualToStreams<IN1, IN2, K, S1, S2, kJoin>(first_, second_, s1_, std::move(s2));
  }

 private:
  DataStream<IN1> first_;
  DataStream<IN2> second_;
  S1 s1_;
};

// first.join(second) or first.coGroup(second), waiting for where().
template <class IN1, class IN2, bool kJoin>
class TwoStreams {
 public:
  TwoStreams(DataStream<IN1> first, DataStream<IN2> second) : first_(std::move(first)), second_(std::move(second)) {}

  // The first input's key: K f(const IN1&).
  template <class S1>
  WhereStreams<IN1, IN2, S1, kJoin> where(S1 s1) {
    static_assert(detail::KeySelectorFor<S1, IN1>, "where(f): f must be callable as K f(const IN1&) with a non-void K");
    return {first_, second_, std::move(s1)};
  }

 private:
  DataStream<IN1> first_;
  DataStream<IN2> second_;
};

template <class IN1, class IN2>
using JoinedStreams = TwoStreams<IN1, IN2, true>;
template <class IN1, class IN2>
using CoGroupedStreams = TwoStreams<IN1, IN2, false>;

template <class T>
template <class T2>
JoinedStreams<T, T2> DataStream<T>::join(const DataStream<T2>& other) const {
  return JoinedStreams<T, T2>(*this, other);
}

template <class T>
template <class T2>
CoGroupedStreams<T, T2> DataStream<T>::coGroup(const DataStream<T2>& other) const {
  return CoGroupedStreams<T, T2>(*this, other);
}

}  // namespace weir
