// A blocking exchange's storage in a batch job (Flink's blocking result partition): one
// producer subtask's output on one exchange, one subpartition per consumer subtask,
// written whole before any of it is read (docs/batch.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weir/detail/runtime/blocking_exchange.h"

namespace weir::runtime {

// What a job's blocking partitions may hold in memory together; beyond it they spill.
// Shared by every task of the job: any thread.
class BlockingShuffleMemory {
 public:
  explicit BlockingShuffleMemory(size_t budget) : budget_(budget) {}
  // Takes `bytes` of the budget if that much is left.
  bool tryReserve(size_t bytes);
  // Gives back `bytes` that tryReserve took.
  void release(size_t bytes);
  size_t held() const { return held_.load(std::memory_order_relaxed); }
  size_t budget() const { return budget_; }

 private:
  const size_t budget_;
  std::atomic<size_t> held_{0};
};

// Per subpartition, the blocks appended to it, in order: each kept in memory while the
// job's BlockingShuffleMemory allows, else appended to one file without a name in the
// spill folder (io.tmp.dirs), which vanishes with the partition or the process. The
// producer's thread appends and finishes; then readers, on any threads at once, each
// read one subpartition back (the file by pread, so they share it without a lock).
// finish() releases what was written to the threads that call reader() after it.
class BlockingResultPartition final : public detail::BlockSink {
 public:
  // `owner` names the producer in messages (its subtask and exchange).
  BlockingResultPartition(int subpartitions, BlockingShuffleMemory& memory, std::string directory, std::string owner);
  ~BlockingResultPartition() override;  // returns its memory; its file goes with it
  BlockingResultPartition(const BlockingResultPartition&) = delete;
  BlockingResultPartition& operator=(const BlockingResultPartition&) = delete;

  // Appends `block` to `subpartition`: a reader gives it back whole, after those appended
  // before it. Throws weir::Error (kIo) naming the owner and folder when it must spill
  // and cannot.
  void append(int subpartition, std::string_view block) override;
  // No more blocks: from now on it is only read.
  void finish() { finished_.store(true, std::memory_order_release); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  int subpartitions() const { return static_cast<int>(blocks_.size()); }
  // Bytes appended, and those of them spilled to the file.
  uint64_t bytes() const { return bytes_; }
  uint64_t spilledBytes() const { return fileSize_; }

  // Reads one subpartition's blocks, front to back.
  class Reader final : public detail::BlockReader {
   public:
    // The next block, valid until the next call; false after the last. Throws weir::Error
    // (kIo) when the file cannot be read.
    bool next(std::string_view& block) override;

   private:
    friend class BlockingResultPartition;
    Reader(const BlockingResultPartition* partition, int subpartition)
        : partition_(partition), subpartition_(subpartition) {}
    const BlockingResultPartition* partition_;
    int subpartition_;
    size_t next_ = 0;
    std::string buffer_;  // a spilled block, read back
  };
  // A reader of `subpartition`; weir::Error (kInternal) before finish().
  Reader reader(int subpartition) const;

 private:
  // A block in memory (`bytes`), or `length` bytes at `offset` in the file.
  struct Block {
    std::string bytes;
    uint64_t offset = 0;
    uint64_t length = 0;
    bool spilled = false;
  };
  [[noreturn]] void fail(const std::string& what, int error) const;

  BlockingShuffleMemory& memory_;
  std::string directory_, owner_;
  std::vector<std::vector<Block>> blocks_;  // per subpartition
  int fd_ = -1;                             // the file, once a block spills
  uint64_t fileSize_ = 0, bytes_ = 0;
  size_t reserved_ = 0;  // of memory_
  std::atomic<bool> finished_{false};
};

}  // namespace weir::runtime
