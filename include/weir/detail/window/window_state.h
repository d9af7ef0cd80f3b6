// How the keyed window operator keeps its state in checkpoints and in RocksDB, whatever
// the storage path: the states it writes ("_windows" the contents of each (key, window)
// or pane, "_sessions" each key's session windows, "_timers" its timers), the form of
// their entries, and the timer of one key's window. Every path writes the same entries,
// so any backend restores another's checkpoints.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/detail/state/heap_state.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/window/window_functions.h"
#include "weir/error.h"
#include "weir/key_group.h"
#include "weir/serializer.h"
#include "weir/windows.h"

namespace weir::detail {

inline constexpr const char* kWindowContentsState = "_windows";
inline constexpr const char* kSessionsState = "_sessions";

// One session window of a key as "_sessions" holds it: the window, the window whose
// namespace holds its contents in "_windows", and whether it fired (the watermark passed
// its end; it fires again only for a late record). On RocksDB a session keeps the
// namespace it started with as it grows and absorbs others, so its contents never move;
// on the heap the two windows are the same.
struct StoredSession {
  TimeWindow window;
  TimeWindow stateWindow;
  bool fired = false;
};
WEIR_STRUCT(StoredSession, window, stateWindow, fired);
// A key's sessions, and the time its timer is armed for (INT64_MAX: none).
struct StoredSessions {
  int64_t armed = std::numeric_limits<int64_t>::max();
  std::vector<StoredSession> windows;
};
WEIR_STRUCT(StoredSessions, armed, windows);

// A timer of one key's window, pane, or (TimeWindow{}) sessions: queued on the heap or
// in RocksDB's "_timers" column.
template <class K>
struct KeyedWindowTimer {
  int64_t time;
  bool cleanup;  // drop the window's state; ordered after its firing at the same time
  K key;
  TimeWindow window;
  bool clears = false;      // paned: the cleanup of a window (not a pane), for the function's clear()
  bool firesFirst = false;  // a cleanup that fires the window first (no allowed lateness)
};

// Orders timers for a priority queue: the earliest on top, a firing before a cleanup of
// the same time.
struct LaterTimer {
  template <class Timer>
  bool operator()(const Timer& a, const Timer& b) const {
    return a.time != b.time ? a.time > b.time : a.cleanup > b.cleanup;
  }
};

// Hashes a (key, window) pair.
template <class K>
struct KeyAndWindowHash {
  size_t operator()(const std::pair<K, TimeWindow>& s) const {
    return KeyHasher<K>{}(s.first) * 31 + KeyHasher<TimeWindow>{}(s.second);
  }
};

template <class K>
void writeKeyAndWindow(const K& key, const TimeWindow& w, DataOutput& out) {
  Serializer<K>::serialize(key, out);
  out.write(w.start);
  out.write(w.end);
}
template <class K>
std::pair<K, TimeWindow> readKeyAndWindow(DataInput& in, int keyGroup, const char* state = kWindowContentsState) {
  K key = decodeState<K>(in, state, keyGroup);
  TimeWindow w;
  w.start = decodeState<int64_t>(in, state, keyGroup);
  w.end = decodeState<int64_t>(in, state, keyGroup);
  return {std::move(key), w};
}

// A timer's entry key after its time: its kind (0 fire, 1 cleanup, 2 clear a paned
// window, 3 fire and clean up), key and window.
template <class K>
void encodeWindowTimer(const KeyedWindowTimer<K>& t, DataOutput& out) {
  out.write(static_cast<uint8_t>(t.clears ? 2 : !t.cleanup ? 0 : t.firesFirst ? 3 : 1));
  writeKeyAndWindow(t.key, t.window, out);
}
template <class K>
KeyedWindowTimer<K> decodeWindowTimer(int64_t time, std::string_view rest, int keyGroup) {
  DataInput in(rest);
  const uint8_t kind = decodeState<uint8_t>(in, kTimersState, keyGroup);
  if (kind > 3)
    throw Error(ErrorCode::kSerialization, stateWhere(kTimersState, keyGroup) + ": a timer of unknown kind " +
                                               std::to_string(kind));
  auto [key, window] = readKeyAndWindow<K>(in, keyGroup, kTimersState);
  return KeyedWindowTimer<K>{time, kind != 0, std::move(key), window, kind == 2, kind == 3};
}

// A window's contents as "_windows" holds them: the accumulator, or the records as a
// ListState holds a list (each element length-prefixed).
template <class Policy>
void encodeWindowContents(const typename Policy::Acc& acc, DataOutput& out) {
  if constexpr (KeepsRecords<Policy>) writeListElements(acc, out);
  else Serializer<typename Policy::Acc>::serialize(acc, out);
}
template <class T, class Policy>
typename Policy::Acc decodeWindowContents(std::string_view bytes, int keyGroup) {
  if constexpr (KeepsRecords<Policy>) {
    return readListElements<T>(bytes, kWindowContentsState, keyGroup);
  } else {
    return decodeState<typename Policy::Acc>(bytes, kWindowContentsState, keyGroup);
  }
}

}  // namespace weir::detail
