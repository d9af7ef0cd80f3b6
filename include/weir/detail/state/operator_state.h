// Operator state of one parallel instance (see checkpointed_function.h): lists held as
// live objects, written out as canonical element bytes, and redistributed between
// snapshots and restored instances when the parallelism changes.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "weir/checkpointed_function.h"
#include "weir/detail/state/heap_state.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

enum class OperatorStateMode {
  kSplitDistribute,  // ListState: split evenly on restore
  kUnion,            // UnionListState: every instance gets everything
};

// One operator state of one instance in canonical form: each element serialized.
struct OperatorStateSnapshot {
  std::string name;
  OperatorStateMode mode = OperatorStateMode::kSplitDistribute;
  std::vector<std::string> elements;
  // The schema of each element; none for weir's own operator states, elements without a
  // Serializer, and checkpoints of state file format 2 or older.
  std::optional<TypeSchema> schema = {};
};

// The elements of `restored` as elements of schema `now` (migrated when its recorded
// schema differs: core/schema_migration.h); `storage` holds them when they had to be
// rewritten. Throws Error(kState) naming `what` for a change that cannot be made.
const std::vector<std::string>& elementsAs(const OperatorStateSnapshot& restored, const std::optional<TypeSchema>& now,
                                           const std::string& what, std::vector<std::string>& storage);

// What each of `parallelism` new instances restores from the old ones' snapshots (old[i]
// is instance i's), as Flink does: at the same parallelism a split list stays where it
// was; else its elements, in order, go in contiguous parts, the extra ones round-robin
// across states (totals differ by at most one); a union list goes whole to each.
std::vector<std::vector<OperatorStateSnapshot>> redistributeOperatorState(
    const std::vector<std::vector<OperatorStateSnapshot>>& old, int parallelism);

class OperatorListStateBase {
 public:
  virtual ~OperatorListStateBase() = default;
  virtual std::vector<std::string> serializeElements() const = 0;
  // The schema of an element; none when the type has no Serializer.
  virtual std::optional<TypeSchema> schema() const = 0;
};

template <class T>
class OperatorListState final : public ListState<T>, public OperatorListStateBase {
 public:
  std::vector<T> get() override { return list_; }
  void add(T value) override { list_.push_back(std::move(value)); }
  void addAll(std::vector<T> values) override {
    for (auto& v : values) list_.push_back(std::move(v));
  }
  void update(std::vector<T> values) override { list_ = std::move(values); }
  void clear() override { list_.clear(); }

  std::optional<TypeSchema> schema() const override {
    if constexpr (Serializable<T>) return Serializer<T>::schema();
    return std::nullopt;
  }
  std::vector<std::string> serializeElements() const override {
    std::vector<std::string> out;
    DataOutput buffer;
    for (const T& v : list_) {
      buffer.clear();
      serializeForState(v, buffer);
      out.push_back(buffer.data());
    }
    return out;
  }
  void restore(const std::string& name, const std::vector<std::string>& elements) {
    if constexpr (Serializable<T>) {
      for (const auto& bytes : elements) list_.push_back(decodeState<T>(bytes, name, -1));
    } else {
      throw Error(ErrorCode::kState, "operator state '" + name + "' holds " + demangledTypeName(typeid(T)) +
                                         ", which has no weir::Serializer to restore it with");
    }
  }

 private:
  std::vector<T> list_;
};

// The operator states of one instance, by name, and what it was restored from.
class OperatorStateRegistry {
 public:
  OperatorStateRegistry() = default;
  explicit OperatorStateRegistry(std::vector<OperatorStateSnapshot> restored)
      : restored_(true), restoredStates_(std::move(restored)) {}

  bool isRestored() const { return restored_; }

  template <class T>
  ListState<T>& list(const ListStateDescriptor<T>& d, OperatorStateMode mode) {
    const std::string& name = d.getName();
    const char* kind = mode == OperatorStateMode::kUnion ? "union list state" : "list state";
    auto it = states_.find(name);
    if (it != states_.end()) {
      if (it->second.type != typeid(OperatorListState<T>) || it->second.mode != mode) {
        throw Error(ErrorCode::kState, "operator state '" + name + "' is already registered with another kind or "
                                           "type; it cannot also be a " + kind + " of " +
                                           demangledTypeName(typeid(T)));
      }
      return *static_cast<OperatorListState<T>*>(it->second.typed);
    }
    auto state = std::make_unique<OperatorListState<T>>();
    for (const auto& snapshot : restoredStates_) {
      if (snapshot.name != name) continue;
      if (snapshot.mode != mode) {
        throw Error(ErrorCode::kState, "operator state '" + name + "' was snapshotted as a " +
                                           (snapshot.mode == OperatorStateMode::kUnion ? "union list state"
                                                                                       : "list state") +
                                           " and cannot be restored as a " + kind);
      }
      std::vector<std::string> migrated;
      state->restore(name, elementsAs(snapshot, state->schema(), "operator state '" + name + "'", migrated));
    }
    auto& result = *state;
    states_.emplace(name, Registered{typeid(OperatorListState<T>), mode, &result, std::move(state)});
    return result;
  }

  // Every registered state in canonical form (what a checkpoint stores).
  std::vector<OperatorStateSnapshot> snapshot() const;

 private:
  struct Registered {
    std::type_index type;
    OperatorStateMode mode;
    void* typed;
    std::unique_ptr<OperatorListStateBase> state;
  };
  bool restored_ = false;
  std::vector<OperatorStateSnapshot> restoredStates_;
  std::map<std::string, Registered> states_;
};

}  // namespace weir::detail

namespace weir {

template <class T>
ListState<T>& OperatorStateStore::getListState(const ListStateDescriptor<T>& descriptor) {
  return registry_->list(descriptor, detail::OperatorStateMode::kSplitDistribute);
}

template <class T>
ListState<T>& OperatorStateStore::getUnionListState(const ListStateDescriptor<T>& descriptor) {
  return registry_->list(descriptor, detail::OperatorStateMode::kUnion);
}

}  // namespace weir
