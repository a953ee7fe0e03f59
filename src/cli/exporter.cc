// `dblock exporter --listen HOST:PORT`: serves /metrics for Prometheus over cpp-httplib (Debian's
// libcpp-httplib-dev) until SIGTERM or SIGINT.
//
// Threads: the HTTP server's own (scrapes run there, on the thread-safe LockManager); the main
// thread blocks the signals before starting them (signals.h) and waits on the signalfd.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <httplib.h>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "lock_table_metrics.h"
#include "output.h"
#include "signals.h"
#include "usage.h"

namespace dblock::cli {
namespace {

// How long one scrape may wait for the service (Prometheus' default scrape timeout is 10 s).
constexpr std::chrono::seconds kScrapeCallTimeout{5};
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct Listen {
  std::string host;
  int port = 0;
};

// HOST:PORT, [IPV6]:PORT; the port 1 to 65535.
Listen parse_listen(const ArgCursor& cur, const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) cur.fail("--listen must be HOST:PORT, not '" + terminal_text(text) + "'");
  Listen l;
  l.host = text.substr(0, colon);
  if (l.host.front() == '[') {
    if (l.host.size() < 3 || l.host.back() != ']') cur.fail("--listen: an IPv6 address goes in brackets: [::1]:9464");
    l.host = l.host.substr(1, l.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  const bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  l.port = digits ? std::stoi(port) : 0;
  if (l.port < 1 || l.port > 65535) cur.fail("--listen: the port must be from 1 to 65535, not '" + terminal_text(port) + "'");
  return l;
}

// Binds a socket of our own to `l` once, to say why the server could not (the library does not):
// empty when it can.
std::string bind_problem(const Listen& l) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(l.host.c_str(), std::to_string(l.port).c_str(), &hints, &found); rc != 0) {
    return std::string("cannot resolve '") + l.host + "': " + ::gai_strerror(rc);
  }
  std::string problem;
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const int yes = 1;
  if (fd < 0) {
    problem = std::string("socket: ") + std::strerror(errno);
  } else if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0 ||
             ::bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    problem = std::strerror(errno);
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return problem;
}

void serve_routes(httplib::Server& server, LockTableMetrics& metrics) {
  server.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.scrape(), kContentType);
  });
  // Anything else: 404 for another path, 405 (with Allow) for another method on /metrics.
  const auto refuse = [](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/metrics") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("only GET /metrics\n", "text/plain");
    } else {
      res.status = 404;
      res.set_content("not found: the metrics are at /metrics\n", "text/plain");
    }
  };
  server.Get(".*", refuse);
  // Any other method is refused before its body is read: a POST without a length would otherwise
  // be read until the client closed or the read timed out (5 s). The connection closes after the
  // answer, as the unread body would otherwise be parsed as the next request.
  server.set_pre_routing_handler([refuse](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    refuse(req, res);
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  // The library answers 400 before any route for a method it does not know: with a parsed request
  // line, that is still a method other than GET.
  server.set_error_handler([refuse](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 400 && !req.path.empty() && req.method != "GET" && req.method != "HEAD") refuse(req, res);
  });
}

// Waits for SIGTERM, SIGINT or another signal dblock would forward; returns it.
int wait_for_stop(int sfd) {
  for (;;) {
    for (const signalfd_siginfo& info : read_signals(sfd)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (is_forwarded(sig)) return sig;
    }
    pollfd fd{sfd, POLLIN, 0};
    ::poll(&fd, 1, -1);
  }
}

}  // namespace

int exporter_command(GlobalOptions global, std::vector<std::string> args) {
  ArgCursor cur(std::move(args), "exporter");
  std::optional<std::string> listen_text;
  while (!cur.done()) {
    if (cur.flag("--help", "-h")) {
      const std::string_view text = usage_text("exporter");
      std::fwrite(text.data(), 1, text.size(), stdout);
      return kExitOk;
    }
    if (cur.option("--url", &global.url) || cur.option("--listen", &listen_text)) continue;
    cur.unexpected();
  }
  if (!listen_text) cur.fail("--listen HOST:PORT is required");
  const Listen listen = parse_listen(cur, *listen_text);
  if (const std::string problem = bind_problem(listen); !problem.empty()) {
    std::fprintf(stderr, "dblock: cannot listen on %s: %s\n", terminal_text(*listen_text).c_str(), problem.c_str());
    return kExitUnavailable;
  }
  const SignalSetup signals;  // before any thread starts: they all inherit the blocked signals
  ManagerOptions options;
  options.reaper = false;  // an exporter only reads
  options.call_timeout = kScrapeCallTimeout;
  const std::unique_ptr<LockManager> manager = open_manager(resolve_url(global), options);
  LockTableMetrics metrics(*manager);
  httplib::Server server;
  serve_routes(server, metrics);
  if (!server.bind_to_port(listen.host, listen.port)) {
    std::fprintf(stderr, "dblock: cannot listen on %s\n", terminal_text(*listen_text).c_str());
    return kExitUnavailable;
  }
  std::thread serving([&server] { server.listen_after_bind(); });
  std::fprintf(stderr, "dblock: exporter serving http://%s/metrics\n", terminal_text(*listen_text).c_str());
  std::fflush(stderr);
  const int sig = wait_for_stop(signals.fd.get());
  server.stop();
  serving.join();
  std::fprintf(stderr, "dblock: exporter stopped (%s)\n", ::strsignal(sig));
  return kExitOk;
}

}  // namespace dblock::cli
