// The golden-file driver: every tests/golden/*.json is a test case of its own, named
// after its file. A case builds one operator through the public API, feeds it records,
// watermarks and processing time in the public operator harness
// (weir/testing/operator_harness.h), and compares what it emits with the output the file
// expects, by the file's comparison rule. README.md describes the format; WEIR_GOLDEN_DIR in the
// environment points the driver at another folder of cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "golden/golden.h"

namespace weir::golden {
namespace {

namespace fs = std::filesystem;

fs::path goldenDir() {
  const char* dir = std::getenv("WEIR_GOLDEN_DIR");
  return dir != nullptr && *dir != '\0' ? fs::path(dir) : fs::path(WEIR_GOLDEN_DIR);
}

// The case files, by name.
std::vector<std::string> caseFiles() {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(goldenDir(), error))
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// A test name from a file name: its stem, with anything but letters, digits and '_' as '_'.
std::string testNameOf(const std::string& file) {
  std::string name = fs::path(file).stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return name.empty() ? "_" : name;
}

// One step of "input".
struct Step {
  enum class Kind { kRecords, kWatermark, kProcessingTime, kEndInput, kSnapshotRestore };
  Kind kind = Kind::kRecords;
  int input = 0;  // records: 1 or 2; watermark: 0 (the operator's) or 1 or 2
  std::vector<Json> records;
  std::vector<int64_t> timestamps;
  int64_t time = 0;
  std::string where;
};

enum class Compare { kExact, kSortedBetweenWatermarks, kUnordered };

struct Case {
  std::string description;
  Json operatorSpec;
  std::vector<std::string> backends;
  std::vector<Step> input;
  std::vector<Event> expected;
  Compare compare = Compare::kExact;
  std::optional<uint64_t> lateRecordsDropped;
  std::optional<std::string> knownFailure;
};

bool flagTrue(const Json& step, const char* name, const std::string& where) {
  const Json& v = step[name];
  if (v != true) throw Malformed(where + "." + name + ": must be true");
  return true;
}

int inputOf(const Json& step, const std::string& where) {
  if (!step.contains("input")) return 0;
  int64_t input = integerField(step, "input", where);
  if (input != 1 && input != 2) throw Malformed(where + ".input: must be 1 or 2");
  return static_cast<int>(input);
}

// A record with an optional timestamp: {"element": [...], "timestamp": t}.
std::pair<Json, std::optional<int64_t>> element(const Json& e, const std::string& where) {
  recFromJson(field(e, "element", where), where + ".element");  // checks its form
  std::optional<int64_t> ts;
  if (e.contains("timestamp")) ts = integerField(e, "timestamp", where);
  return {e["element"], ts};
}

Step parseStep(const Json& s, const std::string& where) {
  Step step;
  step.where = where;
  if (!s.is_object()) throw Malformed(where + ": a step is an object, got " + s.dump());
  if (s.contains("element")) {
    onlyKeys(s, {"element", "timestamp", "input"}, where);
    auto [value, ts] = element(s, where);
    step.records.push_back(value);
    if (ts) step.timestamps.push_back(*ts);
    step.input = std::max(1, inputOf(s, where));
  } else if (s.contains("batch")) {
    onlyKeys(s, {"batch", "input"}, where);
    const Json& batch = s["batch"];
    if (!batch.is_array() || batch.empty()) throw Malformed(where + ".batch: must be a non-empty array of elements");
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string at = where + ".batch[" + std::to_string(i) + "]";
      onlyKeys(batch[i], {"element", "timestamp"}, at);
      auto [value, ts] = element(batch[i], at);
      step.records.push_back(value);
      if (ts) step.timestamps.push_back(*ts);
    }
    if (!step.timestamps.empty() && step.timestamps.size() != step.records.size())
      throw Malformed(where + ".batch: give every element a timestamp or none");
    step.input = std::max(1, inputOf(s, where));
  } else if (s.contains("watermark")) {
    onlyKeys(s, {"watermark", "input"}, where);
    step.kind = Step::Kind::kWatermark;
    step.time = integerField(s, "watermark", where);
    step.input = inputOf(s, where);
  } else if (s.contains("processing_time")) {
    onlyKeys(s, {"processing_time"}, where);
    step.kind = Step::Kind::kProcessingTime;
    step.time = integerField(s, "processing_time", where);
  } else if (s.contains("end_input")) {
    onlyKeys(s, {"end_input"}, where);
    flagTrue(s, "end_input", where);
    step.kind = Step::Kind::kEndInput;
  } else if (s.contains("snapshot_restore")) {
    onlyKeys(s, {"snapshot_restore"}, where);
    flagTrue(s, "snapshot_restore", where);
    step.kind = Step::Kind::kSnapshotRestore;
  } else {
    throw Malformed(where + ": a step has \"element\", \"batch\", \"watermark\", \"processing_time\", \"end_input\" "
                            "or \"snapshot_restore\"; got " + s.dump());
  }
  return step;
}

Event parseEvent(const Json& o, const std::string& where) {
  Event e;
  if (!o.is_object()) throw Malformed(where + ": an output event is an object, got " + o.dump());
  if (o.contains("element")) {
    onlyKeys(o, {"element", "timestamp", "side_output"}, where);
    e.value = o["element"];
    if (o.contains("timestamp")) e.timestamp = integerField(o, "timestamp", where);
    if (o.contains("side_output")) e.stream = stringField(o, "side_output", where);
  } else if (o.contains("watermark")) {
    onlyKeys(o, {"watermark"}, where);
    e.kind = Event::Kind::kWatermark;
    e.watermark = integerField(o, "watermark", where);
  } else if (o.contains("end_input")) {
    onlyKeys(o, {"end_input"}, where);
    flagTrue(o, "end_input", where);
    e.kind = Event::Kind::kEndOfInput;
  } else if (o.contains("idle")) {
    onlyKeys(o, {"idle"}, where);
    if (!o["idle"].is_boolean()) throw Malformed(where + ".idle: must be true or false");
    e.kind = o["idle"].get<bool>() ? Event::Kind::kIdle : Event::Kind::kActive;
  } else {
    throw Malformed(where + ": an output event has \"element\", \"watermark\", \"end_input\" or \"idle\"; got " +
                    o.dump());
  }
  if (e.kind != Event::Kind::kRecord && o.contains("side_output"))
    throw Malformed(where + ": side outputs hold records only");
  return e;
}

Case parseCase(const Json& doc) {
  onlyKeys(doc,
           {"description", "flink", "known_failure", "backends", "operator", "input", "output", "compare", "metrics"},
           "the case");
  Case c;
  c.description = stringField(doc, "description", "the case");
  stringField(doc, "flink", "the case");
  if (doc.contains("known_failure")) c.knownFailure = stringField(doc, "known_failure", "the case");
  c.operatorSpec = field(doc, "operator", "the case");
  stringField(c.operatorSpec, "kind", "operator");
  c.backends = {"heap", "rocksdb"};
  if (doc.contains("backends")) {
    const Json& b = doc["backends"];
    if (!b.is_array() || b.empty()) throw Malformed("backends: must be a non-empty array of \"heap\" / \"rocksdb\"");
    c.backends.clear();
    for (const Json& name : b) {
      if (name != "heap" && name != "rocksdb") throw Malformed("backends: " + name.dump() + " is not \"heap\" or \"rocksdb\"");
      c.backends.push_back(name.get<std::string>());
    }
  }
  const Json& input = field(doc, "input", "the case");
  if (!input.is_array()) throw Malformed("input: must be an array of steps");
  for (size_t i = 0; i < input.size(); ++i) c.input.push_back(parseStep(input[i], "input[" + std::to_string(i) + "]"));
  const Json& output = field(doc, "output", "the case");
  if (!output.is_array()) throw Malformed("output: must be an array of events");
  for (size_t i = 0; i < output.size(); ++i)
    c.expected.push_back(parseEvent(output[i], "output[" + std::to_string(i) + "]"));
  const std::string compare = stringField(doc, "compare", "the case");
  if (compare == "exact") c.compare = Compare::kExact;
  else if (compare == "sorted_between_watermarks") c.compare = Compare::kSortedBetweenWatermarks;
  else if (compare == "unordered") c.compare = Compare::kUnordered;
  else throw Malformed("compare: \"" + compare + "\" is not \"exact\", \"sorted_between_watermarks\" or \"unordered\"");
  if (doc.contains("metrics")) {
    onlyKeys(doc["metrics"], {"num_late_records_dropped"}, "metrics");
    if (doc["metrics"].contains("num_late_records_dropped")) {
      int64_t n = integerField(doc["metrics"], "num_late_records_dropped", "metrics");
      if (n < 0) throw Malformed("metrics.num_late_records_dropped: must not be negative");
      c.lateRecordsDropped = static_cast<uint64_t>(n);
    }
  }
  return c;
}

std::unique_ptr<GoldenOperator> build(const Json& spec, const test::HarnessOptions& options) {
  const std::string kind = stringField(spec, "kind", "operator");
  if (kind == "window") return makeWindowOperator(spec, options);
  if (kind == "keyed_process") return makeKeyedProcessOperator(spec, options);
  if (kind == "interval_join") return makeIntervalJoinOperator(spec, options);
  throw Malformed("operator.kind: \"" + kind + "\" is not \"window\", \"keyed_process\" or \"interval_join\"");
}

// ---- Comparison ----

std::string render(const Event& e) {
  Json j;
  switch (e.kind) {
    case Event::Kind::kRecord:
      if (!e.stream.empty()) j["side_output"] = e.stream;
      j["element"] = e.value;
      if (e.timestamp) j["timestamp"] = *e.timestamp;
      break;
    case Event::Kind::kWatermark: j["watermark"] = e.watermark; break;
    case Event::Kind::kEndOfInput: j["end_input"] = true; break;
    case Event::Kind::kIdle: j["idle"] = true; break;
    case Event::Kind::kActive: j["idle"] = false; break;
  }
  return j.dump();
}

bool same(const Event& a, const Event& b) {
  if (a.kind != b.kind || a.stream != b.stream) return false;
  switch (a.kind) {
    case Event::Kind::kRecord: return a.value == b.value && a.timestamp == b.timestamp;
    case Event::Kind::kWatermark: return a.watermark == b.watermark;
    default: return true;
  }
}

bool sameSequence(const std::vector<Event>& a, const std::vector<Event>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same);
}
bool sameMultiset(const std::vector<Event>& a, const std::vector<Event>& b) {
  std::multiset<std::string> x, y;
  for (const Event& e : a) x.insert(render(e));
  for (const Event& e : b) y.insert(render(e));
  return x == y;
}

// The records between fences (watermarks and the other non-records), and the fences.
struct Segments {
  std::vector<std::vector<Event>> records{1};
  std::vector<Event> fences;
};
Segments segments(const std::vector<Event>& events) {
  Segments s;
  for (const Event& e : events) {
    if (e.kind == Event::Kind::kRecord) {
      s.records.back().push_back(e);
    } else {
      s.fences.push_back(e);
      s.records.emplace_back();
    }
  }
  return s;
}

bool streamMatches(const std::vector<Event>& expected, const std::vector<Event>& actual, Compare compare, bool side) {
  if (compare == Compare::kExact) return sameSequence(expected, actual);
  if (side) return sameMultiset(expected, actual);
  Segments x = segments(expected), y = segments(actual);
  if (!sameSequence(x.fences, y.fences)) return false;
  if (compare == Compare::kUnordered) {
    std::vector<Event> a, b;
    for (auto& seg : x.records) a.insert(a.end(), seg.begin(), seg.end());
    for (auto& seg : y.records) b.insert(b.end(), seg.begin(), seg.end());
    return sameMultiset(a, b);
  }
  for (size_t i = 0; i < x.records.size(); ++i)
    if (!sameMultiset(x.records[i], y.records[i])) return false;
  return true;
}

std::string listing(const std::vector<Event>& events) {
  std::ostringstream out;
  if (events.empty()) out << "    (nothing)\n";
  for (const Event& e : events) out << "    " << render(e) << "\n";
  return out.str();
}

const char* compareName(Compare c) {
  return c == Compare::kExact ? "exact" : c == Compare::kUnordered ? "unordered" : "sorted_between_watermarks";
}

// What differs between the expected and the actual events, stream by stream; empty
// when nothing does.
std::string compare(const Case& c, const std::vector<Event>& actual) {
  std::map<std::string, std::pair<std::vector<Event>, std::vector<Event>>> streams;  // name -> (expected, actual)
  streams[""];
  for (const Event& e : c.expected) streams[e.stream].first.push_back(e);
  for (const Event& e : actual) streams[e.stream].second.push_back(e);
  std::string problems;
  for (const auto& [name, pair] : streams) {
    if (streamMatches(pair.first, pair.second, c.compare, !name.empty())) continue;
    problems += (name.empty() ? std::string("the main output") : "side output '" + name + "'") + " differs (compare: " +
                compareName(c.compare) + ")\n  expected:\n" + listing(pair.first) + "  actual:\n" +
                listing(pair.second);
  }
  return problems;
}

// Runs the case on `backend`: what went wrong, or empty.
std::string run(const Case& c, const std::string& backend) {
  test::HarnessOptions options;
  options.stateBackend = stateBackendFromName(backend);
  std::unique_ptr<GoldenOperator> op;
  try {
    op = build(c.operatorSpec, options);
  } catch (const Malformed&) {
    throw;
  } catch (const std::exception& e) {
    return "building the operator threw: " + std::string(e.what()) + "\n";
  }
  for (const Step& step : c.input) {
    if (step.input == 2 && !op->twoInput()) throw Malformed(step.where + ".input: 2, but the operator has one input");
    if (step.kind == Step::Kind::kWatermark && step.input != 0 && !op->twoInput())
      throw Malformed(step.where + ".input: per-input watermarks are for two-input operators");
  }
  std::string where = "open()";
  try {
    op->open();
    for (const Step& step : c.input) {
      where = step.where;
      switch (step.kind) {
        case Step::Kind::kRecords: op->batch(step.input, step.records, step.timestamps, step.where); break;
        case Step::Kind::kWatermark: op->watermark(step.input, step.time); break;
        case Step::Kind::kProcessingTime: op->processingTime(step.time); break;
        case Step::Kind::kEndInput: op->endInput(); break;
        case Step::Kind::kSnapshotRestore: op->snapshotRestore(); break;
      }
    }
    where = "close()";
    op->close();
  } catch (const Malformed&) {
    throw;
  } catch (const std::exception& e) {
    return "at " + where + " the operator threw: " + e.what() + "\nwhat it emitted before:\n" + listing(op->events());
  }
  std::string problems = compare(c, op->events());
  if (c.lateRecordsDropped && op->lateRecordsDropped() != *c.lateRecordsDropped)
    problems += "numLateRecordsDropped is " + std::to_string(op->lateRecordsDropped()) + ", expected " +
                std::to_string(*c.lateRecordsDropped) + "\n";
  return problems;
}

class GoldenFile : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFile, Passes) {
  const std::string file = GetParam();
  const fs::path path = goldenDir() / file;
  Case c;
  std::string failures;
  try {
    std::ifstream in(path);
    if (!in) throw Malformed("cannot be read");
    Json doc;
    try {
      doc = Json::parse(in);
    } catch (const Json::exception& e) {
      throw Malformed(std::string("is not JSON: ") + e.what());
    }
    c = parseCase(doc);
    for (const std::string& backend : c.backends) {
      std::string problems = run(c, backend);
      if (!problems.empty()) failures += "on " + backend + ": " + problems;
    }
  } catch (const Malformed& e) {
    FAIL() << file << ": " << e.what();
  }
  if (c.knownFailure) {
    if (failures.empty())
      FAIL() << file << ": marked known_failure (\"" << *c.knownFailure << "\") but passes; remove the mark";
    GTEST_SKIP() << "known failure: " << *c.knownFailure << "\n" << failures;
  }
  EXPECT_TRUE(failures.empty())  << file << " (" << c.description << ")\n" << failures;
}

// Test names of the files in caseFiles() order, made distinct (GoogleTest stops at a
// duplicate; the test below fails instead).
const std::vector<std::string>& testNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    std::set<std::string> taken;
    for (const auto& f : caseFiles()) {
      std::string name = testNameOf(f);
      while (!taken.insert(name).second) name += "_";
      out.push_back(name);
    }
    return out;
  }();
  return names;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenFile, ::testing::ValuesIn(caseFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return testNames().at(info.index); });

// An empty or missing folder would run no case and pass.
TEST(GoldenFiles, TheFolderHoldsCasesWithDistinctNames) {
  auto files = caseFiles();
  ASSERT_FALSE(files.empty()) << "no *.json in " << goldenDir();
  std::set<std::string> names;
  for (const auto& f : files) EXPECT_TRUE(names.insert(testNameOf(f)).second) << f << ": another file has its test name";
}

}  // namespace
}  // namespace weir::golden
