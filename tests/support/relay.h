// tcp_relay (tcp_relay.cc), started as a child in front of a server on 127.0.0.1: pause() stalls
// every connection through it without closing any, as a dead network path or a stopped server
// does; resume() lets them go on. Not thread-safe; killed when destroyed.
#ifndef DBLOCK_TESTS_SUPPORT_RELAY_H_
#define DBLOCK_TESTS_SUPPORT_RELAY_H_

#include <string>

#include "process.h"

namespace dblock::testing {

class TcpRelay {
 public:
  // Starts `relay_path` forwarding to 127.0.0.1:`target_port`. Throws std::runtime_error when it
  // has not announced its port within 10 s.
  TcpRelay(const std::string& relay_path, int target_port);

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Stalls every connection; returns once the relay confirmed it.
  void pause();
  void resume();
  // Requests still pass, replies are held back (resume() lets them go).
  void mute_replies();
  // Closes every connection through the relay (new ones pass); ends a pause or mute.
  void cut();

 private:
  Child child_;
  int port_ = 0;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SUPPORT_RELAY_H_
