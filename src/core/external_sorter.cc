#include "weir/detail/core/external_sorter.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/unnamed_file.h"
#include "weir/error.h"

namespace weir::detail {
namespace {

constexpr size_t kEntryHeader = 8;  // in the buffer: key length, record length (4 bytes each)
constexpr size_t kRunHeader = 24;   // in a run: hash, order (8 bytes each), key length, record length
constexpr size_t kWriteBuffer = size_t{1} << 20;
constexpr size_t kMinReadBuffer = size_t{64} << 10;
constexpr size_t kMaxFanIn = 128;  // runs merged at once (Flink's default)

uint32_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
void append(std::string& out, V v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class V>
void append(std::vector<char>& out, V v) {
  out.insert(out.end(), reinterpret_cast<const char*>(&v), reinterpret_cast<const char*>(&v) + sizeof v);
}

// The hash keys are ordered by: XXH3 of their bytes; a test may set one that collides
// (setExternalSorterHashForTesting).
uint64_t xxh3(const void* data, size_t size) { return XXH3_64bits(data, size); }
uint64_t (*hashOfKey)(const void*, size_t) = xxh3;

// Whether a comes before b: by hash, key bytes, then order within the key.
bool before(uint64_t ha, std::string_view ka, int64_t oa, uint64_t hb, std::string_view kb, int64_t ob) {
  if (ha != hb) return ha < hb;
  if (const int c = ka.compare(kb); c != 0) return c < 0;
  return oa < ob;
}

}  // namespace

// One sorted run in a file without a name: written once, then read front to back
// through a buffer. Each entry: hash, order (8 bytes each), key length, record length (4
// bytes each), key, record; in this machine's byte order, since no other reads it.
class ExternalSorter::Run {
 public:
  Run(const std::string& directory, const std::string& owner) : owner_(owner) {
    std::error_code ec;
    fd_ = core::openUnnamedFile(directory, ec);
    if (fd_ < 0) fail("cannot spill sorted input to '" + directory + "'", ec.value());
  }
  ~Run() {
    if (fd_ >= 0) ::close(fd_);
  }

  void append(uint64_t hash, int64_t order, std::string_view key, std::string_view record) {
    if (out_.capacity() == 0) out_.reserve(kWriteBuffer);
    if (out_.size() + kRunHeader + key.size() + record.size() > kWriteBuffer) flush();
    detail::append(out_, hash);
    detail::append(out_, order);
    detail::append(out_, static_cast<uint32_t>(key.size()));
    detail::append(out_, static_cast<uint32_t>(record.size()));
    out_.append(key);
    out_.append(record);
  }
  // Writes what is buffered and frees the buffer; returns the run's size.
  uint64_t finishWriting() {
    flush();
    std::string().swap(out_);
    return size_;
  }

  // Reads from the start through a buffer of `bytes`; loads the first entry.
  bool startReading(size_t bytes) {
    in_.resize(bytes);
    return read();
  }
  // Loads the next entry; false at the end of the run.
  bool read() {
    begin_ += consumed_;
    consumed_ = 0;
    if (!fill(kRunHeader, true)) return false;
    const char* p = in_.data() + begin_;
    const size_t keyLength = load32(p + 16), recordLength = load32(p + 20);
    const size_t total = kRunHeader + keyLength + recordLength;
    fill(total, false);
    p = in_.data() + begin_;
    std::memcpy(&hash, p, sizeof hash);
    std::memcpy(&order, p + 8, sizeof order);
    key = std::string_view(p + kRunHeader, keyLength);
    record = std::string_view(p + kRunHeader + keyLength, recordLength);
    consumed_ = total;
    return true;
  }

  // The entry read last.
  uint64_t hash = 0;
  int64_t order = 0;
  std::string_view key, record;

 private:
  void flush() {
    size_t done = 0;
    while (done < out_.size()) {
      const ssize_t n = ::write(fd_, out_.data() + done, out_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot write a spilled run of its sorted input", errno);
      done += static_cast<size_t>(n);
    }
    size_ += out_.size();
    out_.clear();
  }

  // Makes `need` bytes available from begin_. At the end of the run: false where an
  // entry may start (`atEntry`), else the run is cut short.
  bool fill(size_t need, bool atEntry) {
    if (end_ - begin_ >= need) return true;
    std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (in_.size() < need) in_.resize(need);  // an entry larger than the read buffer
    while (end_ < need) {
      const ssize_t n = ::pread(fd_, in_.data() + end_, in_.size() - end_, static_cast<off_t>(readOffset_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot read a spilled run of its sorted input back", errno);
      if (n == 0) {
        if (atEntry && end_ == 0) return false;
        fail("a spilled run of its sorted input ends inside a record", 0);
      }
      end_ += static_cast<size_t>(n);
      readOffset_ += static_cast<uint64_t>(n);
    }
    return true;
  }

  [[noreturn]] void fail(const std::string& what, int error) const {
    throw Error(ErrorCode::kIo, owner_ + ": " + what + (error != 0 ? std::string(": ") + std::strerror(error) : "") +
                                    " (io.tmp.dirs names where batch execution spills)");
  }

  std::string owner_;
  int fd_ = -1;
  std::string out_;
  uint64_t size_ = 0;
  std::vector<char> in_;
  size_t begin_ = 0, end_ = 0, consumed_ = 0;
  uint64_t readOffset_ = 0;
};

// Runs read together, each through an equal share of the budget (at least 64 KiB), the
// first entry of all of them next. Of equal key and order, the earlier run's entry
// comes first: runs hold records in the order they were added.
class ExternalSorter::Merge {
 public:
  Merge(std::vector<std::unique_ptr<Run>> runs, size_t budget) : runs_(std::move(runs)) {
    const size_t share = std::max(kMinReadBuffer, budget / std::max<size_t>(runs_.size(), 1));
    for (size_t i = 0; i < runs_.size(); ++i)
      if (runs_[i]->startReading(share)) heap_.push_back(i);
    std::make_heap(heap_.begin(), heap_.end(), later());
  }
  // The next entry, in `top`, valid until the following call; false at the end.
  bool next(const Run*& top) {
    if (last_ != SIZE_MAX && runs_[last_]->read()) {
      heap_.push_back(last_);
      std::push_heap(heap_.begin(), heap_.end(), later());
    }
    last_ = SIZE_MAX;
    if (heap_.empty()) return false;
    std::pop_heap(heap_.begin(), heap_.end(), later());
    last_ = heap_.back();
    heap_.pop_back();
    top = runs_[last_].get();
    return true;
  }

 private:
  // The heap keeps on top what no other comes before: "run a's entry comes after run
  // b's" is its less-than.
  struct Later {
    const Merge* merge;
    bool operator()(size_t a, size_t b) const {
      const Run& x = *merge->runs_[a];
      const Run& y = *merge->runs_[b];
      if (before(x.hash, x.key, x.order, y.hash, y.key, y.order)) return false;
      if (before(y.hash, y.key, y.order, x.hash, x.key, x.order)) return true;
      return a > b;
    }
  };
  Later later() const { return Later{this}; }

  std::vector<std::unique_ptr<Run>> runs_;
  std::vector<size_t> heap_;
  size_t last_ = SIZE_MAX;  // the run whose entry next() gave last: it reads on next time
};

ExternalSorter::ExternalSorter(size_t budget, std::string directory, std::string owner)
    : budget_(std::max<size_t>(budget, 1024)), directory_(std::move(directory)), owner_(std::move(owner)) {}

ExternalSorter::~ExternalSorter() = default;

void ExternalSorter::add(std::string_view key, int64_t order, std::string_view record) {
  constexpr size_t kMaxLength = std::numeric_limits<uint32_t>::max();
  if (key.size() >= kMaxLength || record.size() >= kMaxLength)
    throw Error(ErrorCode::kInvalidArgument, owner_ + ": a record of " + std::to_string(record.size()) +
                                                 " bytes is more than sorted input takes (4 GiB)");
  const size_t bytes = kEntryHeader + key.size() + record.size();
  if (!index_.empty() && bufferedBytes() + bytes + sizeof(Entry) > budget_) spill();
  // Grown by doubling, never past the budget (unless one record is larger).
  const size_t need = arena_.size() + bytes;
  if (need > arena_.capacity())
    arena_.reserve(std::min(std::max({need, arena_.capacity() * 2, kMinReadBuffer}), std::max(budget_, need)));
  if (index_.size() == index_.capacity())
    index_.reserve(std::min(std::max<size_t>(index_.capacity() * 2, 1024), std::max<size_t>(budget_ / sizeof(Entry), 1024)));
  const uint64_t offset = arena_.size();
  append(arena_, static_cast<uint32_t>(key.size()));
  append(arena_, static_cast<uint32_t>(record.size()));
  arena_.insert(arena_.end(), key.begin(), key.end());
  arena_.insert(arena_.end(), record.begin(), record.end());
  index_.push_back({hashOfKey(key.data(), key.size()), order, offset});
}

std::string_view ExternalSorter::keyAt(uint64_t offset) const {
  const char* p = arena_.data() + offset;
  return {p + kEntryHeader, load32(p)};
}
std::string_view ExternalSorter::recordAt(uint64_t offset) const {
  const char* p = arena_.data() + offset;
  return {p + kEntryHeader + load32(p), load32(p + 4)};
}

// By key and order; of equal ones, in the order added (their offsets grow). Sorted by
// hash and order first, which reads no key: a key's records are many, and comparing
// their key bytes again and again, each at a random place in the buffer, cost more than
// the rest of the sort. Then each run of equal hashes is checked to hold one key, once
// per entry; one that holds more (keys whose hashes collide) is sorted again by key
// bytes as well, which gives the order before() gives.
void ExternalSorter::sortBuffer() {
  std::sort(index_.begin(), index_.end(), [](const Entry& a, const Entry& b) {
    if (a.hash != b.hash) return a.hash < b.hash;
    if (a.order != b.order) return a.order < b.order;
    return a.offset < b.offset;
  });
  for (size_t begin = 0; begin < index_.size();) {
    const std::string_view key = keyAt(index_[begin].offset);
    size_t end = begin + 1;
    bool oneKey = true;
    for (; end < index_.size() && index_[end].hash == index_[begin].hash; ++end)
      oneKey = oneKey && keyAt(index_[end].offset) == key;
    if (!oneKey)
      std::sort(index_.begin() + static_cast<std::ptrdiff_t>(begin), index_.begin() + static_cast<std::ptrdiff_t>(end),
                [&](const Entry& a, const Entry& b) {
                  if (before(a.hash, keyAt(a.offset), a.order, b.hash, keyAt(b.offset), b.order)) return true;
                  if (before(b.hash, keyAt(b.offset), b.order, a.hash, keyAt(a.offset), a.order)) return false;
                  return a.offset < b.offset;
                });
    begin = end;
  }
}

// Tests only: makes the sorter order keys by `hash` instead of XXH3 (null: XXH3 again),
// to see keys whose hashes collide grouped all the same. Declared where it is used.
void setExternalSorterHashForTesting(uint64_t (*hash)(const void*, size_t)) {
  hashOfKey = hash ? hash : xxh3;
}

void ExternalSorter::spill() {
  sortBuffer();
  auto run = std::make_unique<Run>(directory_, owner_);
  for (const Entry& e : index_) run->append(e.hash, e.order, keyAt(e.offset), recordAt(e.offset));
  spilledBytes_ += run->finishWriting();
  runs_.push_back(std::move(run));
  ++spilledRuns_;
  arena_.clear();
  index_.clear();
  if (arena_.capacity() > budget_) std::vector<char>().swap(arena_);  // it held a record larger than the budget
}

void ExternalSorter::finish() {
  if (finished_) return;
  finished_ = true;
  if (runs_.empty()) {
    sortBuffer();
    return;
  }
  if (!index_.empty()) spill();
  std::vector<char>().swap(arena_);
  std::vector<Entry>().swap(index_);
  // As many runs at once as the budget reads through 64 KiB each (2 to 128): more are
  // merged, a group at a time, into fewer runs first. Groups are taken in order, so runs
  // stay in the order their records were added.
  const size_t fanIn = std::clamp<size_t>(budget_ / kMinReadBuffer, 2, kMaxFanIn);
  while (runs_.size() > fanIn) {
    std::vector<std::unique_ptr<Run>> merged;
    for (size_t first = 0; first < runs_.size(); first += fanIn) {
      std::vector<std::unique_ptr<Run>> group;
      for (size_t i = first; i < std::min(first + fanIn, runs_.size()); ++i) group.push_back(std::move(runs_[i]));
      Merge merge(std::move(group), budget_);
      auto run = std::make_unique<Run>(directory_, owner_);
      for (const Run* top; merge.next(top);) run->append(top->hash, top->order, top->key, top->record);
      spilledBytes_ += run->finishWriting();
      merged.push_back(std::move(run));
    }
    runs_ = std::move(merged);
  }
  merge_ = std::make_unique<Merge>(std::move(runs_), budget_);
}

bool ExternalSorter::next(std::string_view& key, std::string_view& record) {
  finish();
  if (merge_) {
    const Run* top = nullptr;
    if (!merge_->next(top)) return false;
    key = top->key;
    record = top->record;
    return true;
  }
  if (position_ == index_.size()) {
    std::vector<char>().swap(arena_);
    std::vector<Entry>().swap(index_);
    position_ = 0;
    return false;
  }
  const uint64_t offset = index_[position_++].offset;
  key = keyAt(offset);
  record = recordAt(offset);
  return true;
}

}  // namespace weir::detail
