// The word counts' tokenizer: a line into (word, 1) pairs, shared by the examples.
#pragma once

#include <cctype>
#include <string>
#include <utility>

#include "weir/weir.h"

namespace weir::cli {

using WordCount = std::pair<std::string, int64_t>;

// Splits a line into lower-case words made of letters and digits.
struct Tokenizer : RichFlatMapFunction<std::string, WordCount> {
  void flatMap(const std::string& line, Collector<WordCount>& out) override {
    std::string word;
    for (char c : line + " ") {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!word.empty()) {
        out.collect({std::move(word), 1});
        word.clear();
      }
    }
  }
};

}  // namespace weir::cli
