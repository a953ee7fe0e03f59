// src/cli/exit_codes.h — every exit status the dblock command uses, in one place.
//
// The numbers follow <sysexits.h> where one fits. `dblock --help` and `dblock run --help` print
// this table; keep them in step (usage.cc).
#ifndef DBLOCK_CLI_EXIT_CODES_H_
#define DBLOCK_CLI_EXIT_CODES_H_

namespace dblock::cli {

inline constexpr int kExitOk = 0;
// Any other dblock::Error (busy database, in-doubt result, ...); also `inspect` of a name that is
// not held.
inline constexpr int kExitError = 1;
// EX_USAGE: bad flag, bad duration, bad lock name, malformed or unsupported URL.
inline constexpr int kExitUsage = 64;
// EX_UNAVAILABLE: the backend could not be reached or opened (dblock::ConnectionError).
inline constexpr int kExitUnavailable = 69;
// EX_SOFTWARE: `run` lost its lease while COMMAND was running (unless --on-lost ignore).
inline constexpr int kExitLeaseLost = 70;
// EX_CANTCREAT: `run --metrics-textfile PATH` cannot create a file in PATH's directory.
inline constexpr int kExitCannotCreate = 73;
// EX_TEMPFAIL: `run` did not acquire the lock within --wait.
inline constexpr int kExitNotAcquired = 75;
// The backend refused a statement for lack of a privilege (EX_NOPERM).
inline constexpr int kExitNoPermission = 77;
// EX_CONFIG: the lock tables are missing or newer than this dblock (dblock::SchemaError).
inline constexpr int kExitSchema = 78;
// `run`: COMMAND was found but could not be executed / was not found (as in POSIX shells).
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitCommandNotFound = 127;
// `run`: COMMAND (or dblock itself, while waiting for the lock) was ended by signal N: 128 + N.
inline constexpr int kExitSignalBase = 128;

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_EXIT_CODES_H_
