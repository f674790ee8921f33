#include "kplace/whatif/whatif.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/plugins/volume_common.h"
#include "kplace/state/event.h"
#include "fork.h"

namespace kplace::whatif {
namespace {

// The Eviction API's view: a budget selects the pods of its namespace its selector matches
// (an empty selector every one, a null one none); a pod already in status.disruptedPods is
// counted there already.
std::vector<PdbViolation> Violations(const std::vector<PodDisruptionBudget>& pdbs, const std::vector<Pod>& evicted) {
  std::vector<PdbViolation> out;
  for (const PodDisruptionBudget& pdb : pdbs) {
    if (!pdb.selector) continue;
    int32_t n = 0;
    for (const Pod& p : evicted) {
      if (p.meta.namespace_ != pdb.meta.namespace_) continue;
      if (!plugins::volume::LabelSelectorMatches(*pdb.selector, p.meta.labels)) continue;
      if (std::binary_search(pdb.disrupted_pods.begin(), pdb.disrupted_pods.end(), p.meta.name)) continue;
      ++n;
    }
    if (n > pdb.disruptions_allowed) out.push_back(PdbViolation{ObjectKey(pdb.meta), n, pdb.disruptions_allowed});
  }
  return out;
}

// Drain's body, inside the caller's transaction.
absl::StatusOr<DrainResult> DrainIn(cycle::Scheduler* scheduler, const std::vector<std::string>& nodes) {
  state::ClusterState& st = scheduler->state();
  DrainResult out;
  out.nodes = nodes;
  std::vector<engine::NodeIndex> rows;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const engine::NodeIndex row = st.Row(nodes[k]);
    if (row == engine::kNoId) return absl::InvalidArgumentError(StrCat("nodes[", k, "]: Node ", nodes[k], " is not in the cluster"));
    if (std::find(rows.begin(), rows.end(), row) != rows.end()) {
      return absl::InvalidArgumentError(StrCat("nodes[", k, "]: Node ", nodes[k], " is named twice"));
    }
    rows.push_back(row);
  }
  std::vector<Pod> on;
  for (const Pod* p : st.PodsOn(rows)) on.push_back(*p);
  std::vector<Pod> evicted;
  for (const Pod& p : on) {
    if (!Evicted(p)) continue;
    Pod again = p;
    again.node_name.clear();
    again.nominated_node_name.clear();
    evicted.push_back(std::move(again));
  }
  out.pdb_violations = Violations(st.objects().pdbs, evicted);
  for (const Pod& p : on) KPLACE_RETURN_IF_ERROR(st.Apply(state::PodEvent(state::EventType::kDeleted, p)));
  for (const std::string& name : nodes) {
    KPLACE_RETURN_IF_ERROR(st.Apply(state::NodeEvent(state::EventType::kDeleted, *st.FindNode(name))));
  }
  out.pods = scheduler->ScheduleAll(evicted);
  out.drainable = out.pdb_violations.empty();
  for (const cycle::Placement& p : out.pods) {
    const bool preempted = p.preemption && !p.preemption->victims.empty();
    if (p.node.empty() || preempted) out.drainable = false;
  }
  return out;
}

}  // namespace

bool Evicted(const Pod& pod) {
  if (pod.phase == "Succeeded" || pod.phase == "Failed") return false;
  if (!pod.meta.deletion_timestamp.empty()) return false;  // already on its way out
  if (pod.meta.annotations.count("kubernetes.io/config.mirror")) return false;
  for (const OwnerReference& o : pod.meta.owner_references) {
    if (o.controller && o.kind == "DaemonSet") return false;
  }
  return true;
}

absl::StatusOr<DrainResult> Drain(cycle::Scheduler* scheduler, const std::vector<std::string>& nodes) {
  Fork fork(&scheduler->state());
  KPLACE_RETURN_IF_ERROR(fork.Begin());
  absl::StatusOr<DrainResult> out = DrainIn(scheduler, nodes);
  KPLACE_RETURN_IF_ERROR(fork.Revert());
  return out;
}

absl::StatusOr<std::vector<DrainResult>> Consolidate(cycle::Scheduler* scheduler, std::vector<std::string> candidates,
                                                     const std::function<void(size_t, size_t)>& done, size_t part,
                                                     size_t parts) {
  if (candidates.empty()) candidates = scheduler->state().NodeOrder();
  const size_t first = candidates.size() * part / parts, end = candidates.size() * (part + 1) / parts;
  std::vector<DrainResult> out;
  out.reserve(end - first);
  for (size_t k = first; k < end; ++k) {
    absl::StatusOr<DrainResult> r = Drain(scheduler, {candidates[k]});
    if (!r.ok()) return absl::Status(r.status().code(), StrCat("candidates[", k, "]: ", r.status().message()));
    out.push_back(std::move(*r));
    if (done) done(k + 1 - first, end - first);
  }
  return out;
}

absl::StatusOr<std::vector<DrainResult>> Consolidate(const std::vector<cycle::Scheduler*>& states,
                                                     const std::vector<std::string>& candidates,
                                                     const std::function<void(size_t, size_t)>& done) {
  if (states.empty()) return absl::InvalidArgumentError("consolidate: no state to run on");
  const size_t parts = states.size();
  const size_t total = candidates.empty() ? states[0]->state().NodeOrder().size() : candidates.size();
  std::vector<absl::StatusOr<std::vector<DrainResult>>> shares(parts);
  std::mutex mu;
  std::vector<size_t> finished(parts, 0);
  auto run = [&](size_t k) {
    shares[k] = Consolidate(
        states[k], candidates,
        [&](size_t n, size_t) {
          if (!done) return;
          std::lock_guard<std::mutex> lock(mu);
          finished[k] = n;
          size_t all = 0;
          for (size_t f : finished) all += f;
          done(all, total);
        },
        k, parts);
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < parts; ++k) threads.emplace_back(run, k);
  run(0);
  for (std::thread& t : threads) t.join();
  std::vector<DrainResult> out;
  for (auto& share : shares) {
    if (!share.ok()) return share.status();
    std::move(share->begin(), share->end(), std::back_inserter(out));
  }
  return out;
}

absl::StatusOr<ReplicasResult> Replicas(cycle::Scheduler* scheduler, const Pod& pod, int64_t max) {
  if (!pod.node_name.empty()) return absl::InvalidArgumentError(StrCat("Pod ", ObjectKey(pod.meta), ": spec.nodeName is set"));
  if (max < 1) return absl::InvalidArgumentError(StrCat("max: ", max, ": must be at least 1"));
  state::ClusterState& st = scheduler->state();
  Fork fork(&st);
  KPLACE_RETURN_IF_ERROR(fork.Begin());
  ReplicasResult out;
  // Copies in chunks, so a large max costs memory for one chunk; the cycle stops at the
  // first copy that finds no node.
  constexpr int64_t kChunk = 4096;
  int64_t next = 0;
  bool stopped = false;
  while (!stopped && out.replicas < max) {
    std::vector<Pod> copies;
    while (static_cast<int64_t>(copies.size()) < std::min(kChunk, max - out.replicas)) {
      Pod copy = pod;
      copy.meta.name = StrCat(pod.meta.name, "-whatif-", next++);
      if (st.FindBoundPod(ObjectKey(copy.meta))) continue;  // a name the cluster holds
      copy.meta.uid.clear();
      copy.preemption_policy = "Never";
      copy.nominated_node_name.clear();
      copies.push_back(std::move(copy));
    }
    scheduler->ScheduleAll(copies, [&](const cycle::Placement& p) {
      if (p.node.empty()) {
        out.stopped_by = p;
        stopped = true;
        return false;
      }
      ++out.replicas;
      ++out.per_node[p.node];
      return true;
    });
  }
  KPLACE_RETURN_IF_ERROR(fork.Revert());
  return out;
}

absl::StatusOr<std::vector<cycle::NodeFit>> CanSchedulePod(cycle::Scheduler* scheduler, const Pod& pod,
                                                           std::vector<std::string> candidates, bool first_fit) {
  return scheduler->Filter(pod, candidates, first_fit);  // none: every node in scan order
}

absl::StatusOr<std::optional<std::string>> FirstFit(cycle::Scheduler* scheduler, const Pod& pod,
                                                    std::vector<std::string> order, bool reserve) {
  KPLACE_ASSIGN_OR_RETURN(std::optional<std::string> fit, scheduler->FirstFit(pod, order));
  if (fit && reserve) KPLACE_RETURN_IF_ERROR(scheduler->Assume(pod, *fit));
  return fit;
}

}  // namespace kplace::whatif
