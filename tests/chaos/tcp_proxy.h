// A loopback TCP proxy between a job and a server, that a chaos run can make slow or cut:
// it listens on a free port of 127.0.0.1 and forwards every connection to the target
// port, in both directions, on one thread of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace weir::chaos {

class TcpProxy {
 public:
  explicit TcpProxy(int targetPort);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Closes every connection it forwards now, both sides (new ones are accepted).
  void cutAll();
  // Holds each chunk of bytes this long before forwarding it (0: none).
  void setDelay(std::chrono::milliseconds delay) { delayMs_ = delay.count(); }

 private:
  struct Pair {
    int client;
    int server;
  };
  void run();

  int targetPort_;
  int listen_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};  // a pipe: cutAll() and the destructor wake the thread
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::atomic<int64_t> delayMs_{0};
  std::vector<Pair> pairs_;  // the thread's own
  std::thread thread_;
};

}  // namespace weir::chaos
