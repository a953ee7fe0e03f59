// Faults that take something away from the clients for a while and give it back
// (docs/fault-harness.md, "Faults"): the network path (relay-stall, reply-cut), the server's connection
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

class Members;

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
  // Nonzero: one more begins as the clients are told to stop; when its hold ends the driver calls
  // cut_off(), and end() this long after, so that the clients' last calls and the close of their
  // managers meet it.
  virtual std::chrono::milliseconds stall_at_the_stop() const { return std::chrono::milliseconds::zero(); }
  // With stall_at_the_stop(): takes it away harder for the stall (no-op by default).
  virtual void cut_off() {}
  // Whether it must last its whole hold even when the run's time is up (the run goes on until it
  // ends): a Redlock master back early, empty, breaks the premise of the fault.
  virtual bool runs_its_course() const { return false; }
};

// relay-stall: starts tcp_relay (`relay_path`) in front of the server `url` names; begin() stops
// it forwarding (every connection stalls, none is closed), end() resumes. Holds 3 TTL + 4-5 s:
// longer than a client's wait plus a call's least time plus the oracle's slack.
std::unique_ptr<Interruption> relay_stall(const std::string& url, const std::string& relay_path);

// reply-cut (ZooKeeper): the clients reach the server through tcp_relay (`relay_path`); begin()
// holds back every reply (requests still reach the server: creates are made, their answers stay
// in the relay), end() closes every connection, so that those replies are lost. Holds 20-200 ms.
// As the clients stop, one more whose cut also stalls the path for 3 s (cut_off: the clients'
// last releases go in doubt and they close their managers disconnected), then lets it go on.
std::unique_ptr<Interruption> reply_cut(const std::string& url, const std::string& relay_path);

// conn-full: begin() opens managers on `admin_url` (tables under `table_prefix`, which exist)
// until the server refuses another connection; then stops the clients and drops their sessions,
// takes the slots that frees, and lets the clients go on against a full server. end() closes them.
struct ClientHooks {
  std::function<void()> stop_and_disconnect;  // SIGSTOP every client, then end their sessions
  std::function<void()> resume;               // SIGCONT them
};
std::unique_ptr<Interruption> connections_full(const std::string& admin_url, const std::string& table_prefix,
                                               ClientHooks clients);

// quorum-loss: begin() SIGKILLs two of a 3-member cluster's members (the leader and the next), so
// that the one left has no quorum: no write, no lease renewal, no election. end() starts them again
// from their data. Holds 1.5-2.5 TTL: every holder's lease runs out meanwhile.
std::unique_ptr<Interruption> quorum_loss(Members& members);

// disk-full: mounts a small tmpfs on `dir` (REQUIRES: root, `dir` an empty directory) for the
// SQLite file; begin() fills it with a file, end() deletes the file. Unmounted when destroyed.
std::unique_ptr<Interruption> disk_full(const std::string& dir);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_INTERRUPTIONS_H_
