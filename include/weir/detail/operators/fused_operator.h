// Fusion: consecutive map and filter calls of plain functions, chained one to one, run
// as one loop over each batch, each record passing through every function before the
// next record starts, as a hand-written loop would. See docs/runtime.md, "Fused map and
// filter".
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/checkpoint_listener.h"
#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"

namespace weir::detail {

// A function that is only called: no open/close, no runtime context, no state, no
// checkpoint notifications. Only such functions are fused.
template <class F>
concept Fusible = !std::is_base_of_v<RichFunction, F> && !std::is_base_of_v<CheckpointedFunction, F> &&
                  !std::is_base_of_v<CheckpointListener, F> && std::copy_constructible<F>;

// One function of a fused run: IN -> OUT by map, or T -> T kept or dropped by filter.
template <class IN, class OUT, class F>
struct MapStage {
  using In = IN;
  using Out = OUT;
  static constexpr bool kFilter = false;
  F fn;
};
template <class T, class F>
struct FilterStage {
  using In = T;
  using Out = T;
  static constexpr bool kFilter = true;
  F fn;
};

// Runs Stages (IN -> ... -> OUT) over each batch in one pass. A failing function is
// reported under the name of its own operator (`names`, one per stage).
template <class IN, class OUT, class... Stages>
class FusedOperator final : public OneInputOperator<IN, OUT> {
  static constexpr size_t kStages = sizeof...(Stages);
  using Last = std::tuple_element_t<kStages - 1, std::tuple<Stages...>>;
  // A last filter over small plain records: its record is written whether kept or not
  // and the count advances by the verdict, a loop without a branch per record.
  // (Plain, so that a buffer of them has a slot for every record.)
  static constexpr bool kBranchFree =
      Last::kFilter && std::is_trivially_copyable_v<OUT> && sizeof(OUT) <= 16 && PlainRecord<OUT>;
  // The stages whose input is counted (each stage's operator shows its numRecordsIn):
  // those right after a filter. Before the first filter every stage reads the whole
  // batch; after a map, what the map read; what the last stage keeps, the output counts.
  static constexpr std::array<bool, kStages> kCounted = [] {
    constexpr std::array<bool, kStages> filter{Stages::kFilter...};
    std::array<bool, kStages> counted{};
    for (size_t k = 1; k < kStages; ++k) counted[k] = filter[k - 1];
    return counted;
  }();
  using Reached = std::array<size_t, kStages>;

  // Whether the run can read a batch it must leave as it is: every function up to the
  // first map, and that map, take const records.
  template <size_t K = 0>
  static constexpr bool readsConst() {
    if constexpr (K == kStages) {
      return true;
    } else {
      using Stage = std::tuple_element_t<K, std::tuple<Stages...>>;
      using Fn = decltype(Stage::fn);
      if constexpr (Stage::kFilter) return readsConst<K + 1>();
      else return MapObject<Fn, typename Stage::In> || std::invocable<Fn&, const typename Stage::In&>;
    }
  }

 public:
  FusedOperator(std::tuple<Stages...> stages, std::vector<std::string> names)
      : stages_(std::move(stages)), names_(std::move(names)) {}

  void processBatch(std::span<IN> records, Timestamps timestamps) override {
    if constexpr (std::is_same_v<IN, OUT>) {
      // The batch is ours: results go back into it, never ahead of the record being read.
      size_t kept = run(records, timestamps, [&](size_t k, OUT&& out) { records[k] = std::move(out); });
      if (kept > 0) this->out_->processBatch(records.first(kept), timestamps.empty() ? timestamps : timestamps.first(kept));
    } else {
      emitFromBuffer(records, timestamps);
    }
  }

  bool processSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (readsConst()) {
      sharedTimestamps_.assign(timestamps.begin(), timestamps.end());
      emitFromBuffer(records, sharedTimestamps_);
      return true;
    } else {
      return false;
    }
  }

  const std::atomic<uint64_t>* fusedStageInput(size_t stage) const override {
    return stage < kStages && kCounted[stage] ? &reached_[stage] : nullptr;
  }

  void addSideOutput(int, std::unique_ptr<SideOutputBase>) override {
    throw Error(ErrorCode::kInvalidJob,
                "operator '" + names_.back() + "' has no side outputs; only process() can emit them");
  }

 private:
  // Fills buffer_ with the results and passes it on; timestamps are compacted in place.
  template <class R>
  void emitFromBuffer(std::span<R> records, Timestamps timestamps) {
    size_t kept;
    if constexpr (PlainRecord<OUT>) {
      if (buffer_.size() < records.size()) buffer_.resize(records.size());
      kept = run(records, timestamps, [&](size_t k, OUT&& out) { buffer_[k] = std::move(out); });
    } else {
      buffer_.clear();
      kept = run(records, timestamps, [&](size_t, OUT&& out) { buffer_.push_back(std::move(out)); });
    }
    if (kept > 0)
      this->out_->processBatch(std::span<OUT>(buffer_.data(), kept), timestamps.empty() ? timestamps : timestamps.first(kept));
  }

  // Passes every record through the stages; store(k, out) keeps the k-th result, whose
  // timestamp moves to timestamps[k]. Returns how many were kept.
  template <class R, class Store>
  size_t run(std::span<R> records, Timestamps timestamps, Store&& store) {
    const bool stamped = !timestamps.empty();
    size_t kept = 0;
    Reached reached{};
    for (size_t i = 0; i < records.size(); ++i) {
      bool keep;
      if constexpr (std::is_const_v<R>) keep = apply<0>(records[i], kept, store, reached);
      else keep = apply<0>(std::move(records[i]), kept, store, reached);
      if constexpr (kBranchFree) {
        if (stamped) timestamps[kept] = timestamps[i];
        kept += keep ? 1 : 0;
      } else if (keep) {
        if (stamped) timestamps[kept] = timestamps[i];
        ++kept;
      }
    }
    for (size_t k = 0; k < kStages; ++k)  // one writer: a load and a store
      if (kCounted[k]) reached_[k].store(reached_[k].load(std::memory_order_relaxed) + reached[k], std::memory_order_relaxed);
    return kept;
  }

  // Stage K and those after it on one value; false when a filter dropped it.
  template <size_t K, class V, class Store>
  bool apply(V&& value, size_t k, Store& store, Reached& reached) {
    if constexpr (K == kStages) {
      store(k, OUT(std::forward<V>(value)));
      return true;
    } else {
      if constexpr (kCounted[K]) ++reached[K];
      auto& stage = std::get<K>(stages_);
      if constexpr (std::decay_t<decltype(stage)>::kFilter) {
        bool keep;
        try {
          keep = callFilter(stage.fn, std::as_const(value));
        } catch (...) {
          fail(K);
        }
        if constexpr (K + 1 == kStages && kBranchFree) {
          store(k, OUT(std::forward<V>(value)));
          return keep;
        } else {
          return keep && apply<K + 1>(std::forward<V>(value), k, store, reached);
        }
      } else {
        using Out = typename std::decay_t<decltype(stage)>::Out;
        Out mapped = [&]() -> Out {
          try {
            return callMap(stage.fn, std::forward<V>(value));
          } catch (...) {
            fail(K);
          }
        }();
        return apply<K + 1>(std::move(mapped), k, store, reached);
      }
    }
  }

  [[noreturn]] void fail(size_t stage) const { this->rethrowAsOperatorFailure(names_[stage]); }

  std::tuple<Stages...> stages_;
  std::vector<std::string> names_;
  std::vector<OUT> buffer_;  // OUT is never bool (see FusibleStream)
  std::vector<int64_t> sharedTimestamps_;
  std::array<std::atomic<uint64_t>, kStages> reached_{};  // where kCounted: records that reached the stage
};

// The operator running `stages` from stage `first` on: a run cut before its start
// (by a stream read twice, a new chain, ...) fuses what follows the cut.
template <class OUT, class... Stages>
std::unique_ptr<StreamOperator> makeFusedOperator(const std::tuple<Stages...>& stages, size_t first,
                                                  std::vector<std::string> names) {
  constexpr size_t kStages = sizeof...(Stages);
  std::unique_ptr<StreamOperator> op;
  auto from = [&]<size_t K>(std::integral_constant<size_t, K>) {
    [&]<size_t... J>(std::index_sequence<J...>) {
      using Head = std::tuple_element_t<K, std::tuple<Stages...>>;
      op = std::make_unique<FusedOperator<typename Head::In, OUT, std::tuple_element_t<K + J, std::tuple<Stages...>>...>>(
          std::tuple(std::get<K + J>(stages)...), std::move(names));
    }(std::make_index_sequence<kStages - K>{});
  };
  [&]<size_t... K>(std::index_sequence<K...>) {
    ((K == first ? from(std::integral_constant<size_t, K>{}) : void()), ...);
  }(std::make_index_sequence<kStages - 1>{});  // a run has two stages at least
  return op;
}

}  // namespace weir::detail
