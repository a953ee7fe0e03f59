// src/cli/textfile.h — `dblock run --metrics-textfile PATH`: the job's figures for node_exporter's
// textfile collector, written once COMMAND has ended.
//
// The file appears whole or not at all: it is written to a temporary file in PATH's directory
// (a name without the .prom suffix, which the collector skips), flushed to disk, then renamed
// over PATH. Main thread only.
#ifndef DBLOCK_CLI_TEXTFILE_H_
#define DBLOCK_CLI_TEXTFILE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dblock::cli {

// What one `dblock run` came to.
struct JobFigures {
  std::vector<std::string> keys;       // as given
  bool acquired = false;
  std::chrono::duration<double> waited{0};  // from the start of the wait to the grant (or to giving up)
  std::chrono::duration<double> held{0};    // from the grant to the release; 0 when not acquired
  int exit_status = 0;                 // dblock's own exit status
  bool lost = false;                   // the lock was lost while COMMAND ran
  std::optional<std::int64_t> fence;   // a single lease's fencing token
  std::chrono::system_clock::time_point ended_at;
};

// Why PATH cannot take the file (its directory is missing, not a directory or not writable, or
// PATH is a directory), found by creating and removing a temporary file there; empty when it can.
std::string textfile_problem(const std::string& path);

// The figures as Prometheus text (exposition format 0.0.4), one gauge family each, labelled with
// the lock name(s) (several keys: joined by ',').
std::string job_text(const JobFigures& job);

// Writes `text` to PATH atomically. Returns an empty string, or what failed (nothing is left
// behind then: no PATH change, no temporary file).
std::string write_atomically(const std::string& path, const std::string& text);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_TEXTFILE_H_
