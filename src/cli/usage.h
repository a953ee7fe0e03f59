// src/cli/usage.h — the help texts of the dblock command and its subcommands.
#ifndef DBLOCK_CLI_USAGE_H_
#define DBLOCK_CLI_USAGE_H_

#include <string_view>

namespace dblock::cli {

// The usage text for `command` ("" or an unknown name: the top level). Ends with a newline.
std::string_view usage_text(std::string_view command);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_USAGE_H_
