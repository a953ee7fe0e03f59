#include "hide_secrets.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "dblock/errors.h"
#include "dblock/url.h"

namespace dblock::cli {
namespace {

// Overwrites the `size` bytes at `text` (a URL) with its redacted form, padded with spaces (or
// cut to fit); all '*' when it does not parse.
void mask_in_place(char* text, std::size_t size) {
  std::string shown;
  try {
    shown = parse_url(std::string_view(text, size)).redacted();
  } catch (const Error&) {
    shown.assign(size, '*');
  }
  shown.resize(size, ' ');
  std::memcpy(text, shown.data(), size);
}

}  // namespace

void hide_secrets(int argc, char** argv) noexcept {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--") break;  // COMMAND's own arguments are its business
    if (arg == "--url" && i + 1 < argc) {
      ++i;
      mask_in_place(argv[i], std::strlen(argv[i]));
    } else if (arg.rfind("--url=", 0) == 0) {
      mask_in_place(argv[i] + 6, arg.size() - 6);
    }
  }
  // getenv answers from the block the process started with; setenv gives the variable a copy of
  // its own, so that the block can be masked and the real value still be read.
  if (char* url = std::getenv("DBLOCK_URL"); url != nullptr && url[0] != '\0') {
    const std::string value(url);
    if (::setenv("DBLOCK_URL", value.c_str(), 1) == 0 && std::getenv("DBLOCK_URL") != url) {
      mask_in_place(url, value.size());
    }
  }
}

}  // namespace dblock::cli
