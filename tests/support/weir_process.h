// The weir program run as a user runs it, by tests that kill it: spawn it with its
// output in files (or run it to its end), and read how many checkpoints its runs completed. The test target
// defines WEIR_BINARY (the path of the weir program).
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace weir::test {

// Runs `weir args` with stdout appended to `out` and stderr to `err` (in folder `cwd`
// when given, with `environment`'s "NAME=value ..." set when given); returns its pid.
inline pid_t spawnWeir(const std::string& args, const std::filesystem::path& out, const std::filesystem::path& err,
                       const std::filesystem::path& cwd = {}, const std::string& environment = {}) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    int errFd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(errFd, 2);
    // exec: the shell becomes weir, so the pid is weir's.
    std::string command = environment + " exec " + std::string(WEIR_BINARY) + " " + args;
    if (!cwd.empty()) command = "cd '" + cwd.string() + "' && " + command;
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// What `weir args` run to its end printed, and its exit code (-1: killed by a signal).
struct Ran {
  int exitCode = -1;
  std::string out, err;
};
// Runs `weir args` to its end, its output in files under `dir`.
inline Ran runWeir(const std::string& args, const std::filesystem::path& dir) {
  std::filesystem::remove(dir / "cmd.out");
  pid_t pid = spawnWeir(args, dir / "cmd.out", dir / "cmd.err");
  int status = 0;
  ::waitpid(pid, &status, 0);
  Ran r;
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream out(dir / "cmd.out"), err(dir / "cmd.err");
  r.out.assign(std::istreambuf_iterator<char>(out), {});
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  return r;
}

// The checkpoints a job folder's completed-checkpoints file lists (a magic line, a line
// per checkpoint, a checksum line); 0 when it has none.
inline size_t listedIn(const std::filesystem::path& jobFolder) {
  std::ifstream in(jobFolder / "completed-checkpoints");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return lines >= 2 ? lines - 2 : 0;
}

// Calls `f` with each job folder directly under `checkpointDir`, while a running job may
// be removing its old checkpoints (no deeper look, no error when one goes).
template <class F>
void forEachJobFolder(const std::filesystem::path& checkpointDir, F f) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(checkpointDir, ec), end; !ec && it != end; it.increment(ec))
    f(it->path());
}

// How many checkpoints the record of a job under `checkpointDir` lists as completed.
inline size_t recordedCheckpoints(const std::filesystem::path& checkpointDir) {
  size_t most = 0;
  forEachJobFolder(checkpointDir, [&](const std::filesystem::path& job) { most = std::max(most, listedIn(job)); });
  return most;
}

// Checkpoints completed by every run under `checkpointDir` so far (each run has a job
// folder of its own).
inline size_t completedByAllRuns(const std::filesystem::path& checkpointDir) {
  size_t total = 0;
  forEachJobFolder(checkpointDir, [&](const std::filesystem::path& job) { total += listedIn(job); });
  return total;
}

}  // namespace weir::test
