// Catch2's implementation and its default main(), compiled once for the test binaries without a
// main() of their own (dblock_catch_main: unit, CLI, failover). The conformance binaries' main()
// is tests/conformance/test_main.cc, compiled once for all of them.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
