// The README's "Semaphores" example as a complete program: `semaphore URL` (CI runs it on SQLite).
// Three permits of "exports": three holders at once, a fourth refused until one leaves, and a
// holder asking for another count refused with a UsageError. The lines between the snippet markers
// are README's text, byte for byte (scripts/check-snippets.sh compares them).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <dblock/dblock.h>

namespace {

void run_export(std::int64_t fence) { std::printf("exporting, fence %lld\n", static_cast<long long>(fence)); }

int run(const std::string& url) {
  auto locks = dblock::open(url);
  std::vector<std::unique_ptr<dblock::LockManager>> hosts;
  std::vector<dblock::Lease> held;
  for (int i = 0; i < 3; ++i) {
    hosts.push_back(dblock::open(url));
    // snippet-begin: semaphore
dblock::AcquireOptions options;
options.permits = 3;  // at most three holders of "exports" at once, across every host
if (std::optional<dblock::Lease> permit = locks->acquire("exports", std::chrono::minutes(5), options)) {
  run_export(permit->fence());  // each permit has its own fence, renewal and on_lost
}  // the permit is released here
    // snippet-end: semaphore
    std::optional<dblock::Lease> lease = hosts.back()->try_acquire("exports", options);
    if (!lease) throw std::runtime_error("permit " + std::to_string(i + 1) + " of 3 refused");
    held.push_back(std::move(*lease));
  }
  dblock::AcquireOptions three;
  three.permits = 3;
  if (locks->try_acquire("exports", three)) throw std::runtime_error("a fourth holder got in");
  const std::optional<dblock::LeaseInfo> info = locks->inspect("exports");
  if (!info || info->holders != 3 || info->permits != 3) throw std::runtime_error("inspect does not show 3/3");
  dblock::AcquireOptions five;
  five.permits = 5;
  try {
    locks->try_acquire("exports", five);
    throw std::runtime_error("another count was accepted");
  } catch (const dblock::UsageError& e) {
    std::printf("refused: %s\n", e.what());
  }
  held.front().release();
  if (!locks->try_acquire("exports", three)) throw std::runtime_error("a freed permit was not taken");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s URL\n", argv[0]);
    return 64;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "semaphore: %s\n", e.what());
    return 1;
  }
}
