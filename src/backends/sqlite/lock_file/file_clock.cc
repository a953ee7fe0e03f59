#include "file_clock.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "dblock/errors.h"
#include "sql.h"

namespace dblock::sqlite {

namespace {

// This process's time namespace's CLOCK_BOOTTIME offset in microseconds (/proc/self/timens_offsets;
// 0 without time namespaces). A container may run in its own time namespace, whose boot clock is
// the machine's plus this offset; subtracting it gives every process of the machine one clock.
std::int64_t namespace_boot_offset_us() {
  std::ifstream in("/proc/self/timens_offsets");
  std::string clock;
  long long seconds = 0, nanoseconds = 0;
  while (in >> clock >> seconds >> nanoseconds) {
    if (clock == "boottime") return seconds * 1'000'000 + nanoseconds / 1000;
  }
  return 0;
}

}  // namespace

std::int64_t boot_time_us() noexcept {
  static const std::int64_t offset_us = namespace_boot_offset_us();
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000 - offset_us;
}

std::int64_t kernel_wall_time_us() noexcept {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string line;
    if (!std::getline(in, line) || line.empty()) {
      throw ConnectionError(
          "sqlite: cannot read /proc/sys/kernel/random/boot_id; the lock file's clock needs this machine's boot id",
          "sqlite");
    }
    return line;
  }();
  return id;
}

namespace {

struct ClockRow {
  std::string boot;
  std::int64_t base_us = 0;
};

ClockRow read_clock(Connection& c, const dblock::sql::Registry& registry) {
  const std::optional<dblock::sql::Row> row = query(c, registry, sql::kClockRead).fetch();
  if (!row) throw SchemaError("sqlite: the lock file's clock row is missing", "sqlite");
  return ClockRow{row->get<std::string>("boot_id"), row->get<std::int64_t>("base_us")};
}

// The first time of a new boot's scale: above every time stored in the file, and not below this
// process's wall clock (so that times stay near the Unix epoch scale people read).
std::int64_t restart_at(Connection& c, const dblock::sql::Registry& registry, const ClockRow& row) {
  const std::int64_t wall_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (row.boot.empty()) return wall_us;  // never set: keep the wall-clock times already stored
  const std::optional<dblock::sql::Row> stored = query(c, registry, sql::kClockLatest).fetch();
  const std::int64_t latest = stored ? stored->get<std::int64_t>("latest_us") : 0;
  return std::max(wall_us, latest + 1);
}

}  // namespace

void sync_file_clock(Connection& c, const dblock::sql::Registry& registry, const std::string& clock_table) {
  const std::optional<dblock::sql::Row> exists = query(c, registry, sql::kTableExists, {{"table", clock_table}}).fetch();
  if (!exists || exists->get<std::int64_t>("table_count") == 0) return;  // before the migration that adds it
  ClockRow row = read_clock(c, registry);
  if (row.boot != boot_id()) {
    WriteTxn tx(c);
    row = read_clock(c, registry);
    if (row.boot != boot_id()) {
      row.base_us = restart_at(c, registry, row) - boot_time_us();
      row.boot = boot_id();
      query(c, registry, sql::kClockSet, {{"boot_id", row.boot}, {"base_us", row.base_us}}).run();
    }
    tx.commit();
  }
  c.clock_base_us = row.base_us;
  c.clock_known = true;
}

}  // namespace dblock::sqlite
