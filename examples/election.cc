// The README's "Leader election" example as a complete program: `election URL` (CI runs it on
// SQLite). Two candidates on one name: the first leads, resigns, and the second leads with a
// greater term. The lines between the snippet markers are README's text, byte for byte
// (scripts/check-snippets.sh compares them).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include <dblock/dblock.h>

namespace {

std::atomic<std::int64_t> serving_term{0};
void start_serving(std::int64_t term) {
  std::printf("serving, term %lld\n", static_cast<long long>(term));
  serving_term = term;
}
void stop_serving() {
  std::printf("stopped serving\n");
  serving_term = 0;
}
void report(const std::string& holder, std::int64_t term) {
  std::printf("leader %s, term %lld\n", holder.c_str(), static_cast<long long>(term));
}

int run(const std::string& url) {
  auto locks = dblock::open(url);
  {
    // snippet-begin: election
dblock::ElectionOptions options;
options.ttl = std::chrono::seconds(10);  // a dead leader is replaced within it
options.on_elected = [](const dblock::Leadership& l) { start_serving(l.term); };
options.on_revoked = [](const dblock::Revocation&) { stop_serving(); };  // .resigned: we gave it up
dblock::Election election(*locks, "scheduler", options);
// ...
if (auto leader = dblock::current_leader(*locks, "scheduler")) report(leader->holder, leader->term);
    // snippet-end: election
    if (!election.await_leadership(std::chrono::seconds(10))) throw std::runtime_error("never elected");
    const std::int64_t first = *election.term();
    auto other_process = dblock::open(url);
    dblock::Election second(*other_process, "scheduler");
    election.resign();
    if (serving_term != 0) throw std::runtime_error("still serving after resign");
    if (!second.await_leadership(std::chrono::seconds(10))) throw std::runtime_error("no take-over");
    if (*second.term() <= first) throw std::runtime_error("the term did not grow");
    const auto leader = dblock::current_leader(*locks, "scheduler");
    if (!leader || leader->term != *second.term()) throw std::runtime_error("current_leader disagrees");
    report(leader->holder, leader->term);
  }
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
    std::fprintf(stderr, "election: %s\n", e.what());
    return 1;
  }
}
