// The archive folder `weir history` serves, against archives written by hand in Flink's
// documented format ({"archive": [{"path", "json"}]}, one file per job named by its id).
#include "rest/job_archive.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "weir/error.h"

namespace weir::rest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kJob = "0123456789abcdef0123456789abcdef";

fs::path freshFolder(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("weir-archive-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// An archive of job `id` as Flink's HistoryServer reads one.
std::string flinkArchive(const std::string& id, const std::string& state) {
  json overview = {{"jobs", json::array({{{"jid", id}, {"name", "clicks"}, {"state", state}}})}};
  json metrics = json::array({{{"id", "0.numRecordsIn"}, {"value", "10"}}, {{"id", "1.numRecordsIn"}, {"value", "7"}}});
  json entries = json::array({{{"path", "/jobs/overview"}, {"json", overview.dump()}},
                              {{"path", "/jobs/" + id}, {"json", json{{"jid", id}, {"state", state}}.dump()}},
                              {{"path", "/jobs/" + id + "/vertices/v1/metrics"}, {"json", metrics.dump()}}});
  return json{{"archive", entries}}.dump();
}

TEST(ArchiveFolder, ServesEachArchiveAndNamesWhatIsNone) {
  const fs::path dir = freshFolder("serve");
  std::ofstream(dir / kJob) << flinkArchive(kJob, "FINISHED");
  std::ofstream(dir / "notjson") << "{\"archive\": [";
  std::ofstream(dir / "nolist") << "{\"jobs\": []}";
  std::ofstream(dir / "badanswer") << R"({"archive": [{"path": "/jobs/badanswer", "json": "{oops"}]})";
  std::ofstream(dir / ".00000000000000000000000000000000.inprogress") << "half";  // being written: not read
  testing::internal::CaptureStderr();
  ArchiveFolder folder(dir.string());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(folder.size(), 1u);
  EXPECT_NE(err.find((dir / "notjson").string() + " is not a job archive: not JSON"), std::string::npos) << err;
  EXPECT_NE(err.find((dir / "nolist").string() + " is not a job archive: no \"archive\" list"), std::string::npos);
  EXPECT_NE(err.find((dir / "badanswer").string() + " is not a job archive: the answer of /jobs/badanswer is not JSON"),
            std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3) << err;

  auto detail = folder.answer(std::string("/jobs/") + kJob, {});
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->status, 200);
  EXPECT_EQ(json::parse(detail->body)["state"], "FINISHED");
  ASSERT_EQ(folder.overviews().size(), 1u);
  EXPECT_EQ(folder.overviews()[0]["jid"], kJob);
  // A metrics path answers as the live API: the ids, or the values asked for.
  const std::string metrics = std::string("/jobs/") + kJob + "/vertices/v1/metrics";
  EXPECT_EQ(json::parse(folder.answer(metrics, {})->body),
            json::parse(R"([{"id": "0.numRecordsIn"}, {"id": "1.numRecordsIn"}])"));
  EXPECT_EQ(json::parse(folder.answer(metrics, {"1.numRecordsIn,nothing"})->body),
            json::parse(R"([{"id": "1.numRecordsIn", "value": "7"}])"));
  // The vertex's subtasks/metrics aggregates them, as Flink's route does for a live job.
  const std::string aggregated = std::string("/jobs/") + kJob + "/vertices/v1/subtasks/metrics";
  EXPECT_EQ(json::parse(folder.answer(aggregated, {"numRecordsIn", "min,max,sum"})->body),
            json::parse(R"([{"id": "numRecordsIn", "min": 7.0, "max": 10.0, "sum": 17.0}])"));
  auto refused = folder.answer(aggregated, {"numRecordsIn", "median"});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(json::parse(refused->body)["errors"][0].get<std::string>().find("'median'"), std::string::npos);
  // A path the archive lacks is Flink's 404; a job it does not hold is not its to answer.
  auto missing = folder.answer(std::string("/jobs/") + kJob + "/vertices/v2", {});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body)["errors"].is_array());
  EXPECT_FALSE(folder.answer("/jobs/ffffffffffffffffffffffffffffffff", {}));
  EXPECT_FALSE(folder.answer("/overview", {}));

  // An archive of another shape (valid JSON, odd members) is served, never an error.
  const std::string odd = "00000000000000000000000000000001";
  json entries = json::array({{{"path", "/jobs/overview"}, {"json", R"({"jobs": [1, {"jid": ")" + odd + R"(", "state": 5}]})"}},
                              {{"path", "/jobs/" + odd}, {"json", "{}"}},
                              {{"path", "/jobs/" + odd + "/metrics"}, {"json", R"([1, {"id": 2}, {"id": "a", "value": "1"}])"}}});
  std::ofstream(dir / odd) << json{{"archive", entries}}.dump();
  folder.refresh();
  EXPECT_TRUE(folder.hasJob(odd));
  EXPECT_EQ(folder.overviews().size(), 1u);  // the first job's; the odd one's entry is left out
  EXPECT_EQ(json::parse(folder.answer("/jobs/" + odd + "/metrics", {"a"})->body),
            json::parse(R"([{"id": "a", "value": "1"}])"));
  EXPECT_EQ(json::parse(folder.answer("/jobs/" + odd + "/metrics", {})->body),  // what is no metric is left out
            json::parse(R"([{"id": "a"}])"));
  fs::remove(dir / odd);
  folder.refresh();

  // A refresh reads what came, forgets what went, and names a bad file only once.
  const std::string second = "fedcba9876543210fedcba9876543210";
  std::ofstream(dir / second) << flinkArchive(second, "FAILED");
  fs::remove(dir / kJob);
  testing::internal::CaptureStderr();
  folder.refresh();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(folder.hasJob(kJob));
  EXPECT_TRUE(folder.hasJob(second));
  EXPECT_EQ(folder.size(), 1u);
  fs::remove_all(dir);
}

TEST(ArchiveFolder, AMissingFolderIsAnErrorNamingIt) {
  const fs::path dir = fs::temp_directory_path() / "weir-archive-never-made";
  fs::remove_all(dir);
  try {
    ArchiveFolder folder(dir.string());
    FAIL() << "a missing folder was served";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(std::string(e.what()), "the archive folder " + dir.string() + " does not exist");
  }
}

TEST(JobArchive, WrittenWholeAndReadBack) {
  const fs::path dir = freshFolder("write") / "made";  // made when missing
  JobArchive archive{kJob, {{"/jobs/" + std::string(kJob), R"({"jid": "x"})"}, {"/jobs/overview", R"({"jobs": []})"}}};
  const std::string file = writeJobArchive(dir.string(), archive);
  EXPECT_EQ(file, (dir / kJob).string());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
  const JobArchive back = readJobArchive(file);
  EXPECT_EQ(back.jobId, kJob);
  EXPECT_EQ(back.answers, archive.answers);
  // Flink's format: each answer a JSON text under "json".
  std::ifstream in(file);
  const json raw = json::parse(in);
  ASSERT_EQ(raw["archive"].size(), 2u);
  EXPECT_TRUE(raw["archive"][0]["json"].is_string());
  // A folder that cannot be made is an error naming the file.
  std::ofstream(dir.parent_path() / "plain") << "x";
  EXPECT_THROW(writeJobArchive((dir.parent_path() / "plain").string(), archive), Error);
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace weir::rest
