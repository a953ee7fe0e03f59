// Links against an installed dblock through find_package(dblock) and takes one lease.
#include <dblock/dblock.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer URL\n");
    return 64;
  }
  auto manager = dblock::open(argv[1]);
  auto lease = manager->try_acquire("consumer");
  if (!lease) return 1;
  std::printf("consumer fence %lld\n", static_cast<long long>(lease->fence()));
  return lease->release() == dblock::ReleaseResult::kReleased ? 0 : 1;
}
