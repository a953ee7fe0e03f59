// Shared by the dblock command's black-box tests (cli_test.cc, elect_test.cc): a temporary
// directory, processes started with posix_spawn whose output goes to files, the `Cli` runner for
// one throwaway SQLite URL (or a server's), JSON field readers and /proc probes. Every wait polls a
// condition with a bound.
#ifndef DBLOCK_TESTS_CLI_CLI_RIG_H_
#define DBLOCK_TESTS_CLI_CLI_RIG_H_

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "relay.h"

#ifndef DBLOCK_CLI_PATH
#error "DBLOCK_CLI_PATH must name the dblock binary"
#endif

extern char** environ;

namespace dblock::cli_test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline const std::string kCli = DBLOCK_CLI_PATH;

// Exit codes under test (src/cli/exit_codes.h).
inline constexpr int kOtherError = 1;  // any other dblock::Error (busy database, ...)
inline constexpr int kUsage = 64;
inline constexpr int kUnavailable = 69;
inline constexpr int kLeaseLost = 70;
inline constexpr int kNotAcquired = 75;
inline constexpr int kPermission = 77;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls `condition` every `step` until it holds or `timeout` passes. Returns whether it held.
inline bool eventually(const std::function<bool()>& condition, milliseconds timeout, milliseconds step = milliseconds(20)) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

// Exit status as the shell shows it for a normal exit; 1000 + N when killed by signal N (so that
// "exited 143" and "died of SIGTERM" are different values).
inline int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 1000 + WTERMSIG(status);
  return -1;
}

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && base[0] == '/' ? base : "/tmp") + "/dblock-cli-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      FAIL("mkdtemp: " << std::strerror(errno));
    }
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string url() const { return "sqlite://" + file("x.db"); }
  std::string next_log_prefix() { return file("proc-" + std::to_string(++count_)); }

 private:
  fs::path path_;
  int count_ = 0;
};

// A started process. Its stdin is /dev/null (or a pipe this side writes); stdout and stderr go to
// files.
class Process {
 public:
  struct Options {
    bool new_group = false;                      // own process group (pgid == pid)
    std::map<std::string, std::string> env;      // added to (or replacing in) a cleaned environment
    bool stdin_pipe = false;                     // stdin is a pipe: write_stdin(), close_stdin()
  };

  Process(const std::vector<std::string>& argv, const std::string& log_prefix, const Options& options)
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err"), group_(options.new_group) {
    // A hermetic environment: the test's own, without anything that would steer dblock.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      std::string key = entry.substr(0, entry.find('='));
      if (key == "DBLOCK_URL" || key == "DBLOCK_FENCE" || key == "DBLOCK_KEY" || key == "XDG_STATE_HOME" ||
          options.env.count(key) != 0) {
        continue;
      }
      env.push_back(entry);
    }
    for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
    std::vector<char*> envp;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (std::string& s : args) argp.push_back(s.data());
    argp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int in[2] = {-1, -1};
    if (options.stdin_pipe) {
      // Both ends close-on-exec: no other child inherits them; dup2 clears the flag on fd 0.
      if (::pipe2(in, O_CLOEXEC) != 0) FAIL("pipe2: " << std::strerror(errno));
      posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    } else {
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // The child starts with no blocked signals whatever this thread has.
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    short flags = POSIX_SPAWN_SETSIGMASK;
    if (options.new_group) {
      posix_spawnattr_setpgroup(&attr, 0);
      flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr, flags);
    int rc = ::posix_spawnp(&pid_, argp[0], &actions, &attr, argp.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (in[0] >= 0) {
      ::close(in[0]);
      stdin_ = in[1];
    }
    if (rc != 0) {
      pid_ = -1;
      FAIL("posix_spawnp " << argv[0] << ": " << std::strerror(rc));
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() {
    close_stdin();
    if (pid_ > 0 && !status_) {
      signal_all(SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // The whole process group when it has its own, else the process.
  void signal_all(int sig) const { ::kill(group_ ? -pid_ : pid_, sig); }

  // The decoded exit status if the process has ended (reaping it), else nullopt.
  std::optional<int> poll() {
    if (status_) return decode_status(*status_);
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      return decode_status(status);
    }
    return std::nullopt;
  }
  // Waits (bounded) for the process to end; returns its decoded exit status, or nullopt after
  // `timeout` (the process is left running: the destructor kills it).
  std::optional<int> wait(milliseconds timeout) {
    std::optional<int> code;
    eventually([&] { return (code = poll()).has_value(); }, timeout, milliseconds(5));
    return code;
  }

  std::string out() const { return read_file(out_path_); }
  std::string err() const { return read_file(err_path_); }

  // With Options::stdin_pipe: writes `text` to the process's stdin (whole, or returns false; a
  // process that has ended gives EPIPE, not SIGPIPE: the tests run with SIGPIPE at its default, so
  // the write is made with the signal blocked and any pending one consumed).
  bool write_stdin(const std::string& text) {
    if (stdin_ < 0) return false;
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    std::size_t done = 0;
    bool ok = true;
    while (done < text.size()) {
      ssize_t n = ::write(stdin_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = false;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (!ok && errno == EPIPE) {
      const timespec zero{0, 0};
      ::sigtimedwait(&pipe_set, nullptr, &zero);
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return ok;
  }
  void close_stdin() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
  }

 private:
  std::string out_path_;
  std::string err_path_;
  int stdin_ = -1;  // write end of the stdin pipe
  bool group_ = false;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct Result {
  int code = -1;  // decode_status(); -1: did not finish in time
  std::string out;
  std::string err;
  double seconds = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.code << " after " << r.seconds << " s\n--- stdout ---\n"
            << r.out << "--- stderr ---\n"
            << r.err;
}

// The fixture every test case starts from. By default it creates the schema first (`dblock
// migrate`), so that concurrent processes in a test start on an initialised database; the race
// of many processes creating one new database file has a test of its own.
class Cli {
 public:
  TempDir dir;

  explicit Cli(bool migrate = true, std::string url = {}) : url_(std::move(url)) {
    if (url_.empty()) url_ = dir.url();
    if (migrate) {
      Result r = run({"migrate"});
      INFO(r);
      REQUIRE(r.code == 0);
    }
  }

  const std::string& url() const { return url_; }

  std::vector<std::string> argv(const std::vector<std::string>& args, bool with_url = true) const {
    std::vector<std::string> out = {kCli};
    if (with_url) {
      out.push_back("--url");
      out.push_back(url_);
    }
    out.insert(out.end(), args.begin(), args.end());
    return out;
  }

  // Starts `dblock --url URL args...` in the background, in its own process group.
  std::unique_ptr<Process> start(const std::vector<std::string>& args, Process::Options options = {}) {
    options.new_group = true;
    return std::make_unique<Process>(argv(args), dir.next_log_prefix(), options);
  }

  // Runs a command line to completion (bounded by `timeout`).
  Result exec(const std::vector<std::string>& full_argv, milliseconds timeout = milliseconds(60'000),
              const Process::Options& options = {}) {
    auto start = Clock::now();
    Process p(full_argv, dir.next_log_prefix(), options);
    Result r;
    std::optional<int> code = p.wait(timeout);
    r.seconds = seconds_since(start);
    r.code = code.value_or(-1);
    r.out = p.out();
    r.err = p.err();
    return r;
  }
  // Runs `dblock --url URL args...`.
  Result run(const std::vector<std::string>& args, milliseconds timeout = milliseconds(60'000)) {
    return exec(argv(args), timeout);
  }

  // `dblock inspect NAME --json` as a raw JSON text, or nullopt when not held.
  std::optional<std::string> inspect(const std::string& name) {
    Result r = run({"inspect", name, "--json"});
    if (r.code == 1 && r.out == "null\n") return std::nullopt;
    INFO(r);
    REQUIRE(r.code == 0);
    return r.out;
  }
  bool held(const std::string& name) { return inspect(name).has_value(); }

 private:
  std::string url_;
};

// Minimal JSON field extraction (the CLI prints flat objects with string and integer fields).
inline std::optional<std::int64_t> json_int(const std::string& json, const std::string& field) {
  std::string needle = "\"" + field + "\":";
  auto pos = json.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  pos += needle.size();
  std::size_t end = pos;
  if (end < json.size() && json[end] == '-') ++end;
  while (end < json.size() && json[end] >= '0' && json[end] <= '9') ++end;
  if (end == pos) return std::nullopt;
  return std::stoll(json.substr(pos, end - pos));
}

inline std::optional<std::string> json_str(const std::string& json, const std::string& field) {
  std::string needle = "\"" + field + "\":\"";
  auto pos = json.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  pos += needle.size();
  auto end = json.find('"', pos);
  if (end == std::string::npos) return std::nullopt;
  return json.substr(pos, end - pos);
}

// The object of `list --json` output describing `name` (one object per line), if any.
inline std::optional<std::string> list_entry(const std::string& list_json, const std::string& name) {
  std::istringstream in(list_json);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"name\":\"" + name + "\"") != std::string::npos) return line;
  }
  return std::nullopt;
}

inline std::vector<std::int64_t> read_numbers(const std::string& text) {
  std::vector<std::int64_t> out;
  std::istringstream in(text);
  std::int64_t v;
  while (in >> v) out.push_back(v);
  return out;
}

// Whether `pid` has signal `sig` blocked (Linux /proc): dblock run blocks its forwarded signals
// before it opens the backend, so from then on a signal is handled, not fatal.
inline bool has_blocked(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (sig - 1)) & 1ULL;
    }
  }
  return false;
}

inline bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// Whether `pid` runs (a zombie does not: an orphan is reaped only as fast as the reaper of this
// container is). From /proc/PID/stat: the state, and the process group.
inline std::optional<std::pair<char, pid_t>> proc_state(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  char state = 0;
  pid_t ppid = 0, pgid = 0;
  rest >> state >> ppid >> pgid;
  return std::make_pair(state, pgid);
}
inline bool process_runs(pid_t pid) {
  auto st = proc_state(pid);
  return st && st->first != 'Z' && st->first != 'X';
}

// The descriptors `pid` has open, by number.
inline std::vector<int> open_fds(pid_t pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    out.push_back(std::stoi(entry.path().filename().string()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Starts `dblock run` with `run_args` on a COMMAND that writes its pid to a file and then sleeps;
// returns dblock and COMMAND's pid once COMMAND runs.
inline std::pair<std::unique_ptr<Process>, pid_t> start_sleeper(Cli& cli, std::vector<std::string> run_args) {
  const std::string pid_file = cli.dir.file("sleeper-" + std::to_string(::getpid()) + "-" +
                                            std::to_string(Clock::now().time_since_epoch().count()));
  run_args.insert(run_args.begin(), "run");
  for (std::string a : {"--", "sh", "-c", "echo $$ > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; exec sleep 60", "sh"}) {
    run_args.push_back(a);
  }
  run_args.push_back(pid_file);
  auto dblock = cli.start(run_args);
  bool started = eventually([&] { return fs::exists(pid_file); }, milliseconds(15'000));
  INFO("dblock stderr: " << dblock->err());
  REQUIRE(started);
  const std::vector<std::int64_t> pid = read_numbers(read_file(pid_file));
  REQUIRE(pid.size() == 1);
  return {std::move(dblock), static_cast<pid_t>(pid[0])};
}

// COMMAND has none of dblock's descriptors (files, sockets, pipes): only 0, 1 and 2; and it leads
// a process group of its own.
inline void check_command_isolated(Cli& cli, const std::vector<std::string>& run_args) {
  auto [dblock, command] = start_sleeper(cli, run_args);
  INFO("dblock's own descriptors: " << open_fds(dblock->pid()).size());
  CHECK(open_fds(dblock->pid()).size() > 3);  // it has some to leak: the check below means something
  // COMMAND execs sleep after writing its pid: while the loader starts it, it briefly has a file
  // of its own open (fd 3). A descriptor inherited from dblock stays; that one goes.
  CHECK(eventually([&, command = command] { return open_fds(command) == std::vector<int>{0, 1, 2}; },
                   milliseconds(3'000), milliseconds(5)));
  auto st = proc_state(command);
  REQUIRE(st);
  CHECK(st->second == command);
  dblock->signal(SIGTERM);
  CHECK(dblock->wait(milliseconds(10'000)) == 128 + SIGTERM);
}

// The URL ctest's `test` passes in `env` for the server its fixture started; the case fails
// without it (a test that needs a server never passes without one).
inline std::string server_url(const char* env, const char* test) {
  const char* url = std::getenv(env);
  if (url == nullptr || url[0] == '\0') {
    FAIL(env << " is not set: run through ctest (" << test << " starts a server)");
  }
  return url;
}

inline std::string postgresql_url() { return server_url("DBLOCK_TEST_POSTGRESQL_URL", "cli_postgresql"); }

// A test server's URL split around its "127.0.0.1:PORT", to put a relay (relay.h) in its place.
struct LoopbackUrl {
  std::string before;  // e.g. "postgresql://postgres@"
  int port = 0;
  std::string after;   // e.g. "/postgres"
};
inline LoopbackUrl split_loopback(const std::string& url) {
  const std::size_t host = url.find("127.0.0.1:");
  REQUIRE(host != std::string::npos);
  const std::size_t port_end = url.find('/', host + 10);
  return {url.substr(0, host), std::stoi(url.substr(host + 10, port_end - host - 10)), url.substr(port_end)};
}

// A lock name no other run on the same server uses.
inline std::string unique_key(const std::string& what) {
  static std::atomic<int> counter{0};
  return "cli-test/" + what + "/" + std::to_string(::getpid()) + "/" + std::to_string(++counter) + "/" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace dblock::cli_test

#endif  // DBLOCK_TESTS_CLI_CLI_RIG_H_
