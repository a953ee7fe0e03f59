// src/cli/hide_secrets.h — keeping dblock's own credentials from COMMAND and other local readers.
//
// COMMAND runs as dblock's user and could otherwise read the password in the parent's
// /proc/<pid>/cmdline (a --url argument), /proc/<pid>/environ (DBLOCK_URL) or /proc/<pid>/mem.
#ifndef DBLOCK_CLI_HIDE_SECRETS_H_
#define DBLOCK_CLI_HIDE_SECRETS_H_

namespace dblock::cli {

// Call first thing in main(), with main's arguments, before anything reads them (the caller
// copies argv first; getenv("DBLOCK_URL") keeps answering the real value). Then:
//  * the process is made non-dumpable (prctl PR_SET_DUMPABLE 0): its /proc/<pid>/environ, mem,
//    maps and fd entries are no longer readable by other processes of the same user, no core
//    file is written, and a debugger or strace of the same (non-root) user cannot attach;
//  * the bytes of every --url value in argv (what /proc/<pid>/cmdline shows, to anyone) and of
//    DBLOCK_URL in the environment block the process started with (what /proc/<pid>/environ
//    shows) are overwritten with the URL's redacted form, padded with spaces.
// COMMAND gets a fresh, dumpable image at exec. Root (or CAP_SYS_PTRACE) can still read any
// process's memory: no program can keep a secret from them.
void hide_secrets(int argc, char** argv) noexcept;

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_HIDE_SECRETS_H_
