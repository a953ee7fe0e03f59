// Parsing and checking the options of `dblock run`.
#include "run_options.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "args.h"
#include "dblock/lock_manager.h"
#include "output.h"
#include "usage.h"

namespace dblock::cli {
namespace {

using std::chrono::milliseconds;

// Shortest --ttl: a process is stopped in milliseconds, not microseconds, and the lease must
// outlast a renewal that is late by a scheduler hiccup (the library's own floor is kMinTtl).
constexpr milliseconds kMinRunTtl{1000};

// The option values as given, before they are checked.
struct RunArgs {
  std::vector<std::string> keys;
  std::optional<std::string> ttl, wait, mode, on_lost, on_death, permits, hold_at_least, skipped_exit, textfile;
  bool forever = false;
};

// `value` looked up in `choices`; a usage failure naming the option and the choices otherwise
// ("--mode must be lease, session or shared, not 'x'").
template <class T>
T choose(const ArgCursor& cur, const char* option, const std::string& value,
         std::initializer_list<std::pair<const char*, T>> choices) {
  std::string names;
  std::size_t i = 0;
  for (const auto& [name, result] : choices) {
    if (value == name) return result;
    names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
    ++i;
  }
  cur.fail(std::string(option) + " must be " + names + ", not '" + value + "'");
}

// --permits N: 1 to kMaxPermits, held as a lease of its own (not with --mode session or shared).
int checked_permits(const ArgCursor& cur, const std::string& text, RunMode mode) {
  const std::optional<long long> n = parse_integer(text);
  if (!n) cur.fail("--permits must be a whole number, not '" + terminal_text(text) + "'");
  if (*n < 1 || *n > kMaxPermits) cur.fail("--permits must be from 1 to " + std::to_string(kMaxPermits));
  if (mode == RunMode::kSession) cur.fail("--permits holds a permit as a lease: not with --mode session");
  if (mode == RunMode::kShared) cur.fail("--permits is a shared lease of its own: not with --mode shared");
  return static_cast<int>(*n);
}

// --hold-at-least D: positive, at most kMaxTtl, on an exclusive lease (not with --mode session or
// shared, nor --permits).
std::chrono::milliseconds checked_hold(const ArgCursor& cur, const std::string& text, const RunOptions& o) {
  std::string error;
  const auto value = parse_duration(text, &error);
  if (!value) cur.fail("--hold-at-least: " + error);
  if (value->count() <= 0) cur.fail("--hold-at-least must be greater than 0");
  if (*value > kMaxTtl) cur.fail("--hold-at-least must be at most " + format_duration(kMaxTtl));
  if (o.mode == RunMode::kSession) cur.fail("--hold-at-least keeps a lease after COMMAND: not with --mode session");
  if (o.mode == RunMode::kShared) cur.fail("--hold-at-least is for one job at a time: not with --mode shared");
  if (o.permits != 0) cur.fail("--hold-at-least is for one job at a time: not with --permits");
  return *value;
}

// Checks the values and fills in what they say over the defaults.
RunOptions checked_run_options(const ArgCursor& cur, const RunArgs& a, std::vector<std::string> command) {
  RunOptions o;
  o.command = std::move(command);
  if (o.command.empty()) cur.fail("missing COMMAND after --");
  if (a.keys.empty()) cur.fail("--key NAME is required");
  o.keys = a.keys;
  std::vector<std::string> sorted = a.keys;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    cur.fail("--key '" + terminal_text(*twice) + "' is given twice");
  }
  std::string error;
  if (a.ttl) {
    auto value = parse_duration(*a.ttl, &error);
    if (!value) cur.fail("--ttl: " + error);
    if (value->count() <= 0) cur.fail("--ttl must be greater than 0");
    if (*value < kMinRunTtl) {
      cur.fail("--ttl must be at least " + format_duration(kMinRunTtl) +
               ": COMMAND must be stopped inside the lease, and renewals come every TTL/3");
    }
    if (*value > kMaxTtl) cur.fail("--ttl must be at most " + format_duration(kMaxTtl));
    o.ttl = *value;
  }
  if (a.wait && *a.wait == "forever") {
    o.wait = kWaitForever;
  } else if (a.wait) {
    auto value = parse_duration(*a.wait, &error);
    if (!value) cur.fail("--wait: " + error + " (or `forever`)");
    o.wait = *value;
  }
  if (a.mode) {
    o.mode = choose<RunMode>(cur, "--mode", *a.mode,
                             {{"lease", RunMode::kLease}, {"session", RunMode::kSession}, {"shared", RunMode::kShared}});
  }
  if (a.on_lost) {
    o.on_lost = choose<OnLost>(cur, "--on-lost", *a.on_lost,
                               {{"term", OnLost::kTerm}, {"kill", OnLost::kKill}, {"ignore", OnLost::kIgnore}});
  }
  if (a.permits) o.permits = checked_permits(cur, *a.permits, o.mode);
  if (a.hold_at_least) {
    o.hold_at_least = checked_hold(cur, *a.hold_at_least, o);
    // The TTL is the window's bound when the host dies: never shorter than the window.
    if (!a.ttl) o.ttl = std::max(o.ttl, o.hold_at_least);
    if (o.ttl < o.hold_at_least) {
      cur.fail("--ttl " + format_duration(o.ttl) + " is shorter than --hold-at-least " +
               format_duration(o.hold_at_least) + ": a host that dies mid-job would free the window early");
    }
  }
  if (a.skipped_exit) {
    const std::optional<long long> n = parse_integer(*a.skipped_exit);
    if (!n || *n < 0 || *n > 255) cur.fail("--skipped-exit must be a whole number from 0 to 255");
    o.not_acquired_exit = static_cast<int>(*n);
  }
  if (o.mode == RunMode::kSession && o.keys.size() > 1) {
    cur.fail("--mode session takes one --key (several names are held as leases: --mode lease or shared)");
  }
  if (a.on_death) o.kill_with_dblock = choose<bool>(cur, "--on-dblock-death", *a.on_death, {{"kill", true}, {"keep", false}});
  if (a.textfile) {
    if (a.textfile->empty()) cur.fail("--metrics-textfile needs a file name");
    o.metrics_textfile = *a.textfile;
  }
  return o;
}

// `dblock elect`: a leader holds one name as a lease and waits for it as long as it takes.
RunOptions checked_elect_options(const ArgCursor& cur, const RunArgs& a, std::vector<std::string> command) {
  if (a.wait) cur.fail("elect waits until elected: --wait is an option of run, not of elect");
  if (a.mode) cur.fail("elect holds a lease (its fence is the term): --mode is an option of run, not of elect");
  if (a.permits) cur.fail("elect holds the one lease of a leader: --permits is an option of run, not of elect");
  if (a.hold_at_least || a.skipped_exit) {
    cur.fail("elect waits until elected: --hold-at-least and --skipped-exit are options of run, not of elect");
  }
  if (a.textfile) cur.fail("--metrics-textfile is an option of run, not of elect");
  if (a.keys.size() > 1) cur.fail("elect takes one --key");
  RunOptions o = checked_run_options(cur, a, std::move(command));
  o.wait = kWaitForever;
  o.elect = true;
  o.forever = a.forever;
  return o;
}

}  // namespace

std::optional<RunOptions> parse_run(GlobalOptions& global, std::vector<std::string> args, std::string_view command) {
  const bool elect = command == "elect";
  ArgCursor cur(std::move(args), std::string(command));
  RunArgs a;
  bool saw_separator = false;
  while (!cur.done()) {
    if (cur.flag("--")) {
      saw_separator = true;
      break;
    }
    if (cur.flag("--help", "-h")) {
      const std::string_view text = usage_text(command);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return std::nullopt;
    }
    if (cur.option("--url", &global.url) || cur.repeated_option("--key", &a.keys) || cur.option("--ttl", &a.ttl) ||
        cur.option("--wait", &a.wait) || cur.option("--mode", &a.mode) || cur.option("--on-lost", &a.on_lost) ||
        cur.option("--on-dblock-death", &a.on_death) || cur.option("--permits", &a.permits) ||
        cur.option("--hold-at-least", &a.hold_at_least) || cur.option("--skipped-exit", &a.skipped_exit) ||
        cur.option("--metrics-textfile", &a.textfile)) {
      continue;
    }
    if (elect && cur.flag("--forever")) {
      a.forever = true;
      continue;
    }
    if (!cur.peek().empty() && cur.peek()[0] != '-') {
      cur.fail("unexpected argument '" + cur.peek() + "': put the command after --, as in dblock " +
               std::string(command) + " --key NAME [OPTIONS] -- COMMAND [ARGS...]");
    }
    cur.unexpected();
  }
  if (!saw_separator) {
    cur.fail("missing -- and COMMAND: dblock " + std::string(command) + " --key NAME [OPTIONS] -- COMMAND [ARGS...]");
  }
  return elect ? checked_elect_options(cur, a, cur.rest()) : checked_run_options(cur, a, cur.rest());
}


std::string locks_text(const RunOptions& o) {
  std::string text = o.keys.size() == 1 ? "lock " : "locks ";
  for (std::size_t i = 0; i < o.keys.size(); ++i) {
    text += (i == 0 ? "'" : ", '") + terminal_text(o.keys[i]) + "'";
  }
  return text;
}

std::string describe_wait(milliseconds wait) {
  if (wait == kWaitForever) return "forever";
  if (wait.count() <= 0) return "0 (tried once)";
  return format_duration(wait);
}


}  // namespace dblock::cli
