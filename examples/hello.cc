// README's first program, whole: CI builds it from this file and checks that README shows it
// unchanged (scripts/check-snippets.sh), so it compiles as pasted.
// snippet-begin: hello
#include <chrono>
#include <cstdio>

#include <dblock/dblock.h>

int main(int argc, char** argv) {
  const char* url = argc > 1 ? argv[1] : "sqlite:///tmp/dblock-hello.db";
  try {
    auto locks = dblock::open(url);  // one per process; thread-safe
    auto lease = locks->acquire("nightly-report", std::chrono::seconds(5));
    if (!lease) {
      std::puts("another process holds nightly-report");  // not acquired in 5 s: a result
      return 75;
    }
    // Work while lease->held(); pass lease->fence() to what you write to.
    std::printf("holding nightly-report, fence %lld\n", static_cast<long long>(lease->fence()));
    return 0;  // ~Lease releases
  } catch (const dblock::Error& e) {  // the service unreachable, a bad URL, ...
    std::fprintf(stderr, "%s\n", e.what());
    return 69;
  }
}
// snippet-end: hello
