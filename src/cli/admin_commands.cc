// list, inspect, release, migrate, reap, version.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "exit_codes.h"
#include "output.h"
#include "usage.h"

namespace dblock::cli {
namespace {

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// Administrative commands need no reaper thread of their own.
ManagerOptions admin_options() {
  ManagerOptions options;
  options.reaper = false;
  return options;
}

// Parses the arguments of a command that takes only --url, --help and (optionally) --json.
// Returns false if --help was given (help already printed).
bool parse_simple(const char* command, GlobalOptions& global, std::vector<std::string> args, bool* json) {
  ArgCursor cur(std::move(args), command);
  while (!cur.done()) {
    if (cur.flag("--help", "-h")) {
      const std::string_view text = usage_text(command);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return false;
    }
    if (cur.option("--url", &global.url)) continue;
    if (json != nullptr && cur.flag("--json")) {
      *json = true;
      continue;
    }
    cur.unexpected();
  }
  return true;
}

}  // namespace

int list_command(GlobalOptions global, std::vector<std::string> args) {
  bool json = false;
  if (!parse_simple("list", global, std::move(args), &json)) {
    return kExitOk;
  }
  auto manager = open_manager(resolve_url(global), admin_options());
  std::vector<LeaseInfo> infos = manager->list();
  print(json ? leases_json(infos) : leases_table(infos));
  return kExitOk;
}

// Parses "[--url URL] [FLAG] [--] NAME" for `command`, setting *flag when FLAG was given; when
// `missing_flag_error` is set, FLAG is mandatory and its absence is that usage error. Returns false
// when --help was printed (the caller exits 0); exits 64 on anything else.
bool parse_name_and_flag(const char* command, const char* flag_name, const char* missing_flag_error,
                         GlobalOptions& global, std::vector<std::string> args, bool* flag, std::string* name_out) {
  std::optional<std::string> name;
  ArgCursor cur(std::move(args), command);
  bool positional_only = false;
  while (!cur.done()) {
    if (!positional_only) {
      if (cur.flag("--help", "-h")) {
        const std::string_view text = usage_text(command);
        std::fwrite(text.data(), 1, text.size(), stdout);
        return false;
      }
      if (cur.option("--url", &global.url)) continue;
      if (cur.flag(flag_name)) {
        *flag = true;
        continue;
      }
      if (cur.flag("--")) {
        positional_only = true;
        continue;
      }
      if (cur.peek().size() > 1 && cur.peek()[0] == '-') cur.unexpected();
    }
    if (name) cur.unexpected();
    name = cur.take();
  }
  if (!name) {
    cur.fail(std::string(command) + " needs a lock NAME");
  }
  if (missing_flag_error && !*flag) cur.fail(missing_flag_error);
  *name_out = *name;
  return true;
}

int inspect_command(GlobalOptions global, std::vector<std::string> args) {
  bool json = false;
  std::string name;
  if (!parse_name_and_flag("inspect", "--json", nullptr, global, std::move(args), &json, &name)) return kExitOk;
  validate_lock_name(name);
  auto manager = open_manager(resolve_url(global), admin_options());
  std::optional<LeaseInfo> info = manager->inspect(name);
  if (!info) {
    if (json) {
      print("null\n");
    } else {
      print(terminal_text(name) + ": not held\n");
    }
    return kExitError;
  }
  print(json ? lease_json(*info) + "\n" : lease_text(*info));
  return kExitOk;
}

int release_command(GlobalOptions global, std::vector<std::string> args) {
  bool force = false;
  std::string name;
  if (!parse_name_and_flag("release", "--force",
                           "release evicts whoever holds the lock without asking them and bumps its fence; "
                           "pass --force to confirm (a holder releases its own lock by ending `dblock run`)",
                           global, std::move(args), &force, &name)) {
    return kExitOk;
  }
  validate_lock_name(name);
  auto manager = open_manager(resolve_url(global), admin_options());
  if (manager->force_release(name)) {
    print("released " + terminal_text(name) + ": holder evicted, fence bumped\n");
  } else {
    print(terminal_text(name) + ": not held, nothing released\n");
  }
  return kExitOk;
}

int migrate_command(GlobalOptions global, std::vector<std::string> args) {
  if (!parse_simple("migrate", global, std::move(args), nullptr)) {
    return kExitOk;
  }
  auto manager = open_manager(resolve_url(global), admin_options());
  manager->migrate();
  print("schema version " + std::to_string(manager->schema_version()) + "\n");
  return kExitOk;
}

int reap_command(GlobalOptions global, std::vector<std::string> args) {
  if (!parse_simple("reap", global, std::move(args), nullptr)) {
    return kExitOk;
  }
  auto manager = open_manager(resolve_url(global), admin_options());
  std::size_t count = manager->reap();
  print("reaped " + std::to_string(count) + " expired lease row" + (count == 1 ? "" : "s") + "\n");
  return kExitOk;
}

int version_command(GlobalOptions global, std::vector<std::string> args) {
  if (!parse_simple("version", global, std::move(args), nullptr)) {
    return kExitOk;
  }
  std::string schemes;
  for (const std::string& scheme : available_schemes()) {
    schemes += (schemes.empty() ? "" : " ") + scheme;
  }
  print(std::string("dblock ") + dblock::version() + "\n" + "backends: " + schemes + "\n");
  return kExitOk;
}

}  // namespace dblock::cli
