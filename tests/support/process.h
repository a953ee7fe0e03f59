// Real child processes for multi-process tests: spawn with a stdout pipe, read lines with a
// deadline, signal, reap. Not thread-safe; one owner per Child.
#ifndef DBLOCK_TESTS_SUPPORT_PROCESS_H_
#define DBLOCK_TESTS_SUPPORT_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dblock::testing {

class Child {
 public:
  // Starts argv[0] (searched in PATH) in its own process group with stdin and stdout piped to us.
  explicit Child(const std::vector<std::string>& argv);
  Child(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();  // SIGKILLs and reaps a child still running

  // Next line of the child's stdout (without '\n'), or nullopt at EOF or when `timeout` passes.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  void signal(int sig);        // to the child's process group
  void write_line(const std::string& line);  // to the child's stdin
  // Waits up to `timeout` for exit; returns the raw wait status, or nullopt if still running.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
};

// Path of the running test binary (for re-executing itself as a child).
std::string self_path();

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SUPPORT_PROCESS_H_
