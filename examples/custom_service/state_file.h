// The lockdir service's state: every name's entry in one file, read and written whole under an
// exclusive flock(2) that each call takes by its deadline (dblock::call_deadline()).
//
// Thread-safe: each transaction opens its own descriptors (close-on-exec) and holds the flock
// from its read to its write, so transactions of threads and processes are serialised.
#ifndef DBLOCK_EXAMPLES_CUSTOM_SERVICE_STATE_FILE_H_
#define DBLOCK_EXAMPLES_CUSTOM_SERVICE_STATE_FILE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace lockdir {

// One name's entry. Times are microseconds since the Unix epoch on this host's wall clock.
struct Entry {
  std::int64_t fence = 0;     // the fence of the name's last holding
  std::string owner;          // hex digest of the holder's secret; "" when nobody holds it
  std::string holder;         // the holder's description (LeaseInfo::holder)
  std::int64_t acquired_us = 0;
  std::int64_t expires_us = 0;
  std::int64_t renewals = 0;

  bool live(std::int64_t now_us) const { return !owner.empty() && expires_us > now_us; }
};

// Everything the directory holds.
struct State {
  std::int64_t last_fence = 0;          // the last fence issued, for any name: only grows
  std::map<std::string, Entry> entries;  // by lock name

  std::int64_t next_fence() { return ++last_fence; }
};

// `bytes` as lowercase hex: how the state writes names and holders, and how lockdir keeps digests.
std::string hex(std::string_view bytes);

class StateFile {
 public:
  // <dir>/<prefix>state and its lock file; `dir` is made when missing. Throws
  // dblock::ConnectionError when it cannot be.
  StateFile(const std::filesystem::path& dir, const std::string& prefix);

  // Runs `change` on the state and this host's time (read under the lock); writes it back when
  // it returns true. Throws dblock::ConnectionError when the lock is not had by the call's
  // deadline or the file cannot be read or written (nothing is changed then), dblock::Error when
  // the file is not a state file (replaced underneath?).
  void transact(const std::function<bool(State& state, std::int64_t now_us)>& change) const;

 private:
  State read() const;
  void write(const State& state) const;

  std::filesystem::path state_;
  std::filesystem::path lock_;
};

}  // namespace lockdir

#endif  // DBLOCK_EXAMPLES_CUSTOM_SERVICE_STATE_FILE_H_
