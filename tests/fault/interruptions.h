// Faults that take something away from the clients for a while and give it back
// (docs/fault-harness.md, "Faults"): the network path (relay-stall), the server's connection
// slots (conn-full), the disk under an SQLite file (disk-full). The driver calls begin(), then
// end() after hold(); the oracle judges what the clients did meanwhile.
//
// Not thread-safe: the driver's thread only. Whatever an interruption holds, it gives back when
// destroyed.
#ifndef DBLOCK_TESTS_FAULT_INTERRUPTIONS_H_
#define DBLOCK_TESTS_FAULT_INTERRUPTIONS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace dblock::fault {

class Interruption {
 public:
  virtual ~Interruption() = default;
  // The URL the clients use instead of `url` (the relay's), or `url`.
  virtual std::string client_url(const std::string& url) const { return url; }
  // How long one interruption lasts, for a draw `u` in [0, 1).
  virtual std::chrono::milliseconds hold(std::chrono::milliseconds ttl, double u) const;
  // Takes it away; returns a line for the driver's log.
  virtual std::string begin() = 0;
  // Gives it back (no-op when not taken).
  virtual void end() = 0;
  // Whether the clients finish the run with it taken away (the driver takes it before it stops them).
  virtual bool through_the_end() const { return false; }
  // Whether it must last its whole hold even when the run's time is up (the run goes on until it
  // ends): a Redlock master back early, empty, breaks the premise of the fault.
  virtual bool runs_its_course() const { return false; }
};

// relay-stall: starts tcp_relay (`relay_path`) in front of the server `url` names; begin() stops
// it forwarding (every connection stalls, none is closed), end() resumes. Holds 3 TTL + 4-5 s:
// longer than a client's wait plus a call's least time plus the oracle's slack.
std::unique_ptr<Interruption> relay_stall(const std::string& url, const std::string& relay_path);

// conn-full: begin() opens managers on `admin_url` (tables under `table_prefix`, which exist)
// until the server refuses another connection; then stops the clients and drops their sessions,
// takes the slots that frees, and lets the clients go on against a full server. end() closes them.
struct ClientHooks {
  std::function<void()> stop_and_disconnect;  // SIGSTOP every client, then end their sessions
  std::function<void()> resume;               // SIGCONT them
};
std::unique_ptr<Interruption> connections_full(const std::string& admin_url, const std::string& table_prefix,
                                               ClientHooks clients);

// disk-full: mounts a small tmpfs on `dir` (REQUIRES: root, `dir` an empty directory) for the
// SQLite file; begin() fills it with a file, end() deletes the file. Unmounted when destroyed.
std::unique_ptr<Interruption> disk_full(const std::string& dir);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_INTERRUPTIONS_H_
