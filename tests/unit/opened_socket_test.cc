// service::socket_opened_by: the socket a connect opened, told apart from the process's others.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dblock/service/opened_socket.h"

namespace dblock::testing {
namespace {

// A listening loopback socket on an ephemeral port, and the clients connected to it.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() {
    for (int fd : clients_) ::close(fd);
    ::close(fd_);
  }
  int port() const { return port_; }
  int connect() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    clients_.push_back(fd);
    return fd;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> clients_;
};

TEST_CASE("opened socket: the one new socket to the peer is named; none or two are not", "[unit][sql][deadline]") {
  Listener server, elsewhere;
  server.connect();  // open before: not the connect's
  const service::SocketPeer peer{server.port(), ""};
  int made = -1;
  CHECK(service::socket_opened_by([&] { elsewhere.connect(), made = server.connect(); }, peer) == made);
  CHECK(made >= 0);
  CHECK(service::socket_opened_by([&] { elsewhere.connect(); }, peer) == -1);  // another peer's only
  CHECK(service::socket_opened_by([&] { server.connect(), server.connect(); }, peer) == -1);  // ambiguous
  CHECK_THROWS_AS(service::socket_opened_by([] { throw std::runtime_error("refused"); }, peer), std::runtime_error);
}

}  // namespace
}  // namespace dblock::testing
