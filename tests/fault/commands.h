// Commands the fault driver runs: a child's exit awaited with a bound, a command run with its
// output captured and a deadline. Not thread-safe (waitpid on the caller's children).
#ifndef DBLOCK_TESTS_FAULT_COMMANDS_H_
#define DBLOCK_TESTS_FAULT_COMMANDS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dblock::fault {

// Waits up to `timeout` for `pid` to exit; returns its status or nullopt.
std::optional<int> wait_pid(pid_t pid, std::chrono::milliseconds timeout);

// Runs a command with stdout captured, stderr appended to `err_path`; SIGKILLs it after
// `timeout`. Returns the exit code (-1: timed out or did not exit normally).
int run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::string* out,
                const std::string& err_path);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_COMMANDS_H_
