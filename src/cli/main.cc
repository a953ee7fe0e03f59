// dblock — the command-line front end (docs/design.md, "The command").
//
//   dblock [--url URL] run --key NAME [--ttl 30s] [--wait 0|DURATION|forever]
//                          [--mode lease|session|shared] [--on-lost term|kill|ignore] -- COMMAND [ARGS...]
//   dblock [--url URL] elect --key NAME [--forever] [--ttl 30s] [--on-lost ...] -- COMMAND [ARGS...]
//   dblock [--url URL] list [--json] | inspect NAME [--json] | leader NAME [--json] | release --force NAME
//   dblock [--url URL] migrate | reap | version
//
// main() parses the global options, dispatches to a subcommand (commands.h) and maps every
// failure to the exit statuses of exit_codes.h, in one place.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dblock/errors.h"
#include "exit_codes.h"
#include "hide_secrets.h"
#include "output.h"
#include "usage.h"

namespace dblock::cli {
namespace {

void write_to(std::FILE* out, std::string_view text) { std::fwrite(text.data(), 1, text.size(), out); }

int dispatch(std::vector<std::string> args) {
  ArgCursor cur(std::move(args), "");
  GlobalOptions global;
  while (!cur.done()) {
    if (cur.flag("--help", "-h")) {
      write_to(stdout, usage_text(""));
      return kExitOk;
    }
    if (cur.flag("--version")) {
      return version_command(global, cur.rest());
    }
    if (cur.option("--url", &global.url)) continue;
    if (cur.peek().size() > 1 && cur.peek()[0] == '-') cur.unexpected();
    break;
  }
  if (cur.done()) {
    cur.fail("missing COMMAND", true);
  }
  const std::string command = cur.take();
  std::vector<std::string> rest = cur.rest();
  if (command == "run") return run_command(global, std::move(rest));
  if (command == "elect") return elect_command(global, std::move(rest));
  if (command == "leader") return leader_command(global, std::move(rest));
  if (command == "list") return list_command(global, std::move(rest));
  if (command == "inspect") return inspect_command(global, std::move(rest));
  if (command == "release") return release_command(global, std::move(rest));
  if (command == "migrate") return migrate_command(global, std::move(rest));
  if (command == "reap") return reap_command(global, std::move(rest));
  if (command == "version") return version_command(global, std::move(rest));
  if (command == "exporter") return exporter_command(global, std::move(rest));
  if (command == "help") {
    if (rest.size() > 1) throw UsageFailure("help takes at most one COMMAND", "");
    write_to(stdout, usage_text(rest.empty() ? "" : rest[0]));
    return kExitOk;
  }
  throw UsageFailure("unknown command '" + command + "'", "", true);
}

// Descriptors 0-2 that were closed when dblock started are opened on /dev/null, so that no file
// or connection of dblock's can land on them and reach COMMAND as its stdin, stdout or stderr.
void fill_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", O_RDWR);  // the lowest free descriptor: this one
    if (opened > 2) ::close(opened);
  }
}

int report(const char* kind, const std::exception& e, int code) {
  std::fprintf(stderr, "dblock: %s%s\n", kind, terminal_text(e.what()).c_str());
  return code;
}

}  // namespace
}  // namespace dblock::cli

int main(int argc, char** argv) {
  using namespace dblock::cli;
  fill_standard_descriptors();
  std::vector<std::string> args(argv + 1, argv + argc);  // before hide_secrets masks argv's URLs
  hide_secrets(argc, argv);
  int code;
  try {
    code = dispatch(std::move(args));
  } catch (const UsageFailure& e) {
    if (e.full_usage()) {
      std::fprintf(stderr, "dblock: %s\n\n", terminal_text(e.what()).c_str());
      write_to(stderr, usage_text(e.command()));
    } else {
      std::fprintf(stderr, "dblock: %s\nTry 'dblock %s%s--help'.\n", terminal_text(e.what()).c_str(), e.command().c_str(),
                   e.command().empty() ? "" : " ");
    }
    code = kExitUsage;
  } catch (const dblock::UsageError& e) {  // also UnsupportedError
    code = report("", e, kExitUsage);
  } catch (const dblock::ConnectionError& e) {
    code = report("backend unavailable: ", e, kExitUnavailable);
  } catch (const dblock::SchemaError& e) {
    code = report("schema: ", e, kExitSchema);
  } catch (const dblock::PermissionError& e) {
    code = report("permission denied: ", e, kExitNoPermission);
  } catch (const dblock::Error& e) {
    code = report("", e, kExitError);
  } catch (const std::exception& e) {
    code = report("", e, kExitError);
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::perror("dblock: writing output");
    if (code == kExitOk) code = kExitError;
  }
  return code;
}
