// How a file sink names its part files (Flink's OutputFileConfig): a published part file
// is "<prefix>-<uid>-<subtask>-<counter><suffix>", where uid is new each time a sink
// subtask starts (so a restarted job never reuses a name), and a part file still being
// written is hidden as ".<that name>.inprogress".
#pragma once

#include <string>

#include "weir/error.h"

namespace weir {

class OutputFileConfig {
 public:
  class Builder {
   public:
    Builder& withPartPrefix(std::string prefix) {
      prefix_ = std::move(prefix);
      return *this;
    }
    Builder& withPartSuffix(std::string suffix) {
      suffix_ = std::move(suffix);
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming a prefix or suffix that is not part of
    // a file name.
    OutputFileConfig build() const {
      check("prefix", prefix_);
      check("suffix", suffix_);
      if (prefix_.empty()) throw Error(ErrorCode::kInvalidArgument, "OutputFileConfig: the part prefix is empty");
      return OutputFileConfig(prefix_, suffix_);
    }

   private:
    static void check(const char* what, const std::string& s) {
      if (s.find('/') != std::string::npos || s.find('\0') != std::string::npos)
        throw Error(ErrorCode::kInvalidArgument,
                    std::string("OutputFileConfig: the part ") + what + " '" + s + "' holds a '/'");
    }
    std::string prefix_ = "part";
    std::string suffix_;
  };
  static Builder builder() { return {}; }

  OutputFileConfig() : OutputFileConfig("part", "") {}
  const std::string& getPartPrefix() const { return prefix_; }
  const std::string& getPartSuffix() const { return suffix_; }

 private:
  OutputFileConfig(std::string prefix, std::string suffix) : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  std::string prefix_;
  std::string suffix_;
};

}  // namespace weir
