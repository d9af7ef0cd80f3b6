#include "runtime/blocking_partition.h"

#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <system_error>

#include "core/unnamed_file.h"
#include "weir/error.h"

namespace weir::runtime {

bool BlockingShuffleMemory::tryReserve(size_t bytes) {
  size_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > budget_ - held) return false;  // held never exceeds budget_
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void BlockingShuffleMemory::release(size_t bytes) {
  [[maybe_unused]] const size_t held = held_.fetch_sub(bytes, std::memory_order_relaxed);
  assert(bytes <= held && "blocking shuffle memory given back that was not taken");
}

BlockingResultPartition::BlockingResultPartition(int subpartitions, BlockingShuffleMemory& memory,
                                                 std::string directory, std::string owner)
    : memory_(memory),
      directory_(std::move(directory)),
      owner_(std::move(owner)),
      blocks_(static_cast<size_t>(subpartitions)) {}

BlockingResultPartition::~BlockingResultPartition() {
  memory_.release(reserved_);
  if (fd_ >= 0) ::close(fd_);
}

void BlockingResultPartition::append(int subpartition, std::string_view block) {
  if (finished()) throw Error(ErrorCode::kInternal, owner_ + ": a block appended to a finished blocking partition");
  if (subpartition < 0 || subpartition >= subpartitions())
    throw Error(ErrorCode::kInternal, owner_ + ": no subpartition " + std::to_string(subpartition));
  Block b;
  b.length = block.size();
  if (memory_.tryReserve(block.size())) {
    reserved_ += block.size();
    b.bytes.assign(block);
  } else {
    if (fd_ < 0) {
      std::error_code ec;
      fd_ = core::openUnnamedFile(directory_, ec);
      if (fd_ < 0) fail("cannot spill its output to '" + directory_ + "'", ec.value());
    }
    size_t done = 0;
    while (done < block.size()) {
      const ssize_t n = ::pwrite(fd_, block.data() + done, block.size() - done, static_cast<off_t>(fileSize_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot spill its output to '" + directory_ + "'", errno);
      done += static_cast<size_t>(n);
    }
    b.spilled = true;
    b.offset = fileSize_;
    fileSize_ += block.size();
  }
  bytes_ += block.size();
  blocks_[static_cast<size_t>(subpartition)].push_back(std::move(b));
}

BlockingResultPartition::Reader BlockingResultPartition::reader(int subpartition) const {
  if (!finished()) throw Error(ErrorCode::kInternal, owner_ + ": a blocking partition read before it was finished");
  if (subpartition < 0 || subpartition >= subpartitions())
    throw Error(ErrorCode::kInternal, owner_ + ": no subpartition " + std::to_string(subpartition));
  return Reader(this, subpartition);
}

bool BlockingResultPartition::Reader::next(std::string_view& block) {
  const auto& blocks = partition_->blocks_[static_cast<size_t>(subpartition_)];
  if (next_ == blocks.size()) return false;
  const Block& b = blocks[next_++];
  if (!b.spilled) {
    block = b.bytes;
    return true;
  }
  buffer_.resize(b.length);
  size_t done = 0;
  while (done < b.length) {
    const ssize_t n =
        ::pread(partition_->fd_, buffer_.data() + done, b.length - done, static_cast<off_t>(b.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) partition_->fail("cannot read its spilled output back", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  block = buffer_;
  return true;
}

void BlockingResultPartition::fail(const std::string& what, int error) const {
  throw Error(ErrorCode::kIo, owner_ + ": " + what + (error != 0 ? ": " + std::generic_category().message(error) : "") +
                                  " (io.tmp.dirs names where batch execution spills)");
}

}  // namespace weir::runtime
