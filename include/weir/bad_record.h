// What a source does with a record it cannot read (malformed, too long, of another
// schema): BadRecordPolicy, and BadRecord, what the dead-letter side output carries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weir/error.h"
#include "weir/metrics.h"
#include "weir/output_tag.h"
#include "weir/serializer.h"

namespace weir {

enum class BadRecordPolicy {
  FAIL,         // the job fails: the error names the source, the split, the position and the reason
  SKIP,         // the record is dropped and counted in numRecordsInErrors
  DEAD_LETTER,  // counted, and sent to the source's side output deadLetterOutput()
};

// A record a source could not read: where it was, why, and its raw bytes (at most the
// source's longest record; a longer one keeps its first bytes).
struct BadRecord {
  std::string source;     // the source operator's name
  std::string split;      // the file, partition or stream it was read from
  int64_t position = 0;   // its offset in the split (a byte offset for files)
  std::string reason;
  std::string bytes;
};
WEIR_STRUCT(BadRecord, source, split, position, reason, bytes);

// The side output of a source whose policy is DEAD_LETTER:
//   auto events = env.fromSource(...);
//   events.getSideOutput(deadLetterOutput()).sinkTo(...);
// A job whose DEAD_LETTER source has no consumer of it is refused at submission.
inline const OutputTag<BadRecord>& deadLetterOutput() {
  static const OutputTag<BadRecord> tag("weir.dead-letters");
  return tag;
}

// A source reader's way to report a bad record; it applies the source's policy.
class BadRecordHandler {
 public:
  BadRecordHandler() = default;  // FAIL, for a reader outside a job
  BadRecordHandler(BadRecordPolicy policy, std::string sourceName, Counter errors, std::vector<BadRecord>* deadLetters)
      : policy_(policy), source_(std::move(sourceName)), errors_(errors), deadLetters_(deadLetters) {}

  BadRecordPolicy policy() const { return policy_; }

  // FAIL: throws weir::SerializationError naming the source, split, position and reason.
  // SKIP: counts it. DEAD_LETTER: counts it and keeps it for the side output.
  void handle(std::string_view split, int64_t position, std::string_view reason, std::string_view bytes) {
    if (policy_ == BadRecordPolicy::FAIL) {
      throw SerializationError("source '" + source_ + "': bad record in '" + std::string(split) + "' at position " +
                               std::to_string(position) + ": " + std::string(reason) +
                               " (a bad-record policy of SKIP or DEAD_LETTER would go on without it)");
    }
    errors_.inc();
    if (policy_ == BadRecordPolicy::DEAD_LETTER && deadLetters_ != nullptr)
      deadLetters_->push_back(BadRecord{source_, std::string(split), position, std::string(reason), std::string(bytes)});
  }

 private:
  BadRecordPolicy policy_ = BadRecordPolicy::FAIL;
  std::string source_;
  Counter errors_;
  std::vector<BadRecord>* deadLetters_ = nullptr;
};

}  // namespace weir
