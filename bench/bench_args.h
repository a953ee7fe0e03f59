// The command-line flags the server benchmarks share (mysql_bench, postgresql_bench, redis_bench,
// zookeeper_bench):
// --url, --quick, --json-only, --cpu / --no-pin, --server-pid, --pairs, --iterations, --figures,
// --keep, --help. A benchmark's own flags go to its `extra` handler.
#ifndef DBLOCK_BENCH_BENCH_ARGS_H_
#define DBLOCK_BENCH_BENCH_ARGS_H_

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "bench_util.h"

namespace dblock_bench {

// What the shared flags say. A benchmark's Config derives from it and adds its own counts.
struct ServerBenchFlags {
  std::string url;
  bool quick = false;
  bool json_only = false;
  bool pin = true;
  std::optional<int> cpu;
  std::optional<int> server_pid;
  bool keep = false;
  std::optional<int> pairs_given;       // --pairs, when given
  std::optional<int> iterations_given;  // --iterations, when given
  std::set<std::string> figures;        // every figure unless --figures says otherwise

  bool wants(const char* figure) const { return figures.count(figure) > 0; }
};

// Parses argv into `flags`. `all_figures`: the benchmark's figure names (an unknown one in
// --figures is a usage error). `extra(arg, next)` takes a flag the shared set lacks, reading its
// value with next(), and returns false for a flag it does not know either (a usage error).
template <typename Figures, typename Extra>
void parse_server_flags(int argc, char** argv, const Figures& all_figures, void (*usage)(const char*, int),
                        ServerBenchFlags& flags, Extra&& extra) {
  flags.figures = {std::begin(all_figures), std::end(all_figures)};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0], 2);
      return argv[++i];
    };
    if (arg == "--url") {
      flags.url = next();
    } else if (arg == "--quick") {
      flags.quick = true;
    } else if (arg == "--json-only") {
      flags.json_only = true;
    } else if (arg == "--no-pin") {
      flags.pin = false;
    } else if (arg == "--cpu") {
      flags.cpu = parse_non_negative(argv[0], "--cpu", next(), usage);
    } else if (arg == "--server-pid") {
      flags.server_pid = parse_non_negative(argv[0], "--server-pid", next(), usage);
    } else if (arg == "--pairs") {
      flags.pairs_given = parse_non_negative(argv[0], "--pairs", next(), usage);
    } else if (arg == "--iterations") {
      flags.iterations_given = parse_non_negative(argv[0], "--iterations", next(), usage);
    } else if (arg == "--figures") {
      flags.figures.clear();
      std::stringstream list(next());
      std::string item;
      while (std::getline(list, item, ',')) {
        if (std::find(std::begin(all_figures), std::end(all_figures), item) == std::end(all_figures)) {
          std::fprintf(stderr, "%s: unknown figure: %s\n", argv[0], item.c_str());
          usage(argv[0], 2);
        }
        flags.figures.insert(item);
      }
    } else if (arg == "--keep") {
      flags.keep = true;
    } else if (arg == "--help" || arg == "-h") {
      usage(argv[0], 0);
    } else if (!extra(arg, next)) {
      std::fprintf(stderr, "%s: unknown argument: %s\n", argv[0], argv[i]);
      usage(argv[0], 2);
    }
  }
}

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_BENCH_ARGS_H_
