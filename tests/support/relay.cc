#include "relay.h"

#include <signal.h>

#include <chrono>
#include <optional>
#include <stdexcept>

namespace dblock::testing {

TcpRelay::TcpRelay(const std::string& relay_path, int target_port, int listen_port,
                   std::chrono::milliseconds reply_delay)
    : child_({relay_path, std::to_string(target_port), std::to_string(listen_port),
              std::to_string(reply_delay.count())}) {
  const std::optional<std::string> line = child_.read_line(std::chrono::seconds(10));
  if (!line || line->rfind("port ", 0) != 0) throw std::runtime_error("tcp_relay did not start (" + relay_path + ")");
  port_ = std::stoi(line->substr(5));
}

void TcpRelay::pause() { signal_until_paused(SIGUSR1); }

void TcpRelay::cut_and_pause() { signal_until_paused(SIGRTMIN + 2); }

void TcpRelay::signal_until_paused(int sig) {
  // The relay applies it in its loop: return only once nothing passes any more. The signal is sent
  // again each second until it is confirmed (a pause, and a cut with nothing left to cut, is
  // idempotent): a signal can be lost by a sanitizer's runtime, which defers it to a safe point in
  // the relay.
  for (int attempt = 0; attempt < 30; ++attempt) {
    child_.signal(sig);
    const std::optional<std::string> line = child_.read_line(std::chrono::seconds(1));
    if (line && *line == "paused") return;
  }
  throw std::runtime_error("tcp_relay did not confirm the pause within 30 s");
}
void TcpRelay::resume() { child_.signal(SIGUSR2); }
void TcpRelay::mute_replies() { child_.signal(SIGRTMIN); }
void TcpRelay::mute_after_next_reply() { child_.signal(SIGRTMIN + 3); }
void TcpRelay::cut() { child_.signal(SIGRTMIN + 1); }
void TcpRelay::delay_replies() { child_.signal(SIGRTMIN + 4); }

long TcpRelay::pending_request_bytes() {
  child_.signal(SIGRTMIN + 5);
  for (int lines = 0; lines < 10; ++lines) {  // a "paused" line may come first
    const std::optional<std::string> line = child_.read_line(std::chrono::seconds(2));
    if (!line) return -1;
    if (line->rfind("pending ", 0) == 0) return std::stol(line->substr(8));
  }
  return -1;
}

}  // namespace dblock::testing
