// What the golden-file driver (golden_test.cc) shares with the files that build the
// operators under test (golden_windows*.cc, golden_keyed.cc): the record types, their
// JSON form, and an operator in a harness driven by JSON values. README.md describes the
// file format.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "weir/testing/operator_harness.h"
#include "weir/weir.h"

namespace weir::golden {

using Json = nlohmann::json;

// The records of a case: (key, value) on a one-input operator and on the first input of
// a two-input one; the second input's are another type with the same JSON form, so that
// an operator that mixed up its inputs would not compile.
using Rec = std::pair<std::string, int64_t>;
using Rec2 = std::tuple<std::string, int64_t>;

// A case file that does not follow the format; the message says where and what.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Field access that names the field when it is missing or of the wrong type.
const Json& field(const Json& object, const std::string& name, const std::string& where);
int64_t integerField(const Json& object, const std::string& name, const std::string& where);
std::string stringField(const Json& object, const std::string& name, const std::string& where);
// A time or a count: an integer, or "max" / "min" for the extremes of int64.
int64_t asInt64(const Json& value, const std::string& where);
// Throws when `object` has a key that is not in `allowed` (a typo must not pass silently).
void onlyKeys(const Json& object, std::initializer_list<const char*> allowed, const std::string& where);

Rec recFromJson(const Json& value, const std::string& where);
Rec2 rec2FromJson(const Json& value, const std::string& where);
inline Json toJson(const Rec& r) { return Json::array({r.first, r.second}); }
inline Json toJson(const Rec2& r) { return Json::array({std::get<0>(r), std::get<1>(r)}); }
inline Json toJson(const Json& j) { return j; }

// One thing the operator emitted, as the case file writes it.
struct Event {
  enum class Kind { kRecord, kWatermark, kEndOfInput, kIdle, kActive };
  Kind kind = Kind::kRecord;
  std::string stream;                // "" for the main output, else the side output's name
  Json value;                        // kRecord
  std::optional<int64_t> timestamp;  // kRecord
  int64_t watermark = 0;             // kWatermark
};

// The operator under test in its harness, fed and read in JSON.
class GoldenOperator {
 public:
  virtual ~GoldenOperator() = default;
  virtual bool twoInput() const = 0;
  virtual void open() = 0;
  // Records of input 1 or 2 in one batch; `timestamps` has one per record or is empty.
  virtual void batch(int input, const std::vector<Json>& records, std::vector<int64_t> timestamps,
                     const std::string& where) = 0;
  // input 0: the operator's (combined) watermark; 1 or 2: that input's.
  virtual void watermark(int input, int64_t watermark) = 0;
  virtual void processingTime(int64_t now) = 0;
  virtual void endInput() = 0;
  virtual void snapshotRestore() = 0;
  virtual void close() = 0;
  // Everything emitted so far: the main output's events in order, then each side
  // output's records.
  virtual std::vector<Event> events() = 0;
  virtual uint64_t lateRecordsDropped() = 0;
};

namespace detail_ {
template <class T>
T fromJson(const Json& value, const std::string& where) {
  if constexpr (std::is_same_v<T, Rec>) return recFromJson(value, where);
  else return rec2FromJson(value, where);
}
template <class T>
void appendEvents(const test::CapturingOutput<T>& out, const std::string& stream, bool recordsOnly,
                  std::vector<Event>& events) {
  using K = typename test::Emitted<T>::Kind;
  for (const auto& e : out.events()) {
    Event g;
    g.stream = stream;
    switch (e.kind) {
      case K::kRecord:
        g.value = toJson(*e.record);
        g.timestamp = e.timestamp;
        break;
      case K::kWatermark:
        g.kind = Event::Kind::kWatermark;
        g.watermark = e.watermark;
        break;
      case K::kEndOfInput: g.kind = Event::Kind::kEndOfInput; break;
      case K::kIdle: g.kind = Event::Kind::kIdle; break;
      case K::kActive: g.kind = Event::Kind::kActive; break;
    }
    if (recordsOnly && g.kind != Event::Kind::kRecord) continue;
    events.push_back(std::move(g));
  }
}
}  // namespace detail_

// A GoldenOperator over test::OperatorHarness: IN1 (and IN2, unless void) in, OUT out.
template <class IN1, class IN2, class OUT>
class HarnessedOperator final : public GoldenOperator {
 public:
  HarnessedOperator(const DataStream<OUT>& stream, test::HarnessOptions options)
      : harness_(stream, std::move(options)) {}

  // Keeps the side output `tag` under `name` (its records only: Flink's harness keeps a
  // side output's records, not the watermarks).
  template <class X>
  void captureSideOutput(const std::string& name, const OutputTag<X>& tag) {
    auto& out = harness_.captureSideOutput(tag);
    sides_.push_back([name, &out](std::vector<Event>& events) { detail_::appendEvents(out, name, true, events); });
  }

  bool twoInput() const override { return !std::is_void_v<IN2>; }
  void open() override { harness_.open(); }
  void batch(int input, const std::vector<Json>& records, std::vector<int64_t> timestamps,
             const std::string& where) override {
    if (input == 2) {
      if constexpr (!std::is_void_v<IN2>) {
        harness_.processBatch2(convert<IN2>(records, where), std::move(timestamps));
        return;
      }
      throw Malformed(where + ": 'input' 2, but the operator has one input");
    }
    harness_.processBatch(convert<IN1>(records, where), std::move(timestamps));
  }
  void watermark(int input, int64_t watermark) override {
    if (input == 1) harness_.processWatermark1(watermark);
    else if (input == 2) harness_.processWatermark2(watermark);
    else harness_.processWatermark(watermark);
  }
  void processingTime(int64_t now) override { harness_.setProcessingTime(now); }
  void endInput() override { harness_.endInput(); }
  void snapshotRestore() override { harness_.snapshotAndRestore(); }
  void close() override { harness_.close(); }
  std::vector<Event> events() override {
    std::vector<Event> events;
    detail_::appendEvents(harness_.output(), "", false, events);
    for (auto& side : sides_) side(events);
    return events;
  }
  // The operator's numLateRecordsDropped (over each instance a restore made), which must
  // be what its subtask counted.
  uint64_t lateRecordsDropped() override {
    const uint64_t subtask = harness_.metrics().numLateRecordsDropped.load();
    double own = 0;
    int instances = 0;
    for (const auto& m : harness_.metrics().registry.values()) {
      if (m.name != "numLateRecordsDropped") continue;
      own += m.value;
      ++instances;
    }
    if (instances == 0) throw std::runtime_error("the operator has no numLateRecordsDropped metric");
    if (own != static_cast<double>(subtask))
      throw std::runtime_error("the operator's numLateRecordsDropped is " + std::to_string(own) + ", its subtask's " +
                               std::to_string(subtask));
    return subtask;
  }

 private:
  template <class T>
  static std::vector<T> convert(const std::vector<Json>& records, const std::string& where) {
    std::vector<T> out;
    for (const Json& r : records) out.push_back(detail_::fromJson<T>(r, where));
    return out;
  }

  test::OperatorHarness<OUT> harness_;
  std::vector<std::function<void(std::vector<Event>&)>> sides_;
};

struct KeyOf {
  std::string operator()(const Rec& r) const { return r.first; }
  std::string operator()(const Rec2& r) const { return std::get<0>(r); }
};
// A keyed stream of Rec to build the operator under test on; it never runs.
inline auto keyedRecords() {
  StreamExecutionEnvironment env;
  return env.fromCollection(std::vector<Rec>{}).keyBy(KeyOf{});
}

// A side output's tag for a case's name: tag ids are global to the process, so each
// record type gets its own space of names.
OutputTag<Rec> recTag(const std::string& name);
OutputTag<Rec2> rec2Tag(const std::string& name);

// The operators a case file can name in "operator": {"kind": ...}. Each builds its
// operator through the public API and puts it in a harness; they throw Malformed for a
// specification they do not know.
std::unique_ptr<GoldenOperator> makeWindowOperator(const Json& spec, const test::HarnessOptions& options);
std::unique_ptr<GoldenOperator> makeKeyedProcessOperator(const Json& spec, const test::HarnessOptions& options);
std::unique_ptr<GoldenOperator> makeIntervalJoinOperator(const Json& spec, const test::HarnessOptions& options);

}  // namespace weir::golden
