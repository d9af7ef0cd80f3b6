#include "rest/job_archive.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "weir/error.h"

namespace weir::rest {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

Error notAnArchive(const fs::path& file, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, file.string() + " is not a job archive: " + why);
}

std::string errorBody(const std::string& what) {
  return json{{"errors", json::array({what})}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string writeJobArchive(const std::string& folder, const JobArchive& archive) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot make the archive folder " + folder + ": " + ec.message());
  const fs::path file = fs::path(folder) / archive.jobId;
  const fs::path temporary = fs::path(folder) / ("." + archive.jobId + ".inprogress");
  json entries = json::array();
  for (const auto& [path, answer] : archive.answers) entries.push_back({{"path", path}, {"json", answer}});
  const std::string text = json{{"archive", entries}}.dump(-1, ' ', false, json::error_handler_t::replace);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      fs::remove(temporary, ec);
      throw Error(ErrorCode::kIo, "cannot write the job archive " + temporary.string() + ": " + why);
    }
  }
  fs::rename(temporary, file, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw Error(ErrorCode::kIo, "cannot write the job archive " + file.string() + ": " + ec.message());
  }
  return file.string();
}

JobArchive readJobArchive(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot read " + file.string() + ": " + std::strerror(errno));
  const json parsed = json::parse(in, nullptr, false);
  if (parsed.is_discarded()) throw notAnArchive(file, "not JSON");
  if (!parsed.is_object() || !parsed.contains("archive") || !parsed["archive"].is_array())
    throw notAnArchive(file, "no \"archive\" list");
  JobArchive archive;
  archive.jobId = file.filename().string();
  for (const auto& entry : parsed["archive"]) {
    if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() || !entry.contains("json") ||
        !entry["json"].is_string())
      throw notAnArchive(file, "an entry without a \"path\" and \"json\" text");
    const std::string path = entry["path"];
    if (!json::accept(entry["json"].get<std::string>())) throw notAnArchive(file, "the answer of " + path + " is not JSON");
    archive.answers[path] = entry["json"];
  }
  if (!archive.answers.count("/jobs/" + archive.jobId)) throw notAnArchive(file, "no /jobs/" + archive.jobId);
  return archive;
}

ArchiveFolder::ArchiveFolder(std::string folder) : folder_(std::move(folder)) {
  std::error_code ec;
  if (!fs::is_directory(folder_, ec))
    throw Error(ErrorCode::kIo, "the archive folder " + folder_ + (fs::exists(folder_, ec) ? " is not a folder" : " does not exist"));
  refresh();
}

void ArchiveFolder::refresh() {
  std::map<std::string, File> seen;
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code fileError;  // a file gone since the listing is left out, not the folder
    if (name.empty() || name[0] == '.' || !it->is_regular_file(fileError)) continue;  // hidden: being written
    File file;
    file.modified = it->last_write_time(fileError);
    file.size = it->file_size(fileError);
    if (!fileError) seen[name] = std::move(file);
  }
  if (ec)
    std::fprintf(stderr, "weir: cannot list the archive folder %s: %s; serving what was read before\n",
                 folder_.c_str(), ec.message().c_str());
  // Read outside the lock what is new or changed; keep the rest as it was.
  std::map<std::string, File> current;
  {
    std::lock_guard lock(mutex_);
    if (ec) return;
    current = files_;
  }
  for (auto& [name, file] : seen) {
    auto old = current.find(name);
    if (old != current.end() && old->second.modified == file.modified && old->second.size == file.size) {
      file.archive = std::move(old->second.archive);
      continue;
    }
    try {
      file.archive = readJobArchive(fs::path(folder_) / name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weir: %s; the other archives are served\n", e.what());
    }
  }
  std::lock_guard lock(mutex_);
  files_ = std::move(seen);
}

size_t ArchiveFolder::size() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& [name, file] : files_) n += file.archive ? 1 : 0;
  return n;
}

bool ArchiveFolder::hasJob(const std::string& jobId) const {
  std::lock_guard lock(mutex_);
  auto it = files_.find(jobId);
  return it != files_.end() && it->second.archive.has_value();
}

std::optional<json> JobArchive::overview() const {
  auto it = answers.find("/jobs/overview");
  if (it == answers.end()) return std::nullopt;
  const json overview = json::parse(it->second, nullptr, false);
  if (!overview.is_object() || !overview.contains("jobs") || !overview["jobs"].is_array()) return std::nullopt;
  for (const auto& job : overview["jobs"])
    if (job.is_object() && job.contains("jid") && job["jid"] == jobId && job.value("state", json("")).is_string())
      return job;
  return std::nullopt;
}

JobArchive::Answer JobArchive::answer(const std::string& path, const MetricsQuery& query) const {
  // A vertex's subtasks/metrics aggregates what its metrics path holds, as the live API.
  static const std::string kSubtaskMetrics = "/subtasks/metrics";
  const bool aggregated = path.ends_with(kSubtaskMetrics) && path.find("/vertices/") != std::string::npos;
  const std::string stored = aggregated ? path.substr(0, path.size() - kSubtaskMetrics.size()) + "/metrics" : path;
  auto it = answers.find(stored);
  if (it == answers.end()) return Answer{404, errorBody("Not found in the archive of job " + jobId + ": " + path)};
  if (!path.ends_with("/metrics")) return Answer{200, it->second};
  const auto values = parseMetricValues(json::parse(it->second, nullptr, false));
  try {
    const json out = aggregated ? aggregatedSubtaskMetrics(values, query) : metricValues(values, query.get);
    return Answer{200, out.dump(-1, ' ', false, json::error_handler_t::replace)};
  } catch (const BadMetricsQuery& e) {
    return Answer{400, errorBody(e.what())};
  }
}

size_t JobArchive::bytes() const {
  size_t n = jobId.size();
  for (const auto& [path, answer] : answers) n += path.size() + answer.size();
  return n;
}

std::string jobIdOfPath(const std::string& path) {
  if (!path.starts_with("/jobs/")) return "";
  const size_t end = path.find('/', 6);
  std::string id = path.substr(6, end == std::string::npos ? std::string::npos : end - 6);
  const bool jobId = id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
  return jobId ? id : "";
}

std::vector<json> ArchiveFolder::overviews() const {
  std::lock_guard lock(mutex_);
  std::vector<json> out;
  for (const auto& [name, file] : files_)
    if (file.archive)
      if (auto overview = file.archive->overview()) out.push_back(std::move(*overview));
  return out;
}

std::optional<ArchiveFolder::Answer> ArchiveFolder::answer(const std::string& path,
                                                           const MetricsQuery& query) const {
  const std::string jobId = jobIdOfPath(path);
  std::lock_guard lock(mutex_);
  auto file = files_.find(jobId);
  if (jobId.empty() || file == files_.end() || !file->second.archive) return std::nullopt;
  return file->second.archive->answer(path, query);
}

}  // namespace weir::rest
