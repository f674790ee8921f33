// `kplace bench`: scheduler_perf-style workloads, engine vs reference in one run, and the
// affinity cost sweep.
#include <fcntl.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

#include "absl/strings/str_split.h"
#include "kplace/bench/perf_config.h"
#include "kplace/bench/progress.h"
#include "kplace/bench/runner.h"
#include "kplace/bench/sweep.h"
#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"
#include "src/cli/bench_serve.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/engine/framework.h"

namespace kplace::cli {
namespace {

bool ParseSeconds(const std::string& flag, const std::string& text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || v < 0) {
    std::fprintf(stderr, "kplace bench: --%s: expected a non-negative number of seconds, got \"%s\"\n", flag.c_str(),
                 text.c_str());
    return false;
  }
  *out = v;
  return true;
}

template <typename T>
bool ParseList(const std::string& flag, const std::string& text, std::vector<T>* out) {
  out->clear();
  for (const std::string& item : std::vector<std::string>(absl::StrSplit(text, ','))) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) {
      std::fprintf(stderr, "kplace bench: --%s: expected a comma-separated list of counts, got \"%s\"\n", flag.c_str(),
                   text.c_str());
      return false;
    }
    out->push_back(static_cast<T>(v));
  }
  return true;
}

std::string Window(double seconds) {
  if (seconds >= 1) return StrCat(static_cast<int64_t>(seconds), " s");
  if (seconds >= 0.001) return StrCat(static_cast<int64_t>(seconds * 1000 + 0.5), " ms");
  return StrCat(static_cast<int64_t>(seconds * 1e6 + 0.5), " us");
}

std::string Mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

std::string MachineLine() {
  struct utsname u {};
  uname(&u);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return StrCat(u.machine, ", ", std::thread::hardware_concurrency(), " hardware threads, OMP_NUM_THREADS=",
                std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "(unset)", ", OMP_WAIT_POLICY=",
                policy ? policy : "(unset)", std::getenv("KPLACE_OMP_WAIT_POLICY_DEFAULTED") ? " (kplace's default)" : "");
}

void PrintResult(const bench::BenchResult& r, const bench::BenchOptions& options) {
  std::printf("\n== %s/%s: %d nodes, %lld init pods (%lld placed, %.1f s on the engine), %lld measured pods\n",
              r.workload.c_str(), r.variant.c_str(), r.nodes, static_cast<long long>(r.init_pods),
              static_cast<long long>(r.init_scheduled), r.init_seconds, static_cast<long long>(r.engine.pods));
  if (!r.missing_plugins.empty()) {
    std::string names;
    for (const auto& n : r.missing_plugins) names += (names.empty() ? "" : ", ") + n;
    std::printf("note: default plugins not built yet, left out on both sides: %s\n", names.c_str());
  }
  std::printf("%-14s %6s %9s | %9s %9s %9s %9s %6s %7s | %9s %9s %9s | %9s %9s\n", "side", "pods", "scheduled",
              "pods/s", "avg", "p50", "p99", "window", "samples", "p50 us", "p90 us", "p99 us", "setup s", "peak RSS");
  for (const bench::RunStats* s : {&r.engine, &r.reference}) {
    if (s->side.empty()) continue;
    std::printf("%-14s %6lld %9lld | %9.1f %9.1f %9.1f %9.1f %6s %7lld | %9.1f %9.1f %9.1f | %9.2f %9s\n",
                s->side.c_str(), static_cast<long long>(s->pods), static_cast<long long>(s->scheduled),
                s->pods_per_second, s->throughput.average, s->throughput.perc50, s->throughput.perc99,
                Window(s->throughput.window_seconds).c_str(), static_cast<long long>(s->throughput.samples), s->p50_us,
                s->p90_us, s->p99_us, s->setup_seconds, Mib(s->peak_rss_bytes).c_str());
  }
  for (const bench::RunStats* s : {&r.engine, &r.reference}) {
    if (s->side.empty()) continue;
    const double w = s->throughput.window_seconds;
    if (s->throughput.samples == 0) {
      std::printf("note: %s: the phase (%.3f s) is shorter than two %s windows; SchedulingThroughput holds the "
                  "overall rate\n", s->side.c_str(), s->seconds, Window(w).c_str());
    } else if (w < 1) {
      std::printf("note: %s: throughput sampled per %s window, not scheduler_perf's 1 s (the phase lasted %.2f s)\n",
                  s->side.c_str(), Window(w).c_str(), s->seconds);
    }
  }
  {
    // CPU time counts only this process's threads, so it holds on a shared machine where
    // wall time also counts other processes' turns on the cores.
    std::string line = "cpu time per pod:";
    for (const bench::RunStats* s : {&r.engine, &r.reference}) {
      if (s->pods == 0) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, " %s %.1f us (%.0f pods per CPU-second, %.0f%% of wall);", s->side.c_str(),
                    1e6 * s->cpu_seconds / s->pods, s->cpu_seconds > 0 ? s->pods / s->cpu_seconds : 0.0,
                    s->seconds > 0 ? 100 * s->cpu_seconds / s->seconds : 0.0);
      line += buf;
    }
    line.pop_back();
    std::printf("%s\n", line.c_str());
  }
  if (const cycle::BatchStats& b = r.engine.batch; b.runs > 0) {
    std::printf("batched runs: %lld over %lld pods (%.1f pods per run); %lld pods (%.0f%%) in runs only node-local "
                "plugins decide\n",
                static_cast<long long>(b.runs), static_cast<long long>(b.pods), static_cast<double>(b.pods) / b.runs,
                static_cast<long long>(b.local_only), 100.0 * b.local_only / std::max<int64_t>(1, b.pods));
  }
  std::printf("memory (heap): engine state %s host (%.0f bytes/node), +%s over the measured pods (%.0f bytes/pod)",
              Mib(r.engine.state_bytes).c_str(), r.nodes ? static_cast<double>(r.engine.state_bytes) / r.nodes : 0.0,
              Mib(r.engine.growth_bytes).c_str(),
              r.engine.pods ? static_cast<double>(r.engine.growth_bytes) / r.engine.pods : 0.0);
  if (r.engine.device_bytes >= 0) {
    std::printf("; device %s (%.0f bytes/node)", Mib(r.engine.device_bytes).c_str(),
                r.nodes ? static_cast<double>(r.engine.device_bytes) / r.nodes : 0.0);
  } else {
    std::printf("; device 0 (omp columns are host memory, counted above)");
  }
  std::printf("; peak RSS per side %s\n", r.engine.peak_rss_reset ? "reset before each side" : "is the process peak");
  if (!r.thresholds.empty()) {
    std::string t;
    for (const bench::Variant& v : r.thresholds) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %g", t.empty() ? "" : ", ", v.name.c_str(), *v.threshold);
      t += buf;
    }
    std::printf("upstream scheduler_perf CI floors (SchedulingThroughput Average, pods/s): %s\n", t.c_str());
  }
  if (options.run_reference) {
    if (r.reference.capped) {
      std::printf("note: reference capped by its %.0f s budget after %lld of %lld pods; placements and the ratio are "
                  "compared on that prefix\n", options.reference_budget_seconds,
                  static_cast<long long>(r.reference.pods), static_cast<long long>(r.engine.pods));
    }
    std::printf("engine/reference: %.1fx (time for the same %lld pods)\n", r.speedup,
                static_cast<long long>(r.compared));
    const long long same_attempts = static_cast<long long>(r.compared - r.between_attempts);
    if (r.between_attempts) {
      std::printf("note: %lld of those pods were stopped by the cap between two attempts (a preemption's retry "
                  "pass not reached): their last attempts are different cycles, not compared\n",
                  static_cast<long long>(r.between_attempts));
    }
    if (r.mismatches) {
      std::printf("MISMATCH: %lld of %lld placements differ; first: %s\n", static_cast<long long>(r.mismatches),
                  same_attempts, r.first_mismatch.c_str());
    } else {
      std::printf("placements identical: %lld of %lld\n", same_attempts, same_attempts);
    }
  }
}

// The python3 that has matplotlib: KPLACE_PYTHON, else Debian's /usr/bin/python3 (where
// tools/setup installs python3-matplotlib), else python3 on PATH.
std::string Python() {
  if (const char* p = std::getenv("KPLACE_PYTHON"); p && *p) return p;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

// tools/plot_affinity.py: KPLACE_TOOLS_DIR, else tools/ beside or above the binary's
// directory (build/kplace in a checkout).
std::string PlotScript() {
  if (const char* d = std::getenv("KPLACE_TOOLS_DIR"); d && *d) return StrCat(d, "/plot_affinity.py");
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string(".");
  dir = dir.substr(0, dir.rfind('/'));
  for (const std::string& candidate : {StrCat(dir, "/tools/plot_affinity.py"), StrCat(dir, "/../tools/plot_affinity.py")}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return StrCat(dir, "/../tools/plot_affinity.py");
}

// Runs argv (no shell); its exit status, or -1 when it could not start.
int Spawn(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The value in `values` closest to `want` (the panels the plot draws must exist in the grid).
template <typename T>
T Closest(const std::vector<T>& values, T want) {
  T best = values.empty() ? want : values[0];
  for (T v : values) {
    if (std::llabs(static_cast<long long>(v) - static_cast<long long>(want)) <
        std::llabs(static_cast<long long>(best) - static_cast<long long>(want))) {
      best = v;
    }
  }
  return best;
}

int Plot(const bench::SweepOptions& options, const std::string& csv, const std::string& png) {
  const std::string python = Python(), script = PlotScript();
  if (Spawn({python, "-c", "import sys"}, true) != 0) {
    std::fprintf(stderr, "kplace bench: --plot: %s cannot be run (install python3, or set KPLACE_PYTHON)\n",
                 python.c_str());
    return 1;
  }
  if (Spawn({python, "-c", "import matplotlib, numpy"}, true) != 0) {
    std::fprintf(stderr, "kplace bench: --plot: %s has no matplotlib/numpy (tools/setup installs python3-matplotlib; "
                 "or set KPLACE_PYTHON to a python3 that has them); the CSV is in %s\n", python.c_str(), csv.c_str());
    return 1;
  }
  if (access(script.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "kplace bench: --plot: %s not found (set KPLACE_TOOLS_DIR to the checkout's tools/)\n",
                 script.c_str());
    return 1;
  }
  const int32_t nodes = Closest(options.nodes, 5000);
  const int64_t existing = Closest(options.existing, static_cast<int64_t>(10000));
  int rc = Spawn({python, script, csv, png, "--nodes", StrCat(nodes), "--existing", StrCat(existing)}, false);
  if (rc != 0) {
    std::fprintf(stderr, "kplace bench: --plot: %s exited with %d\n", script.c_str(), rc);
    return 1;
  }
  return 0;
}

int RunSweep(const std::string& sweep, const std::string& csv_flag, const std::string& plot,
             const std::string& kinds, const std::string& nodes_list, const std::string& existing_list, int64_t pods,
             double budget, engine::Backend be, bool no_reference) {
  if (sweep != "affinity") {
    std::fprintf(stderr, "kplace bench: --sweep: unknown sweep \"%s\" (known: affinity)\n", sweep.c_str());
    return 2;
  }
  bench::SweepOptions options;
  options.backend = be;
  options.run_reference = !no_reference;
  options.reference_budget_s = budget;
  if (pods > 0) options.pods = static_cast<int32_t>(pods);
  if (!nodes_list.empty() && !ParseList("sweep-nodes", nodes_list, &options.nodes)) return 2;
  if (!existing_list.empty() && !ParseList("sweep-existing", existing_list, &options.existing)) return 2;
  if (!kinds.empty()) {
    auto k = bench::ParseSweepKinds(kinds);
    if (!k.ok()) {
      std::fprintf(stderr, "kplace bench: %s\n", std::string(k.status().message()).c_str());
      return 2;
    }
    options.kinds = *k;
  }
  if (!plot.empty() && (plot.size() < 5 || plot.compare(plot.size() - 4, 4, ".png") != 0)) {
    std::fprintf(stderr, "kplace bench: --plot: expected a .png file name, got \"%s\"\n", plot.c_str());
    return 2;
  }
  // --plot without --csv keeps the points beside the plot.
  const std::string csv = !csv_flag.empty() || plot.empty() ? csv_flag : plot.substr(0, plot.size() - 4) + ".csv";
  std::printf("cost sweep: %zu node counts x %zu existing-pod counts x %zu kinds, %d pods per point; "
              "reference capped at %.1f s per point (points predicted over the budget are skipped)\n",
              options.nodes.size(), options.existing.size(), options.kinds.size(), options.pods, budget);
  std::printf("machine: %s\n", MachineLine().c_str());
  std::printf("%-24s %-9s %6s %8s %5s %10s %10s %10s %8s  %s\n", "kind", "side", "nodes", "existing", "pods",
              "mean ms", "p50 ms", "first ms", "setup s", "note");
  bench::ProgressLine progress;
  options.progress = [&progress](int64_t done, int64_t total) {
    if (progress.tty()) progress.Update("sweep", done, total, "points");  // plain output has a row per point already
  };
  options.on_point = [&progress](const bench::SweepPoint& p) {
    progress.Clear();
    std::printf("%-24s %-9s %6d %8lld %5d %10.3f %10.3f %10.3f %8.2f  %s\n", p.kind.c_str(), p.side.c_str(), p.nodes,
                static_cast<long long>(p.existing), p.pods, p.mean_ms, p.p50_ms, p.first_ms, p.setup_s, p.note.c_str());
    std::fflush(stdout);
  };
  auto points = bench::RunAffinitySweep(options);
  progress.Clear();
  if (!points.ok()) {
    std::fprintf(stderr, "kplace bench: %s\n", std::string(points.status().message()).c_str());
    return 1;
  }
  if (!csv.empty()) {
    std::ofstream f(csv);
    f << bench::SweepCsv(*points);
    if (!f) {
      std::fprintf(stderr, "kplace bench: cannot write %s\n", csv.c_str());
      return 1;
    }
    std::printf("wrote %s\n", csv.c_str());
  }
  if (!plot.empty()) {
    std::fflush(stdout);
    return Plot(options, csv, plot);
  }
  return 0;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

bool Listed(const std::vector<std::string>& list, const std::string& name) {
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

// The runs: built-in or file workloads (--workload, --variant applied), or a scheduler_perf
// config's (test case, workload) pairs picked by --workload, --variant and --label-filter.
absl::StatusOr<std::vector<bench::Workload>> SelectWorkloads(const std::string& config, const std::string& workload,
                                                             const std::string& variant, const std::string& labels) {
  std::vector<bench::Workload> out;
  if (!config.empty()) {
    KPLACE_ASSIGN_OR_RETURN(std::vector<bench::Workload> all, bench::LoadPerfConfig(config));
    const std::vector<std::string> cases = SplitCommas(workload), names = SplitCommas(variant);
    for (bench::Workload& w : all) {
      if (Listed(cases, w.name) && Listed(names, w.variant) && bench::LabelsSelected(labels, w.variants[0].labels)) {
        out.push_back(std::move(w));
      }
    }
    if (out.empty()) {
      return absl::NotFoundError(StrCat(config, ": no workload matches --workload \"", workload, "\", --variant \"",
                                        variant, "\" and --label-filter \"", labels, "\""));
    }
    return out;
  }
  std::vector<std::string> names;
  if (workload == "all") {
    names = bench::BuiltinWorkloads();
  } else {
    names.push_back(workload.empty() ? "SchedulingBasic" : workload);
  }
  for (const std::string& name : names) {
    KPLACE_ASSIGN_OR_RETURN(bench::Workload w, bench::LoadWorkload(name));
    if (!variant.empty()) KPLACE_RETURN_IF_ERROR(bench::ApplyVariant(w, variant));
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

int RunBench(int argc, char** argv) {
  Flags flags("bench",
              "Runs scheduler_perf's workloads (bench/scheduler_perf/*/performance-config.yaml, built in) on a\n"
              "synthetic cluster with the engine and the scalar reference in one process, checks that every\n"
              "placement is identical (a mismatch exits 1), and reports SchedulingThroughput as scheduler_perf\n"
              "computes it (pods/s per sample window: average, p50, p90, p95, p99), per-pod latency, memory\n"
              "and the engine/reference ratio. With no flags: SchedulingBasic on 5,000 nodes (1,000 init\n"
              "pods, 1,000 measured pods).\n"
              "--sweep affinity measures per-pod cost of pod term shapes as existing pods and nodes grow.\n"
              "On a terminal a one-line progress bar runs on stderr (plain lines every 2 s otherwise).\n"
              "Examples:\n"
              "  kplace bench --config tests/bench/testdata/scheduler_perf/misc/performance-config.yaml \\\n"
              "      --label-filter integration-test --json out.json    # upstream's own config file\n"
              "  kplace bench --workload SchedulingPodAffinity --nodes 500 --json out.json   # DataItems as perf-dash reads them\n"
              "  kplace bench --sweep affinity --kinds required-anti,preferred-affinity,required-spread \\\n"
              "      --sweep-nodes 500,5000 --sweep-existing 0,1000 --plot sweep.png");
  std::string& workload = flags.String("workload", "", "built-in workload name, a workload YAML file, or \"all\" (default SchedulingBasic); with --config: the test case(s) to run, comma-separated (default all)");
  std::string& config_file = flags.String("config", "", "scheduler_perf's performance-config.yaml: run its test cases (each workload a run; templates by path from the file's directory)");
  std::string& label_filter = flags.String("label-filter", "", "with --config: scheduler_perf's label filter, e.g. performance or integration-test,-performance (default: every workload)");
  std::string& variant = flags.String("variant", "", "a size variant of the workload (e.g. 5000Nodes_5000Pods; see --list); with --config: the workloads to run, comma-separated");
  int64_t& nodes = flags.Int("nodes", 0, "node count: picks the workload's <N>Nodes variant (500, 5000, 15000), else only sets the node count");
  int64_t& pods = flags.Int("pods", -1, "override the number of measured pods (with --sweep: pods per point and side, default 50)");
  int64_t& init_pods = flags.Int("init-pods", -1, "override the number of init pods in each init group");
  std::string& backend = flags.String("backend", "auto", "engine backend: auto, omp or cuda");
  bool& no_reference = flags.Bool("no-reference", "skip the reference run (no identity check, no ratio)");
  std::string& budget = flags.String("reference-budget", "", "seconds: stop the reference's measured phase after this long and compare on the prefix (0: no cap; default 40, with --workload all 15, with --sweep 2 per point)");
  std::string& window = flags.String("window", "0", "seconds per throughput sample (0: 1 s as scheduler_perf when the phase lasts >= 10 s, else the largest 1-2-5 step giving >= 10 samples)");
  std::string& json_file = flags.String("json", "", "write scheduler_perf's data-items JSON (SchedulingThroughput etc.) to this file");
  bool& list = flags.Bool("list", "list the built-in workloads and their variants, then exit");
  std::string& sweep = flags.String("sweep", "", "run a cost sweep instead of a workload: affinity");
  std::string& csv = flags.String("csv", "", "with --sweep: write the points as CSV to this file");
  std::string& plot = flags.String("plot", "", "with --sweep: draw the points to this PNG (tools/plot_affinity.py, python3 with matplotlib; the CSV goes beside it unless --csv)");
  std::string& kinds = flags.String("kinds", "", "with --sweep: term shapes, comma-separated: none, required-affinity, required-anti(-affinity), preferred-affinity, preferred-anti(-affinity), required-spread, preferred-spread, all (default: the four affinity kinds and none)");
  std::string& sweep_nodes = flags.String("sweep-nodes", "", "with --sweep: node counts, comma-separated (default 500,1000,5000,15000,50000)");
  std::string& sweep_existing = flags.String("sweep-existing", "", "with --sweep: existing pods with affinity terms, comma-separated (default 0,1000,10000,100000)");
  int64_t& batch = flags.Int("batch", cycle::kDefaultBatch, "engine: up to N consecutive identical pods share one batched run (1 = per pod; same decisions)");
  std::string& feature_gates = flags.String("feature-gates", "", "kube-scheduler feature gates to change from v1.37's defaults, e.g. SchedulerAsyncPreemption=false");
  std::string& through = flags.String("through", "", "serve: schedule the measured pods in process and through a kplace serve started on loopback, from the same state, and compare rates and placements");
  int64_t& request_pods = flags.Int("request-pods", 1000, "with --through serve: pods per Schedule request");
  bool& verify = flags.Bool("verify", "engine: also replay the measured phase (pods and churn events) per pod and batched; any difference exits 1");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;

  if (list && !config_file.empty()) {
    auto runs = SelectWorkloads(config_file, workload, variant, label_filter);
    if (!runs.ok()) {
      std::fprintf(stderr, "kplace bench: %s\n", std::string(runs.status().message()).c_str());
      return 1;
    }
    for (const bench::Workload& w : *runs) {
      const bench::Variant& v = w.variants[0];
      std::string labels;
      for (const std::string& l : v.labels) labels += (labels.empty() ? "" : ",") + l;
      std::printf("%s/%s: nodes %d, measured %d (namespace %s)", w.name.c_str(), v.name.c_str(), v.nodes, v.measured,
                  w.metrics_name.c_str());
      if (v.threshold) std::printf(", threshold %g pods/s", *v.threshold);
      if (!labels.empty()) std::printf(", labels %s", labels.c_str());
      std::printf("\n");
    }
    return 0;
  }
  if (list) {
    for (const auto& n : bench::BuiltinWorkloads()) {
      auto w = bench::LoadWorkload(n);
      if (!w.ok()) {
        std::printf("%s: %s\n", n.c_str(), std::string(w.status().message()).c_str());
        continue;
      }
      std::printf("%s (default %s): %s\n", n.c_str(), w->variant.c_str(), w->description.c_str());
      for (const bench::Variant& v : w->variants) {
        std::string init;
        for (int32_t c : v.init) init += (init.empty() ? "" : "+") + std::to_string(c);
        std::printf("  %-22s nodes %6d  init %-12s measured %6d", v.name.c_str(), v.nodes, init.empty() ? "0" : init.c_str(),
                    v.measured);
        if (v.threshold) std::printf("  upstream threshold %g pods/s", *v.threshold);
        if (!v.upstream) std::printf("  (kplace's own size)");
        std::printf("\n");
      }
    }
    return 0;
  }
  engine::Backend be;
  if (!ParseBackend(backend, &be)) return 2;
  // --workload all keeps to about ten minutes at 5,000 nodes (22 workloads).
  double budget_s = !sweep.empty() ? 2 : workload == "all" || !config_file.empty() ? 15 : 40, window_s = 0;
  if (!budget.empty() && !ParseSeconds("reference-budget", budget, &budget_s)) return 2;
  if (!ParseSeconds("window", window, &window_s)) return 2;

  if (!sweep.empty()) {
    return RunSweep(sweep, csv, plot, kinds, sweep_nodes, sweep_existing, pods, budget_s, be, no_reference);
  }

  if (batch < 1 || batch > INT32_MAX) {
    std::fprintf(stderr, "kplace bench: --batch must be at least 1, got %lld\n", static_cast<long long>(batch));
    return 2;
  }
  if (!through.empty() && through != "serve") {
    std::fprintf(stderr, "kplace bench: --through: expected serve, got \"%s\"\n", through.c_str());
    return 2;
  }
  if (request_pods < 1 || request_pods > 1000000) {
    std::fprintf(stderr, "kplace bench: --request-pods: %lld is out of range (1 to 1000000)\n", static_cast<long long>(request_pods));
    return 2;
  }
  bench::BenchOptions options;
  if (!ParseFeatureGates("bench", feature_gates, &options.gates)) return 2;
  options.backend = be;
  options.run_reference = !no_reference;
  options.batch = static_cast<int32_t>(batch);
  options.verify = verify;
  options.reference_budget_seconds = budget_s;
  options.window_seconds = window_s;
  // A bar on a terminal, plain lines every 2 s elsewhere; cleared before each result prints.
  bench::ProgressLine progress;
  options.progress_interval_seconds = progress.interval_seconds();
  options.progress = [&progress](const std::string& side, int64_t done, int64_t total) {
    progress.Update(side, done, total);
  };
  std::printf("kplace bench: backend %s, batch %d; machine: %s\n", engine::BackendName(be), options.batch,
              MachineLine().c_str());
  auto runs = SelectWorkloads(config_file, workload, variant, label_filter);
  if (!runs.ok()) {
    std::fprintf(stderr, "kplace bench: %s\n", std::string(runs.status().message()).c_str());
    return 1;
  }
  std::vector<bench::BenchResult> results;
  int rc = 0, reference_failed = 0, verify_failed = 0;
  for (bench::Workload& one : *runs) {
    bench::Workload* w = &one;
    const std::string name = StrCat(w->name, "/", w->variant);
    if (nodes > 0 && !bench::SelectNodes(*w, static_cast<int32_t>(nodes))) {
      std::printf("note: %s has no %lld-node variant; kept the %s pod counts\n", w->name.c_str(),
                  static_cast<long long>(nodes), w->variant.c_str());
    }
    if (pods >= 0) w->measured.count = static_cast<int32_t>(pods);
    if (init_pods >= 0) {
      for (auto& g : w->init) g.count = static_cast<int32_t>(init_pods);
    }
    if (pods >= 0 || init_pods >= 0 || nodes > 0) bench::NameVariant(*w);
    std::fprintf(stderr, "kplace bench: %s/%s: %d nodes, %d measured pods\n", w->name.c_str(), w->variant.c_str(),
                 w->num_nodes, w->measured.count);
    if (through == "serve") {
      if (RunThroughServe(*w, options, request_pods) != 0) rc = 1;
      progress.Clear();
      continue;
    }
    auto r = bench::RunWorkload(*w, options);
    progress.Clear();
    if (!r.ok()) {
      std::fprintf(stderr, "kplace bench: %s: %s\n", name.c_str(), std::string(r.status().message()).c_str());
      return 1;
    }
    if (!r->ignored_gates.empty()) {
      std::string gates;
      for (const std::string& g : r->ignored_gates) gates += (gates.empty() ? "" : ", ") + g;
      std::printf("note: feature gates kplace does not model (no placement changes) left out: %s\n", gates.c_str());
    }
    PrintResult(*r, options);
    if (r->verified) {
      // The measured phase replayed per pod and batched, with its churn events.
      std::printf("verify (engine, batch %d): phase replayed with %lld events, per-pod %.1f pods/s, batched %.1f "
                  "pods/s: %s\n",
                  r->batch, static_cast<long long>(r->verify_events), r->verify_per_pod_pods_per_second,
                  r->verify_batched_pods_per_second,
                  r->verify_same ? StrCat(r->verify_placements, " placements (node, code, message, attempts, score) "
                                          "identical per pod, batched and in the measured run, and the final start index")
                                       .c_str()
                                 : StrCat("DIFFER in ", r->verify_mismatches, " of ", r->verify_placements,
                                          " placements; first: ", r->verify_first_mismatch).c_str());
      if (!r->verify_same) rc = verify_failed = 1;
    }
    std::fflush(stdout);
    if (r->mismatches) rc = reference_failed = 1;
    results.push_back(std::move(*r));
  }
  if (results.size() > 1) {
    // Engine = the batched path (unless --batch 1); with --verify, the engine's per-pod
    // path on the same pods, as overall pods/s.
    std::printf("\n%-52s %10s %10s %10s %10s %9s %9s %9s\n", "workload", "engine avg", "per-pod", "ref avg", "ratio",
                "eng p50us", "ref p50us", "identical");
    for (const auto& r : results) {
      const std::string name = r.workload + "/" + r.variant;
      char per_pod[32] = "-", ref[32] = "-", ratio[32] = "-", ref_p50[32] = "-";
      if (r.verified) std::snprintf(per_pod, sizeof per_pod, "%.1f", r.verify_per_pod_pods_per_second);
      if (options.run_reference) {
        std::snprintf(ref, sizeof ref, "%.1f", r.reference.throughput.average);
        std::snprintf(ratio, sizeof ratio, "%.1fx", r.speedup);
        std::snprintf(ref_p50, sizeof ref_p50, "%.1f", r.reference.p50_us);
      }
      std::string identical = !options.run_reference ? "-" : r.mismatches ? "MISMATCH" : StrCat(r.compared - r.between_attempts);
      if (r.verified && !r.verify_same) identical += " VERIFY-DIFF";
      if (options.run_reference && r.reference.capped) identical += " (ref capped)";
      std::printf("%-52s %10.1f %10s %10s %10s %9.1f %9s %9s\n", name.c_str(), r.engine.throughput.average, per_pod, ref,
                  ratio, r.engine.p50_us, ref_p50, identical.c_str());
    }
  }
  if (!json_file.empty()) {
    std::ofstream f(json_file);
    f << bench::DataItems(results).dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "kplace bench: cannot write %s\n", json_file.c_str());
      return 1;
    }
    std::printf("wrote %s\n", json_file.c_str());
  }
  if (reference_failed) std::printf("FAILED: engine and reference placements differ\n");
  if (verify_failed) std::printf("FAILED: --verify: per-pod, batched and measured placements differ\n");
  return rc;
}

}  // namespace kplace::cli
