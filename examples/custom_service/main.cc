// A program on the lockdir service: registers its scheme, then uses dblock as with any other.
//   lockdir_demo lockdir:///tmp/locks
#include <cstdio>

#include "dblock/dblock.h"
#include "lockdir_service.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s lockdir:///path/to/dir\n", argv[0]);
    return 64;
  }
  lockdir::register_scheme();
  try {
    auto locks = dblock::open(argv[1]);
    auto lease = locks->try_acquire("report");
    if (!lease) {
      std::printf("report: held elsewhere\n");
      return 75;
    }
    std::printf("report: held, fence %lld\n", static_cast<long long>(lease->fence()));
    return lease->release() == dblock::ReleaseResult::kReleased ? 0 : 1;
  } catch (const dblock::Error& e) {
    std::fprintf(stderr, "lockdir_demo: %s\n", e.what());
    return 69;
  }
}
