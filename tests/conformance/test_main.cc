// main() for every backend test binary: either a Catch2 session or, with --child, one of the
// conformance suite's helper processes (multi-process cases re-execute the test binary). The
// session first checks the service against context().expects and leaves out the cases that do
// not apply to it (context.h), naming them.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "context.h"
#include "service_driver.h"

namespace dblock::testing {
namespace {

struct Feature {
  const char* tag;  // "sql" for [needs:sql] / [without:sql]
  bool expected;    // the context's pin
  bool reported;    // what the service reports (the pin itself for a context-only feature)
};

std::vector<Feature> features() {
  const Context& c = context();
  std::vector<Feature> out = {
      {"tcp", c.over_tcp, c.over_tcp},
      {"late-answers", c.over_tcp && c.late_answers, c.over_tcp && c.late_answers},
      {"restart", static_cast<bool>(c.restart), static_cast<bool>(c.restart)},
      {"migration-lock", static_cast<bool>(c.hold_migration_lock), static_cast<bool>(c.hold_migration_lock)},
      {"stepped-clock", static_cast<bool>(c.start_stepped_server), static_cast<bool>(c.start_stepped_server)},
  };
  auto manager = open_manager({}, unique_prefix());
  LeaseService& service = service_of(*manager);
  const Expects& e = c.expects;
  // The context's shared_leases is a pin too: the service must agree.
  out.push_back({"shared", c.shared_leases, service.traits().shared_leases});
  out.push_back({"sql", e.sql_features, service.sql_features() != nullptr});
  out.push_back({"sessions", e.session_locks, service.session_locks() != nullptr});
  out.push_back({"row-locks", e.row_locks, row_locks_of(*manager) != nullptr});
  out.push_back({"multi", e.multi_acquire, service.multi_acquire() != nullptr});
  out.push_back({"schedule", e.hold_at_least, service.traits().hold_at_least});
  out.push_back({"reaper", e.maintenance, service.maintenance() != nullptr});
  out.push_back({"line", e.fair_queue, service.fair_queue() != nullptr});
  out.push_back({"audit", e.audit_log, service.audit_log() != nullptr});
  // The positive control of the pins (tests/sqlite/CMakeLists.txt): DBLOCK_TEST_FLIP_PIN=<tag>
  // turns the context's pin of that feature over, and the run must fail saying so.
  if (const char* flip = std::getenv("DBLOCK_TEST_FLIP_PIN"); flip != nullptr) {
    for (Feature& f : out) {
      if (std::strcmp(f.tag, flip) == 0) f.expected = !f.expected;
    }
  }
  return out;
}

bool has_tag(const Catch::TestCaseInfo& info, const std::string& tag) {
  for (const std::string& t : info.tags) {
    if (t == tag) return true;
  }
  return false;
}

// A Catch filter's alternatives: split at each ',' not escaped by a backslash.
std::vector<std::string> alternatives(const std::string& filter) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < filter.size(); ++i) {
    if (filter[i] == '\\' && i + 1 < filter.size()) {
      out.back() += filter.substr(i, 2);
      ++i;
    } else if (filter[i] == ',') {
      out.emplace_back();
    } else {
      out.back() += filter[i];
    }
  }
  return out;
}

}  // namespace

int run_suite(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  std::vector<Feature> found;
  try {
    found = features();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: cannot open the service to check its features: %s\n", context().backend.c_str(), e.what());
    return 2;
  }
  int mismatches = 0;
  std::vector<std::string> left_out;  // tags of the cases that do not apply
  for (const Feature& f : found) {
    if (f.expected != f.reported) {
      std::fprintf(stderr, "%s: the service reports %s%s, the test context pins %s\n", context().backend.c_str(),
                   f.reported ? "" : "no ", f.tag, f.expected ? "it" : "its absence");
      ++mismatches;
    }
    left_out.push_back(std::string(f.expected ? "without:" : "needs:") + f.tag);
  }
  if (mismatches > 0) return 3;
  // Left out: every case tagged for a feature the service lacks (or against one it has). The
  // user's own filters (each an alternative, Catch's comma) keep applying, each with the same
  // exclusions.
  // The exclusions come first in each alternative: in Catch's syntax a name runs to the next ',' or
  // '[', so exclusions after a name would become part of it.
  std::string exclusions;
  for (const std::string& tag : left_out) exclusions += "~[" + tag + "]";
  Catch::ConfigData& config = session.configData();
  std::vector<std::string> filters = config.testsOrTags;
  std::string spec;
  if (filters.empty()) filters.push_back("~[.]");
  for (const std::string& filter : filters) {
    for (const std::string& alternative : alternatives(filter)) {
      spec += (spec.empty() ? "" : ",") + exclusions + alternative;
    }
  }
  config.testsOrTags = {spec};
  // A case without an assertion fails, and so does a run whose filters matched no case.
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoAssertions |
                                                        Catch::WarnAbout::NoTests);
  if (!config.listTests && !config.listTestNamesOnly && !config.listTags) {
    for (const Catch::TestCase& test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
      for (const std::string& tag : left_out) {
        if (!has_tag(test.getTestCaseInfo(), tag)) continue;
        std::printf("not applicable on %s (%s): %s\n", context().backend.c_str(), tag.c_str(), test.name.c_str());
        break;
      }
    }
    std::fflush(stdout);
  }
  return session.run();
}

}  // namespace dblock::testing

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return dblock::testing::run_child(argc, argv);
  return dblock::testing::run_suite(argc, argv);
}
