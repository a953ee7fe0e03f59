// src/cli/supervisor.h — runs COMMAND while a lock is held and watches both: forwards signals,
// acts on a lost lock (--on-lost), reaps COMMAND and releases the lock. Main thread only.
#ifndef DBLOCK_CLI_SUPERVISOR_H_
#define DBLOCK_CLI_SUPERVISOR_H_

#include <signal.h>

#include <string>

#include "held_lock.h"
#include "run_options.h"

namespace dblock::cli {

// The last error the manager reported on this thread (its on_background_error runs on the thread
// whose call met the error: a release's, on the thread releasing). Names why a release is in doubt.
// (A function, not an extern thread_local: such a variable is reached through the defining file's
// TLS wrapper, which UBSan builds have been seen to get as null.)
std::string& last_reported_error();

struct Supervised {
  int status = 0;     // dblock's exit status for this run of COMMAND
  int signalled = 0;  // the last signal forwarded to COMMAND (0: none): someone asked dblock to stop
  bool lost = false;  // the lock was lost while COMMAND ran
};

// Starts COMMAND (o.command) with `child_mask` and supervises it until it has ended and `lock` is
// released. `sfd`: dblock's signalfd (signals.h); `lost_fd`: the non-blocking self-pipe the
// lock's on_lost writes its reason to.
Supervised supervise(HeldLock& lock, const RunOptions& o, int sfd, int lost_fd, const sigset_t& child_mask);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_SUPERVISOR_H_
