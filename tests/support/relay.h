// tcp_relay (tcp_relay.cc), started as a child in front of a server on 127.0.0.1: pause() stalls
// every connection through it without closing any, as a dead network path or a stopped server
// does; resume() lets them go on; cut() closes them. Not thread-safe; killed when destroyed.
#ifndef DBLOCK_TESTS_SUPPORT_RELAY_H_
#define DBLOCK_TESTS_SUPPORT_RELAY_H_

#include <chrono>
#include <string>

#include "process.h"

namespace dblock::testing {

class TcpRelay {
 public:
  // Starts `relay_path` forwarding to 127.0.0.1:`target_port`, listening on `listen_port` (0: an
  // ephemeral port); delay_replies() holds each reply back `reply_delay`. Throws
  // std::runtime_error when it has not announced its port within 10 s.
  TcpRelay(const std::string& relay_path, int target_port, int listen_port = 0,
           std::chrono::milliseconds reply_delay = std::chrono::milliseconds(3000));

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Stalls every connection; returns once the relay confirmed it.
  void pause();
  void resume();
  // Requests still pass, replies are held back (resume() lets them go).
  void mute_replies();
  // Every reply reaches its client `reply_delay` after the server sent it, in order (resume()
  // delivers what waits at once and ends the delay).
  void delay_replies();
  // mute_replies() once the next reply has passed (on a connection opened after this call: its
  // handshake's answer).
  void mute_after_next_reply();
  // Closes every connection through the relay (new ones pass); ends a pause or mute.
  void cut();
  // How many bytes the clients sent that the relay has not taken yet: while paused, what waits in
  // the stalled path (a request a client made after the pause). -1 when the relay did not answer.
  long pending_request_bytes();
  // Closes every connection through the relay and stalls the new ones until resume() (as a path
  // that broke and does not come back at once); returns once the relay confirmed it.
  void cut_and_pause();

 private:
  // Sends `sig` (each second again, up to 30 s) until the relay says "paused".
  void signal_until_paused(int sig);

  Child child_;
  int port_ = 0;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SUPPORT_RELAY_H_
