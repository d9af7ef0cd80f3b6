// What the word count examples share: the tokenizer (a line into (word, 1) pairs), the
// rolling count per word, and the part files the counts go to.
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

// Each word's count, updated at every occurrence (Flink's streaming WordCount).
inline auto countWords(DataStream<std::string> lines) {
  return lines.flatMap(Tokenizer{})
      .name("tokenize")
      .keyBy([](const WordCount& wc) { return wc.first; })
      .sum<1>()
      .name("count")
      .uid("count");
}

// The counts into part files in `folder`, published exactly once at each checkpoint.
template <class Stream>
void countsIntoFiles(Stream counts, const std::string& folder) {
  counts
      .sinkTo(FileSink<WordCount>::forRowFormat(folder, SimpleStringEncoder<WordCount>())
                  .withBucketAssigner(BasePathBucketAssigner<WordCount>())
                  .build())
      .name("counts file")
      .uid("counts-file");
}

}  // namespace weir::cli
