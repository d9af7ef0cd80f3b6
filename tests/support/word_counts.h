// What a rolling word count published, checked against the truth: for each word, the
// counts 1, 2, ..., n each once (nothing lost, nothing twice, nothing beyond n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace weir::test {

// Every count published per word in the part files under `folder` (lines `("word", n)`);
// `hidden` counts part files still hidden (a leading '.'), `broken` lines of another form.
inline std::map<std::string, std::vector<int64_t>> publishedCounts(const std::filesystem::path& folder, size_t& hidden,
                                                                   size_t& broken) {
  std::map<std::string, std::vector<int64_t>> counts;
  hidden = broken = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(folder)) {
    if (!e.is_regular_file()) continue;
    if (e.path().filename().string()[0] == '.') {
      ++hidden;
      continue;
    }
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      auto comma = line.find("\", ");
      if (line.rfind("(\"", 0) != 0 || comma == std::string::npos || line.back() != ')') {
        ++broken;
        continue;
      }
      counts[line.substr(2, comma - 2)].push_back(std::stoll(line.substr(comma + 3)));
    }
  }
  return counts;
}

struct RollingCountCheck {
  int64_t duplicates = 0;  // a count seen more than once
  int64_t losses = 0;      // a count of 1..n never seen
  int64_t beyond = 0;      // a count above n
  int64_t missingWords = 0;
  std::string example;     // the first wrong word
  bool exact() const { return duplicates == 0 && losses == 0 && beyond == 0 && missingWords == 0; }
  bool atLeastOnce() const { return losses == 0 && beyond == 0 && missingWords == 0; }
  friend std::ostream& operator<<(std::ostream& os, const RollingCountCheck& c) {
    return os << c.duplicates << " duplicated, " << c.losses << " lost, " << c.beyond << " beyond the truth, "
              << c.missingWords << " words missing; first wrong word: " << c.example;
  }
};

inline RollingCountCheck checkRollingCounts(std::map<std::string, std::vector<int64_t>> counts,
                                            const std::map<std::string, int64_t>& truth) {
  RollingCountCheck c;
  for (const auto& [word, n] : truth)
    if (!counts.count(word)) {
      ++c.missingWords;
      if (c.example.empty()) c.example = word;
    }
  for (auto& [word, seen] : counts) {
    std::sort(seen.begin(), seen.end());
    auto it = truth.find(word);
    const int64_t n = it == truth.end() ? 0 : it->second;
    int64_t next = 1;  // the smallest count not seen yet
    const int64_t before = c.duplicates + c.losses + c.beyond;
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] > n) {
        ++c.beyond;
      } else if (i > 0 && seen[i] == seen[i - 1]) {
        ++c.duplicates;
      } else {
        c.losses += seen[i] - next;
        next = seen[i] + 1;
      }
    }
    c.losses += std::max<int64_t>(0, n + 1 - next);
    if (c.duplicates + c.losses + c.beyond > before && c.example.empty()) c.example = word;
  }
  return c;
}

}  // namespace weir::test
