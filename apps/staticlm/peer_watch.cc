#include "peer_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>

namespace staticlm::cli {

namespace {

// The address and port of a socket endpoint, as httplib writes them ("127.0.0.1", "::1").
bool endpoint(const sockaddr_storage& a, std::string& addr, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    if (!inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text)) return false;
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (!inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text)) return false;
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  addr = text;
  return true;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  std::string addr;
  int port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 || !endpoint(a, addr, port)) return false;
  if (port != local_port || addr != local_addr) return false;
  n = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 || !endpoint(a, addr, port)) return false;
  return port == remote_port && addr == remote_addr;
}

}  // namespace

PeerWatch::PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(e.path().filename().c_str());
    if (matches(fd, local_addr, local_port, remote_addr, remote_port)) {
      fd_ = fd;
      return;
    }
  }
}

bool PeerWatch::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace staticlm::cli
