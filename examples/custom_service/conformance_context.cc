// The conformance suite's context for lockdir (dblock/conformance/context.h): what the service
// declares, and how a case reads what it stored. The suite itself comes with dblock.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "context.h"
#include "lockdir_service.h"
#include "state_file.h"

namespace dblock::testing {
namespace {

// One directory for the run: the suite's child processes (the test binary run again) inherit it
// through the environment, so that they lock in the same place as their parent.
std::filesystem::path directory() {
  static const std::filesystem::path dir = [] {
    if (const char* inherited = std::getenv("LOCKDIR_CONFORMANCE_DIR"); inherited != nullptr) {
      return std::filesystem::path(inherited);
    }
    const std::filesystem::path made =
        std::filesystem::temp_directory_path() / ("lockdir-conformance-" + std::to_string(::getpid()));
    ::setenv("LOCKDIR_CONFORMANCE_DIR", made.c_str(), 1);
    return made;
  }();
  return dir;
}

// The owner digest of `name` in the state under `prefix`: lockdir has leases only.
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  if (table != "leases") return "";  // lockdir has leases only
  std::ifstream in(directory() / (prefix + "state"));
  const std::string hex_name = lockdir::hex(name);
  for (std::string line; std::getline(in, line);) {  // the first line, the header, matches no name
    std::istringstream fields(line);
    std::string key, fence, owner;
    if (fields >> key >> fence >> owner && key == hex_name) return owner == "-" ? "" : owner;
  }
  return "";
}

Context make() {
  lockdir::register_scheme();
  Context c;
  c.backend = "lockdir";
  c.url = "lockdir://" + directory().string();
  c.shared_leases = false;
  c.accounts = false;
  c.stored_owner = stored_owner;
  c.expects.fair_queue = false;  // no waiters' line: waiters poll
  c.expects.audit_log = false;   // no record of force-releases
  return c;
}

}  // namespace

const Context& context() {
  static const Context c = make();
  return c;
}

}  // namespace dblock::testing
