// main() for every backend test binary: either a Catch2 session or, with --child, one of the
// conformance suite's helper processes (multi-process cases re-execute the test binary).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>

#include "context.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return dblock::testing::run_child(argc, argv);
  return Catch::Session().run(argc, argv);
}
