// `kplace conform`: runs conformance cases and prints one line per case that did not
// pass, then a summary line that scripts (and the before-stop hook) read.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/conform/case.h"
#include "kplace/conform/runner.h"
#include "kplace/model/input_file.h"

namespace kplace::cli {
namespace {

namespace fs = std::filesystem;

// Every *.json under each path, sorted within each path, in argument order, once each.
absl::StatusOr<std::vector<std::string>> CollectCases(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& path : paths) {
    std::error_code ec;
    std::vector<std::string> found;
    if (fs::is_directory(path, ec)) {
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".json") found.push_back(it->path().string());
      }
      if (ec) return absl::InvalidArgumentError(StrCat(path, ": cannot list: ", ec.message()));
      std::sort(found.begin(), found.end());
    } else if (fs::is_regular_file(path, ec)) {
      found.push_back(path);
    } else {
      return absl::NotFoundError(StrCat(path, ": no such file or directory"));
    }
    for (std::string& f : found) {
      if (seen.insert(fs::path(f).lexically_normal().string()).second) out.push_back(std::move(f));
    }
  }
  return out;
}

// Waiver entries: the text before '#', trimmed; blank lines are skipped.
absl::StatusOr<std::vector<std::string>> LoadWaivers(const std::string& path) {
  KPLACE_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path));
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    size_t last = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(first, last - first + 1));
  }
  return out;
}

// An entry names a case by its name, or by its file: the path itself or its tail
// (entries are relative to shared/conformance, runs may name it any way).
bool IsWaived(const std::vector<std::string>& waivers, const std::string& file, const std::string& name) {
  const std::string normal = fs::path(file).lexically_normal().string();
  for (const std::string& w : waivers) {
    if (w == name || w == normal) return true;
    if (normal.size() > w.size() && normal.compare(normal.size() - w.size(), w.size(), w) == 0 &&
        normal[normal.size() - w.size() - 1] == '/') {
      return true;
    }
  }
  return false;
}

}  // namespace

int RunConform(int argc, char** argv) {
  Flags flags("conform",
              "Runs conformance cases (*.json under each PATH, recursively, in sorted order) and compares\n"
              "what the plugins return with what upstream asserted. Prints 'FAIL <file>: <case>: <diff>' for\n"
              "each failing case (a case whose plugin is not available fails as skipped), 'WAIVED ...' for\n"
              "waived ones, and ends with 'N passed, M failed, K skipped', K counting waived cases.\n"
              "Exit 0 when M is 0, 1 when cases failed, 2 for bad flags or paths.");
  std::string& backend =
      flags.String("backend", "auto", "engine backend: auto (cuda when a device is visible), omp or cuda");
  bool& reference = flags.Bool("reference", "run the scalar reference instead of the engine");
  std::string& waiver_file = flags.String("waivers", KPLACE_DEFAULT_WAIVERS,
                                          "cases that may fail: a case file (relative to shared/conformance) "
                                          "or case name per line, '#' starts a comment; 'none' for no waivers "
                                          "(default: the project's tests/conformance/waivers.txt)");
  bool& verbose = flags.Bool("verbose", "also print passing cases, and every mismatch of a failing case");
  std::string& feature_gates = flags.String(
      "feature-gates", "", "feature gates set over each case's own (e.g. OpportunisticBatching=false), as kube-scheduler takes them");
  std::vector<std::string>& paths = flags.Positional("PATH", "case files or folders of them");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (paths.empty()) {
    std::fprintf(stderr, "kplace conform: no PATH given (see --help)\n");
    return 2;
  }

  FeatureGates gates;
  if (!ParseFeatureGates("conform", feature_gates, &gates)) return 2;
  conform::RunOptions run;
  run.reference = reference;
  if (!reference && !ParseBackend(backend, &run.backend)) return 2;

  std::vector<std::string> waivers;
  // The built-in default is the source tree's list; a moved binary simply runs without it.
  bool default_missing = waiver_file == KPLACE_DEFAULT_WAIVERS && !std::ifstream(waiver_file).good();
  if (!waiver_file.empty() && waiver_file != "none" && !default_missing) {
    absl::StatusOr<std::vector<std::string>> loaded = LoadWaivers(waiver_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "kplace conform: %s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    waivers = std::move(*loaded);
  }
  absl::StatusOr<std::vector<std::string>> files = CollectCases(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "kplace conform: %s\n", std::string(files.status().message()).c_str());
    return 2;
  }

  int passed = 0, failed = 0, waived = 0;
  for (const std::string& file : *files) {
    absl::StatusOr<conform::Case> c = conform::LoadCase(file);
    std::string name;
    conform::CaseResult result;
    if (c.ok()) {
      for (const auto& [gate, on] : gates.overrides) c->gates.overrides[gate] = on;
      name = c->name;
      result = conform::RunCase(*c, run);
    } else {
      // A case that does not load fails; its name is unknown, so the file names it.
      name = fs::path(file).stem().string();
      result.outcome = conform::Outcome::kFail;
      result.why = StrCat("cannot load: ", std::string(c.status().message()));
    }
    if (result.outcome == conform::Outcome::kPass) {
      ++passed;
      if (IsWaived(waivers, file, name)) {
        std::printf("NOTE %s: %s: passes; its waiver can go\n", file.c_str(), name.c_str());
      } else if (verbose) {
        std::printf("PASS %s: %s\n", file.c_str(), name.c_str());
      }
      continue;
    }
    const std::string summary = result.Summary(verbose);
    if (IsWaived(waivers, file, name)) {
      ++waived;
      std::printf("WAIVED %s: %s: %s\n", file.c_str(), name.c_str(), summary.c_str());
    } else {
      ++failed;
      std::printf("FAIL %s: %s: %s\n", file.c_str(), name.c_str(), summary.c_str());
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, waived);
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace kplace::cli
