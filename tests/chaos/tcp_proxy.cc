#include "chaos/tcp_proxy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace weir::chaos {

namespace {

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Writes all of `n` bytes; false when the peer is gone.
bool sendAll(int fd, const char* data, ssize_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= w;
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(int targetPort) : targetPort_(targetPort) {
  listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_, 64) != 0)
    throw std::runtime_error("tcp proxy: cannot listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe(wake_) != 0) throw std::runtime_error("tcp proxy: cannot make a pipe");
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  (void)!::write(wake_[1], "x", 1);
  thread_.join();
  for (auto& p : pairs_) {
    ::close(p.client);
    ::close(p.server);
  }
  ::close(listen_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpProxy::cutAll() {
  cut_ = true;
  (void)!::write(wake_[1], "x", 1);
}

void TcpProxy::run() {
  char buffer[65536];
  while (!stop_) {
    if (cut_.exchange(false)) {
      for (auto& p : pairs_) {
        ::shutdown(p.client, SHUT_RDWR);
        ::shutdown(p.server, SHUT_RDWR);
        ::close(p.client);
        ::close(p.server);
      }
      pairs_.clear();
    }
    std::vector<pollfd> fds{{listen_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    for (const auto& p : pairs_) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.server, POLLIN, 0});
    }
    const size_t polled = pairs_.size();  // a pair accepted below was not polled yet
    if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
    if (fds[1].revents) {
      char drain[64];
      (void)!::read(wake_[0], drain, sizeof drain);
      continue;  // cut or stop first
    }
    if (fds[0].revents & POLLIN) {
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client >= 0) {
        const int server = connectTo(targetPort_);
        if (server < 0) {
          ::close(client);  // the server is down: as if it refused
        } else {
          int one = 1;
          ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          pairs_.push_back({client, server});
        }
      }
    }
    std::vector<size_t> closed;
    for (size_t i = 0; i < polled; ++i) {
      for (int side = 0; side < 2; ++side) {
        const pollfd& f = fds[2 + 2 * i + static_cast<size_t>(side)];
        if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int from = side == 0 ? pairs_[i].client : pairs_[i].server;
        const int to = side == 0 ? pairs_[i].server : pairs_[i].client;
        const ssize_t n = ::recv(from, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (const int64_t delay = delayMs_.load(); delay > 0 && n > 0)
          std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        if (n <= 0 || !sendAll(to, buffer, n)) {
          closed.push_back(i);
          break;
        }
      }
    }
    for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
      ::close(pairs_[*it].client);
      ::close(pairs_[*it].server);
      pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
  }
}

}  // namespace weir::chaos
