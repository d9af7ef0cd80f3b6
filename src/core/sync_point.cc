#include "core/sync_point.h"

#include <vector>

namespace weir::core {

namespace {
thread_local int callbackDepth = 0;  // callbacks running on this thread
}  // namespace

SyncPoints& SyncPoints::instance() {
  static SyncPoints& points = *new SyncPoints;  // never destroyed: threads may pass points at exit
  return points;
}

void SyncPoints::setCallback(const std::string& point, Callback callback) {
  std::lock_guard lock(mutex_);
  points_[point].callback = std::make_shared<Callback>(std::move(callback));
  any_ = true;
}

void SyncPoints::waitUntilIdleLocked(std::unique_lock<std::mutex>& lock, const std::string& point) {
  if (callbackDepth > 0) return;  // a callback clearing points would wait for itself
  idle_.wait(lock, [&] {
    auto it = points_.find(point);
    return it == points_.end() || it->second.running == 0;
  });
}

void SyncPoints::clearCallback(const std::string& point) {
  std::unique_lock lock(mutex_);
  auto it = points_.find(point);
  if (it == points_.end()) return;
  it->second.callback.reset();
  waitUntilIdleLocked(lock, point);
  it = points_.find(point);
  if (it != points_.end() && !it->second.callback && it->second.running == 0) points_.erase(it);
  any_ = !points_.empty();
}

void SyncPoints::clearAll() {
  std::unique_lock lock(mutex_);
  std::vector<std::string> names;
  for (auto& [name, entry] : points_) {
    entry.callback.reset();
    names.push_back(name);
  }
  for (const auto& name : names) waitUntilIdleLocked(lock, name);
  std::erase_if(points_, [](const auto& p) { return !p.second.callback && p.second.running == 0; });
  any_ = !points_.empty();
}

void SyncPoints::process(std::string_view point, void* arg) {
  if (!any_.load(std::memory_order_acquire)) return;
  std::shared_ptr<Callback> callback;
  {
    std::lock_guard lock(mutex_);
    auto it = points_.find(point);
    if (it == points_.end() || !it->second.callback) return;
    callback = it->second.callback;
    ++it->second.running;
  }
  struct Done {
    SyncPoints& points;
    std::string_view point;
    ~Done() {
      --callbackDepth;
      std::lock_guard lock(points.mutex_);
      auto it = points.points_.find(point);
      if (it != points.points_.end()) --it->second.running;
      points.idle_.notify_all();
    }
  } done{*this, point};
  ++callbackDepth;
  (*callback)(arg);  // may throw: Done still counts the call as over
}

}  // namespace weir::core
