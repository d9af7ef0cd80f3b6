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
#include <utility>
#include <vector>

namespace weir::detail {

template <class T>
class ChunkedVector {
 public:
  static constexpr uint32_t kShift = 10;
  static constexpr uint32_t kChunkSize = 1u << kShift;
  using Chunk = std::array<T, kChunkSize>;

 private:
  // A chunk and the number of snapshots that hold it. A snapshot lets go with a
  // release, and the owner checks with an acquire before writing in place, so the
  // snapshot's reads (on any thread) happen before the owner's next write.
  struct Box {
    Box() = default;
    explicit Box(const Chunk& c) : chunk(c) {}
    Chunk chunk{};
    mutable std::atomic<int> snapshots{0};
  };

 public:
  // An immutable view of the vector at one moment.
  class Snapshot {
   public:
    Snapshot() = default;
    Snapshot(const Snapshot& other) : chunks_(other.chunks_), size_(other.size_) { hold(); }
    Snapshot(Snapshot&& other) noexcept = default;
    Snapshot& operator=(Snapshot other) noexcept {
      std::swap(chunks_, other.chunks_);
      std::swap(size_, other.size_);
      return *this;
    }
    ~Snapshot() {
      for (const auto& box : chunks_)
        if (box) box->snapshots.fetch_sub(1, std::memory_order_release);
    }
    size_t size() const { return size_; }
    const T& operator[](size_t i) const { return chunks_[i >> kShift]->chunk[i & (kChunkSize - 1)]; }

   private:
    friend class ChunkedVector;
    void hold() {
      for (const auto& box : chunks_) box->snapshots.fetch_add(1, std::memory_order_relaxed);
    }
    std::vector<std::shared_ptr<const Box>> chunks_;
    size_t size_ = 0;
  };

  size_t size() const { return size_; }
  const T& operator[](size_t i) const { return chunks_[i >> kShift]->chunk[i & (kChunkSize - 1)]; }
  // The element, for writing: copies its chunk first if a snapshot holds it.
  T& mutableAt(size_t i) {
    auto& box = chunks_[i >> kShift];
    if (box->snapshots.load(std::memory_order_acquire) > 0) [[unlikely]] box = std::make_shared<Box>(box->chunk);
    return box->chunk[i & (kChunkSize - 1)];
  }
  // Grows to at least `n` elements (new ones value-initialized).
  void growTo(size_t n) {
    while (chunks_.size() * kChunkSize < n) chunks_.push_back(std::make_shared<Box>());
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
    s.hold();
    return s;
  }

 private:
  std::vector<std::shared_ptr<Box>> chunks_;
  size_t size_ = 0;
};

}  // namespace weir::detail
