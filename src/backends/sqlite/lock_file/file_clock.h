// The lock file's clock: every expiry in a SQLite lock file is on it. Internal.
//
// All processes of one lock file run on one machine, so they can share a clock that wall-clock
// steps (NTP, `date`, a VM's resync) do not move: CLOCK_BOOTTIME. It restarts at each boot, so the
// file keeps a base per boot in its clock table: time = base + CLOCK_BOOTTIME (in microseconds).
// The first connection of a new boot (a boot id other than the table's) moves the base so that
// time goes on above every time stored in the file: every row of the earlier boot counts as
// expired. A file whose clock was never set (created or migrated from a schema before the clock
// table) starts the scale at this process's wall clock, so that leases taken before the upgrade
// keep their time. docs/backends/sqlite.md, "Clock".
//
// CLOCK_BOOTTIME is read by a system call rather than through the C library's clock_gettime: the
// kernel's value, the same for every process, even one run under a clock-faking preload
// (libfaketime) that offsets the library's clocks; a time namespace's boot-time offset is taken
// off. One machine, one kernel: a file shared between machines or VMs (a network or shared
// folder) is not supported, as SQLite's own locking is not.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_CLOCK_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_CLOCK_H_

#include <cstdint>
#include <string>

#include "connection.h"
#include "dblock/service/sql/statement.h"

namespace dblock::sqlite {

// CLOCK_BOOTTIME in microseconds, from the kernel, without this process's time-namespace offset.
std::int64_t boot_time_us() noexcept;

// CLOCK_REALTIME in microseconds since the Unix epoch, from the kernel (the same system call
// route as boot_time_us()): the floor of fences (sql.h). A clock-faking preload in one process does
// not move it; a step of the machine's clock does.
std::int64_t kernel_wall_time_us() noexcept;

// This boot's id (/proc/sys/kernel/random/boot_id), read once. Throws ConnectionError when the
// file cannot be read.
const std::string& boot_id();

// Sets `c`'s clock base (Connection::clock_base_us) from the file's clock table, moving the base
// first when the table names another boot (in a write transaction). Leaves the clock unset when
// the file has no clock table yet (before its migration). Thread-compatible (one connection).
void sync_file_clock(Connection& c, const dblock::sql::Registry& registry, const std::string& clock_table);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_LOCK_FILE_FILE_CLOCK_H_
