// Keyed state: what a function remembers per key (Flink's ValueState, ListState,
// MapState, ReducingState and AggregatingState).
//
// A state object is obtained once, in open(), from the runtime context; every call then
// reads or writes the entry of the key the current record (or timer) belongs to. State
// is touched only by the subtask's own thread, so none of these calls needs a lock.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace weir {

namespace detail {
template <class T>
inline constexpr bool IsStdOptional = false;
template <class T>
inline constexpr bool IsStdOptional<std::optional<T>> = true;
}  // namespace detail

// A sequence read lazily from state (MapState::entries/keys/values). Iterating it while
// other keys change is safe; changing the same map while iterating it is an error that
// the next step of the iteration reports.
template <class E>
class StateIterable {
 public:
  // Yields the elements one by one; next() returns false at the end.
  class Cursor {
   public:
    virtual ~Cursor() = default;
    virtual bool next(E& element) = 0;
  };

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = E;
    using difference_type = std::ptrdiff_t;
    using pointer = const E*;
    using reference = const E&;

    iterator() = default;
    explicit iterator(Cursor* cursor) : cursor_(cursor) { ++*this; }
    const E& operator*() const { return element_; }
    const E* operator->() const { return &element_; }
    iterator& operator++() {
      if (!cursor_->next(element_)) cursor_ = nullptr;
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const iterator& other) const { return cursor_ == other.cursor_; }

   private:
    Cursor* cursor_ = nullptr;
    E element_{};
  };

  explicit StateIterable(std::unique_ptr<Cursor> cursor) : cursor_(std::move(cursor)) {}
  // Starts the one pass this iterable allows.
  iterator begin() { return iterator(cursor_.get()); }
  iterator end() { return iterator(); }

 private:
  std::unique_ptr<Cursor> cursor_;
};

// One value per key.
template <class T>
class ValueState {
 public:
  virtual ~ValueState() = default;
  // The value, or the descriptor's default value (if any) when there is none.
  virtual std::optional<T> value() = 0;
  virtual void update(T value) = 0;
  // An empty value clears the state, as Flink's update(null) does. (Not for a state of
  // optionals, whose update(T) stores an empty one.)
  void update(std::nullopt_t)
    requires(!detail::IsStdOptional<T>)
  {
    clear();
  }
  template <class O>
    requires(std::is_same_v<std::remove_cvref_t<O>, std::optional<T>> && !detail::IsStdOptional<T>)
  void update(O&& value) {
    if (value) update(T(*std::forward<O>(value)));
    else clear();
  }
  virtual void clear() = 0;
};

// A list per key. An absent list reads as empty.
template <class T>
class ListState {
 public:
  virtual ~ListState() = default;
  virtual std::vector<T> get() = 0;
  virtual void add(T value) = 0;
  virtual void addAll(std::vector<T> values) = 0;
  // Replaces the list; an empty vector clears it.
  virtual void update(std::vector<T> values) = 0;
  virtual void clear() = 0;
};

// A map per key.
template <class UK, class UV>
class MapState {
 public:
  virtual ~MapState() = default;
  virtual std::optional<UV> get(const UK& key) = 0;
  virtual void put(UK key, UV value) = 0;
  virtual void putAll(std::vector<std::pair<UK, UV>> entries) = 0;
  virtual void remove(const UK& key) = 0;
  virtual bool contains(const UK& key) = 0;
  virtual StateIterable<std::pair<UK, UV>> entries() = 0;
  virtual StateIterable<UK> keys() = 0;
  virtual StateIterable<UV> values() = 0;
  virtual bool isEmpty() = 0;
  virtual void clear() = 0;
};

// Values added per key are combined at once by the descriptor's reduce function.
template <class T>
class ReducingState {
 public:
  virtual ~ReducingState() = default;
  // The reduction of everything added since the last clear(), if anything was.
  virtual std::optional<T> get() = 0;
  virtual void add(T value) = 0;
  virtual void clear() = 0;
};

// Values added per key go into an accumulator of the descriptor's AggregateFunction;
// get() returns its result (IN and OUT may differ).
template <class IN, class OUT>
class AggregatingState {
 public:
  virtual ~AggregatingState() = default;
  virtual std::optional<OUT> get() = 0;
  virtual void add(const IN& value) = 0;
  virtual void clear() = 0;
};

}  // namespace weir
