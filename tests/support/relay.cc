#include "relay.h"

#include <signal.h>

#include <chrono>
#include <optional>
#include <stdexcept>

namespace dblock::testing {

TcpRelay::TcpRelay(const std::string& relay_path, int target_port)
    : child_({relay_path, std::to_string(target_port)}) {
  const std::optional<std::string> line = child_.read_line(std::chrono::seconds(10));
  if (!line || line->rfind("port ", 0) != 0) throw std::runtime_error("tcp_relay did not start (" + relay_path + ")");
  port_ = std::stoi(line->substr(5));
}

void TcpRelay::pause() {
  // The relay applies it in its loop: return only once nothing passes any more. The signal is sent
  // again each second until it is confirmed (a pause is idempotent): a signal can be lost by a
  // sanitizer's runtime, which defers it to a safe point in the relay.
  for (int attempt = 0; attempt < 30; ++attempt) {
    child_.signal(SIGUSR1);
    const std::optional<std::string> line = child_.read_line(std::chrono::seconds(1));
    if (line && *line == "paused") return;
  }
  throw std::runtime_error("tcp_relay did not confirm the pause within 30 s");
}
void TcpRelay::resume() { child_.signal(SIGUSR2); }
void TcpRelay::mute_replies() { child_.signal(SIGRTMIN); }
void TcpRelay::cut() { child_.signal(SIGRTMIN + 1); }

}  // namespace dblock::testing
