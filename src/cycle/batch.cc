#include "kplace/cycle/batch.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <tuple>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/cycle/node_order.h"
#include "pod_encoder.h"

namespace kplace::cycle {
namespace {

void EncodePod(const Pod& pod, Encoder& e) {
  // Every Pod field but meta.name, meta.uid and the creation time. A field added to Pod
  // must be added here too, or pods differing only in it would share kept verdicts.
  const ObjectMeta& m = pod.meta;
  e.Str(m.namespace_);
  e.StrMap(m.labels);
  e.StrMap(m.annotations);
  e.Str(m.deletion_timestamp);
  e.List(m.owner_references, [&](const OwnerReference& o) {
    e.Str(o.api_version);
    e.Str(o.kind);
    e.Str(o.name);
    e.Str(o.uid);
    e.Bool(o.controller);
  });
  e.Str(pod.node_name);
  e.Str(pod.scheduler_name);
  e.Opt(pod.priority, [&](int32_t p) { e.I64(p); });
  e.Str(pod.priority_class_name);
  e.List(pod.containers, [&](const Container& c) { e.ContainerOf(c); });
  e.List(pod.init_containers, [&](const Container& c) { e.ContainerOf(c); });
  e.Resources(pod.overhead);
  e.Opt(pod.pod_requests, [&](const ResourceList& r) { e.Resources(r); });
  e.Opt(pod.pod_limits, [&](const ResourceList& r) { e.Resources(r); });
  e.StrMap(pod.node_selector);
  e.Bool(pod.node_selector_set);
  e.Opt(pod.affinity, [&](const Affinity& a) {
    e.Opt(a.node_affinity, [&](const NodeAffinity& na) {
      e.Opt(na.required, [&](const NodeSelector& s) { e.List(s.terms, [&](const NodeSelectorTerm& t) { e.NodeTerm(t); }); });
      e.List(na.preferred, [&](const PreferredSchedulingTerm& t) {
        e.I64(t.weight);
        e.NodeTerm(t.preference);
      });
      e.Bool(na.preferred_set);
    });
    e.Opt(a.pod_affinity, [&](const PodAffinity& p) { e.PodAffinityOf(p); });
    e.Opt(a.pod_anti_affinity, [&](const PodAffinity& p) { e.PodAffinityOf(p); });
  });
  e.List(pod.tolerations, [&](const Toleration& t) {
    e.Str(t.key);
    e.Str(t.op);
    e.Str(t.value);
    e.Str(t.effect);
    e.Opt(t.toleration_seconds, [&](int64_t s) { e.I64(s); });
  });
  e.List(pod.topology_spread_constraints, [&](const TopologySpreadConstraint& c) {
    e.I64(c.max_skew);
    e.Str(c.topology_key);
    e.Str(c.when_unsatisfiable);
    e.Opt(c.label_selector, [&](const LabelSelector& s) { e.Selector(s); });
    e.Opt(c.min_domains, [&](int32_t v) { e.I64(v); });
    e.Opt(c.node_affinity_policy, [&](const std::string& s) { e.Str(s); });
    e.Opt(c.node_taints_policy, [&](const std::string& s) { e.Str(s); });
    e.Strings(c.match_label_keys);
  });
  e.List(pod.volumes, [&](const Volume& v) {
    e.Str(v.name);
    e.Str(v.source);
    e.Str(v.claim_name);
    e.Bool(v.read_only);
    e.Str(v.image_reference);
    e.Str(v.disk_id);
    e.Str(v.source_json);
  });
  e.Str(pod.phase);
}

}  // namespace

std::string SchedulingSignature(const Pod& pod) {
  Encoder e;
  EncodePod(pod, e);
  return e.Take();
}

bool HasSchedulingSignature(const Pod& pod, const std::string& signature) {
  Encoder e(&signature);
  EncodePod(pod, e);
  return e.Matches();
}

BatchCycle::BatchCycle(engine::Framework* framework, const std::vector<int32_t>* order, int32_t max_batch,
                       const engine::Snapshot* snapshot)
    : fw_(framework),
      order_(order),
      max_batch_(std::max(1, max_batch)),
      selective_(framework->filter_plugins(), snapshot, order) {}

BatchCycle::Decision BatchCycle::Schedule(const Pod& pod, int32_t percentage, TieBreak tie_break,
                                          std::mt19937_64* rng, int32_t* next_start, PointTimes* times) {
  Decision out;
  const int32_t n = static_cast<int32_t>(order_->size());
  if (run_pods_ == 0 || run_pods_ >= max_batch_ || !HasSchedulingSignature(pod, signature_)) {
    run_first_ = pod;
    fw_->BeginRun(run_first_);
    signature_ = SchedulingSignature(pod);
    run_pods_ = 0;
    local_only_ = false;
    recheck_local_only_ = false;
    ++stats_.runs;
  }
  // From the run's second pod on (the first is bound by now), see whether plugins that are
  // not node-local have anything to say about the run's pods; again after another
  // profile's bind, which may bring what they look for.
  if (++run_pods_ == 2 || recheck_local_only_) {
    local_only_ = fw_->LocalOnlyRun(pod, *order_);
    recheck_local_only_ = false;
  }
  ++stats_.pods;
  if (local_only_) ++stats_.local_only;

  std::optional<PointTimer> pre_filter_timer(std::in_place, times, kTimedPreFilter);
  const engine::PreFilterResult& pre = fw_->PreFilterRun(pod);
  pre_filter_timer.reset();
  if (pre.status.code == Code::kError) {
    out.code = Code::kError;
    out.message = pre.status.Message();
    return out;
  }
  if (pre.status.IsRejected()) {
    out.code = pre.status.code;
    out.message = FitErrorMessage(n, pre.status.Message(), {});
    out.unschedulable_plugins = SortedUnique(pre.UnschedulablePlugins());
    return out;
  }

  // Candidates in scan order: the whole round-robin list, or the PreFilter subset (kept
  // while the restriction stays the same).
  const std::vector<int32_t>* candidates = order_;
  if (pre.restricted) {
    if (!restricted_valid_ || pre.allowed != allowed_) {
      restricted_ = RestrictedOrder(*order_, pre.allowed);
      allowed_ = pre.allowed;
      restricted_valid_ = true;
    }
    candidates = &restricted_;
  }
  const std::vector<int32_t>& cand = *candidates;
  const int32_t m = static_cast<int32_t>(cand.size());
  const bool has_score = !fw_->profile().score.empty();
  const int32_t k = has_score ? NumFeasibleNodesToFind(percentage, m) : std::min(1, m);
  const int32_t pos = m > 0 ? static_cast<int32_t>(static_cast<int64_t>(*next_start) % m) : 0;

  // The scan: the first K feasible nodes from the start index, stopping at the (K+1)-th.
  // Rejections are counted per distinct (plugin, code); the first that stands for an error
  // ends the cycle there, as in the per-pod scan. A local-only run's scan is the
  // framework's own pass over the verdicts it keeps.
  engine::Scan& scan = scan_;
  {
    const PointTimer timer(times, kTimedFilter);
    if (local_only_) {
      fw_->ScanLocal(pre, cand, pos, k, &scan);
    } else if (!selective_.Applies(pre) || !selective_.Select(pod, pos) || !ScanSelected(pre, m, k, &scan)) {
      ScanChunks(pre, cand, pos, k, &scan);
    }
  }
  if (scan.error) {
    out.code = Code::kError;
    out.message = scan.rejected.back().status.Message();
    return out;
  }
  const int32_t processed = scan.processed;
  std::vector<engine::NodeIndex>& feasible = scan.feasible;
  *next_start = static_cast<int32_t>((static_cast<int64_t>(*next_start) + processed) % n);
  out.feasible = static_cast<int32_t>(feasible.size());

  if (feasible.empty()) {
    std::map<std::string, int64_t> reasons;
    int64_t recorded = 0;
    std::vector<std::string> rejectors = pre.UnschedulablePlugins();
    for (const engine::Rejection& r : scan.rejected) {
      for (const std::string& reason : r.status.reasons) reasons[reason] += r.count;
      recorded += r.count;
      rejectors.push_back(fw_->filter_plugins()[r.plugin - 1]);
    }
    out.unschedulable_plugins = SortedUnique(std::move(rejectors));
    if (pre.restricted) {
      std::vector<std::string> plugins = pre.restricting_plugins;
      std::sort(plugins.begin(), plugins.end());
      std::string absent = "node(s) didn't satisfy plugin(s) [";
      for (size_t j = 0; j < plugins.size(); ++j) absent += (j ? " " : "") + plugins[j];
      reasons[absent + "]"] += n - recorded;
    }
    out.code = Code::kUnschedulable;
    out.message = FitErrorMessage(n, "", reasons);
    return out;
  }
  size_t chosen = 0;
  if (feasible.size() > 1) {
    // Totals from the scan when it scored the window, else from ScoreRun.
    if (!scan.scored && has_score) {
      {
        const PointTimer timer(times, kTimedScore);
        fw_->ScoreRun(feasible, &scores_);
      }
      if (scores_.status.code == Code::kError) {
        out.code = Code::kError;
        out.message = scores_.status.Message();
        return out;
      }
    } else if (!scan.scored) {
      scores_.total.assign(feasible.size(), 1);
    }
    const std::vector<int64_t>& totals = scan.scored ? scan.total : scores_.total;
    if (tie_break == TieBreak::kRandom) {
      chosen = SelectHostRandom(totals, *rng);
    } else {
      chosen = scan.scored ? SelectHostHeap(totals, scan.max_total) : SelectHostHeap(totals);
    }
    out.score = totals[chosen];
  }
  out.host = feasible[chosen];
  return out;
}

void BatchCycle::ScanChunks(const engine::PreFilterResult& pre, const std::vector<int32_t>& cand, int32_t pos,
                            int32_t k, engine::Scan* scan) {
  // Verdicts come in chunks of the visit order, so plugins that are not node-local run on
  // the visited nodes only (the first chunk is exactly enough when every node fits).
  const int32_t m = static_cast<int32_t>(cand.size());
  *scan = engine::Scan{std::move(scan->feasible), std::move(scan->rejected)};  // buffers kept
  scan->feasible.clear();
  scan->rejected.clear();
  scan->processed = m;
  int32_t chunk = std::min(m, k + 1);
  int32_t found = 0;
  for (int32_t v = 0; v < m;) {
    const int32_t c = std::min(chunk, m - v);
    chunk_.resize(c);  // the next c candidates from pos, wrapping
    const int32_t head = std::min(c, m - pos);
    std::copy(cand.begin() + pos, cand.begin() + pos + head, chunk_.begin());
    std::copy(cand.begin(), cand.begin() + (c - head), chunk_.begin() + head);
    pos = (pos + c) % m;
    fw_->FilterRun(pre, chunk_, &verdict_chunk_);
    for (int32_t j = 0; j < c; ++j) {
      const int16_t f = verdict_chunk_.failed_plugin[j];
      if (f != 0) {
        if (!engine::CountRejection(*fw_, f, verdict_chunk_.code[j], scan)) return;
        continue;
      }
      if (found == k) {  // the (K+1)-th: evaluated, dropped
        scan->processed = v + j;
        return;
      }
      scan->feasible.push_back(chunk_[j]);
      ++found;
    }
    v += c;
    // The next chunk is what the feasible rate so far says is still needed, a little more:
    // a window that lost a few nodes to rejections needs a few more, not a window again.
    const int64_t needed = static_cast<int64_t>(k) + 1 - found;  // the (k+1)-th ends the scan
    const double rate = (found + 1.0) / (v + 1.0);
    const int64_t want = static_cast<int64_t>(static_cast<double>(needed) / std::max(rate, 1.0 / 64) * 1.1) + 32;
    chunk = static_cast<int32_t>(std::min<int64_t>(want, m));
  }
}

bool BatchCycle::ScanSelected(const engine::PreFilterResult& pre, int32_t m, int32_t k, engine::Scan* scan) {
  const std::vector<engine::NodeIndex>& visit = selective_.nodes();
  ScanChunks(pre, visit, 0, k, scan);
  if (scan->error) return true;
  if (scan->feasible.empty()) return false;
  // Stopped at visit[processed], or visited every selected node (and so every candidate).
  scan->processed = scan->processed < static_cast<int32_t>(visit.size()) ? selective_.Processed(scan->processed) : m;
  return true;
}

absl::StatusOr<BatchComparison> CompareBatched(const ObjectSet& cluster, const SchedulerConfig& config,
                                               Options options, const std::vector<Pod>& pending) {
  return CompareBatched(cluster, config, std::move(options), [&](Scheduler& s) -> absl::StatusOr<std::vector<Placement>> {
    return s.ScheduleAll(pending);  // with preemptors' later attempts
  });
}

absl::StatusOr<BatchComparison> CompareBatched(
    const ObjectSet& cluster, const SchedulerConfig& config, Options options,
    const std::function<absl::StatusOr<std::vector<Placement>>(Scheduler&)>& run) {
  using Clock = std::chrono::steady_clock;
  BatchComparison out;
  const int32_t batch = options.batch > 1 ? options.batch : kDefaultBatch;
  options.explain = false;
  options.reference = false;
  for (int side = 0; side < 2; ++side) {
    options.batch = side == 0 ? 1 : batch;
    KPLACE_ASSIGN_OR_RETURN(auto scheduler, Scheduler::Create(cluster, config, options));
    std::vector<Placement>& placements = side == 0 ? out.per_pod : out.batched;
    auto start = Clock::now();
    KPLACE_ASSIGN_OR_RETURN(placements, run(*scheduler));
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    (side == 0 ? out.per_pod_seconds : out.batched_seconds) = seconds;
    (side == 0 ? out.per_pod_next_start : out.batched_next_start) = scheduler->next_start_index();
    if (side == 1) out.stats = scheduler->batch_stats();
  }
  if (out.per_pod.size() != out.batched.size()) {
    return absl::InternalError(StrCat("per-pod and batched runs decided ", out.per_pod.size(), " and ", out.batched.size(), " pods"));
  }
  out.pods = static_cast<int64_t>(out.per_pod.size());
  for (size_t j = 0; j < out.per_pod.size(); ++j) {
    const Placement& a = out.per_pod[j];
    const Placement& b = out.batched[j];
    auto victims = [](const Placement& p) { return p.preemption ? p.preemption->victims : std::vector<std::string>{}; };
    if (a.node == b.node && a.code == b.code && a.message == b.message && a.score == b.score &&
        a.feasible == b.feasible && a.attempts == b.attempts && victims(a) == victims(b)) {
      continue;
    }
    if (out.mismatches++ == 0) {
      out.first_mismatch = StrCat("pod ", a.pod, " (#", j, " in queue order): per-pod ",
                                  a.node.empty() ? StrCat("\"", a.message, "\"") : a.node, " (score ", a.score,
                                  ", ", a.feasible, " feasible), batched ",
                                  b.node.empty() ? StrCat("\"", b.message, "\"") : b.node, " (score ", b.score, ", ",
                                  b.feasible, " feasible)");
    }
  }
  if (out.mismatches == 0 && out.per_pod_next_start != out.batched_next_start) {
    out.first_mismatch = StrCat("final next start index: per-pod ", out.per_pod_next_start, ", batched ",
                                out.batched_next_start);
  }
  return out;
}

}  // namespace kplace::cycle
