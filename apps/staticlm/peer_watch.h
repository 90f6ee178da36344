// Notices that an HTTP client went away while its non-streaming request waits. cpp-httplib does
// not hand a handler its socket, so the socket is found among this process's descriptors by its
// two endpoints (the request's local and remote address and port), then polled for the peer's
// close. Linux only (/proc/self/fd, POLLRDHUP).
//
// The descriptor stays open while the handler runs (httplib closes it after the handler
// returns), so it cannot be reused by another connection under the watcher.
#pragma once

#include <string>

namespace staticlm::cli {

class PeerWatch {
 public:
  PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  bool found() const { return fd_ >= 0; }
  // True once the peer has closed (or reset) the connection; false when not found.
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace staticlm::cli
