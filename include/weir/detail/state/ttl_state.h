// State with a time to live (StateTtlConfig): every value, list element and map value is
// stored with the processing time it was last written (or read), and a decorator over
// an ordinary heap or RocksDB state hides, cleans up and refreshes it.
//
// The stored form puts the 8-byte timestamp first, so RocksDB's compaction filter reads
// it without knowing the value's type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "weir/clock.h"
#include "weir/detail/state/heap_state.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/state_ttl_config.h"

namespace weir::detail {

template <class T>
struct TtlValue {
  T value{};
  int64_t lastAccess = 0;  // processing time, ms
};

}  // namespace weir::detail

namespace weir {
template <Serializable T>
struct Serializer<detail::TtlValue<T>> {
  static constexpr std::size_t kMinEncodedSize = 8;
  static void serialize(const detail::TtlValue<T>& v, DataOutput& out) {
    out.write(v.lastAccess);
    Serializer<T>::serialize(v.value, out);
  }
  static detail::TtlValue<T> deserialize(DataInput& in) {
    int64_t lastAccess = in.read<int64_t>();
    return {Serializer<T>::deserialize(in), lastAccess};
  }
  static TypeSchema schema() {
    return {"ttl", 1, {{"lastAccessTimestamp", Serializer<int64_t>::schema()}, {"value", Serializer<T>::schema()}}};
  }
};
}  // namespace weir

namespace weir::detail {

// When an entry expires and what reading it does.
struct TtlPolicy {
  int64_t ttl;
  bool updateOnRead;
  bool returnExpired;
  const Clock* clock;

  int64_t now() const { return clock->currentTimeMillis(); }
  bool expired(int64_t lastAccess, int64_t now) const { return now - lastAccess >= ttl; }

  // Only for expiry checks (RocksDB's compaction filter).
  TtlPolicy(int64_t ttlMillis, const Clock& clock)
      : ttl(ttlMillis), updateOnRead(false), returnExpired(false), clock(&clock) {}
  TtlPolicy(const StateTtlConfig& c, const Clock& clock)
      : ttl(c.getTtl().count()),
        updateOnRead(c.getUpdateType() == StateTtlConfig::UpdateType::OnReadAndWrite),
        returnExpired(c.getStateVisibility() == StateTtlConfig::StateVisibility::ReturnExpiredIfNotCleanedUp),
        clock(&clock) {}
};

// Whether stored canonical value bytes (timestamp first) are expired; lists are
// varint-length-framed elements, each with its timestamp first. Returns the bytes to
// keep: all of them, some list elements, or none (nullopt).
std::optional<std::string> unexpiredBytes(std::string_view value, bool list, const TtlPolicy& policy, int64_t now);

// What every TTL state shares: the wrapped state, the policy and the cleanups.
class TtlStateBase : public KeyedStateBase {
 public:
  TtlStateBase(std::unique_ptr<KeyedStateBase> inner, const StateTtlConfig& config, const Clock& clock, bool list)
      : inner_(std::move(inner)), policy_(config, clock), config_(config), list_(list) {}

  void restoreEntry(const StateEntry& entry) override { inner_->restoreEntry(entry); }
  void eraseSlot(uint32_t slot) override { inner_->eraseSlot(slot); }
  std::unique_ptr<StateSnapshot> snapshot(const SnapshotContext& context) override {
    auto inner = inner_->snapshot(context);
    if (!config_.isCleanupInFullSnapshot()) return inner;
    return std::make_unique<Unexpired>(std::move(inner), policy_, list_);
  }

  // Set by the factory for heap states with incremental cleanup: checks n entries.
  std::function<void(size_t)> sweeper;

 protected:
  // A snapshot without the entries expired when it is read (cleanupFullSnapshot).
  class Unexpired final : public StateSnapshot {
   public:
    Unexpired(std::unique_ptr<StateSnapshot> inner, TtlPolicy policy, bool list)
        : inner_(std::move(inner)), policy_(policy), list_(list) {}
    void readEntries(KeyGroupRange range, const StateEntryVisitor& visit) override {
      int64_t now = policy_.now();
      inner_->readEntries(range, [&](const StateEntry& e) {
        if (auto kept = unexpiredBytes(e.value, list_, policy_, now)) visit(StateEntry{e.keyGroup, e.key, *kept});
      });
    }

   private:
    std::unique_ptr<StateSnapshot> inner_;
    TtlPolicy policy_;
    bool list_;
  };

  void sweepOnAccess() {
    if (sweeper) sweeper(static_cast<size_t>(config_.getIncrementalCleanupSize()));
  }
  template <class T>
  TtlValue<T> stamped(T value) const {
    return {std::move(value), policy_.now()};
  }

  std::unique_ptr<KeyedStateBase> inner_;
  TtlPolicy policy_;
  StateTtlConfig config_;
  bool list_;
};

// Reads a single TTL value through `inner` (a ValueState<TtlValue<T>>): an expired one
// is cleared (and returned once if the visibility allows); with OnReadAndWrite a read
// refreshes it.
template <class T>
std::optional<T> readWithTtl(ValueState<TtlValue<T>>& inner, const TtlPolicy& policy) {
  auto v = inner.value();
  if (!v) return std::nullopt;
  int64_t now = policy.now();
  if (policy.expired(v->lastAccess, now)) {
    inner.clear();
    if (!policy.returnExpired) return std::nullopt;
  } else if (policy.updateOnRead) {
    inner.update({v->value, now});
  }
  return std::move(v->value);
}

template <class T>
class TtlValueState final : public TtlStateBase, public ValueState<T> {
 public:
  TtlValueState(std::unique_ptr<KeyedStateBase> inner, ValueState<TtlValue<T>>& typed, const ValueStateDescriptor<T>& d,
                const Clock& clock)
      : TtlStateBase(std::move(inner), *d.getTtlConfig(), clock, false), typed_(typed), default_(d.getDefaultValue()) {}

  std::optional<T> value() override {
    sweepOnAccess();
    auto v = readWithTtl(typed_, policy_);
    return v ? v : default_;
  }
  using ValueState<T>::update;  // and update(std::optional<T>), which clears when empty
  void update(T value) override {
    sweepOnAccess();
    typed_.update(stamped(std::move(value)));
  }
  void clear() override { typed_.clear(); }

 private:
  ValueState<TtlValue<T>>& typed_;
  std::optional<T> default_;
};

template <class T>
class TtlListState final : public TtlStateBase, public ListState<T> {
 public:
  TtlListState(std::unique_ptr<KeyedStateBase> inner, ListState<TtlValue<T>>& typed, const ListStateDescriptor<T>& d,
               const Clock& clock)
      : TtlStateBase(std::move(inner), *d.getTtlConfig(), clock, true), typed_(typed) {}

  std::vector<T> get() override {
    sweepOnAccess();
    auto stored = typed_.get();
    int64_t now = policy_.now();
    std::vector<TtlValue<T>> kept;
    std::vector<T> out;
    bool changed = false;
    for (auto& e : stored) {
      bool expired = policy_.expired(e.lastAccess, now);
      if (!expired || policy_.returnExpired) out.push_back(e.value);
      if (expired) {
        changed = true;
      } else {
        if (policy_.updateOnRead && e.lastAccess != now) {
          e.lastAccess = now;
          changed = true;
        }
        kept.push_back(std::move(e));
      }
    }
    if (changed) typed_.update(std::move(kept));  // each element expires on its own
    return out;
  }
  void add(T value) override {
    sweepOnAccess();
    typed_.add(stamped(std::move(value)));
  }
  void addAll(std::vector<T> values) override {
    sweepOnAccess();
    typed_.addAll(wrap(std::move(values)));
  }
  void update(std::vector<T> values) override {
    sweepOnAccess();
    typed_.update(wrap(std::move(values)));
  }
  void clear() override { typed_.clear(); }

 private:
  std::vector<TtlValue<T>> wrap(std::vector<T> values) const {
    std::vector<TtlValue<T>> out;
    int64_t now = policy_.now();
    out.reserve(values.size());
    for (auto& v : values) out.push_back({std::move(v), now});
    return out;
  }
  ListState<TtlValue<T>>& typed_;
};

template <class UK, class UV>
class TtlMapState final : public TtlStateBase, public MapState<UK, UV> {
 public:
  TtlMapState(std::unique_ptr<KeyedStateBase> inner, MapState<UK, TtlValue<UV>>& typed,
              const MapStateDescriptor<UK, UV>& d, const Clock& clock)
      : TtlStateBase(std::move(inner), *d.getTtlConfig(), clock, false), typed_(typed) {}

  std::optional<UV> get(const UK& key) override {
    sweepOnAccess();
    auto v = typed_.get(key);
    if (!v) return std::nullopt;
    int64_t now = policy_.now();
    if (policy_.expired(v->lastAccess, now)) {
      typed_.remove(key);
      if (!policy_.returnExpired) return std::nullopt;
    } else if (policy_.updateOnRead) {
      typed_.put(key, {v->value, now});
    }
    return std::move(v->value);
  }
  void put(UK key, UV value) override {
    sweepOnAccess();
    typed_.put(std::move(key), stamped(std::move(value)));
  }
  void putAll(std::vector<std::pair<UK, UV>> entries) override {
    for (auto& [k, v] : entries) put(std::move(k), std::move(v));
  }
  void remove(const UK& key) override { typed_.remove(key); }
  bool contains(const UK& key) override { return get(key).has_value(); }
  bool isEmpty() override {
    for ([[maybe_unused]] const auto& kv : entries()) return false;
    return true;
  }
  void clear() override { typed_.clear(); }

  // Iteration checks each entry as get() does (Flink's TtlMapState): an expired one is
  // cleaned up (returned this once under ReturnExpiredIfNotCleanedUp, else skipped), and
  // under OnReadAndWrite each entry returned is refreshed. The changes are applied when
  // the iteration ends or its iterable goes, so the walk never sees the map change under
  // it; only entries the walk reached change.
  StateIterable<std::pair<UK, UV>> entries() override {
    return checked<std::pair<UK, UV>>([](std::pair<UK, TtlValue<UV>>& kv) {
      return std::pair<UK, UV>(std::move(kv.first), std::move(kv.second.value));
    });
  }
  StateIterable<UK> keys() override {
    return checked<UK>([](std::pair<UK, TtlValue<UV>>& kv) { return std::move(kv.first); });
  }
  StateIterable<UV> values() override {
    return checked<UV>([](std::pair<UK, TtlValue<UV>>& kv) { return std::move(kv.second.value); });
  }

 private:
  template <class E, class Project>
  StateIterable<E> checked(Project project) {
    class Cursor final : public StateIterable<E>::Cursor {
     public:
      Cursor(TtlMapState& owner, Project project)
          : owner_(owner), inner_(owner.typed_.entries()), it_(inner_.begin()), now_(owner.policy_.now()),
            project_(project) {}
      ~Cursor() override { apply(); }
      bool next(E& element) override {
        const TtlPolicy& policy = owner_.policy_;
        for (; it_ != inner_.end(); ++it_) {
          auto kv = *it_;
          const bool expired = policy.expired(kv.second.lastAccess, now_);
          if (expired) expired_.push_back(kv.first);
          else if (policy.updateOnRead) refreshed_.emplace_back(kv.first, kv.second.value);
          if (expired && !policy.returnExpired) continue;
          ++it_;
          element = project_(kv);
          return true;
        }
        apply();
        return false;
      }

     private:
      void apply() {
        for (const UK& k : expired_) owner_.typed_.remove(k);
        for (auto& [k, v] : refreshed_) owner_.typed_.put(k, TtlValue<UV>{std::move(v), now_});
        expired_.clear();
        refreshed_.clear();
      }
      TtlMapState& owner_;
      StateIterable<std::pair<UK, TtlValue<UV>>> inner_;
      typename StateIterable<std::pair<UK, TtlValue<UV>>>::iterator it_;
      int64_t now_;
      Project project_;
      std::vector<UK> expired_;                   // reached and expired: removed
      std::vector<std::pair<UK, UV>> refreshed_;  // reached under OnReadAndWrite: refreshed
    };
    sweepOnAccess();
    return StateIterable<E>(std::make_unique<Cursor>(*this, project));
  }

  MapState<UK, TtlValue<UV>>& typed_;
};

// Reducing and aggregating state with TTL keep their accumulator in a TTL value: an
// expired accumulator starts over.
template <class T>
class TtlReducingState final : public TtlStateBase, public ReducingState<T> {
 public:
  TtlReducingState(std::unique_ptr<KeyedStateBase> inner, ValueState<TtlValue<T>>& typed,
                   const ReducingStateDescriptor<T>& d, const Clock& clock)
      : TtlStateBase(std::move(inner), *d.getTtlConfig(), clock, false), typed_(typed), reduce_(d.getReduceFunction()) {}

  std::optional<T> get() override {
    sweepOnAccess();
    return readWithTtl(typed_, policy_);
  }
  void add(T value) override {
    sweepOnAccess();
    auto old = typed_.value();
    int64_t now = policy_.now();
    bool fresh = !old || policy_.expired(old->lastAccess, now);
    typed_.update({fresh ? std::move(value) : reduce_(old->value, value), now});
  }
  void clear() override { typed_.clear(); }

 private:
  ValueState<TtlValue<T>>& typed_;
  typename ReducingStateDescriptor<T>::ReduceFn reduce_;
};

template <class IN, class ACC, class OUT>
class TtlAggregatingState final : public TtlStateBase, public AggregatingState<IN, OUT> {
 public:
  TtlAggregatingState(std::unique_ptr<KeyedStateBase> inner, ValueState<TtlValue<ACC>>& typed,
                      const AggregatingStateDescriptor<IN, ACC, OUT>& d, const Clock& clock)
      : TtlStateBase(std::move(inner), *d.getTtlConfig(), clock, false), typed_(typed), fn_(d.getAggregateFunction()) {}

  std::optional<OUT> get() override {
    sweepOnAccess();
    auto acc = readWithTtl(typed_, policy_);
    if (!acc) return std::nullopt;
    return fn_->getResult(*acc);
  }
  void add(const IN& value) override {
    sweepOnAccess();
    auto old = typed_.value();
    int64_t now = policy_.now();
    ACC acc = !old || policy_.expired(old->lastAccess, now) ? fn_->createAccumulator() : std::move(old->value);
    typed_.update({fn_->add(value, std::move(acc)), now});
  }
  void clear() override { typed_.clear(); }

 private:
  ValueState<TtlValue<ACC>>& typed_;
  std::shared_ptr<AggregateFunction<IN, ACC, OUT>> fn_;
};

}  // namespace weir::detail
