#include "kplace/cli/cli.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "kplace/cli/commands.h"

namespace kplace::cli {
namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"bench", "benchmark scheduling on a synthetic cluster, engine vs reference (default job)", RunBench},
    {"schedule", "schedule pending pods onto a cluster snapshot; write placements", RunSchedule},
    {"explain", "schedule and explain each decision per node and plugin", RunExplain},
    {"gen", "write a synthetic cluster as Kubernetes JSON", RunGen},
    {"conform", "run conformance cases on the engine or the reference", RunConform},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "kplace: the kube-scheduler's default plugins, exactly, as batched kernels\n\n"
               "usage: kplace <command> [flags]   (kplace <command> --help for its flags)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int Main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    PrintUsage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (cmd == c.name) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        // Thrust and the standard library may throw; no exception leaves the CLI.
        std::fprintf(stderr, "kplace %s: internal error: %s\n", c.name, e.what());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "kplace: unknown command \"%s\"\n\n", cmd.c_str());
  PrintUsage(stderr);
  return 2;
}

}  // namespace kplace::cli
