// src/cli/output.h — rendering LeaseInfo, force-release records and the leader for `list`,
// `inspect` and `leader`: JSON and plain text.
//
// Pure functions on values; thread-safe.
#ifndef DBLOCK_CLI_OUTPUT_H_
#define DBLOCK_CLI_OUTPUT_H_

#include <string>
#include <string_view>
#include <vector>

#include "dblock/election.h"
#include "dblock/service/lease_service.h"

namespace dblock::cli {

// `text` made safe for a terminal: control characters (C0, DEL, C1), bidirectional formatting
// characters and bytes that are not UTF-8 as \xNN / \uNNNN, and a backslash doubled.
std::string terminal_text(std::string_view text);

// "exclusive" or "shared".
const char* mode_name(LockMode mode) noexcept;

// JSON output is nlohmann-json's (keys in the order listed; bytes that are not UTF-8 become
// U+FFFD, so it is always valid JSON).
// One JSON object (single line) with the fields name, mode, holder, fence, acquired_at_us,
// expires_at_us, expires_in_us, renewals, holders, permits (times on the backend clock).
std::string lease_json(const LeaseInfo& info);
// A JSON array of lease_json objects, one per line, with a trailing newline.
std::string leases_json(const std::vector<LeaseInfo>& infos);

// Aligned table with a header row: NAME MODE HOLDER FENCE EXPIRES_IN HOLDERS.
std::string leases_table(const std::vector<LeaseInfo>& infos);
// "key: value" lines describing one lease.
std::string lease_text(const LeaseInfo& info);

// One JSON object (single line): name, at_us (backend clock), by, by_account, evicted, mode,
// old_fence, new_fence.
std::string force_release_json(const ForceReleaseRecord& record);
// A JSON array of force_release_json objects, one per line, with a trailing newline.
std::string force_releases_json(const std::vector<ForceReleaseRecord>& records);
// `dblock leader --json`: {"name", "leader", "term"} on one line.
std::string leader_json(std::string_view name, const Leader& leader);
// Aligned table with a header row: AT NAME BY EVICTED MODE FENCE (old->new).
std::string force_releases_table(const std::vector<ForceReleaseRecord>& records);
// One "force-released: <when> by <who>, evicted <whom> (<mode>, fence <old> -> <new>)" line.
std::string force_release_text(const ForceReleaseRecord& record);

// How `info`'s lease ends, for a message: "expires in 1.2s", or "ends with its holder's session"
// for a lease a session bounds (ZooKeeper).
std::string expiry_phrase(const LeaseInfo& info);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_OUTPUT_H_
