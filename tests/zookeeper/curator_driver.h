// The Java side of the Curator interop test: one long-lived JVM running
// tests/zookeeper/curator/CuratorLocks.java (Apache Curator's lock recipes, Debian's jars), driven
// through its stdin; and `dblock` CLI runs beside it. Test-only; not thread-safe (one test thread).
#ifndef DBLOCK_TESTS_ZOOKEEPER_CURATOR_DRIVER_H_
#define DBLOCK_TESTS_ZOOKEEPER_CURATOR_DRIVER_H_

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "process.h"

namespace dblock::testing {

class Curator {
 public:
  // What acquire(timeout) returned true with: the lock's node, as Curator created it.
  struct Held {
    std::int64_t czxid = 0;
    std::string node;  // the child's name, e.g. "_c_<uuid>-__WRIT__0000000003"
  };

  // Starts `java -cp classpath CuratorLocks hosts session_timeout_ms [digest]` and waits (30 s) for
  // its session; with `digest` ("user:password") it authenticates with ZooKeeper's digest scheme.
  Curator(const std::string& java, const std::string& classpath, const std::string& hosts,
          int session_timeout_ms, const std::string& digest = "")
      : child_(argv(java, classpath, hosts, session_timeout_ms, digest)) {
    const std::optional<std::string> ready = child_.read_line(std::chrono::seconds(30));
    INFO("CuratorLocks said: " << ready.value_or("(nothing: see its stderr above)"));
    REQUIRE(ready == "ready");
  }
  // Ends the client's session ("quit"); the Child's destructor kills a JVM that does not exit.
  ~Curator() {
    try {
      child_.write_line("quit");
      child_.wait(std::chrono::seconds(5));
    } catch (...) {  // the JVM is gone already
    }
  }
  Curator(const Curator&) = delete;
  Curator& operator=(const Curator&) = delete;

  // Starts acquire(timeout) of a fresh lock `id` (KIND write | read | mutex on `path`) on its own
  // Java thread; its answer comes later (answer()).
  void start_acquire(const std::string& id, const std::string& kind, const std::string& path,
                     std::chrono::milliseconds timeout) {
    child_.write_line("acquire " + id + " " + kind + " " + path + " " + std::to_string(timeout.count()));
  }
  // The next answer about `id` (the text after "ID "), or nullopt when none came within `timeout`.
  std::optional<std::string> answer(const std::string& id, std::chrono::milliseconds timeout) {
    const std::string prefix = id + " ";
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->rfind(prefix, 0) == 0) {
        std::string text = it->substr(prefix.size());
        pending_.erase(it);
        return text;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      std::optional<std::string> line = child_.read_line(left);
      if (!line) return std::nullopt;
      INFO("CuratorLocks said: " << *line);
      REQUIRE(line->rfind("error", 0) != 0);  // a bad command: the test's own mistake
      if (line->rfind(prefix, 0) == 0) return line->substr(prefix.size());
      pending_.push_back(*line);
    }
  }
  // Parses an answer "acquired CZXID NODE"; nullopt for "refused". Fails the test on anything else.
  static std::optional<Held> parse(const std::optional<std::string>& text) {
    INFO("CuratorLocks answered: " << text.value_or("(nothing in time)"));
    REQUIRE(text.has_value());
    if (*text == "refused") return std::nullopt;
    REQUIRE(text->rfind("acquired ", 0) == 0);
    const std::size_t space = text->find(' ', 9);
    REQUIRE(space != std::string::npos);
    return Held{std::stoll(text->substr(9, space - 9)), text->substr(space + 1)};
  }
  // acquire(timeout) and its answer: the lock, or nullopt when Curator was refused.
  std::optional<Held> try_hold(const std::string& id, const std::string& kind, const std::string& path,
                               std::chrono::milliseconds timeout) {
    start_acquire(id, kind, path, timeout);
    return parse(answer(id, timeout + std::chrono::seconds(10)));
  }
  // A lock that must be free: acquired within 10 s.
  Held hold(const std::string& id, const std::string& kind, const std::string& path) {
    std::optional<Held> held = try_hold(id, kind, path, std::chrono::seconds(10));
    REQUIRE(held.has_value());
    return *held;
  }
  void release(const std::string& id) {
    child_.write_line("release " + id);
    REQUIRE(answer(id, std::chrono::seconds(10)) == "released");
  }

 private:
  static std::vector<std::string> argv(const std::string& java, const std::string& classpath, const std::string& hosts,
                                       int session_timeout_ms, const std::string& digest) {
    std::vector<std::string> out = {java, "-Xms16m", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                    "-Djava.net.preferIPv4Stack=true", "-cp", classpath, "CuratorLocks", hosts,
                                    std::to_string(session_timeout_ms)};
    if (!digest.empty()) out.push_back(digest);
    return out;
  }

  Child child_;
  std::deque<std::string> pending_;  // answers read while looking for another id's
};

// Exit status of a finished process (a signal: 128 + N), or -1 when it still ran at the timeout.
inline int exit_code(Child& child, std::chrono::milliseconds timeout) {
  const std::optional<int> status = child.wait(timeout);
  if (!status) return -1;
  if (WIFEXITED(*status)) return WEXITSTATUS(*status);
  return WIFSIGNALED(*status) ? 128 + WTERMSIG(*status) : -1;
}

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_ZOOKEEPER_CURATOR_DRIVER_H_
