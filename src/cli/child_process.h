// `dblock run`'s COMMAND as a child process: in a process group of its own, with none of dblock's
// descriptors, and (unless asked otherwise) killed when dblock dies.
#ifndef DBLOCK_SRC_CLI_CHILD_PROCESS_H_
#define DBLOCK_SRC_CLI_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace dblock::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH as execvp does
  std::vector<std::string> env;   // the whole environment, NAME=value
  sigset_t mask;                  // COMMAND's signal mask
  // SIGKILL to COMMAND when dblock dies (PR_SET_PDEATHSIG); also when dblock died before COMMAND
  // started. Only the direct child gets it: what COMMAND starts in the background and detaches
  // from its process group is on its own.
  bool die_with_parent = true;
};

// A started COMMAND. Not copyable; the owner reaps it (waitpid) and must not signal it after.
class Child {
 public:
  // Starts COMMAND: its own process group (pgid = its pid), every descriptor but 0, 1 and 2
  // closed, and the terminal's foreground when dblock's group had it (so that COMMAND can read
  // the terminal and gets its Ctrl-C and Ctrl-Z). Returns 0, or the errno that kept COMMAND from
  // running (ENOENT: not found).
  int start(const ChildSpec& spec);

  pid_t pid() const { return pid_; }
  // Sends `sig` to COMMAND's whole process group (COMMAND and what it started there).
  void signal_group(int sig) const;
  // COMMAND was stopped (Ctrl-Z, or a terminal read from the background): stops dblock's own
  // process group as well (SIGTSTP, with the terminal given back), so that the shell sees the job
  // stop; once continued, hands the terminal back and continues COMMAND's group. The renewal
  // thread stops too: a stop longer than the lease's safe time loses the lease.
  void stop_with();
  // After COMMAND was reaped: gives the terminal's foreground back to dblock's group, if it was
  // handed over, and forgets the pid.
  void reaped();

 private:
  pid_t pid_ = -1;
  int tty_ = -1;  // the terminal handed over (stdin), or -1
};

}  // namespace dblock::cli

#endif  // DBLOCK_SRC_CLI_CHILD_PROCESS_H_
