// A stream partitioned by key, with rolling aggregations per key.
#pragma once

#include <algorithm>
#include <tuple>

#include "weir/data_stream.h"
#include "weir/key_group.h"

namespace weir {

namespace detail {
inline auto identityField() {
  return [](auto& v) -> auto& { return v; };
}
template <class T, class M>
auto memberField(M T::*field) {
  return [field](auto& v) -> auto& { return v.*field; };
}
template <size_t I>
auto tupleField() {
  return [](auto& v) -> auto& { return std::get<I>(v); };
}
}  // namespace detail

// Records with equal keys reach the same subtask, in order. K is the key type.
template <class T, class K, class KeySelector>
class KeyedStream : public DataStream<T> {
 public:
  using KeyType = K;

  KeyedStream(std::shared_ptr<detail::GraphBuilder> graph, int id, KeySelector keySelector)
      : DataStream<T>(std::move(graph), id), keySelector_(std::move(keySelector)) {}

  // Rolling reduce: for every record, emits fn(previous result for its key, record);
  // the first record of a key is emitted as it is. T fn(const T&, const T&), or a
  // RichReduceFunction<T>.
  template <class F>
  SingleOutputStreamOperator<T> reduce(F fn) {
    if constexpr (!detail::ReduceFunctionFor<F, T>) {
      static_assert(detail::kDependentFalse<F>,
                    "reduce(f): f must be callable as T f(const T& accumulated, const T& value), or be a RichReduceFunction<T>");
      return SingleOutputStreamOperator<T>(this->graph_, this->id_);
    } else {
      return this->template addOperator<T>("Keyed Reduce", [sel = keySelector_, fn] {
        return std::make_unique<detail::KeyedReduceOperator<T, K, KeySelector, F>>(sel, fn);
      });
    }
  }

  // Runs a KeyedProcessFunction<K, T, OUT> on every record, with the record's key and
  // event-time timers. A plain ProcessFunction works too, as on any stream.
  template <class OUT = void, class F>
  auto process(F fn) {
    using KeyedOut = typename detail::HasOutputTypeOr<F, void>::type;
    if constexpr (std::is_base_of_v<KeyedProcessFunction<K, T, KeyedOut>, F>) {
      return this->template addOperator<KeyedOut>("Keyed Process", [sel = keySelector_, fn] {
        return std::make_unique<detail::KeyedProcessOperator<T, K, KeySelector, F>>(sel, fn);
      });
    } else {
      return DataStream<T>::template process<OUT>(std::move(fn));
    }
  }

  // Rolling sum per key. sum() for an arithmetic T; sum(&Type::field) for a struct field;
  // sum<I>() for element I of a pair or tuple. Other fields come from the key's first record.
  SingleOutputStreamOperator<T> sum() { return aggregate(detail::identityField(), Sum{}, "Sum"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> sum(M C::*field) { return aggregate(detail::memberField(field), Sum{}, "Sum"); }
  template <size_t I>
  SingleOutputStreamOperator<T> sum() { return aggregate(detail::tupleField<I>(), Sum{}, "Sum"); }

  // Rolling minimum of a field per key; other fields come from the key's first record.
  SingleOutputStreamOperator<T> min() { return aggregate(detail::identityField(), Min{}, "Min"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> min(M C::*field) { return aggregate(detail::memberField(field), Min{}, "Min"); }
  template <size_t I>
  SingleOutputStreamOperator<T> min() { return aggregate(detail::tupleField<I>(), Min{}, "Min"); }

  // Rolling maximum of a field per key; other fields come from the key's first record.
  SingleOutputStreamOperator<T> max() { return aggregate(detail::identityField(), Max{}, "Max"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> max(M C::*field) { return aggregate(detail::memberField(field), Max{}, "Max"); }
  template <size_t I>
  SingleOutputStreamOperator<T> max() { return aggregate(detail::tupleField<I>(), Max{}, "Max"); }

  // The whole record with the smallest field per key (the earlier one on ties).
  template <class M, class C = T>
  SingleOutputStreamOperator<T> minBy(M C::*field) {
    return reduce([field](const T& a, const T& b) { return b.*field < a.*field ? b : a; }).name("Min By");
  }
  // The whole record with the largest field per key (the earlier one on ties).
  template <class M, class C = T>
  SingleOutputStreamOperator<T> maxBy(M C::*field) {
    return reduce([field](const T& a, const T& b) { return a.*field < b.*field ? b : a; }).name("Max By");
  }

 private:
  struct Sum {
    template <class V>
    V operator()(const V& a, const V& b) const { return a + b; }
  };
  struct Min {
    template <class V>
    V operator()(const V& a, const V& b) const { return std::min(a, b); }
  };
  struct Max {
    template <class V>
    V operator()(const V& a, const V& b) const { return std::max(a, b); }
  };

  template <class Field, class Op>
  SingleOutputStreamOperator<T> aggregate(Field field, Op op, const char* name) {
    return reduce([field, op](const T& acc, const T& value) {
             T result = acc;
             field(result) = op(field(acc), field(value));
             return result;
           }).name(name);
  }

  KeySelector keySelector_;
};


template <class T>
template <class F>
auto DataStream<T>::keyBy(F keySelector) {
  if constexpr (!detail::KeySelectorFor<F, T>) {
    static_assert(detail::kDependentFalse<F>, "keyBy(f): f must be callable as K f(const T&) with a non-void key type K");
    return *this;
  } else {
    using K = std::decay_t<std::invoke_result_t<F&, const T&>>;
    if constexpr (std::is_same_v<K, std::string_view> || std::is_pointer_v<K>) {
      static_assert(detail::kDependentFalse<F>,
                    "keyBy(f): return a key that owns its data (e.g. std::string), not a view or pointer into the record");
      return *this;
    } else if constexpr (!HashableKey<K>) {
      static_assert(detail::kDependentFalse<F>,
                    "keyBy(f): the key type has no weir::KeyHash; declare it with WEIR_STRUCT or specialize weir::KeyHash<K>");
      return *this;
    } else {
      auto& node = graph_->add(detail::Transformation::Kind::kPartition, "Key By", {id_}, detail::TypedStream<T>::get());
      node.partitioner = detail::PartitionerKind::kKeyGroup;
      node.keyedWriter = [keySelector](const std::vector<detail::ChannelBase*>& channels, int maxParallelism,
                                       detail::TaskMetrics* metrics) -> std::unique_ptr<detail::OutputBase> {
        using Selector = detail::KeyGroupSelector<K, F>;
        return std::make_unique<detail::RecordWriter<T, Selector>>(detail::TypedStream<T>::typed(channels),
                                                                   Selector{keySelector, maxParallelism}, metrics);
      };
      return KeyedStream<T, K, F>(graph_, node.id, keySelector);
    }
  }
}

}  // namespace weir
