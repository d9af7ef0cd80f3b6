// A vector in fixed chunks of 1024 elements that can be snapshotted in O(chunks): a
// snapshot shares the chunks, and the first write to a shared chunk copies it. Elements
// never move while their chunk is not shared, so pointers to them stay valid.
//
// Owned by one thread; a Snapshot may be read by another thread while the owner goes on
// writing (the chunks it holds are never written again).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace weir::detail {

template <class T>
class ChunkedVector {
 public:
  static constexpr uint32_t kShift = 10;
  static constexpr uint32_t kChunkSize = 1u << kShift;
  using Chunk = std::array<T, kChunkSize>;

  // An immutable view of the vector at one moment.
  class Snapshot {
   public:
    Snapshot() = default;
    size_t size() const { return size_; }
    const T& operator[](size_t i) const { return (*chunks_[i >> kShift])[i & (kChunkSize - 1)]; }

   private:
    friend class ChunkedVector;
    std::vector<std::shared_ptr<const Chunk>> chunks_;
    size_t size_ = 0;
  };

  size_t size() const { return size_; }
  const T& operator[](size_t i) const { return (*chunks_[i >> kShift])[i & (kChunkSize - 1)]; }
  // The element, for writing: copies its chunk first if a snapshot shares it.
  T& mutableAt(size_t i) {
    auto& chunk = chunks_[i >> kShift];
    if (chunk.use_count() > 1) [[unlikely]] {
      chunk = std::make_shared<Chunk>(*chunk);
    } else {
      // A snapshot that just let go of this chunk read it before: see its reads.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return (*chunk)[i & (kChunkSize - 1)];
  }
  // Grows to at least `n` elements (new ones value-initialized).
  void growTo(size_t n) {
    while (chunks_.size() * kChunkSize < n) chunks_.push_back(std::make_shared<Chunk>());
    if (n > size_) size_ = n;
  }
  void push_back(T value) {
    growTo(size_ + 1);
    mutableAt(size_ - 1) = std::move(value);
  }

  Snapshot snapshot() const {
    Snapshot s;
    s.chunks_.assign(chunks_.begin(), chunks_.end());
    s.size_ = size_;
    return s;
  }

 private:
  std::vector<std::shared_ptr<Chunk>> chunks_;
  size_t size_ = 0;
};

}  // namespace weir::detail
