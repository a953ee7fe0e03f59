// The socket a client library opened for a connection, for libraries that keep it to themselves
// (MySQL Connector/C++ 1.1 hides its MYSQL handle), so that SocketDeadlines can watch it.
//
// How: this process's sockets are listed (/proc/self/fd) before and after the library connects;
// the connection's socket is the one that appeared and whose peer is the server. Several such
// sockets (another thread connected to the same server at the same moment) are ambiguous, and
// then none is named. The caller serialises its own connects so that they never compete.
//
// Thread-safe. The descriptor stays the library's: it is valid while the library's connection
// is open, which holds only when the library never reconnects on its own.
#ifndef DBLOCK_SERVICE_OPENED_SOCKET_H_
#define DBLOCK_SERVICE_OPENED_SOCKET_H_

#include <functional>
#include <string>

namespace dblock::service {

// Where the server listens: a TCP port (any address: a name may resolve to several), or the
// path of a Unix socket.
struct SocketPeer {
  int tcp_port = 0;
  std::string unix_path;
};

// Runs `connect` (which may throw: then this throws too) and returns the descriptor of the one
// socket to `peer` that it opened, or -1 when there is not exactly one (or /proc is not mounted).
int socket_opened_by(const std::function<void()>& connect, const SocketPeer& peer);

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_OPENED_SOCKET_H_
