// A TCP relay for fault tests: listens on 127.0.0.1 (an ephemeral port, printed as "port N" on
// stdout) and forwards every connection to 127.0.0.1:TARGET_PORT. SIGUSR1 pauses it: it stops
// reading from both sides but keeps every socket open, as a stalled network path or a stopped
// peer does (the kernel still acknowledges what is sent, nothing comes back). SIGRTMIN mutes the
// replies only: requests still reach the server, nothing comes back. SIGUSR2 resumes both.
// SIGRTMIN+1 cuts: closes every connection (the client sees its connection reset) and resumes.
// Once a pause has taken effect it prints "paused" on stdout (TcpRelay::pause waits for it).
// Runs until killed, or until the process that started it is gone (checked every 50 ms), so that
// a relay never outlives its test.
//
//   tcp_relay TARGET_PORT
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

volatile sig_atomic_t paused = 0;
volatile sig_atomic_t muted = 0;
volatile sig_atomic_t cut = 0;

int listen_socket() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
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

int connect_target(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

struct Pair {
  int a, b;  // client side, server side
};

// Moves what `from` has to `to`. False when either side closed or failed.
bool pump(int from, int to) {
  char buf[65536];
  ssize_t n = ::read(from, buf, sizeof buf);
  if (n <= 0) return n < 0 && errno == EINTR;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += w;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tcp_relay TARGET_PORT\n");
    return 64;
  }
  const int target = std::atoi(argv[1]);
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction pause_action {}, resume_action {};
  pause_action.sa_handler = [](int) { paused = 1; };
  resume_action.sa_handler = [](int) { paused = muted = 0; };
  ::sigaction(SIGUSR1, &pause_action, nullptr);
  ::sigaction(SIGUSR2, &resume_action, nullptr);
  struct sigaction mute_action {}, cut_action {};
  mute_action.sa_handler = [](int) { muted = 1; };
  cut_action.sa_handler = [](int) { cut = 1; };
  ::sigaction(SIGRTMIN, &mute_action, nullptr);
  ::sigaction(SIGRTMIN + 1, &cut_action, nullptr);
  const pid_t parent = ::getppid();
  const int listener = listen_socket();
  std::vector<Pair> pairs;
  bool said_paused = false;
  for (;;) {
    if (::getppid() != parent) return 0;
    // One reading of the flag: a SIGUSR1 landing between two readings would be recorded as
    // announced without "paused" ever being printed.
    const bool now_paused = paused != 0;
    if (now_paused && !said_paused) {
      std::printf("paused\n");
      std::fflush(stdout);
    }
    said_paused = now_paused;
    if (cut) {
      for (const Pair& p : pairs) {
        ::close(p.a);
        ::close(p.b);
      }
      pairs.clear();
      cut = paused = muted = 0;
    }
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    if (!paused) {
      for (const Pair& p : pairs) {
        fds.push_back({p.a, POLLIN, 0});
        fds.push_back({p.b, static_cast<short>(muted ? 0 : POLLIN), 0});
      }
    }
    if (::poll(fds.data(), fds.size(), 50) <= 0) continue;  // also wakes for a signal
    if (fds[0].revents & POLLIN) {
      int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        int server = connect_target(target);
        if (server < 0) {
          ::close(client);
        } else {
          pairs.push_back({client, server});
        }
      }
    }
    if (paused) continue;
    std::vector<Pair> alive;
    for (std::size_t i = 0; i < pairs.size() && 1 + 2 * i + 1 < fds.size(); ++i) {
      const Pair& p = pairs[i];
      bool ok = true;
      if (fds[1 + 2 * i].revents != 0) ok = pump(p.a, p.b);
      if (ok && !muted && fds[2 + 2 * i].revents != 0) ok = pump(p.b, p.a);
      if (ok) {
        alive.push_back(p);
      } else {
        ::close(p.a);
        ::close(p.b);
      }
    }
    // Pairs accepted in this round were not polled yet: keep them.
    for (std::size_t i = (fds.size() - 1) / 2; i < pairs.size(); ++i) alive.push_back(pairs[i]);
    pairs = std::move(alive);
  }
}
