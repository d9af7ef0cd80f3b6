// A named, typed side output of a process function (Flink's OutputTag).
#pragma once

#include <string>

namespace weir {

namespace detail {
// Process-wide small integer for a tag name, so emitting to a tag needs no string compare.
int internOutputTag(const std::string& id);
}  // namespace detail

// Names a side output carrying values of type T. Two tags with the same id are the same
// side output.
template <class T>
class OutputTag {
 public:
  using Type = T;
  explicit OutputTag(std::string id) : id_(std::move(id)), index_(detail::internOutputTag(id_)) {}
  const std::string& getId() const { return id_; }
  int index() const { return index_; }

 private:
  std::string id_;
  int index_;
};

}  // namespace weir
