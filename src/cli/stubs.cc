#include <cstdio>

#include "kplace/cli/commands.h"

namespace kplace::cli {
int RunBench(int, char**) { std::fprintf(stderr, "bench: not yet\n"); return 1; }
int RunGen(int, char**) { std::fprintf(stderr, "gen: not yet\n"); return 1; }
int RunConform(int, char**) { std::fprintf(stderr, "conform: not yet\n"); return 1; }
}  // namespace kplace::cli
