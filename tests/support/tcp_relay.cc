// A TCP relay for fault tests: listens on 127.0.0.1 (an ephemeral port, printed as "port N" on
// stdout) and forwards every connection to 127.0.0.1:TARGET_PORT. SIGUSR1 pauses it: it stops
// reading from both sides but keeps every socket open, as a stalled network path or a stopped
// peer does (the kernel still acknowledges what is sent, nothing comes back). SIGRTMIN mutes the
// replies only: requests still reach the server, nothing comes back. SIGUSR2 resumes both.
// SIGRTMIN+1 cuts: closes every connection (the client sees its connection reset) and resumes.
// SIGRTMIN+2 cuts and pauses: closes every connection and stalls the new ones (accepted, and
// connected to the target, but nothing forwarded) until SIGUSR2. SIGRTMIN+3 mutes the replies
// once the next one has passed (a handshake's answer, say: what the client sends after it reaches
// the server, and nothing comes back).
// SIGRTMIN+4 delays the replies: each byte from the server reaches the client DELAY_MS after it
// came (a busy or distant server: every answer late, in order); SIGUSR2 delivers what waits, at
// once, and ends the delay.
// SIGRTMIN+5 asks how many bytes the clients sent that the relay has not read yet (while paused:
// what waits in the stalled path); it prints "pending N".
// Once a pause has taken effect it prints "paused" on stdout (TcpRelay::pause waits for it).
// Runs until killed, or until the process that started it is gone (checked every 50 ms), so that
// a relay never outlives its test.
//
//   tcp_relay TARGET_PORT [LISTEN_PORT [DELAY_MS]]   (LISTEN_PORT: that port instead of an ephemeral
//                                                    one, 0: ephemeral; DELAY_MS default 3000)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t paused = 0;
volatile sig_atomic_t muted = 0;
volatile sig_atomic_t cut = 0;
volatile sig_atomic_t delayed = 0;
volatile sig_atomic_t report_pending = 0;
volatile sig_atomic_t pause_after_cut = 0;
volatile sig_atomic_t mute_after_reply = 0;

using Clock = std::chrono::steady_clock;

int listen_socket(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    std::perror("tcp_relay: listen");
    std::exit(1);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("port %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  return fd;
}

// No Nagle on either side: the relay forwards what it reads at once, as a network path would; with
// Nagle and the peer's delayed acknowledgement, a small write behind an unacknowledged one waited
// about 40 ms.
void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int connect_target(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    no_delay(fd);
    return fd;
  }
  if (fd >= 0) ::close(fd);
  return -1;
}

// Bytes from the server held back until `due` (the delay mode).
struct Held {
  Clock::time_point due;
  std::string bytes;
};

struct Pair {
  int a, b;  // client side, server side
  std::deque<Held> held;  // replies not yet delivered, in order
};

bool write_all(int to, const char* data, std::size_t size) {
  for (std::size_t off = 0; off < size;) {
    ssize_t w = ::write(to, data + off, size - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<std::size_t>(w);
  }
  return true;
}

// Moves what `from` has to `to`, or into `held` (due `delay` from now) when given. False when
// either side closed or failed.
bool pump(int from, int to, std::deque<Held>* held = nullptr, std::chrono::milliseconds delay = {}) {
  char buf[65536];
  ssize_t n = ::read(from, buf, sizeof buf);
  if (n <= 0) return n < 0 && errno == EINTR;
  if (held != nullptr) {
    held->push_back({Clock::now() + delay, std::string(buf, static_cast<std::size_t>(n))});
    return true;
  }
  return write_all(to, buf, static_cast<std::size_t>(n));
}

// Delivers the held replies that are due (all of them with `everything`). False when the client
// side failed.
bool deliver(Pair& p, bool everything) {
  const auto now = Clock::now();
  while (!p.held.empty() && (everything || p.held.front().due <= now)) {
    if (!write_all(p.a, p.held.front().bytes.data(), p.held.front().bytes.size())) return false;
    p.held.pop_front();
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: tcp_relay TARGET_PORT [LISTEN_PORT [DELAY_MS]]\n");
    return 64;
  }
  const std::chrono::milliseconds delay(argc == 4 ? std::atoi(argv[3]) : 3000);
  const int target = std::atoi(argv[1]);
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction pause_action {}, resume_action {};
  pause_action.sa_handler = [](int) { paused = 1; };
  resume_action.sa_handler = [](int) { paused = muted = delayed = 0; };
  ::sigaction(SIGUSR1, &pause_action, nullptr);
  ::sigaction(SIGUSR2, &resume_action, nullptr);
  struct sigaction mute_action {}, cut_action {};
  mute_action.sa_handler = [](int) { muted = 1; };
  cut_action.sa_handler = [](int) { cut = 1; };
  ::sigaction(SIGRTMIN, &mute_action, nullptr);
  ::sigaction(SIGRTMIN + 1, &cut_action, nullptr);
  struct sigaction cut_pause_action {};
  cut_pause_action.sa_handler = [](int) { pause_after_cut = cut = 1; };
  ::sigaction(SIGRTMIN + 2, &cut_pause_action, nullptr);
  struct sigaction mute_after_action {};
  mute_after_action.sa_handler = [](int) { mute_after_reply = 1; };
  ::sigaction(SIGRTMIN + 3, &mute_after_action, nullptr);
  struct sigaction delay_action {};
  delay_action.sa_handler = [](int) { delayed = 1; };
  ::sigaction(SIGRTMIN + 4, &delay_action, nullptr);
  struct sigaction pending_action {};
  pending_action.sa_handler = [](int) { report_pending = 1; };
  ::sigaction(SIGRTMIN + 5, &pending_action, nullptr);
  const pid_t parent = ::getppid();
  const int listener = listen_socket(argc >= 3 ? std::atoi(argv[2]) : 0);
  std::vector<Pair> pairs;
  bool said_paused = false;
  for (;;) {
    if (::getppid() != parent) return 0;
    if (cut) {
      for (const Pair& p : pairs) {
        ::close(p.a);
        ::close(p.b);
      }
      pairs.clear();
      paused = pause_after_cut;
      cut = muted = pause_after_cut = delayed = 0;
      said_paused = false;  // a pause after the cut is announced, even if one came before it
    }
    // One reading of the flag: a SIGUSR1 landing between two readings would be recorded as
    // announced without "paused" ever being printed.
    const bool now_paused = paused != 0;
    if (now_paused && !said_paused) {
      std::printf("paused\n");
      std::fflush(stdout);
    }
    said_paused = now_paused;
    if (report_pending) {
      report_pending = 0;
      long pending = 0;
      for (const Pair& p : pairs) {
        int n = 0;
        if (::ioctl(p.a, FIONREAD, &n) == 0) pending += n;
      }
      std::printf("pending %ld\n", pending);
      std::fflush(stdout);
    }
    // Replies held back by the delay go out when due, or at once once the delay ended.
    const bool delaying = delayed != 0;
    int timeout_ms = 50;
    if (!paused) {
      for (std::size_t i = 0; i < pairs.size();) {
        if (deliver(pairs[i], !delaying)) {
          ++i;
          continue;
        }
        ::close(pairs[i].a);
        ::close(pairs[i].b);
        pairs.erase(pairs.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (const Pair& p : pairs) {
        if (p.held.empty()) continue;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.held.front().due - Clock::now());
        timeout_ms = std::max(1, std::min<int>(timeout_ms, static_cast<int>(left.count()) + 1));
      }
    }
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    if (!paused) {
      for (const Pair& p : pairs) {
        fds.push_back({p.a, POLLIN, 0});
        fds.push_back({p.b, static_cast<short>(muted ? 0 : POLLIN), 0});
      }
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) continue;  // also wakes for a signal
    if (fds[0].revents & POLLIN) {
      int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        int server = connect_target(target);
        if (server < 0) {
          ::close(client);
        } else {
          no_delay(client);
          pairs.push_back({client, server, {}});
        }
      }
    }
    if (paused) continue;
    std::vector<Pair> alive;
    for (std::size_t i = 0; i < pairs.size() && 1 + 2 * i + 1 < fds.size(); ++i) {
      Pair& p = pairs[i];
      bool ok = true;
      if (fds[1 + 2 * i].revents != 0) ok = pump(p.a, p.b);
      if (ok && !muted && fds[2 + 2 * i].revents != 0) {
        ok = pump(p.b, p.a, delaying ? &p.held : nullptr, delay);
        if (ok && mute_after_reply) {
          muted = 1;
          mute_after_reply = 0;
        }
      }
      if (ok) {
        alive.push_back(std::move(p));
      } else {
        ::close(p.a);
        ::close(p.b);
      }
    }
    // Pairs accepted in this round were not polled yet: keep them.
    for (std::size_t i = (fds.size() - 1) / 2; i < pairs.size(); ++i) alive.push_back(std::move(pairs[i]));
    pairs = std::move(alive);
  }
}
