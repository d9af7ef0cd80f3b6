#include "rest/rest_server.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <future>
#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/loopback.h"
#include "core/printable.h"
#include "core/thread_name.h"
#include "rest/assets.h"
#include "rest/job_archive.h"
#include "rest/metrics_query.h"
#include "rest/metrics_sampler.h"
#include "rest/process_figures.h"
#include "rest/prometheus_exposition.h"

namespace weir::rest {

namespace {

using json = nlohmann::json;
using runtime::JobExecution;

constexpr size_t kMaxBodyBytes = 1 << 20;    // larger requests get 413
constexpr size_t kMaxEndedJobs = 100;        // ended jobs kept for the UI
constexpr size_t kMaxEndedBytes = 64 << 20;  // and the most their kept answers take
constexpr int kWorkerThreads = 256;          // a silent client holds one for a second at most
constexpr int kReadTimeoutMillis = 300;      // for a request to arrive on loopback
constexpr int kRemoteReadTimeoutMillis = 3000;  // from elsewhere, or with TLS

const char* stateName(JobStatus s) { return toString(s); }

int64_t nowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void sendJson(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  // Names and paths come from users and clients: bytes that are not UTF-8 are replaced,
  // never allowed to throw.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void sendError(httplib::Response& res, int status, const std::string& message) {
  sendJson(res, json{{"errors", json::array({message})}}, status);
}

// A request body, when there is one, must be a JSON object.
bool validBody(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) return true;
  json parsed = json::parse(req.body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    sendError(res, 400, "Request body is not a JSON object.");
    return false;
  }
  return true;
}

uint64_t random64() {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  return rng();
}

// Debian's libcpp-httplib listens with a backlog of 5: a burst of connections (a browser,
// a scraper, an attack) then has its SYNs dropped and retried a second later. Listening
// again on the same socket raises the backlog; httplib gives no access to its socket, so
// find it by its port.
void raiseListenBacklog(int port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int accepting = 0;
    socklen_t len = sizeof accepting;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) continue;
    sockaddr_storage addr{};
    socklen_t addrLen = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addrLen) != 0) continue;
    int bound = addr.ss_family == AF_INET    ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                             : -1;
    if (bound == port) ::listen(fd, 4096);
  }
}

// A file the server must read, named when it cannot.
void mustRead(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "REST server: cannot read the TLS " + what + " '" + path + "'");
}

// What every job's options must satisfy to be served: a known Prometheus prefix, and
// beyond loopback TLS and a token, unless the options say insecure.
void checkPolicy(const RestOptions& options) {
  if (!PrometheusExposition::validPrefix(options.prometheusPrefix))
    throw Error(ErrorCode::kInvalidArgument,
                "the Prometheus prefix must be weir or flink, got '" + options.prometheusPrefix + "'");
  const bool tls = !options.sslCertificate.empty() || !options.sslPrivateKey.empty();
  if (!core::isLoopbackAddress(options.address) && !options.insecure && (!tls || options.authenticationToken.empty()))
    throw Error(ErrorCode::kInvalidArgument,
                "REST server: listening on " + options.address +
                    " lets whoever reaches it cancel and stop jobs; give it TLS (weir.rest.ssl.certificate and "
                    "weir.rest.ssl.private-key) and a token (weir.rest.authentication.token-file), or say "
                    "--rest-insecure");
}

// The HTTP server, or the HTTPS one with the options' certificate and key.
std::unique_ptr<httplib::Server> makeServer(const RestOptions& options) {
  const bool tls = !options.sslCertificate.empty() || !options.sslPrivateKey.empty();
  if (!tls) return std::make_unique<httplib::Server>();
  if (options.sslCertificate.empty() || options.sslPrivateKey.empty())
    throw Error(ErrorCode::kInvalidArgument, "REST server: TLS needs both a certificate and a private key");
  mustRead("certificate", options.sslCertificate);
  mustRead("private key", options.sslPrivateKey);
  auto server = std::make_unique<httplib::SSLServer>(options.sslCertificate.c_str(), options.sslPrivateKey.c_str());
  if (!server->is_valid())
    throw Error(ErrorCode::kInvalidArgument, "REST server: '" + options.sslCertificate + "' and '" +
                                                 options.sslPrivateKey +
                                                 "' are not a PEM certificate and its private key");
  return server;
}

// Whether `given` is `expected`, in a time that does not depend on where they differ.
bool sameSecret(const std::string& given, const std::string& expected) {
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    differ |= static_cast<unsigned char>(given[i] ^ expected[i % std::max<size_t>(1, expected.size())]);
  return differ == 0;
}

// Whether an Authorization header carries `token` as a bearer token (the scheme's case
// does not matter, RFC 7235).
bool bearerIs(const std::string& authorization, const std::string& token) {
  const size_t space = authorization.find(' ');
  if (space == std::string::npos) return false;
  std::string scheme = authorization.substr(0, space);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t start = authorization.find_first_not_of(' ', space);
  return scheme == "bearer" && start != std::string::npos && sameSecret(authorization.substr(start), token);
}

}  // namespace

class RestServer::Impl {
 public:
  explicit Impl(const RestOptions& options) : options_(options), http_(makeServer(options)) {
    http_->new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
    // Beyond loopback, or with a TLS handshake first, a request may take longer to come.
    const bool near = core::isLoopbackAddress(options.address) && !tls();
    http_->set_read_timeout(0, (near ? kReadTimeoutMillis : kRemoteReadTimeoutMillis) * 1000);
    http_->set_write_timeout(2, 0);
    http_->set_keep_alive_timeout(1);
    http_->set_payload_max_length(kMaxBodyBytes);
    // httplib's default also sets SO_REUSEPORT, with which a second process (another weir
    // of the same user) would listen on the same port and take half the connections:
    // only SO_REUSEADDR, so a port in use is refused.
    http_->set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    routes();
    if (options.port == 0) port_ = http_->bind_to_any_port(options.address);
    else port_ = http_->bind_to_port(options.address, options.port) ? options.port : -1;
    if (port_ <= 0)
      throw Error(ErrorCode::kIo, "REST server: cannot listen on " + options.address + ":" +
                                      std::to_string(options.port) +
                                      " (in use or not a local address); choose another with --rest-port");
    raiseListenBacklog(port_);
    listener_ = std::thread([this] {
      core::nameThisThread("weir REST");
      // OpenSSL write()s without MSG_NOSIGNAL: a client gone in the middle of an answer
      // would raise SIGPIPE and end the process with its jobs. Blocked here, on this
      // thread and the workers it makes, the write fails with EPIPE instead.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      // The API can fail after the port was bound (its threads cannot be made): the jobs
      // run on without it, and stderr says so.
      std::string why;
      try {
        http_->listen_after_bind();
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
        why = "unknown error";
      }
      if (!why.empty())
        std::fprintf(stderr, "weir: the REST API and Web UI at http://%s:%d are not available: %s; the jobs run on\n",
                     options_.address.c_str(), port_, why.c_str());
      listenerDone_ = true;
    });
    // httplib's stop() is ignored until the listener runs: wait for it, so that a server
    // destroyed right away still stops.
    while (!http_->is_running() && !listenerDone_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sampler_ = std::thread([this] {
      core::nameThisThread("weir sampler");
      sampleLoop();
    });
  }

  ~Impl() {
    {
      // A job ending now archives nothing more; archives in progress complete first.
      std::unique_lock gate(gate_->mutex);
      gate_->server = nullptr;
      gate_->done.wait(gate, [&] { return gate_->active == 0; });
      // No end callback unpins a job any more: unpin them all before one can end (it
      // takes the gate's lock first) and be freed.
      std::lock_guard lock(mutex_);
      for (auto& e : jobs_) e->pinned.reset();
    }
    {
      // The process ends: whoever stopped a job with a savepoint gets to read where it went.
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, kStopResultGrace, [&] {
        return std::all_of(triggers_.begin(), triggers_.end(),
                           [](const auto& t) { return !t.second.stop || t.second.fetched || !ready(t.second); });
      });
      stopping_ = true;
    }
    cv_.notify_all();
    http_->stop();
    if (listener_.joinable()) listener_.join();
    if (sampler_.joinable()) sampler_.join();
  }

  void addJob(const std::shared_ptr<JobExecution>& job, const std::string& archiveFolder, bool announceEnd) {
    {
      std::lock_guard lock(mutex_);
      auto entry = std::make_unique<Entry>();
      entry->handle = job;
      entry->jobId = job->jobId();
      // Until the job's end callback (archive) unpins it: a job whose last JobClient is
      // dropped while it runs is served as it is cancelled (the callback runs before the
      // job is freed; every job given here was launched, so the callback comes).
      entry->pinned = std::shared_ptr<JobExecution>(std::shared_ptr<JobExecution>(), job.get());
      entry->sampler.update(*job);
      jobs_.push_back(std::move(entry));
      forgetOldJobs();
    }
    // Outside the lock: a job that has ended already is archived right here.
    job->onEnd([gate = gate_, archiveFolder, announceEnd](JobExecution& ended) {
      Impl* server = nullptr;
      {
        std::lock_guard lock(gate->mutex);
        if (gate->server == nullptr) return;
        server = gate->server;
        ++gate->active;
      }
      // Not under the gate's lock: archiving this job may end another (by dropping its
      // last owner), whose archive must not wait for this one's.
      server->archive(ended, archiveFolder, announceEnd);  // never throws: it runs on the job's supervisor
      std::lock_guard lock(gate->mutex);
      if (--gate->active == 0) gate->done.notify_all();
    });
  }

  // Serves the archives in `folder` beside the jobs of this process (`weir history`).
  void serveArchives(const std::string& folder, std::chrono::milliseconds refresh) {
    auto archives = std::make_shared<ArchiveFolder>(folder);
    std::lock_guard lock(mutex_);
    archives_ = std::move(archives);
    archiveRefresh_ = refresh;
  }

  size_t archivedJobs() const {
    std::lock_guard lock(mutex_);
    return archives_ ? archives_->size() : 0;
  }

  int port() const { return port_; }
  const RestOptions& options() const { return options_; }
  bool tls() const { return !options_.sslCertificate.empty(); }
  std::string url() const {
    return (tls() ? "https://" : "http://") + options_.address + ":" + std::to_string(port_);
  }

 private:
  // The server watches a job but does not own it: dropping the last JobClient still
  // cancels the job, and its entry then goes away.
  struct Entry {
    std::weak_ptr<JobExecution> handle;
    std::string jobId;
    std::shared_ptr<JobExecution> job;     // locked from `handle` while a request or sample runs
    // Not owned: the job, from addJob until archive() has run (it may have no owner left).
    std::shared_ptr<JobExecution> pinned;
    MetricsSampler sampler;
    bool ended = false;  // sampled once more after the job ended, then left alone
  };

  // Forget the oldest ended jobs beyond the limit. Under mutex_.
  void forgetOldJobs() {
    size_t ended = 0;
    for (auto& e : jobs_) ended += e->ended ? 1 : 0;
    for (auto it = jobs_.begin(); ended > kMaxEndedJobs && it != jobs_.end();) {
      if ((*it)->ended && !(*it)->pinned) {
        it = jobs_.erase(it);
        --ended;
      } else {
        ++it;
      }
    }
  }

  // A savepoint asked for through the API. Kept apart from the job's entry: a job
  // stopped with a savepoint may be gone before its requester asks how it went.
  struct SavepointTrigger {
    std::string jobId;
    std::shared_future<std::string> result;
    bool stop = false;     // the job ends with it
    bool fetched = false;  // its outcome was served
  };
  static constexpr size_t kMaxSavepointTriggers = 64;
  // How long a server about to go (its process ends) keeps serving the outcome of a
  // stop-with-savepoint that nobody fetched yet.
  static constexpr std::chrono::seconds kStopResultGrace{5};

  // POST /jobs/:id/savepoints and /stop with a savepoint: Flink's bodies, a trigger id back.
  void requestSavepoint(Entry& e, const httplib::Request& req, httplib::Response& res, bool stop) {
    json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!body.contains(key) || body[key].is_null()) return std::string();
      if (!body[key].is_string()) return std::nullopt;
      return body[key].get<std::string>();
    };
    auto flag = [&](const char* key) -> std::optional<bool> {
      if (!body.contains(key) || body[key].is_null()) return false;
      if (!body[key].is_boolean()) return std::nullopt;
      return body[key].get<bool>();
    };
    auto dir = text(stop ? "targetDirectory" : "target-directory");
    auto format = text("formatType");
    auto cancel = flag("cancel-job");
    auto drain = flag("drain");
    if (!dir || !format || !cancel || !drain)
      return sendError(res, 400, std::string("Bad savepoint request: '") +
                                     (!dir ? (stop ? "targetDirectory" : "target-directory")
                                           : !format ? "formatType" : !cancel ? "cancel-job" : "drain") +
                                     "' has the wrong type.");
    auto type = format->empty() ? std::optional(SavepointFormatType::CANONICAL) : parseSavepointFormatType(*format);
    if (!type) return sendError(res, 400, "Unknown formatType '" + *format + "'; use CANONICAL or NATIVE.");
    const CheckpointConfig* config = e.job->checkpointConfig();
    if (config == nullptr)
      return sendError(res, 400, "Job " + e.job->jobId() + " runs without checkpointing; savepoints need it.");
    if (dir->empty() && config->getDefaultSavepointDirectory().empty())
      return sendError(res, 400, "No savepoint directory: give '" + std::string(stop ? "targetDirectory" : "target-directory") +
                                     "', or configure execution.checkpointing.savepoint-dir.");
    std::future<std::string> result;
    try {
      // cancel-job (Flink's cancel with savepoint) ends the job as a stop without drain does.
      result = e.job->triggerSavepoint(*dir, *type, stop || *cancel, stop && *drain);
    } catch (const Error& error) {
      return sendError(res, 409, error.what());
    }
    std::string id = runtime::hex128(random64(), random64());
    triggers_.emplace(id, SavepointTrigger{e.job->jobId(), result.share(), stop || *cancel});
    triggerOrder_.push_back(id);
    while (triggerOrder_.size() > kMaxSavepointTriggers) {
      triggers_.erase(triggerOrder_.front());
      triggerOrder_.pop_front();
    }
    sendJson(res, {{"request-id", id}}, 202);
  }

  static bool ready(const SavepointTrigger& t) {
    return t.result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  // GET /jobs/:id/savepoints/:triggerid: Flink's asynchronous operation result, also
  // once the job is gone.
  void savepointStatus(const httplib::Request& req, httplib::Response& res) {
    const std::string jobId = req.matches[1], id = req.matches[2];
    auto it = triggers_.find(id);
    if (it == triggers_.end() || it->second.jobId != jobId) {
      if (std::none_of(jobs_.begin(), jobs_.end(), [&](const auto& e) { return e->job->jobId() == jobId; }))
        return sendError(res, 404, "Job " + jobId + " not found.");
      return sendError(res, 404, "There is no savepoint operation with trigger id " + id + " for job " + jobId + ".");
    }
    if (!ready(it->second)) return sendJson(res, {{"status", {{"id", "IN_PROGRESS"}}}, {"operation", nullptr}});
    json operation;
    try {
      operation = {{"location", it->second.result.get()}};
    } catch (const std::exception& error) {
      operation = {{"failure-cause", {{"class", "weir::Error"}, {"stack-trace", error.what()}}}};
    }
    sendJson(res, {{"status", {{"id", "COMPLETED"}}}, {"operation", operation}});
    it->second.fetched = true;
    cv_.notify_all();
  }

  // Locks every entry's job for the current request; forgets jobs that are gone.
  void lockJobs() {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      (*it)->job = (*it)->pinned ? (*it)->pinned : (*it)->handle.lock();
      if ((*it)->job) ++it;
      else it = jobs_.erase(it);
    }
  }
  void unlockJobs() {
    for (auto& e : jobs_) e->job.reset();
  }

  void sampleLoop() {
    std::unique_lock lock(mutex_);
    while (!cv_.wait_for(lock, options_.metricsInterval, [&] { return stopping_; })) {
      // Released after the lock: dropping a job's last owner ends it, and a job that
      // ends takes this lock to be archived.
      std::vector<std::shared_ptr<JobExecution>> keep;
      lockJobs();
      for (auto& e : jobs_) keep.push_back(e->job);
      for (auto& e : jobs_) {
        if (e->ended) continue;
        bool running = e->job->endTimeMillis() < 0;
        e->sampler.update(*e->job);
        if (!running) {
          e->ended = true;
          e->sampler.clearRates();
        }
      }
      unlockJobs();
      const auto now = std::chrono::steady_clock::now();
      if (archives_ && now - archivesRead_ >= archiveRefresh_) {
        auto archives = archives_;
        lock.unlock();
        archives->refresh();
        lock.lock();
        archivesRead_ = now;
      }
      lock.unlock();
      keep.clear();
      lock.lock();
    }
  }

  // The job of path parameter 1; else it answers 404 itself, or to a request that would
  // change a job that ended and is only kept, 409 naming its final state. GETs of such a
  // job are answered from what is kept before routing, and here when the job ended
  // between the two.
  Entry* job(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    for (auto& e : jobs_)
      if (e->job->jobId() == id) return e.get();
    std::optional<json> overview;
    const bool change = req.method != "GET" && req.method != "HEAD";
    // A GET that found the job live before routing, and whose job has ended and been
    // let go of since: answered from what is kept, as it would be now.
    if (auto it = ended_.find(id); !change && it != ended_.end()) {
      const auto kept = it->second->answer(req.path, metricsQuery(req));
      res.status = kept.status;
      res.set_content(kept.body, "application/json");
      return nullptr;
    }
    if (auto it = ended_.find(id); change && it != ended_.end()) overview = it->second->overview();
    if (change && !overview && archives_)
      for (auto& o : archives_->overviews())
        if (o.value("jid", "") == id) overview = std::move(o);
    if (overview)
      sendError(res, 409, "Job " + id + " has already ended: it is " + overview->value("state", "ended") + ".");
    else
      sendError(res, 404, "Job " + id + " not found.");
    return nullptr;
  }

  // Answers 409 naming the final state when the job has ended: there is nothing left to
  // cancel or stop.
  static bool endedJob(const Entry& e, httplib::Response& res) {
    const JobStatus st = e.job->status();
    if (st != JobStatus::FINISHED && st != JobStatus::CANCELED && st != JobStatus::FAILED) return false;
    sendError(res, 409, "Job " + e.job->jobId() + " has already ended: it is " + toString(st) + ".");
    return true;
  }

  // The vertex whose id is the request's match `match`; 404 when the job has none.
  int vertex(const Entry& e, const httplib::Request& req, httplib::Response& res, size_t match = 2) {
    const std::string id = req.matches[match];
    const auto& vs = e.job->vertices();
    for (size_t v = 0; v < vs.size(); ++v)
      if (vs[v].id == id) return static_cast<int>(v);
    sendError(res, 404, "Vertex " + id + " not found in job " + e.job->jobId() + ".");
    return -1;
  }

  static std::string vertexStatus(JobStatus s) {
    switch (s) {
      case JobStatus::FINISHED: return "FINISHED";
      case JobStatus::CANCELED: return "CANCELED";
      case JobStatus::FAILED: return "FAILED";
      case JobStatus::CANCELLING:
      case JobStatus::FAILING: return "CANCELING";
      default: return "RUNNING";
    }
  }

  // A vertex as it runs: its status and times. In a job of several stages (BATCH), its
  // stage's: CREATED until the stage starts, FINISHED once it did, and CANCELED when the
  // job failed or was cancelled before it ran, as Flink shows a region; otherwise the
  // job's.
  struct VertexRun {
    std::string status;
    int64_t start = -1, end = -1, duration = -1;
    int attempt = 0;  // of its subtasks: the stage's re-runs, else the job's restarts
  };
  VertexRun vertexRun(const Entry& e, size_t v, const std::vector<runtime::JobExecution::StageStatus>& stages) const {
    VertexRun run;
    const JobStatus job = e.job->status();
    if (stages.size() <= 1) {
      run.status = vertexStatus(job);
      run.start = e.job->startTimeMillis();
      run.end = e.job->endTimeMillis();
      run.duration = (run.end < 0 ? nowMillis() : run.end) - run.start;
      run.attempt = e.job->numRestarts();
      return run;
    }
    const auto& stage = stages[static_cast<size_t>(e.job->vertices()[v].stage)];
    run.status = stage.state;
    if (run.status == "CREATED" && (job == JobStatus::FAILED || job == JobStatus::CANCELED)) run.status = "CANCELED";
    if (run.status == "RUNNING" && (job == JobStatus::CANCELLING || job == JobStatus::FAILING)) run.status = "CANCELING";
    run.start = stage.startMillis;
    run.end = stage.endMillis;
    if (run.start >= 0) run.duration = (run.end < 0 ? nowMillis() : run.end) - run.start;
    run.attempt = std::max(0, stage.runs - 1);
    return run;
  }

  // Sum over a vertex's subtasks of rates; back-pressure is the worst subtask's.
  struct VertexRates {
    double in = 0, out = 0, backPressureRatio = 0;
  };
  static VertexRates vertexRates(const Entry& e, size_t v) {
    VertexRates r;
    const auto& rates = e.sampler.rates();
    if (v >= rates.size()) return r;
    for (const auto& s : rates[v]) {
      r.in += s.numRecordsInPerSecond;
      r.out += s.numRecordsOutPerSecond;
      r.backPressureRatio = std::max(r.backPressureRatio, s.backPressuredTimeMsPerSecond / 1000.0);
    }
    return r;
  }

  json jobOverview(const Entry& e) const {
    int64_t end = e.job->endTimeMillis();
    int64_t start = e.job->startTimeMillis();
    return {{"jid", e.job->jobId()},
            {"name", e.job->jobName()},
            {"state", stateName(e.job->status())},
            {"start-time", start},
            {"end-time", end},
            {"duration", (end < 0 ? nowMillis() : end) - start}};
  }

  // The records per second that cross the edge into input `i` of vertex `v`: what the
  // upstream's outputs that feed it emitted, over its subtasks.
  double edgeRate(const Entry& e, size_t v, size_t i) const {
    const auto& input = e.job->vertices()[v].inputs[i];
    const auto& rates = e.sampler.rates();
    const auto upstream = static_cast<size_t>(input.vertex);
    double rate = 0;
    if (upstream >= rates.size()) return rate;
    for (const auto& subtask : rates[upstream])
      for (const auto& output : input.outputs) {
        auto it = subtask.emittedPerSecond.find(output);
        if (it != subtask.emittedPerSecond.end()) rate += it->second;
      }
    return rate;
  }

  json plan(const Entry& e) const {
    json nodes = json::array();
    const auto& vs = e.job->vertices();
    for (size_t v = 0; v < vs.size(); ++v) {
      json inputs = json::array();
      for (size_t i = 0; i < vs[v].inputs.size(); ++i) {
        const auto& in = vs[v].inputs[i];
        inputs.push_back({{"num", i},
                          {"id", vs[static_cast<size_t>(in.vertex)].id},
                          {"ship_strategy", in.shipStrategy},
                          {"exchange", in.blocking ? "blocking" : "pipelined_bounded"},
                          {"records-per-second", edgeRate(e, v, i)}});
      }
      nodes.push_back({{"id", vs[v].id},
                       {"parallelism", vs[v].parallelism},
                       {"operator", ""},
                       {"operator_strategy", ""},
                       {"description", vs[v].name},
                       {"inputs", inputs}});
    }
    return {{"jid", e.job->jobId()},
            {"name", e.job->jobName()},
            {"type", e.job->isBatch() ? "BATCH" : "STREAMING"},
            {"nodes", nodes}};
  }

  json jobDetail(const Entry& e) const {
    json j = jobOverview(e);
    j["now"] = nowMillis();
    j["isStoppable"] = true;
    json vertices = json::array();
    const auto& vs = e.job->vertices();
    const auto& latest = e.sampler.latest();
    const auto stages = e.job->stages();
    std::map<std::string, int> statusCounts;
    for (const char* state : {"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED",
                              "FAILED", "RECONCILING", "INITIALIZING"})
      statusCounts[state] = 0;
    for (size_t v = 0; v < vs.size(); ++v) {
      const VertexRun run = vertexRun(e, v, stages);
      ++statusCounts[run.status];
      uint64_t in = 0, out = 0, bytesIn = 0, bytesOut = 0, inErrors = 0;
      int64_t idle = 0, bp = 0;
      if (v < latest.size()) {
        for (const auto& s : latest[v]) {
          in += s.numRecordsIn;
          out += std::max(s.numRecordsOut, s.numSourceRecords);
          bytesIn += s.numBytesIn;
          bytesOut += s.numBytesOut;
          inErrors += s.numRecordsInErrors;
          idle += s.idleTimeNanos;
          bp += s.backPressuredTimeNanos;
        }
      }
      int64_t elapsedMs = std::max<int64_t>(0, run.duration) * vs[v].parallelism;
      auto rates = vertexRates(e, v);
      vertices.push_back({{"id", vs[v].id},
                          {"name", vs[v].name},
                          {"uids", vs[v].uids},
                          {"parallelism", vs[v].parallelism},
                          {"maxParallelism", vs[v].maxParallelism},
                          {"status", run.status},
                          {"start-time", run.start},
                          {"end-time", run.end},
                          {"duration", run.duration},
                          {"metrics",
                           {{"read-records", in},
                            {"read-records-complete", true},
                            {"write-records", out},
                            {"write-records-complete", true},
                            {"read-bytes", bytesIn},
                            {"read-bytes-complete", true},
                            {"write-bytes", bytesOut},
                            {"write-bytes-complete", true},
                            {"records-in-errors", inErrors},
                            {"read-records-per-second", rates.in},
                            {"write-records-per-second", rates.out},
                            {"accumulated-idle-time", idle / 1000000},
                            {"accumulated-backpressured-time", bp / 1000000},
                            {"accumulated-busy-time", std::max<int64_t>(0, elapsedMs - idle / 1000000 - bp / 1000000)}}},
                          {"backpressure-level", backPressureLevel(rates.backPressureRatio)},
                          {"backpressure-ratio", rates.backPressureRatio},
                          {"current-input-watermark", vertexWatermark(e, v)}});
      if (stages.size() > 1) vertices.back()["stage"] = vs[v].stage + 1;
    }
    j["vertices"] = vertices;
    j["status-counts"] = statusCounts;
    if (stages.size() > 1) {
      // weir's: a batch job's stages, in the order they run (docs/rest.md).
      json list = json::array();
      for (size_t k = 0; k < stages.size(); ++k) {
        const auto& stage = stages[k];
        json ids = json::array();
        for (int v : stage.vertices) ids.push_back(vs[static_cast<size_t>(v)].id);
        const VertexRun run = vertexRun(e, static_cast<size_t>(stage.vertices.front()), stages);  // its vertices'
        list.push_back({{"id", k + 1},
                        {"status", run.status},
                        {"vertices", ids},
                        {"attempt", run.attempt},
                        {"start-time", run.start},
                        {"end-time", run.end},
                        {"duration", run.duration},
                        {"written-bytes", stage.writtenBytes},
                        {"spilled-bytes", stage.spilledBytes}});
      }
      j["stages"] = list;
    }
    j["plan"] = plan(e);
    return j;
  }

  // The lowest watermark over a vertex's subtasks; null while any has none.
  static json vertexWatermark(const Entry& e, size_t v) {
    const auto& latest = e.sampler.latest();
    if (v >= latest.size() || latest[v].empty()) return nullptr;
    bool source = e.job->vertices()[v].isSource;
    int64_t lowest = INT64_MAX;
    for (const auto& s : latest[v]) lowest = std::min(lowest, source ? s.currentOutputWatermark : s.currentInputWatermark);
    if (lowest == INT64_MIN) return nullptr;
    return lowest;
  }

  json exceptions(const Entry& e) const {
    auto failure = e.job->failure();
    json entries = json::array();  // one per failed attempt, newest first
    json all = json::array();      // the same in Flink's older form
    for (const auto& f : e.job->failures()) {
      all.push_back({{"exception", f.message},
                     {"task", f.taskName.empty() ? json(nullptr) : json(f.taskName)},
                     {"location", f.location.empty() ? json(nullptr) : json(f.location)},
                     {"timestamp", f.timestampMillis},
                     {"taskManagerId", "embedded"}});
      entries.push_back({{"exceptionName", f.exceptionName},
                         {"stacktrace", f.message},
                         {"timestamp", f.timestampMillis},
                         {"taskName", f.taskName.empty() ? json(nullptr) : json(f.taskName)},
                         {"location", f.location.empty() ? json(nullptr) : json(f.location)},
                         {"taskManagerId", "embedded"}});
    }
    return {{"root-exception", failure ? json(failure->message) : json(nullptr)},
            {"timestamp", failure ? json(failure->timestampMillis) : json(nullptr)},
            {"all-exceptions", all},
            {"truncated", false},
            {"exceptionHistory", {{"entries", entries}, {"truncated", false}}}};
  }

  // How far a subtask's watermark is behind the wall clock (ms): its input watermark, a
  // source's the one it emits; none before the first.
  static std::optional<int64_t> watermarkLag(const Entry& e, size_t v, const runtime::SubtaskSample& s) {
    int64_t watermark = e.job->vertices()[v].isSource ? s.currentOutputWatermark : s.currentInputWatermark;
    if (watermark == INT64_MIN) return std::nullopt;
    return nowMillis() - watermark;
  }

  // One operator metric as Flink's REST API shows it: a histogram as its figures, each
  // under the metric's id and a suffix; any other as its value.
  static void addOperatorMetric(std::map<std::string, double>& m, const std::string& id,
                                const detail::MetricValue& metric) {
    if (metric.kind != detail::MetricKind::kHistogram) {
      m[id] = metric.value;
      return;
    }
    const auto& h = metric.histogram;
    for (const auto& [suffix, value] : {std::pair{"_min", h.min}, {"_max", h.max}, {"_mean", h.mean}, {"_median", h.p50},
                                        {"_stddev", h.stddev}, {"_p75", h.p75}, {"_p90", h.p90}, {"_p95", h.p95},
                                        {"_p98", h.p98}, {"_p99", h.p99}, {"_p999", h.p999}})
      m[id + suffix] = value;
  }

  // Per-subtask metrics of a vertex, by Flink's names.
  std::map<std::string, double> vertexMetrics(const Entry& e, size_t v) const {
    std::map<std::string, double> m;
    const auto& latest = e.sampler.latest();
    const auto& rates = e.sampler.rates();
    if (v < latest.size()) {
      for (size_t s = 0; s < latest[v].size(); ++s) {
        std::string p = std::to_string(s) + ".";
        m[p + "numRecordsIn"] = static_cast<double>(latest[v][s].numRecordsIn);
        m[p + "numRecordsOut"] = static_cast<double>(std::max(latest[v][s].numRecordsOut, latest[v][s].numSourceRecords));
        m[p + "currentInputWatermark"] = static_cast<double>(latest[v][s].currentInputWatermark);
        m[p + "currentOutputWatermark"] = static_cast<double>(latest[v][s].currentOutputWatermark);
        m[p + "numLateRecordsDropped"] = static_cast<double>(latest[v][s].numLateRecordsDropped);
        m[p + "numRecordsInErrors"] = static_cast<double>(latest[v][s].numRecordsInErrors);
        if (auto lag = watermarkLag(e, v, latest[v][s])) m[p + "watermarkLag"] = static_cast<double>(*lag);
        m[p + "numBytesIn"] = static_cast<double>(latest[v][s].numBytesIn);
        m[p + "numBytesOut"] = static_cast<double>(latest[v][s].numBytesOut);
        for (const auto& metric : latest[v][s].operatorMetrics) addOperatorMetric(m, p + metric.identifier(), metric);
      }
    }
    if (v < rates.size()) {
      for (size_t s = 0; s < rates[v].size(); ++s) {
        std::string p = std::to_string(s) + ".";
        m[p + "numRecordsInPerSecond"] = rates[v][s].numRecordsInPerSecond;
        m[p + "numRecordsOutPerSecond"] = rates[v][s].numRecordsOutPerSecond;
        m[p + "numBytesInPerSecond"] = rates[v][s].numBytesInPerSecond;
        m[p + "numBytesOutPerSecond"] = rates[v][s].numBytesOutPerSecond;
        m[p + "busyTimeMsPerSecond"] = rates[v][s].busyTimeMsPerSecond;
        m[p + "idleTimeMsPerSecond"] = rates[v][s].idleTimeMsPerSecond;
        m[p + "backPressuredTimeMsPerSecond"] = rates[v][s].backPressuredTimeMsPerSecond;
        for (const auto& rate : rates[v][s].operatorRates) m[p + rate.identifier()] = rate.value;
      }
    }
    return m;
  }

  // CPU time (user and system, ms), resident memory (bytes) and threads of this process.
  static std::map<std::string, double> processMetrics() {
    std::map<std::string, double> out;
    if (auto f = readProcessFigures()) {
      out["Status.Process.CPU.Time"] = f->cpuSeconds * 1000.0;
      out["Status.Process.Threads.Count"] = f->threads;
      out["Status.Process.Memory.RSS"] = f->residentBytes;
    }
    return out;
  }

  static void answerMetrics(const std::map<std::string, double>& all, const httplib::Request& req,
                            httplib::Response& res) {
    sendJson(res, metricValues(all, metricsQuery(req).get));
  }

  static MetricsQuery metricsQuery(const httplib::Request& req) {
    auto param = [&](const char* name) {
      return req.has_param(name) ? std::optional(req.get_param_value(name)) : std::nullopt;
    };
    return MetricsQuery{param("get"), param("agg"), param("subtasks")};
  }

  using CheckpointRecord = checkpoint::CheckpointCoordinator::Record;
  using SubtaskCheckpoint = checkpoint::CheckpointCoordinator::SubtaskStats;

  // Flink's StatsSummaryDto.
  static json figures(const checkpoint::StatsSummary::Snapshot& s) {
    return json{{"min", s.min}, {"max", s.max}, {"avg", s.avg}, {"p50", s.p50},
                {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}, {"p999", s.p999}};
  }

  // One checkpoint as Flink's CheckpointStatistics has it; `tasks` stays empty here.
  static json checkpointJson(const CheckpointRecord& r) {
    json j = {{"@class", r.completed ? "completed" : "failed"},
              {"id", r.id},
              {"status", r.completed ? "COMPLETED" : "FAILED"},
              {"is_savepoint", r.savepoint},
              {"trigger_timestamp", r.triggerTimestampMillis},
              {"latest_ack_timestamp", r.latestAckMillis},
              {"end_to_end_duration", r.durationMillis},
              {"state_size", r.fullSizeBytes},
              {"checkpointed_size", r.sizeBytes},
              {"alignment_buffered", 0},
              {"processed_data", 0},
              {"persisted_data", r.persistedDataBytes},
              {"num_subtasks", r.numSubtasks},
              {"num_acknowledged_subtasks", r.numAcknowledged},
              {"is_unaligned", r.unaligned},
              {"checkpoint_type", r.savepoint ? "SAVEPOINT" : r.unaligned ? "UNALIGNED_CHECKPOINT" : "CHECKPOINT"},
              {"tasks", json::object()}};
    if (r.completed) {
      j["external_path"] = r.path;
      j["discarded"] = false;
    } else {
      j["failure_timestamp"] = r.failureTimestampMillis;
      j["failure_message"] = r.failureMessage;
    }
    return j;
  }

  // The checkpoint `matches[2]` names, if the REST API still knows it (the history and
  // the latest completed, failed and savepoint); else answers 400 or 404 as Flink does.
  static std::optional<CheckpointRecord> checkpointOf(const Entry& e, const httplib::Request& req,
                                                      httplib::Response& res) {
    const std::string text = req.matches[2];
    int64_t id = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || end != text.data() + text.size()) {
      sendError(res, 400, "Bad checkpoint id '" + core::printableAscii(text) + "': not a number.");
      return std::nullopt;
    }
    if (auto stats = e.job->checkpointStats()) {
      for (const auto& r : stats->history)
        if (r.id == id) return r;
      for (const auto* r : {&stats->latestCompleted, &stats->latestFailed, &stats->latestSavepoint})
        if (*r && (*r)->id == id) return **r;
    }
    sendError(res, 404, "Could not find checkpointing statistics for checkpoint " + std::to_string(id) + ".");
    return std::nullopt;
  }

  // What the subtasks of vertex `v` did for checkpoint `r`, in subtask order.
  static std::vector<SubtaskCheckpoint> subtasksOf(const CheckpointRecord& r, int v) {
    std::vector<SubtaskCheckpoint> out;
    for (const auto& s : r.subtasks)
      if (s.vertex == v) out.push_back(s);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.subtask < b.subtask; });
    return out;
  }

  // Flink's TaskCheckpointStatistics: vertex `v`'s part of checkpoint `r`.
  static json taskCheckpointJson(const CheckpointRecord& r, const std::vector<SubtaskCheckpoint>& subs, int parallelism) {
    int64_t latestAck = -1, state = 0, checkpointed = 0, persisted = 0;
    for (const auto& s : subs) {
      latestAck = std::max(latestAck, s.ackMillis);
      state += s.stateSize;
      checkpointed += s.checkpointedSize;
      persisted += s.persistedBytes;
    }
    return {{"id", r.id},
            {"status", r.completed ? "COMPLETED" : "FAILED"},
            {"latest_ack_timestamp", latestAck},
            {"checkpointed_size", checkpointed},
            {"state_size", state},
            {"end_to_end_duration", latestAck < 0 ? 0 : latestAck - r.triggerTimestampMillis},
            {"alignment_buffered", 0},
            {"processed_data", 0},
            {"persisted_data", persisted},
            {"num_subtasks", parallelism},
            {"num_acknowledged_subtasks", static_cast<int>(subs.size())}};
  }

  // Flink's /jobs/:jobid/checkpoints/details/:checkpointid: the checkpoint with its
  // tasks, by vertex id.
  json checkpointDetails(const Entry& e, const CheckpointRecord& r) const {
    json j = checkpointJson(r);
    const auto& vs = e.job->vertices();
    for (size_t v = 0; v < vs.size(); ++v)
      j["tasks"][vs[v].id] = taskCheckpointJson(r, subtasksOf(r, static_cast<int>(v)), vs[v].parallelism);
    return j;
  }

  // Flink's .../details/:checkpointid/subtasks/:vertexid: the task's figures, their
  // summary over its subtasks, and each subtask ("pending_or_failed" when it did not
  // acknowledge).
  json subtaskCheckpointDetails(const CheckpointRecord& r, int v, int parallelism) const {
    const auto subs = subtasksOf(r, v);
    json j = taskCheckpointJson(r, subs, parallelism);
    checkpoint::StatsSummary size, state, duration, sync, async, persisted, alignment, startDelay;
    json subtasks = json::array();
    size_t next = 0;
    for (int index = 0; index < parallelism; ++index) {
      if (next >= subs.size() || subs[next].subtask != index) {
        subtasks.push_back({{"index", index}, {"status", "pending_or_failed"}});
        continue;
      }
      const SubtaskCheckpoint& s = subs[next++];
      const int64_t endToEnd = s.ackMillis - r.triggerTimestampMillis;
      size.add(s.checkpointedSize);
      state.add(s.stateSize);
      duration.add(endToEnd);
      sync.add(s.syncMillis);
      async.add(s.asyncMillis);
      persisted.add(s.persistedBytes);
      alignment.add(s.alignmentMillis);
      startDelay.add(s.startDelayMillis);
      subtasks.push_back({{"index", index},
                          {"status", "completed"},
                          {"ack_timestamp", s.ackMillis},
                          {"end_to_end_duration", endToEnd},
                          {"checkpointed_size", s.checkpointedSize},
                          {"state_size", s.stateSize},
                          {"checkpoint", {{"sync", s.syncMillis}, {"async", s.asyncMillis}}},
                          {"alignment",
                           {{"buffered", 0}, {"processed", 0}, {"persisted", s.persistedBytes},
                            {"duration", s.alignmentMillis}}},
                          {"start_delay", s.startDelayMillis},
                          {"unaligned_checkpoint", s.unaligned},
                          {"aborted", false}});
    }
    const json zeros = figures(checkpoint::StatsSummary::Snapshot{});
    j["summary"] = {{"checkpointed_size", figures(size.snapshot())},
                    {"state_size", figures(state.snapshot())},
                    {"end_to_end_duration", figures(duration.snapshot())},
                    {"checkpoint_duration", {{"sync", figures(sync.snapshot())}, {"async", figures(async.snapshot())}}},
                    {"alignment",
                     {{"buffered", zeros}, {"processed", zeros}, {"persisted", figures(persisted.snapshot())},
                      {"duration", figures(alignment.snapshot())}}},
                    {"start_delay", figures(startDelay.snapshot())}};
    j["subtasks"] = subtasks;
    return j;
  }

  // Flink's /jobs/:jobid/checkpoints: counts, a summary of the completed ones, the
  // latest completed, savepoint, failed and restored, and the history.
  json checkpoints(const Entry& e) const {
    auto stats = e.job->checkpointStats(true);
    if (!stats) {
      return {{"counts", {{"restored", 0}, {"total", 0}, {"in_progress", 0}, {"completed", 0}, {"failed", 0}}},
              {"summary", json::object()},
              {"latest", {{"completed", nullptr}, {"savepoint", nullptr}, {"failed", nullptr}, {"restored", nullptr}}},
              {"history", json::array()}};
    }
    const auto& summary = *stats->summary;
    const checkpoint::StatsSummary::Snapshot zeros{};
    auto latest = [](const std::optional<CheckpointRecord>& r) { return r ? checkpointJson(*r) : json(nullptr); };
    json history = json::array();
    for (const auto& r : stats->history) history.push_back(checkpointJson(r));
    json restored = nullptr;
    if (const auto& r = stats->latestRestored)
      restored = {{"id", r->id}, {"restore_timestamp", r->timestampMillis}, {"is_savepoint", r->savepoint},
                  {"external_path", r->path}};
    return {{"counts", {{"restored", stats->restored}, {"total", stats->completed + stats->failed + stats->inProgress},
                        {"in_progress", stats->inProgress}, {"completed", stats->completed}, {"failed", stats->failed}}},
            {"summary",
             {{"checkpointed_size", figures(summary.checkpointedSize)},
              {"state_size", figures(summary.stateSize)},
              {"end_to_end_duration", figures(summary.duration)},
              {"alignment_buffered", figures(zeros)},  // not measured, as in Flink
              {"processed_data", figures(zeros)},
              {"persisted_data", figures(summary.persistedData)}}},
            {"latest",
             {{"completed", latest(stats->latestCompleted)},
              {"savepoint", latest(stats->latestSavepoint)},
              {"failed", latest(stats->latestFailed)},
              {"restored", restored}}},
            {"history", history}};
  }

  // Flink's PrometheusReporter's scopes, names and labels (prometheus_exposition.h).
  std::string prometheusText() const {
    using Scope = PrometheusExposition::Scope;
    PrometheusExposition out(options_.prometheusPrefix);
    static const std::string host = [] {
      char name[256] = {};
      return ::gethostname(name, sizeof name - 1) == 0 ? core::printableAscii(name) : std::string("localhost");
    }();
    constexpr double kSeconds = 0.001;  // weir's spelling: milliseconds to seconds
    constexpr double kRatio = 0.001;    // and milliseconds per second to a share of time
    for (const auto& e : jobs_) {
      const auto& job = *e->job;
      const PrometheusExposition::Labels jobLabels{
          {"host", host}, {"job_id", job.jobId()}, {"job_name", core::printableAscii(job.jobName())}};
      const int restarts = job.metrics().numRestarts;
      out.counter(Scope::kJob, {"numRestarts", "num_restarts"}, "Restarts of the job", jobLabels, restarts);
      int64_t end = job.endTimeMillis();
      out.gauge(Scope::kJob, {"uptime", "uptime_seconds", kSeconds}, "Time the job has run",
                jobLabels, static_cast<double>((end < 0 ? nowMillis() : end) - job.startTimeMillis()));
      std::optional<checkpoint::CheckpointCoordinator::Stats> stats = job.checkpointStats();
      if (stats) {
        out.counter(Scope::kJob, {"numberOfCompletedCheckpoints", "number_of_completed_checkpoints"},
                    "Checkpoints completed", jobLabels, static_cast<double>(stats->completed));
        out.counter(Scope::kJob, {"numberOfFailedCheckpoints", "number_of_failed_checkpoints"},
                    "Checkpoints that failed or expired", jobLabels, static_cast<double>(stats->failed));
        out.gauge(Scope::kJob, {"numberOfInProgressCheckpoints", "number_of_in_progress_checkpoints"},
                  "Checkpoints in progress", jobLabels, static_cast<double>(stats->inProgress));
        out.counter(Scope::kJob, {"totalNumberOfCheckpoints", "number_of_checkpoints"},
                    "Checkpoints triggered", jobLabels,
                    static_cast<double>(stats->completed + stats->failed + stats->inProgress));
        if (stats->latestCompleted) {
          out.gauge(Scope::kJob, {"lastCompletedCheckpointId", "last_completed_checkpoint_id"},
                    "Id of the last completed checkpoint", jobLabels, static_cast<double>(stats->latestId));
          out.gauge(Scope::kJob, {"lastCheckpointDuration", "last_checkpoint_duration_seconds", kSeconds},
                    "Time the last completed checkpoint took", jobLabels, static_cast<double>(stats->lastDurationMillis));
          out.gauge(Scope::kJob, {"lastCheckpointSize", "last_checkpoint_size_bytes"},
                    "Bytes the last completed checkpoint wrote (incremental: new files)", jobLabels,
                    static_cast<double>(stats->lastSizeBytes));
          out.gauge(Scope::kJob, {"lastCheckpointFullSize", "last_checkpoint_full_size_bytes"},
                    "Bytes of every file the last completed checkpoint holds", jobLabels,
                    static_cast<double>(stats->lastFullSizeBytes));
          out.gauge(Scope::kJob, {"lastCheckpointPersistedData", "last_checkpoint_persisted_data_bytes"},
                    "Bytes of records in flight the last completed checkpoint holds (unaligned)", jobLabels,
                    static_cast<double>(std::max<int64_t>(0, stats->lastPersistedDataBytes)));
        }
        if (stats->latestRestored)
          out.gauge(Scope::kJob, {"lastCheckpointRestoreTimestamp", "last_checkpoint_restore_timestamp_seconds", kSeconds},
                    "When the job last restored a checkpoint or savepoint, since the Unix epoch", jobLabels,
                    static_cast<double>(stats->latestRestored->timestampMillis));
      }
      const auto& vs = job.vertices();
      const auto& latest = e->sampler.latest();
      const auto& rates = e->sampler.rates();
      // Flink's task scope variables.
      auto taskLabels = [&](size_t v, int subtask) {
        auto labels = jobLabels;
        labels["tm_id"] = "embedded";  // as /taskmanagers names this process
        labels["task_id"] = vs[v].id;
        labels["task_name"] = core::printableAscii(vs[v].name);
        labels["subtask_index"] = std::to_string(subtask);
        labels["task_attempt_num"] = std::to_string(restarts);
        // Flink's ExecutionAttemptID: <graph>_<vertex>_<subtask>_<attempt>.
        labels["task_attempt_id"] = job.jobId() + "_" + vs[v].id + "_" + labels["subtask_index"] + "_" +
                                    labels["task_attempt_num"];
        return labels;
      };
      for (size_t v = 0; v < vs.size() && v < latest.size(); ++v) {
        for (size_t s = 0; s < latest[v].size(); ++s) {
          const auto& sub = latest[v][s];
          const auto labels = taskLabels(v, static_cast<int>(s));
          auto count = [&](PrometheusExposition::Name name, const char* help, int64_t value) {
            out.counter(Scope::kTask, name, help, labels, static_cast<double>(value));
          };
          count({"numRecordsIn", "num_records_in"}, "Records a subtask received from its input channels", sub.numRecordsIn);
          count({"numRecordsOut", "num_records_out"}, "Records a subtask emitted",
                std::max(sub.numRecordsOut, sub.numSourceRecords));
          count({"numBytesIn", "num_bytes_in"}, "Bytes a source subtask read from outside the job", sub.numBytesIn);
          count({"numBytesOut", "num_bytes_out"}, "Bytes a sink subtask wrote outside the job", sub.numBytesOut);
          count({"numLateRecordsDropped", "num_late_records_dropped"},
                "Records too late for every window they belonged to", sub.numLateRecordsDropped);
          count({"numRecordsInErrors", "num_records_in_errors"},
                "Records a source could not read, skipped or sent to dead letters", sub.numRecordsInErrors);
          if (sub.currentInputWatermark != INT64_MIN)
            out.gauge(Scope::kTask, {"currentInputWatermark", "current_input_watermark"},
                      "Event-time watermark a subtask received (the job's timestamps, ms)", labels,
                      static_cast<double>(sub.currentInputWatermark));
          if (sub.currentOutputWatermark != INT64_MIN)
            out.gauge(Scope::kTask, {"currentOutputWatermark", "current_output_watermark"},
                      "Event-time watermark a source subtask emitted (the job's timestamps, ms)", labels,
                      static_cast<double>(sub.currentOutputWatermark));
          if (auto lag = watermarkLag(*e, v, sub))
            out.gauge(Scope::kTask, {"watermarkLag", "watermark_lag_seconds", kSeconds},
                      "How far a subtask's watermark is behind the wall clock", labels, static_cast<double>(*lag));
          if (v < rates.size() && s < rates[v].size()) {
            const auto& r = rates[v][s];
            auto rate = [&](PrometheusExposition::Name name, const char* help, double value) {
              out.gauge(Scope::kTask, name, help, labels, value);
            };
            rate({"numRecordsInPerSecond", "num_records_in_per_second"}, "Records received per second",
                 r.numRecordsInPerSecond);
            rate({"numRecordsOutPerSecond", "num_records_out_per_second"}, "Records emitted per second",
                 r.numRecordsOutPerSecond);
            rate({"numBytesInPerSecond", "num_bytes_in_per_second"}, "Bytes a source subtask read per second",
                 r.numBytesInPerSecond);
            rate({"numBytesOutPerSecond", "num_bytes_out_per_second"}, "Bytes a sink subtask wrote per second",
                 r.numBytesOutPerSecond);
            rate({"busyTimeMsPerSecond", "busy_time_ratio", kRatio}, "Share of time spent processing",
                 r.busyTimeMsPerSecond);
            rate({"idleTimeMsPerSecond", "idle_time_ratio", kRatio}, "Share of time spent waiting for input",
                 r.idleTimeMsPerSecond);
            rate({"backPressuredTimeMsPerSecond", "back_pressured_time_ratio", kRatio},
                 "Share of time spent waiting for output credit", r.backPressuredTimeMsPerSecond);
          }
          for (const auto& metric : sub.operatorMetrics) out.add(labels, metric);
          if (v < rates.size() && s < rates[v].size())
            for (const auto& rate : rates[v][s].operatorRates) out.add(labels, rate);
        }
        // Of the last completed checkpoint, per subtask (Flink's task metrics, in ns).
        if (stats && stats->latestCompleted)
          for (const auto& sub : stats->latestCompleted->subtasks) {
            if (sub.vertex != static_cast<int>(v)) continue;
            const auto labels = taskLabels(v, sub.subtask);
            out.gauge(Scope::kTask, {"checkpointAlignmentTime", "checkpoint_alignment_time_seconds", 1e-9},
                      "Time the last completed checkpoint waited for barriers", labels,
                      static_cast<double>(sub.alignmentMillis) * 1e6);
            out.gauge(Scope::kTask, {"checkpointStartDelayNanos", "checkpoint_start_delay_seconds", 1e-9},
                      "Time from the last completed checkpoint's trigger to the subtask's start of it", labels,
                      static_cast<double>(sub.startDelayMillis) * 1e6);
          }
      }
    }
    out.addProcess();
    return out.text();
  }

  // Registers a GET route, with HTTP and for render().
  void get(const std::string& pattern, httplib::Server::Handler handler) {
    getRoutes_.emplace_back(std::regex(pattern), handler);
    http_->Get(pattern, std::move(handler));
  }

  // What GET `path` answers, by the route that answers it over HTTP; nullopt for an
  // error. Not under mutex_ (the route takes it).
  std::optional<std::string> render(const std::string& path, const httplib::Params& params = {}) {
    for (const auto& [pattern, handler] : getRoutes_) {
      httplib::Request req;
      req.method = "GET";
      req.path = path;
      req.params = params;
      if (!std::regex_match(req.path, req.matches, pattern)) continue;
      httplib::Response res;
      handler(req, res);
      if (res.status != 200 && res.status != -1) return std::nullopt;
      return res.body;
    }
    return std::nullopt;
  }

  Entry* entryOf(const std::string& jobId) {  // under mutex_
    for (auto& e : jobs_)
      if (e->jobId == jobId) return e.get();
    return nullptr;
  }

  // The job has ended: keeps what the API answers for each of its paths, so that the
  // job is served after its last JobClient is gone, until the process exits; with a
  // folder, also writes it to <folder>/<job id> (Flink's archive) and says so on stderr,
  // a failure too (the job's result stands). On the thread that ended the job, before
  // its wait() returns.
  void archive(JobExecution& job, const std::string& folder, bool announceEnd) noexcept {
    std::string id, written, failure;
    std::shared_ptr<const JobArchive> answers;
    try {
      id = job.jobId();
      answers = std::make_shared<const JobArchive>(jobArchiveOf(job));
    } catch (const std::exception& ex) {
      failure = ex.what();
    } catch (...) {
      failure = "an exception that is not a std::exception";
    }
    {
      // std::mutex::lock throws only on a system error, which in this noexcept function
      // ends the process: better than leaving `pinned` on a job about to be freed.
      std::lock_guard lock(mutex_);
      if (answers) keepEnded(answers);
      if (Entry* e = entryOf(id)) e->pinned.reset();
    }
    if (!answers)
      std::fprintf(stderr, "weir: the REST API cannot show job %s once its client is gone%s: %s\n", id.c_str(),
                   folder.empty() ? "" : ", and did not archive it", failure.c_str());
    if (answers && !folder.empty()) {
      try {
        written = writeJobArchive(folder, *answers);
        std::fprintf(stderr, "weir: job %s archived to %s\n", id.c_str(), written.c_str());
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "weir: job %s was not archived: %s\n", id.c_str(), ex.what());
      }
    }
    if (announceEnd && answers)
      std::fprintf(stderr, "weir: job %s ended %s; its REST API and Web UI stay at %s until this process exits\n",
                   id.c_str(), toString(job.status()), url().c_str());
  }

  // Keeps an ended job's answers: the newest kMaxEndedJobs, in kMaxEndedBytes. Under
  // mutex_.
  void keepEnded(const std::shared_ptr<const JobArchive>& archive) {
    const std::string& id = archive->jobId;
    if (auto old = ended_.find(id); old != ended_.end()) {
      endedBytes_ -= old->second->bytes();
      std::erase(endedOrder_, id);
    }
    ended_[id] = archive;
    endedOrder_.push_back(id);
    endedBytes_ += archive->bytes();
    while (endedOrder_.size() > 1 && (endedOrder_.size() > kMaxEndedJobs || endedBytes_ > kMaxEndedBytes)) {
      endedBytes_ -= ended_.at(endedOrder_.front())->bytes();
      ended_.erase(endedOrder_.front());
      endedOrder_.pop_front();
    }
  }

  // Pins the ended job, takes its final sample and renders its archive.
  JobArchive jobArchiveOf(JobExecution& job) {
    const std::string id = job.jobId();
    {
      std::lock_guard lock(mutex_);
      Entry* e = entryOf(id);
      if (e == nullptr) {  // its last owner let go of it, and the server forgot it
        jobs_.push_back(std::make_unique<Entry>());
        e = jobs_.back().get();
        e->jobId = id;
      }
      // Not owned here: the job may be ending because its last owner let go of it.
      e->pinned = std::shared_ptr<JobExecution>(std::shared_ptr<JobExecution>(), &job);
      e->sampler.update(job);  // its final figures
      e->ended = true;
      e->sampler.clearRates();
    }
    return jobArchive(id);
  }

  // Every path of job `id` the Web UI and Flink's tools read, as answered now.
  JobArchive jobArchive(const std::string& id) {
    JobArchive archive{id, {}};
    auto add = [&](const std::string& path) -> json {
      auto body = render(path);
      if (!body) return nullptr;
      archive.answers[path] = *body;
      return json::parse(*body, nullptr, false);
    };
    // A metrics path keeps every id with its value; the history answers `get` from them.
    auto addMetrics = [&](const std::string& path) {
      auto ids = render(path);
      if (!ids) return;
      std::string all;
      for (const auto& m : json::parse(*ids, nullptr, false)) all += (all.empty() ? "" : ",") + m.value("id", "");
      if (auto values = render(path, {{"get", all}})) archive.answers[path] = *values;
    };
    if (auto all = render("/jobs/overview")) {
      const json overview = json::parse(*all, nullptr, false);
      json mine = json::array();
      if (overview.is_object())
        for (const auto& j : overview.value("jobs", json::array()))
          if (j.value("jid", "") == id) mine.push_back(j);
      archive.answers["/jobs/overview"] = json{{"jobs", mine}}.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    const std::string job = "/jobs/" + id;
    const json detail = add(job);
    for (const char* sub : {"/plan", "/exceptions", "/config", "/accumulators", "/vertices", "/checkpoints/config"})
      add(job + sub);
    addMetrics(job + "/metrics");
    std::vector<std::string> vertices;
    if (detail.is_object())
      for (const auto& v : detail.value("vertices", json::array())) vertices.push_back(v.value("id", ""));
    for (const auto& v : vertices) {
      add(job + "/vertices/" + v);
      add(job + "/vertices/" + v + "/backpressure");
      add(job + "/vertices/" + v + "/watermarks");
      addMetrics(job + "/vertices/" + v + "/metrics");
    }
    // Every checkpoint the API still holds, with its tasks' subtasks.
    const json checkpoints = add(job + "/checkpoints");
    std::set<int64_t> ids;
    if (checkpoints.is_object()) {
      for (const auto& c : checkpoints.value("history", json::array())) ids.insert(c.value("id", int64_t{-1}));
      const json latest = checkpoints.value("latest", json::object());
      for (const char* kind : {"completed", "savepoint", "failed"})
        if (latest.contains(kind) && latest[kind].is_object()) ids.insert(latest[kind].value("id", int64_t{-1}));
    }
    for (int64_t c : ids) {
      const std::string details = job + "/checkpoints/details/" + std::to_string(c);
      add(details);
      for (const auto& v : vertices) add(details + "/subtasks/" + v);
    }
    return archive;
  }

  // The answer to a GET of a job that only an archive holds: one of this process that
  // ended and whose last JobClient is gone, or one of the folder `weir history` serves.
  std::optional<ArchiveFolder::Answer> archivedAnswer(const httplib::Request& req) {
    const std::string id = jobIdOfPath(req.path);
    // A savepoint's outcome is kept apart from the job (triggers_): its route answers it.
    if (id.empty() || req.path.find("/savepoints/") != std::string::npos) return std::nullopt;
    const MetricsQuery query = metricsQuery(req);
    std::shared_ptr<const JobArchive> kept;
    std::shared_ptr<ArchiveFolder> archives;
    {
      std::lock_guard lock(mutex_);
      if (live(id)) return std::nullopt;
      if (auto it = ended_.find(id); it != ended_.end()) kept = it->second;
      else if (!archives_) return std::nullopt;
      archives = archives_;
    }
    // Outside the server's lock: a metrics query over a large archive holds no one up.
    if (kept) return kept->answer(req.path, query);
    return archives->answer(req.path, query);
  }

  // The overviews of the ended jobs no JobClient holds any more, then of the archived
  // ones, but of jobs served otherwise. Under mutex_.
  std::vector<json> archivedOverviews() {
    std::vector<json> out;
    for (const auto& id : endedOrder_)
      if (!live(id))
        if (auto o = ended_.at(id)->overview()) out.push_back(std::move(*o));
    if (!archives_) return out;
    for (auto& o : archives_->overviews()) {
      const std::string id = o.value("jid", "");
      if (!live(id) && !ended_.count(id)) out.push_back(std::move(o));
    }
    return out;
  }

  // Whether job `id` is served live: an entry whose job is pinned or still owned. Under
  // mutex_.
  bool live(const std::string& id) {
    const Entry* e = entryOf(id);
    return e != nullptr && (e->pinned || e->job || !e->handle.expired());
  }

  // A handler of a request that changes a job: with a token, only a request that
  // carries it gets there; the others get 401. Checked once the body is read, so that the
  // connection stays clean for the answer.
  httplib::Server::Handler guarded(httplib::Server::Handler handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (!options_.authenticationToken.empty() &&
          !bearerIs(req.get_header_value("Authorization"), options_.authenticationToken)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"weir\"");
        sendError(res, 401,
                  req.has_header("Authorization") ? "The REST token is not this server's."
                                                  : "Changing a job needs the REST token (Authorization: Bearer <token>).");
        return;
      }
      handler(req, res);
    };
  }

  // Registers a handler that runs under the server's lock, with every job locked.
  template <class F>
  httplib::Server::Handler locked(F f) {
    return [this, f](const httplib::Request& req, httplib::Response& res) {
      std::vector<std::shared_ptr<JobExecution>> keep;  // released after the lock
      std::lock_guard lock(mutex_);
      lockJobs();
      for (auto& e : jobs_) keep.push_back(e->job);
      try {
        f(req, res);
      } catch (...) {
        unlockJobs();
        throw;
      }
      unlockJobs();
    };
  }

  // Loopback servers answer only requests addressed to loopback names, which defeats DNS
  // rebinding; a browser request from another origin may not change a job.
  bool hostAllowed(const std::string& hostHeader) const {
    std::string host = hostHeader;
    if (!host.empty() && host[0] == '[') host = host.substr(0, host.find(']') + 1);
    else host = host.substr(0, host.find(':'));
    if (host == options_.address) return true;
    if (!core::isLoopbackAddress(options_.address)) return true;
    return core::isLoopbackAddress(host);
  }

  void routes() {
    http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
      if (!hostAllowed(req.get_header_value("Host"))) {
        sendError(res, 403, "Requests must be addressed to this server's own address.");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method != "GET" && req.has_header("Origin")) {
        std::string origin = req.get_header_value("Origin");
        auto scheme = origin.find("://");
        if (scheme == std::string::npos || !hostAllowed(origin.substr(scheme + 3))) {
          sendError(res, 403, "Cross-origin requests may not change a job.");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      // `curl -X PATCH` or `-X POST` without -d sends neither a length nor a chunked
      // body, and httplib would read one up to the end of the connection; such a request
      // has no body (RFC 9112, 6.3), which says so before httplib reads it.
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
        const_cast<httplib::Request&>(req).set_header("Content-Length", "0");  // httplib's own, not const
      // Flink's REST API is version 1 and answers under /v1/ too: routed as without it.
      if (req.path.starts_with("/v1/")) const_cast<httplib::Request&>(req).path.erase(0, 3);
      if (req.method == "GET" || req.method == "HEAD") {
        if (auto archived = archivedAnswer(req)) {
          res.status = archived->status;
          res.set_content(archived->body, "application/json");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    for (const auto& [path, asset] : assets()) {
      std::string pattern;
      for (char c : path) pattern += (c == '.' ? "\\." : std::string(1, c));
      get(pattern, [asset = asset](const httplib::Request&, httplib::Response& res) {
        res.set_content(asset.content, asset.contentType);
      });
    }
    get("/config", [this](const httplib::Request&, httplib::Response& res) {
      sendJson(res, {{"refresh-interval", options_.metricsInterval.count()},
                     {"timezone-name", "UTC"},
                     {"timezone-offset", 0},
                     {"flink-version", "weir 0.1"},
                     {"features", {{"web-submit", false}, {"web-cancel", true}}}});
    });
    get("/overview", locked([this](const httplib::Request&, httplib::Response& res) {
      int running = 0, finished = 0, cancelled = 0, failed = 0;
      for (auto& e : jobs_) {
        switch (e->job->status()) {
          case JobStatus::FINISHED: ++finished; break;
          case JobStatus::CANCELED: ++cancelled; break;
          case JobStatus::FAILED: ++failed; break;
          default: ++running;
        }
      }
      for (const auto& o : archivedOverviews()) {
        const std::string state = o.value("state", "");
        (state == "FINISHED" ? finished : state == "CANCELED" ? cancelled : state == "FAILED" ? failed : running) += 1;
      }
      sendJson(res, {{"taskmanagers", 1},
                     {"slots-total", static_cast<int>(std::thread::hardware_concurrency())},
                     {"slots-available", static_cast<int>(std::thread::hardware_concurrency())},
                     {"jobs-running", running},
                     {"jobs-finished", finished},
                     {"jobs-cancelled", cancelled},
                     {"jobs-failed", failed},
                     {"flink-version", "weir 0.1"}});
    }));
    get("/jobs", locked([this](const httplib::Request&, httplib::Response& res) {
      json jobs = json::array();
      for (auto& e : jobs_) jobs.push_back({{"id", e->job->jobId()}, {"status", stateName(e->job->status())}});
      for (const auto& o : archivedOverviews()) jobs.push_back({{"id", o.value("jid", "")}, {"status", o.value("state", "")}});
      sendJson(res, {{"jobs", jobs}});
    }));
    get("/jobs/overview", locked([this](const httplib::Request&, httplib::Response& res) {
      json jobs = json::array();
      for (auto& e : jobs_) jobs.push_back(jobOverview(*e));
      for (auto& o : archivedOverviews()) jobs.push_back(std::move(o));
      sendJson(res, {{"jobs", jobs}});
    }));
    get(R"(/jobs/([^/]+))", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (auto* e = job(req, res)) sendJson(res, jobDetail(*e));
    }));
    http_->Patch(R"(/jobs/([^/]+))", guarded(locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e || !validBody(req, res)) return;
      std::string mode = req.has_param("mode") ? req.get_param_value("mode") : "cancel";
      if (mode != "cancel") return sendError(res, 400, "Unknown mode '" + mode + "'; the only mode is 'cancel'.");
      if (endedJob(*e, res)) return;
      e->job->cancel();
      sendJson(res, json::object(), 202);
    })));
    http_->Post(R"(/jobs/([^/]+)/stop)", guarded(locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e || !validBody(req, res) || endedJob(*e, res)) return;
      // With a savepoint when a folder is given or configured (Flink's stop); else weir's
      // graceful stop, which drains without one.
      json body = req.body.empty() ? json::object() : json::parse(req.body);
      const CheckpointConfig* config = e->job->checkpointConfig();
      bool savepoint = (body.contains("targetDirectory") && !body["targetDirectory"].is_null()) ||
                       (config != nullptr && !config->getDefaultSavepointDirectory().empty());
      if (savepoint) return requestSavepoint(*e, req, res, true);
      if (!e->job->stop()) return sendError(res, 409, "Job " + e->job->jobId() + " is being stopped with a savepoint.");
      sendJson(res, json::object(), 202);
    })));
    http_->Post(R"(/jobs/([^/]+)/savepoints)", guarded(locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e || !validBody(req, res)) return;
      requestSavepoint(*e, req, res, false);
    })));
    get(R"(/jobs/([^/]+)/savepoints/([^/]+))", locked([this](const httplib::Request& req, httplib::Response& res) {
      savepointStatus(req, res);
    }));
    get(R"(/jobs/([^/]+)/plan)", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (auto* e = job(req, res)) sendJson(res, {{"plan", plan(*e)}});
    }));
    get(R"(/jobs/([^/]+)/exceptions)", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (auto* e = job(req, res)) sendJson(res, exceptions(*e));
    }));
    get(R"(/jobs/([^/]+)/checkpoints)", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (auto* e = job(req, res)) sendJson(res, checkpoints(*e));
    }));
    get(R"(/jobs/([^/]+)/checkpoints/details/([^/]+))",
              locked([this](const httplib::Request& req, httplib::Response& res) {
                auto* e = job(req, res);
                if (!e) return;
                if (auto r = checkpointOf(*e, req, res)) sendJson(res, checkpointDetails(*e, *r));
              }));
    get(R"(/jobs/([^/]+)/checkpoints/details/([^/]+)/subtasks/([^/]+))",
              locked([this](const httplib::Request& req, httplib::Response& res) {
                auto* e = job(req, res);
                if (!e) return;
                auto r = checkpointOf(*e, req, res);
                if (!r) return;
                const int v = vertex(*e, req, res, 3);
                if (v < 0) return;
                sendJson(res, subtaskCheckpointDetails(*r, v, e->job->vertices()[static_cast<size_t>(v)].parallelism));
              }));
    get(R"(/jobs/([^/]+)/checkpoints/config)", locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e) return;
      const CheckpointConfig* c = e->job->checkpointConfig();
      if (c == nullptr) return sendError(res, 404, "Checkpointing is not enabled for job " + e->job->jobId() + ".");
      bool retain = c->getExternalizedCheckpointCleanup() == ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION;
      sendJson(res, {{"mode", c->getCheckpointingMode() == CheckpointingMode::EXACTLY_ONCE ? "exactly_once"
                                                                                              : "at_least_once"},
                     {"interval", c->getCheckpointInterval().count()},
                     {"timeout", c->getCheckpointTimeout().count()},
                     {"min_pause", c->getMinPauseBetweenCheckpoints().count()},
                     {"max_concurrent", c->getMaxConcurrentCheckpoints()},
                     {"externalization", {{"enabled", true}, {"delete_on_cancellation", !retain}}},
                     {"tolerable_failed_checkpoints", c->getTolerableCheckpointFailureNumber()},
                     {"unaligned_checkpoints", c->isUnalignedCheckpointsEnabled()},
                     {"aligned_checkpoint_timeout", c->getAlignedCheckpointTimeout().count()},
                     {"checkpoint_storage", c->getCheckpointStorage().empty() ? "temporary folder"
                                                                               : c->getCheckpointStorage()}});
    }));
    get(R"(/jobs/([^/]+)/metrics)", locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e) return;
      int64_t end = e->job->endTimeMillis();
      std::map<std::string, double> all{
          {"uptime", static_cast<double>((end < 0 ? nowMillis() : end) - e->job->startTimeMillis())},
          {"numRestarts", e->job->metrics().numRestarts}};
      if (auto stats = e->job->checkpointStats()) {
        all["numberOfCompletedCheckpoints"] = static_cast<double>(stats->completed);
        all["numberOfFailedCheckpoints"] = static_cast<double>(stats->failed);
        all["numberOfInProgressCheckpoints"] = static_cast<double>(stats->inProgress);
        all["lastCheckpointDuration"] = static_cast<double>(stats->lastDurationMillis);
        all["lastCheckpointSize"] = static_cast<double>(stats->lastSizeBytes);
        all["lastCheckpointFullSize"] = static_cast<double>(stats->lastFullSizeBytes);
        all["checkpointAlignmentTime"] = static_cast<double>(stats->lastAlignmentMillis);
      }
      answerMetrics(all, req, res);
    }));
    get(R"(/jobs/([^/]+)/vertices/([^/]+))", locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e) return;
      int v = vertex(*e, req, res);
      if (v < 0) return;
      const auto& info = e->job->vertices()[static_cast<size_t>(v)];
      auto metrics = vertexMetrics(*e, static_cast<size_t>(v));
      const auto& latest = e->sampler.latest();
      const VertexRun run = vertexRun(*e, static_cast<size_t>(v), e->job->stages());
      json subtasks = json::array();
      for (int s = 0; s < info.parallelism; ++s) {
        std::string p = std::to_string(s) + ".";
        int64_t idle = 0, bp = 0;
        if (static_cast<size_t>(v) < latest.size() && static_cast<size_t>(s) < latest[static_cast<size_t>(v)].size()) {
          idle = latest[static_cast<size_t>(v)][static_cast<size_t>(s)].idleTimeNanos / 1000000;
          bp = latest[static_cast<size_t>(v)][static_cast<size_t>(s)].backPressuredTimeNanos / 1000000;
        }
        const int64_t duration = std::max<int64_t>(0, run.duration);
        subtasks.push_back({{"subtask", s},
                            {"status", run.status},
                            {"attempt", run.attempt},
                            {"endpoint", "localhost"},
                            {"taskmanager-id", "embedded"},
                            {"start-time", run.start},
                            {"end-time", run.end},
                            {"duration", run.duration},
                            {"metrics",
                             {{"read-records", metrics[p + "numRecordsIn"]},
                              {"read-records-complete", true},
                              {"write-records", metrics[p + "numRecordsOut"]},
                              {"write-records-complete", true},
                              {"read-bytes", metrics[p + "numBytesIn"]},
                              {"read-bytes-complete", true},
                              {"write-bytes", metrics[p + "numBytesOut"]},
                              {"write-bytes-complete", true},
                              {"accumulated-idle-time", idle},
                              {"accumulated-backpressured-time", bp},
                              {"accumulated-busy-time", std::max<int64_t>(0, duration - idle - bp)}}}});
      }
      sendJson(res, {{"id", info.id}, {"name", info.name}, {"parallelism", info.parallelism},
                     {"maxParallelism", info.maxParallelism}, {"now", nowMillis()}, {"subtasks", subtasks}});
    }));
    // Flink's aggregated subtask metrics: ?get=<names>&agg=min,max,avg,sum,skew&subtasks=0,2-3.
    get(R"(/jobs/([^/]+)/vertices/([^/]+)/subtasks/metrics)",
        locked([this](const httplib::Request& req, httplib::Response& res) {
          auto* e = job(req, res);
          if (!e) return;
          int v = vertex(*e, req, res);
          if (v < 0) return;
          try {
            sendJson(res, aggregatedSubtaskMetrics(vertexMetrics(*e, static_cast<size_t>(v)), metricsQuery(req)));
          } catch (const BadMetricsQuery& bad) {
            sendError(res, 400, bad.what());
          }
        }));
    get(R"(/jobs/([^/]+)/vertices/([^/]+)/backpressure)",
              locked([this](const httplib::Request& req, httplib::Response& res) {
                auto* e = job(req, res);
                if (!e) return;
                int v = vertex(*e, req, res);
                if (v < 0) return;
                json subtasks = json::array();
                double worst = 0;
                const auto& rates = e->sampler.rates();
                int parallelism = e->job->vertices()[static_cast<size_t>(v)].parallelism;
                for (int s = 0; s < parallelism; ++s) {
                  SubtaskRates r;
                  if (static_cast<size_t>(v) < rates.size() && static_cast<size_t>(s) < rates[static_cast<size_t>(v)].size())
                    r = rates[static_cast<size_t>(v)][static_cast<size_t>(s)];
                  double ratio = r.backPressuredTimeMsPerSecond / 1000.0;
                  worst = std::max(worst, ratio);
                  subtasks.push_back({{"subtask", s},
                                      {"backpressure-level", backPressureLevel(ratio)},
                                      {"ratio", ratio},
                                      {"idleRatio", r.idleTimeMsPerSecond / 1000.0},
                                      {"busyRatio", r.busyTimeMsPerSecond / 1000.0}});
                }
                sendJson(res, {{"status", "ok"},
                               {"backpressure-level", backPressureLevel(worst)},
                               {"end-timestamp", nowMillis()},
                               {"subtasks", subtasks}});
              }));
    get(R"(/jobs/([^/]+)/vertices/([^/]+)/watermarks)",
              locked([this](const httplib::Request& req, httplib::Response& res) {
                auto* e = job(req, res);
                if (!e) return;
                int v = vertex(*e, req, res);
                if (v < 0) return;
                // Flink's answer: per subtask, its input watermark (sources: the one they emit).
                json out = json::array();
                const auto& latest = e->sampler.latest();
                if (static_cast<size_t>(v) < latest.size()) {
                  for (size_t s = 0; s < latest[static_cast<size_t>(v)].size(); ++s) {
                    const auto& sample = latest[static_cast<size_t>(v)][s];
                    int64_t w = e->job->vertices()[static_cast<size_t>(v)].isSource ? sample.currentOutputWatermark
                                                                                     : sample.currentInputWatermark;
                    out.push_back({{"id", std::to_string(s) + ".currentInputWatermark"}, {"value", std::to_string(w)}});
                  }
                }
                sendJson(res, out);
              }));
    get(R"(/jobs/([^/]+)/vertices/([^/]+)/metrics)",
              locked([this](const httplib::Request& req, httplib::Response& res) {
                auto* e = job(req, res);
                if (!e) return;
                int v = vertex(*e, req, res);
                if (v >= 0) answerMetrics(vertexMetrics(*e, static_cast<size_t>(v)), req, res);
              }));
    get(R"(/jobs/([^/]+)/vertices)", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (auto* e = job(req, res)) sendJson(res, {{"vertices", jobDetail(*e)["vertices"]}});
    }));
    get(R"(/jobs/([^/]+)/config)", locked([this](const httplib::Request& req, httplib::Response& res) {
      auto* e = job(req, res);
      if (!e) return;
      int parallelism = 0;
      for (const auto& v : e->job->vertices()) parallelism = std::max(parallelism, v.parallelism);
      sendJson(res, {{"jid", e->job->jobId()},
                     {"name", e->job->jobName()},
                     {"execution-config",
                      {{"execution-mode", "PIPELINED"},
                       {"restart-strategy", e->job->restartStrategyName()},
                       {"job-parallelism", parallelism},
                       {"object-reuse-mode", false},
                       {"user-config", json::object()}}}});
    }));
    // weir has no accumulators (Flink's are deprecated for metrics): the shape, empty.
    get(R"(/jobs/([^/]+)/accumulators)", locked([this](const httplib::Request& req, httplib::Response& res) {
      if (job(req, res))
        sendJson(res, {{"job-accumulators", json::array()},
                       {"user-task-accumulators", json::array()},
                       {"serialized-user-task-accumulators", json::object()}});
    }));
    // The embedded runtime is one task manager: this process.
    get("/taskmanagers", locked([this](const httplib::Request&, httplib::Response& res) {
      const int cores = static_cast<int>(std::thread::hardware_concurrency());
      int used = 0;  // a running job takes as many slots as its widest vertex (Flink's slot sharing)
      for (auto& e : jobs_) {
        const JobStatus st = e->job->status();
        if (st == JobStatus::FINISHED || st == JobStatus::CANCELED || st == JobStatus::FAILED) continue;
        int widest = 0;
        for (const auto& v : e->job->vertices()) widest = std::max(widest, v.parallelism);
        used += widest;
      }
      const int64_t page = ::sysconf(_SC_PAGESIZE);
      sendJson(res, {{"taskmanagers",
                      json::array({{{"id", "embedded"},
                                    {"path", "embedded"},
                                    {"dataPort", -1},
                                    {"jmxPort", -1},
                                    {"timeSinceLastHeartbeat", nowMillis()},
                                    {"slotsNumber", cores},
                                    {"freeSlots", std::max(0, cores - used)},
                                    {"hardware",
                                     {{"cpuCores", cores},
                                      {"physicalMemory", ::sysconf(_SC_PHYS_PAGES) * page},
                                      {"freeMemory", ::sysconf(_SC_AVPHYS_PAGES) * page},
                                      {"managedMemory", 0}}}}})}});
    }));
    get("/jobmanager/config", [this](const httplib::Request&, httplib::Response& res) {
      json entries = json::array();
      auto add = [&](const std::string& key, const std::string& value) {
        entries.push_back({{"key", key}, {"value", value}});
      };
      add("execution.target", "embedded");
      add("rest.address", options_.address);
      add("rest.port", std::to_string(port_));
      add("web.refresh-interval", std::to_string(options_.metricsInterval.count()));
      add("weir.version", "0.1");
      sendJson(res, entries);
    });
    // This process's own figures, from /proc (Flink's JobManager shows its JVM's).
    get("/jobmanager/metrics", [](const httplib::Request& req, httplib::Response& res) {
      answerMetrics(processMetrics(), req, res);
    });
    get("/metrics", locked([this](const httplib::Request&, httplib::Response& res) {
      res.set_content(prometheusText(), "text/plain; version=0.0.4; charset=utf-8");
    }));
    http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string what = res.status == 404   ? "Not found: " + req.path
                         : res.status == 413 ? "Request body larger than 1 MB."
                         : res.status == 400 ? "Bad request."
                         : res.status == 405 ? "Method not allowed."
                                             : "Request failed.";
      sendError(res, res.status, what);
    });
    http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      sendError(res, 500, what);
    });
  }

  RestOptions options_;
  std::unique_ptr<httplib::Server> http_;  // an SSLServer with TLS
  // Guarded by mutex_: what the API answered for jobs of this process that ended, their
  // ids oldest first, and the bytes of those answers.
  std::map<std::string, std::shared_ptr<const JobArchive>> ended_;
  std::deque<std::string> endedOrder_;
  size_t endedBytes_ = 0;
  int port_ = -1;
  std::thread listener_;
  std::atomic<bool> listenerDone_{false};
  std::thread sampler_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;                      // guarded by mutex_
  std::map<std::string, SavepointTrigger> triggers_;  // guarded by mutex_; by trigger id
  std::deque<std::string> triggerOrder_;              // guarded by mutex_; oldest first
  std::vector<std::unique_ptr<Entry>> jobs_;   // guarded by mutex_
  std::vector<std::pair<std::regex, httplib::Server::Handler>> getRoutes_;  // set before the server listens
  // What a job ending calls to be archived, while the server exists.
  struct ArchiveGate {
    explicit ArchiveGate(Impl* s) : server(s) {}
    std::mutex mutex;
    std::condition_variable done;
    Impl* server;    // null once the server goes
    int active = 0;  // archives in progress
  };
  std::shared_ptr<ArchiveGate> gate_ = std::make_shared<ArchiveGate>(this);
  std::shared_ptr<ArchiveFolder> archives_;         // guarded by mutex_; `weir history`
  std::chrono::milliseconds archiveRefresh_{10000};  // guarded by mutex_
  std::chrono::steady_clock::time_point archivesRead_{};  // the sampler's thread
};

RestServer::RestServer(const RestOptions& options) : impl_(std::make_unique<Impl>(options)) {}
RestServer::~RestServer() = default;

RestServer& RestServer::forOptions(const RestOptions& options) {
  static std::mutex mutex;
  static std::vector<std::pair<std::string, std::unique_ptr<RestServer>>> servers;
  checkPolicy(options);
  std::lock_guard lock(mutex);
  // Port 0 means "any port": the first such request picks one, later ones share it, as
  // do requests for the port it picked.
  std::string key = options.address + ":" + std::to_string(options.port);
  for (auto& [k, server] : servers) {
    if (k != key && (options.port == 0 || k != options.address + ":0" || server->port() != options.port)) continue;
    // A job never gets less protection than it asked for from a server made before it.
    const RestOptions& made = server->impl_->options();
    if (made.sslCertificate != options.sslCertificate || made.sslPrivateKey != options.sslPrivateKey ||
        made.authenticationToken != options.authenticationToken)
      throw Error(ErrorCode::kInvalidArgument, "REST server at " + key +
                                                   " already serves other jobs with another TLS certificate or token; "
                                                   "give this job the same ones, or another port");
    if (made.prometheusPrefix != options.prometheusPrefix)
      throw Error(ErrorCode::kInvalidArgument, "REST server at " + key + " already names its metrics with the " +
                                                   made.prometheusPrefix + " prefix; give this job the same, or "
                                                   "another port");
    return *server;
  }
  servers.emplace_back(key, std::unique_ptr<RestServer>(new RestServer(options)));
  return *servers.back().second;
}

void RestServer::addJob(const std::shared_ptr<runtime::JobExecution>& job, const std::string& archiveFolder,
                        bool announceEnd) {
  impl_->addJob(job, archiveFolder, announceEnd);
}
void RestServer::serveArchives(const std::string& folder, std::chrono::milliseconds refresh) {
  impl_->serveArchives(folder, refresh);
}
size_t RestServer::archivedJobs() const { return impl_->archivedJobs(); }
std::string RestServer::url() const { return impl_->url(); }
int RestServer::port() const { return impl_->port(); }

}  // namespace weir::rest
