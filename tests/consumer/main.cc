// Links against an installed dblock through find_package(dblock), prints the schemes it can open
// and takes one lease.
#include <dblock/dblock.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer URL\n");
    return 64;
  }
  std::string schemes;
  for (const std::string& scheme : dblock::available_schemes()) schemes += (schemes.empty() ? "" : " ") + scheme;
  std::printf("consumer schemes: %s\n", schemes.c_str());
  try {
    auto manager = dblock::open(argv[1]);
    auto lease = manager->try_acquire("consumer");
    if (!lease) return 1;
    std::printf("consumer fence %lld\n", static_cast<long long>(lease->fence()));
    return lease->release() == dblock::ReleaseResult::kReleased ? 0 : 1;
  } catch (const dblock::Error& e) {
    std::printf("consumer error: %s\n", e.what());
    return 2;
  }
}
