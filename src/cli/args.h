// src/cli/args.h — hand-written argument parsing helpers for the dblock command.
//
// Pure functions on values and a small cursor over argv; no global state. Not thread-safe (the
// command parses its arguments on the main thread before anything else starts).
#ifndef DBLOCK_CLI_ARGS_H_
#define DBLOCK_CLI_ARGS_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dblock::cli {

// A command-line mistake found by the CLI itself. `command` names the subcommand whose usage
// applies ("" for the top level). With `full_usage` (unknown option or command) the whole usage
// text follows the message, else a pointer to --help. Maps to kExitUsage.
class UsageFailure : public std::runtime_error {
 public:
  UsageFailure(const std::string& message, std::string command, bool full_usage = false)
      : std::runtime_error(message), command_(std::move(command)), full_usage_(full_usage) {}
  const std::string& command() const noexcept { return command_; }
  bool full_usage() const noexcept { return full_usage_; }

 private:
  std::string command_;
  bool full_usage_;
};

// Longest duration any flag accepts (keeps steady_clock arithmetic far from overflow).
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(24 * 365 * 10);

// Parses a duration: a non-negative decimal integer followed by a unit, `ms`, `s`, `m` or `h`;
// a bare integer means seconds ("30" == "30s"). No sign, no fraction, no spaces.
// Returns the value, or an empty optional with `*error` set to a human-readable reason.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string* error);

// Parses a decimal integer, optionally negative ("-3"), at most nine digits: the value, or an
// empty optional for anything else.
std::optional<long long> parse_integer(std::string_view text);

// "250ms", "1.5s", "2m05s", "3h07m": short, for messages and tables. Negative values print as 0s.
std::string format_duration(std::chrono::milliseconds value);

// A cursor over the arguments of one (sub)command. Options are `--name value` or `--name=value`.
class ArgCursor {
 public:
  ArgCursor(std::vector<std::string> args, std::string command)
      : args_(std::move(args)), command_(std::move(command)) {}

  bool done() const { return pos_ >= args_.size(); }
  const std::string& peek() const { return args_[pos_]; }
  std::string take() { return args_[pos_++]; }
  // All arguments not consumed yet (consumes them).
  std::vector<std::string> rest();

  // If the current argument is the option `name` (`--name value` or `--name=value`), consumes it,
  // stores its value in `*value` and returns true. Throws UsageFailure if the value is missing or
  // the option was already given (`*value` already set).
  bool option(std::string_view name, std::optional<std::string>* value);
  // The same for an option that may be given several times: appends each value to `*values`.
  bool repeated_option(std::string_view name, std::vector<std::string>* values);
  // If the current argument is one of the flags (no value), consumes it and returns true.
  // Throws UsageFailure for `--flag=value`.
  bool flag(std::string_view name, std::string_view alias = {});

  [[noreturn]] void fail(const std::string& message, bool full_usage = false) const {
    throw UsageFailure(message, command_, full_usage);
  }
  // Throws the "unknown option" / "unexpected argument" UsageFailure (with the full usage text)
  // for the current argument.
  [[noreturn]] void unexpected() const;

 private:
  // Is the current argument the option `name` (`--name` or `--name=...`)? REQUIRES: !done().
  bool takes(std::string_view name) const;
  // Consumes the option `name` and its value into `*value`, if it is the current argument.
  bool take_option(std::string_view name, std::string* value);

  std::vector<std::string> args_;
  std::string command_;
  std::size_t pos_ = 0;
};

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_ARGS_H_
