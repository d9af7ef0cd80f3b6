// A job's archive (Flink's HistoryServer archive): what the REST API answered for each
// of an ended job's paths, one JSON file named by the job's id in the archive folder, in
// Flink's format: {"archive": [{"path": "/jobs/<id>", "json": "<the answer>"}, ...]}.
// ArchiveFolder serves a folder of them (`weir history`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rest/metrics_query.h"

namespace weir::rest {

struct JobArchive {
  std::string jobId;
  std::map<std::string, std::string> answers;  // path -> JSON text; a metrics path holds every id and value

  // The job's entry of /jobs/overview; nullopt when the archive holds none of its shape.
  std::optional<nlohmann::json> overview() const;
  struct Answer {
    int status;
    std::string body;
  };
  // The answer to GET `path` of this job, a metrics path's to `query` (a vertex's
  // subtasks/metrics from its metrics): 404 for a path the archive does not hold, 400 for
  // a query the live API refuses.
  Answer answer(const std::string& path, const MetricsQuery& query) const;
  // What its paths and answers take.
  size_t bytes() const;
};

// The job id a REST path names ("/jobs/<32 hex digits>/..."); empty for another path.
std::string jobIdOfPath(const std::string& path);

// Writes `archive` to <folder>/<jobId>, whole or not at all (a hidden temporary file,
// renamed); makes the folder. Returns the file's path; throws weir::Error (kIo) naming it.
std::string writeJobArchive(const std::string& folder, const JobArchive& archive);
// Throws weir::Error (kIo, or kInvalidArgument for a file that is no archive) saying why.
JobArchive readJobArchive(const std::filesystem::path& file);

// The archives in a folder, read again on refresh(): a file that is no archive is named
// once on stderr and left out; the others are served. Thread-safe.
class ArchiveFolder {
 public:
  // Throws weir::Error (kIo) when `folder` is not an existing folder.
  explicit ArchiveFolder(std::string folder);
  const std::string& folder() const { return folder_; }
  // Reads what was added or changed, forgets what was removed.
  void refresh();
  size_t size() const;
  bool hasJob(const std::string& jobId) const;
  // Each archived job's entry of /jobs/overview.
  std::vector<nlohmann::json> overviews() const;

  using Answer = JobArchive::Answer;
  // The answer to GET `path` (a metrics path's to `query`) of a job this folder holds;
  // nullopt for a path of no archived job.
  std::optional<Answer> answer(const std::string& path, const MetricsQuery& query) const;

 private:
  struct File {
    std::filesystem::file_time_type modified;
    uintmax_t size = 0;
    std::optional<JobArchive> archive;  // none: it is no archive (and was said so)
  };
  std::string folder_;
  mutable std::mutex mutex_;
  std::map<std::string, File> files_;  // by file name; guarded by mutex_
};

}  // namespace weir::rest
