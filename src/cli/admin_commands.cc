// list, inspect, leader, release, migrate, reap, version.
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dblock/election.h"
#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "exit_codes.h"
#include "output.h"
#include "usage.h"

namespace dblock::cli {
namespace {

constexpr std::size_t kHistoryRows = 100;       // list --history
constexpr std::size_t kInspectHistoryRows = 5;  // inspect NAME

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// "user@host:pid" of this process, printable ASCII only: what a force-release records as its
// author (the database account is recorded beside it by the server).
std::string admin_holder() {
  const passwd* pw = getpwuid(geteuid());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  std::string out = (pw != nullptr && pw->pw_name != nullptr ? std::string(pw->pw_name) : std::to_string(geteuid())) +
                    "@" + host + ":" + std::to_string(getpid());
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return out.substr(0, 200);
}

// Administrative commands need no reaper thread of their own.
ManagerOptions admin_options() {
  ManagerOptions options;
  options.reaper = false;
  options.holder = admin_holder();
  return options;
}

// Parses the arguments of a command that takes only --url, --help and (when the pointer is given)
// --json and --history. Returns false if --help was given (help already printed).
bool parse_simple(const char* command, GlobalOptions& global, std::vector<std::string> args, bool* json,
                  bool* history = nullptr) {
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
    if (history != nullptr && cur.flag("--history")) {
      *history = true;
      continue;
    }
    cur.unexpected();
  }
  return true;
}

}  // namespace

int list_command(GlobalOptions global, std::vector<std::string> args) {
  bool json = false;
  bool history = false;
  if (!parse_simple("list", global, std::move(args), &json, &history)) {
    return kExitOk;
  }
  auto manager = open_manager(resolve_url(global), admin_options());
  if (history) {
    const std::vector<ForceReleaseRecord> records = manager->force_release_history(std::nullopt, kHistoryRows);
    print(json ? force_releases_json(records) : force_releases_table(records));
    return kExitOk;
  }
  std::vector<LeaseInfo> infos = manager->list();
  print(json ? leases_json(infos) : leases_table(infos));
  return kExitOk;
}

namespace {

// The last force-releases of `name` as text lines; a line saying why when they cannot be read
// (a role without SELECT on the history, a service that keeps none).
std::string recent_force_releases(LockManager& manager, const std::string& name) {
  try {
    std::string out;
    for (const ForceReleaseRecord& r : manager.force_release_history(name, kInspectHistoryRows)) {
      out += force_release_text(r);
    }
    return out;
  } catch (const UnsupportedError&) {
    return "";
  } catch (const PermissionError& e) {
    return "force-releases: not readable (" + terminal_text(e.what()) + ")\n";
  }
}

}  // namespace

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
  if (json) {
    print(info ? lease_json(*info) + "\n" : "null\n");
  } else {
    print((info ? lease_text(*info) : terminal_text(name) + ": not held\n") + recent_force_releases(*manager, name));
  }
  return info ? kExitOk : kExitError;
}

int leader_command(GlobalOptions global, std::vector<std::string> args) {
  bool json = false;
  std::string name;
  if (!parse_name_and_flag("leader", "--json", nullptr, global, std::move(args), &json, &name)) return kExitOk;
  validate_lock_name(name);
  auto manager = open_manager(resolve_url(global), admin_options());
  const std::optional<Leader> leader = current_leader(*manager, name);
  if (json) {
    print(leader ? leader_json(name, *leader) + "\n" : "null\n");
  } else {
    print(leader ? terminal_text(name) + ": leader " + terminal_text(leader->holder) + ", term " +
                       std::to_string(leader->term) + "\n"
                 : terminal_text(name) + ": no leader\n");
  }
  return leader ? kExitOk : kExitError;
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
