// Named points in weir's code where a test can wait, inject a fault or "crash" the job
// at an exact step (RocksDB's TEST_SYNC_POINT):
//
//   WEIR_SYNC_POINT("CheckpointCoordinator::BeforeNotifyComplete");
//   WEIR_SYNC_POINT_CALLBACK("CheckpointCoordinator::AfterMetadataWritten", &checkpointId);
//
// A test sets a callback on a point by its name; the code that reaches the point runs it
// on its own thread, handing it the point's argument (documented where the point is, and
// listed in docs/checkpoints.md, "Testing with faults"). Points are compiled in only where
// WEIR_SYNC_POINTS is defined: every build type but Release (CMakeLists.txt), so a
// Release build pays nothing and a test that needs them skips there
// (SyncPoints::enabled()). Points on cold paths, passed at most once per checkpoint and
// subtask (the steps of a sink's two-phase commit), are compiled into every build with
// WEIR_COLD_SYNC_POINT_CALLBACK: they cost a call and an atomic load, and their tests
// run in Release too (librdkafka, for one, cannot run under ThreadSanitizer).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace weir::core {

// The callbacks set on named points, process-wide. Thread-safe.
class SyncPoints {
 public:
  // Called with the point's argument (null for WEIR_SYNC_POINT). It may block (a test
  // waits there), throw where the point says a throw is handled, or record what it saw.
  using Callback = std::function<void(void* arg)>;

  static SyncPoints& instance();
  // Whether this build compiled the points in.
  static constexpr bool enabled() {
#ifdef WEIR_SYNC_POINTS
    return true;
#else
    return false;
#endif
  }

  // Runs `callback` each time `point` is reached, instead of the one set before.
  void setCallback(const std::string& point, Callback callback);
  // No callback on `point` any more. Returns once no call of its callback runs (unless
  // called from a callback), so what the callback captured may then go.
  void clearCallback(const std::string& point);
  // Clears every point, as clearCallback does.
  void clearAll();

  // The code reached `point`: runs its callback, if any (the macros call this).
  void process(std::string_view point, void* arg = nullptr);

 private:
  struct Entry {
    std::shared_ptr<Callback> callback;
    int running = 0;  // calls of it in progress
  };
  void waitUntilIdleLocked(std::unique_lock<std::mutex>& lock, const std::string& point);

  std::mutex mutex_;
  std::condition_variable idle_;
  std::map<std::string, Entry, std::less<>> points_;  // guarded by mutex_
  std::atomic<bool> any_{false};                       // points_ holds a callback (read without the lock)
};

// Sets a callback for the scope of a test: cleared (waiting for calls in progress) when
// it goes.
class ScopedSyncPoint {
 public:
  ScopedSyncPoint(std::string point, SyncPoints::Callback callback) : point_(std::move(point)) {
    SyncPoints::instance().setCallback(point_, std::move(callback));
  }
  ~ScopedSyncPoint() { SyncPoints::instance().clearCallback(point_); }
  ScopedSyncPoint(const ScopedSyncPoint&) = delete;
  ScopedSyncPoint& operator=(const ScopedSyncPoint&) = delete;

 private:
  std::string point_;
};

}  // namespace weir::core

#define WEIR_COLD_SYNC_POINT_CALLBACK(name, arg) ::weir::core::SyncPoints::instance().process(name, arg)
#ifdef WEIR_SYNC_POINTS
#define WEIR_SYNC_POINT(name) ::weir::core::SyncPoints::instance().process(name)
#define WEIR_SYNC_POINT_CALLBACK(name, arg) ::weir::core::SyncPoints::instance().process(name, arg)
#else
#define WEIR_SYNC_POINT(name)
#define WEIR_SYNC_POINT_CALLBACK(name, arg)
#endif
