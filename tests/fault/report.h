// fault_driver report: the markdown table of the figures from the runs' RESULT lines
// (docs/fault-harness.md).
#ifndef DBLOCK_TESTS_FAULT_REPORT_H_
#define DBLOCK_TESTS_FAULT_REPORT_H_

#include <string>
#include <vector>

namespace dblock::fault {

// Prints the table for the RESULT lines in `files`; returns 0 when every run held every invariant,
// 1 when some did not, 2 when a file cannot be read.
int report(const std::vector<std::string>& files);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_REPORT_H_
