#include "kplace/cli/cli.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "kplace/cli/commands.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/plugin.h"

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
    {"serve", "run the placement service (gRPC): Reset, Apply events, Schedule, Snapshot", RunServe},
    {"whatif", "what-ifs on a cluster snapshot: drain nodes, consolidate, how many replicas fit", RunWhatIf},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "kplace: the kube-scheduler's default plugins, exactly, as batched kernels\n\n"
               "usage: kplace <command> [flags]   (kplace <command> --help for its flags; kplace --version)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

// Bumped with each round of issues; the kube-scheduler release whose behaviour is the spec.
constexpr char kVersion[] = "0.5.0";
constexpr char kUpstream[] = "v1.37";

void PrintVersion() {
  const bool cuda = !engine::RegisteredPlugins(engine::Backend::kCuda).empty();
  std::printf("kplace %s: kube-scheduler %s default plugins; backends: omp%s\n", kVersion, kUpstream,
              !cuda ? "" : engine::CudaAvailable() ? ", cuda" : ", cuda (built; no device visible)");
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
  if (cmd == "--version" || cmd == "version") {
    PrintVersion();
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
