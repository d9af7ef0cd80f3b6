// Groups records by key for batch execution's sorted inputs (Flink's ExternalSorter):
// records are held in memory up to a budget; beyond it each full buffer is sorted and
// spilled to local disk as a run, and the runs are merged as they are read back (in
// more than one pass when there are more than the budget can read at once). Keys and
// records are bytes (a keyed operator serializes them: SortingDataInput).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::detail {

class ExternalSorter {
 public:
  // `budget`: about the most the records, keys and their index take in memory, and what
  // a merge reads runs back through. `directory`: where runs go, as files without a name
  // that vanish when closed (a crash leaves nothing behind). `owner`: the operator
  // subtask, for messages.
  ExternalSorter(size_t budget, std::string directory, std::string owner);
  ~ExternalSorter();
  ExternalSorter(const ExternalSorter&) = delete;
  ExternalSorter& operator=(const ExternalSorter&) = delete;

  // Adds one record under `key`, to come back among the key's records in `order` (a
  // timestamp); records of equal order come back in the order they were added. A record
  // larger than the budget is taken on its own. Throws weir::Error: kIo when a run
  // cannot be written, kInvalidArgument for a key or record of 4 GiB or more.
  void add(std::string_view key, int64_t order, std::string_view record);
  // Ends the input: after it, next() gives every record added, those of one key one
  // after another. Which key comes first is unspecified (keys are ordered by a hash of
  // their bytes).
  void finish();
  // The next record and its key, viewed until the following call; false at the end.
  bool next(std::string_view& key, std::string_view& record);

  // Runs spilled from the buffer, and every byte written to disk (merge passes too).
  size_t spilledRuns() const { return spilledRuns_; }
  uint64_t spilledBytes() const { return spilledBytes_; }
  // What the buffer and its index hold now.
  size_t bufferedBytes() const { return arena_.size() + index_.size() * sizeof(Entry); }

 private:
  struct Entry {
    uint64_t hash;    // of the key's bytes
    int64_t order;    // within the key
    uint64_t offset;  // in arena_: key length (4 bytes), record length (4 bytes), key, record
  };
  class Run;
  class Merge;

  std::string_view keyAt(uint64_t offset) const;
  std::string_view recordAt(uint64_t offset) const;
  void sortBuffer();
  void spill();

  size_t budget_;
  std::string directory_;
  std::string owner_;
  std::vector<char> arena_;
  std::vector<Entry> index_;
  std::vector<std::unique_ptr<Run>> runs_;  // in the order spilled
  size_t spilledRuns_ = 0;
  uint64_t spilledBytes_ = 0;
  bool finished_ = false;
  // Reading: the buffer alone (no runs), or a merge of the runs.
  size_t position_ = 0;  // in index_
  std::unique_ptr<Merge> merge_;
};

}  // namespace weir::detail
