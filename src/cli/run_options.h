// src/cli/run_options.h — the options of `dblock run`, parsed and checked.
//
// Pure parsing on the main thread before anything starts; no global state.
#ifndef DBLOCK_CLI_RUN_OPTIONS_H_
#define DBLOCK_CLI_RUN_OPTIONS_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"

namespace dblock::cli {

enum class RunMode { kLease, kSession, kShared };
enum class OnLost { kTerm, kKill, kIgnore };

struct RunOptions {
  std::vector<std::string> keys;  // as given (at least one, none twice); held in sorted order
  std::chrono::milliseconds ttl{30'000};
  std::chrono::milliseconds wait{0};  // kWaitForever for `forever`
  RunMode mode = RunMode::kLease;
  int permits = 0;               // --permits N: one of N permits of each key (a semaphore); 0: none
  std::chrono::milliseconds hold_at_least{0};  // --hold-at-least D: a scheduled job's window; 0: none
  int not_acquired_exit = 75;    // --skipped-exit N: the status when the lock is not acquired
  OnLost on_lost = OnLost::kTerm;
  bool kill_with_dblock = true;  // --on-dblock-death kill (default) / keep
  bool elect = false;            // `dblock elect`: one key, a lease, waiting forever
  bool forever = false;          // elect --forever: campaign again after each leadership
  std::string metrics_textfile;  // --metrics-textfile PATH: the job's figures once COMMAND ended
  std::vector<std::string> command;
};

// The options of `command` ("run" or "elect"), or an empty optional when --help was printed.
// Throws UsageFailure.
std::optional<RunOptions> parse_run(GlobalOptions& global, std::vector<std::string> args,
                                    std::string_view command = "run");

// "lock 'a'" or "locks 'a', 'b'" (names made safe for a terminal), for messages.
std::string locks_text(const RunOptions& o);

// "forever", "0 (tried once)" or the duration, as --wait is echoed in messages.
std::string describe_wait(std::chrono::milliseconds wait);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_RUN_OPTIONS_H_
