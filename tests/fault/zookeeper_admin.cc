#include "zookeeper_admin.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifdef DBLOCK_FAULT_ZOOKEEPER
#include <zookeeper/zookeeper.h>
#endif

#include "dblock/errors.h"

namespace dblock::fault {

using namespace std::chrono_literals;

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The answer to a four-letter word on 127.0.0.1:`port`, within 2 s ("" when none).
std::string four_letter(int port, const char* word) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  auto wait = [&](short events) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
  };
  if ((::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == EINPROGRESS) && wait(POLLOUT) &&
      ::write(fd, word, std::strlen(word)) == static_cast<ssize_t>(std::strlen(word))) {
    char buf[4096];
    while (wait(POLLIN)) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

ZkSession parse_zk_session(const std::string& id_hex, const std::string& password_hex) {
  ZkSession s;
  if (password_hex.size() % 2 != 0) return s;
  for (std::size_t i = 0; i < password_hex.size(); i += 2) {
    const int hi = hex_digit(password_hex[i]), lo = hex_digit(password_hex[i + 1]);
    if (hi < 0 || lo < 0) return s;
    s.password.push_back(static_cast<char>(hi * 16 + lo));
  }
  s.id = static_cast<std::int64_t>(std::strtoull(id_hex.c_str(), nullptr, 16));
  return s;
}

ZkServers::ZkServers(const std::string& admin_url, std::string script, std::string state, std::string err_path)
    : Members(admin_url, 2181, std::move(script), std::move(state), "zookeeper.pid", std::move(err_path)) {}

std::string ZkServers::version() const {
  const std::string out = four_letter(ports().front(), "srvr");
  const std::string key = "Zookeeper version: ";
  const auto at = out.find(key);
  if (at == std::string::npos) return "";
  const auto from = at + key.size();
  return out.substr(from, out.find_first_of("-,\r\n", from) - from);  // "3.8.0-<commit>, built on ..."
}

#ifdef DBLOCK_FAULT_ZOOKEEPER
bool ZkServers::expire(const ZkSession& session, std::chrono::milliseconds patience) {
  clientid_t id{};
  if (session.id == 0 || session.password.size() != sizeof id.passwd) return false;
  id.client_id = session.id;
  std::memcpy(id.passwd, session.password.data(), sizeof id.passwd);
  zoo_set_debug_level(static_cast<ZooLogLevel>(0));
  const std::string at = "127.0.0.1:" + std::to_string(ports().front());
  zhandle_t* zh = zookeeper_init(at.c_str(), nullptr, 10'000, &id, nullptr, 0);
  if (zh == nullptr) return false;
  const auto until = std::chrono::steady_clock::now() + patience;
  while (zoo_state(zh) != ZOO_CONNECTED_STATE && zoo_state(zh) != ZOO_EXPIRED_SESSION_STATE &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(2ms);  // no watcher: poll the state, bounded by `patience`
  }
  const bool taken = zoo_state(zh) == ZOO_CONNECTED_STATE;
  zookeeper_close(zh);  // a connected handle sends closeSession and awaits its answer
  return taken;
}
#else
bool ZkServers::expire(const ZkSession&, std::chrono::milliseconds) {
  throw UsageError("fault harness: built without ZooKeeper (session-expire)");
}
#endif

}  // namespace dblock::fault
