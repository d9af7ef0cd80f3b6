// The Redis commands one record becomes, as a RedisSink's command builder writes them:
//   [](const Count& c, RedisCommands& out) { out.add({"HSET", "counts", c.word, std::to_string(c.n)}); }
// Any command, any number of them per record, each a list of arguments sent as they are
// (binary-safe).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

class RedisCommands {
 public:
  void add(std::initializer_list<std::string_view> args) {
    for (std::string_view a : args) args_.emplace_back(a);
    counts_.push_back(static_cast<uint32_t>(args.size()));
  }
  void add(const std::vector<std::string>& args) {
    args_.insert(args_.end(), args.begin(), args.end());
    counts_.push_back(static_cast<uint32_t>(args.size()));
  }

  // The commands added since clear(): command i has counts()[i] arguments, in order in args().
  const std::vector<std::string>& args() const { return args_; }
  const std::vector<uint32_t>& counts() const { return counts_; }
  void clear() {
    args_.clear();
    counts_.clear();
  }

 private:
  std::vector<std::string> args_;
  std::vector<uint32_t> counts_;
};

// Writes the commands of a record (Bahir's RedisMapper, for any command).
template <class T>
using RedisCommandBuilder = std::function<void(const T&, RedisCommands&)>;

}  // namespace weir
