// A named, typed side output of a process function (Flink's OutputTag).
#pragma once

#include <string>
#include <typeindex>
#include <typeinfo>

namespace weir {

namespace detail {
// Process-wide small integer for a tag id, so emitting to a tag needs no string compare.
// Throws weir::Error (kInvalidJob) when the id was already used with another type.
int internOutputTag(const std::string& id, std::type_index type);
}  // namespace detail

// Names a side output carrying values of type T. Two tags with the same id are the same
// side output; one id cannot name side outputs of two types.
template <class T>
class OutputTag {
 public:
  using Type = T;
  explicit OutputTag(std::string id) : id_(std::move(id)), index_(detail::internOutputTag(id_, typeid(T))) {}
  const std::string& getId() const { return id_; }
  int index() const { return index_; }

 private:
  std::string id_;
  int index_;
};

}  // namespace weir
