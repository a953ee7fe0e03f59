// src/cli/commands.h — the subcommands of the dblock command.
//
// Each command takes its own arguments (everything after the subcommand name), returns the exit
// status (exit_codes.h) and throws UsageFailure (args.h) or dblock::Error for main() to map.
// Commands run on the main thread; `run` starts no threads of its own except a helper while it
// waits for the lock.
#ifndef DBLOCK_CLI_COMMANDS_H_
#define DBLOCK_CLI_COMMANDS_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/lock_manager.h"
#include "dblock/options.h"

namespace dblock::cli {

struct GlobalOptions {
  std::optional<std::string> url;  // --url; unset: $DBLOCK_URL, else the default SQLite file
};

// --url, else $DBLOCK_URL (if non-empty), else
// "sqlite://" + ${XDG_STATE_HOME:-$HOME/.local/state} + "/dblock/locks.db".
// Throws UsageFailure if --url is empty or no home directory can be found.
std::string resolve_url(const GlobalOptions& global);

// Parses `url` (UsageError when malformed) and opens it. Connection and schema errors are
// rethrown with the redacted URL in the message.
std::unique_ptr<LockManager> open_manager(const std::string& url, ManagerOptions options);
// The same as the first part of a wait that ends at `deadline` (dblock::open with a deadline: a
// server out of connections is ridden over until then). nullopt: as above.
std::unique_ptr<LockManager> open_manager(const std::string& url, ManagerOptions options,
                                          std::optional<std::chrono::steady_clock::time_point> deadline);

int run_command(GlobalOptions global, std::vector<std::string> args);
int elect_command(GlobalOptions global, std::vector<std::string> args);
int leader_command(GlobalOptions global, std::vector<std::string> args);
int list_command(GlobalOptions global, std::vector<std::string> args);
int inspect_command(GlobalOptions global, std::vector<std::string> args);
int release_command(GlobalOptions global, std::vector<std::string> args);
int migrate_command(GlobalOptions global, std::vector<std::string> args);
int reap_command(GlobalOptions global, std::vector<std::string> args);
int version_command(GlobalOptions global, std::vector<std::string> args);
int exporter_command(GlobalOptions global, std::vector<std::string> args);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_COMMANDS_H_
