#include "dblock/service/opened_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace dblock::service {

namespace {

// This process's sockets: inode -> descriptor. Read from the links' names ("socket:[inode]"),
// never through the descriptors themselves: those belong to other threads, which may close them
// meanwhile (and ThreadSanitizer counts touching them as a race).
std::map<unsigned long, int> open_sockets() {
  std::map<unsigned long, int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    char target[64];
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1) out.emplace(inode, static_cast<int>(fd));
  }
  ::closedir(dir);
  return out;
}

bool connected_to(int fd, const SocketPeer& peer) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  switch (address.ss_family) {
    case AF_INET:
      return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port) == peer.tcp_port;
    case AF_INET6:
      return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port) == peer.tcp_port;
    case AF_UNIX: {
      const auto& unix_address = reinterpret_cast<const sockaddr_un&>(address);
      return !peer.unix_path.empty() &&
             ::strncmp(unix_address.sun_path, peer.unix_path.c_str(), sizeof unix_address.sun_path) == 0;
    }
    default:
      return false;
  }
}

}  // namespace

int socket_opened_by(const std::function<void()>& connect, const SocketPeer& peer) {
  const std::map<unsigned long, int> before = open_sockets();
  connect();
  int found = -1;
  for (const auto& [inode, fd] : open_sockets()) {
    if (before.count(inode) != 0 || !connected_to(fd, peer)) continue;
    if (found >= 0) return -1;  // two candidates: not ours to guess
    found = fd;
  }
  return found;
}

}  // namespace dblock::service
