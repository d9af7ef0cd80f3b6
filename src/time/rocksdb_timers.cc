// RocksDBTimers: timers in a RocksDB column, each key group's first ones cached.
//
// The cache of a key group holds its smallest entry keys; `complete` says it holds them
// all. Everything in RocksDB that the cache lacks sorts after everything in it, so the
// cache's first entry is the key group's first timer, and when the cache runs dry the
// next timers are read from just after the last one taken (skipping the tombstones of
// the timers already fired, which a seek from the key group's start would walk over).
#include <iterator>

#include "weir/detail/state/rocksdb_state.h"
#include "weir/detail/time/timer_queue.h"

namespace weir::detail {

namespace {
int64_t entryTime(std::string_view entryKey) {
  DataInput in(entryKey);
  return readTimerTime(in);
}
}  // namespace

RocksDBTimers::RocksDBTimers(RocksDBInstance& db, const std::string& name, KeyGroupRange range)
    : column_(db.column(name)), range_(range), groups_(static_cast<size_t>(range.size())) {
  // One scan per key group that has timers, from the first key group not yet read.
  for (int g = range.start; g <= range.end;) {
    auto scan = column_.scan(keyGroupPrefix(g), keyGroupPrefix(range.end + 1));
    if (!scan->valid()) break;
    g = keyGroupOfPrefix(scan->key());
    refill(g, {});
    ++g;
  }
}

RocksDBTimers::~RocksDBTimers() = default;

RocksDBTimers::Group& RocksDBTimers::group(int keyGroup) {
  if (!range_.contains(keyGroup))
    throw Error(ErrorCode::kState, "state '" + column_.stateName() + "': a timer of key group " +
                                       std::to_string(keyGroup) + " does not belong to this subtask's key groups " +
                                       std::to_string(range_.start) + "-" + std::to_string(range_.end));
  return groups_[static_cast<size_t>(keyGroup - range_.start)];
}

std::string RocksDBTimers::rocksKey(int keyGroup, std::string_view entryKey) const {
  std::string key = keyGroupPrefix(keyGroup);
  key += entryKey;
  return key;
}

void RocksDBTimers::refill(int g, std::string_view after) {
  Group& group = groups_[static_cast<size_t>(g - range_.start)];
  const std::string lower = rocksKey(g, after);
  auto scan = column_.scan(lower, keyGroupPrefix(g + 1));
  if (!after.empty() && scan->valid() && scan->key() == lower) scan->next();
  for (; scan->valid() && group.cache.size() < kCacheSize; scan->next()) group.cache.emplace(scan->key().substr(2));
  group.complete = !scan->valid();
  requeue(g);
}

void RocksDBTimers::requeue(int g) {
  Group& group = groups_[static_cast<size_t>(g - range_.start)];
  if (group.queued) heads_.erase({group.head, g});
  group.queued = !group.cache.empty();
  if (!group.queued) return;
  group.head = entryTime(*group.cache.begin());
  heads_.emplace(group.head, g);
}

std::string RocksDBTimers::entryKey(int64_t time, std::string_view rest) {
  DataOutput out;
  writeTimerTime(time, out);
  out.writeRaw(rest.data(), rest.size());
  return out.data();
}

void RocksDBTimers::add(int keyGroup, int64_t time, std::string_view rest) {
  Group& group = this->group(keyGroup);
  std::string entryKey = RocksDBTimers::entryKey(time, rest);
  if (group.cache.contains(entryKey)) return;  // cached timers are in RocksDB
  column_.put(rocksKey(keyGroup, entryKey), {});
  if (!group.complete && (group.cache.empty() || entryKey > *group.cache.rbegin())) return;
  group.cache.insert(std::move(entryKey));
  if (group.cache.size() > kCacheSize) {
    group.cache.erase(std::prev(group.cache.end()));
    group.complete = false;
  }
  requeue(keyGroup);
}

void RocksDBTimers::remove(int keyGroup, int64_t time, std::string_view rest) {
  Group& group = this->group(keyGroup);
  const std::string entryKey = RocksDBTimers::entryKey(time, rest);
  column_.remove(rocksKey(keyGroup, entryKey));
  if (group.cache.erase(entryKey) == 0) return;
  requeue(keyGroup);
  if (group.cache.empty() && !group.complete) refill(keyGroup, entryKey);
}

bool RocksDBTimers::contains(int keyGroup, int64_t time, std::string_view rest) {
  Group& group = this->group(keyGroup);
  const std::string entryKey = RocksDBTimers::entryKey(time, rest);
  if (group.cache.contains(entryKey)) return true;
  if (group.complete || (!group.cache.empty() && entryKey < *group.cache.rbegin())) return false;
  std::string value;
  return column_.get(rocksKey(keyGroup, entryKey), value);
}

std::optional<int64_t> RocksDBTimers::earliest() const {
  if (heads_.empty()) return std::nullopt;
  return heads_.begin()->first;
}

bool RocksDBTimers::pop(int64_t upTo, int& keyGroup, int64_t& time, std::string& rest) {
  if (heads_.empty() || heads_.begin()->first > upTo) return false;
  keyGroup = heads_.begin()->second;
  time = heads_.begin()->first;
  Group& group = groups_[static_cast<size_t>(keyGroup - range_.start)];
  column_.remove(rocksKey(keyGroup, *group.cache.begin()));  // (a failure changes nothing)
  std::string entryKey = std::move(group.cache.extract(group.cache.begin()).value());
  rest.assign(entryKey, 8);
  requeue(keyGroup);
  if (group.cache.empty() && !group.complete) refill(keyGroup, entryKey);
  return true;
}

}  // namespace weir::detail
