// Runs FORMAT.md's sequence cases: the case's pods scheduled one after another by the whole
// scheduler (its profiles, OpportunisticBatching included), each placed pod bound before the
// next pod's cycle, and compares where each one ended up.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/conform/runner.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"

namespace kplace::conform {

absl::StatusOr<CaseResult> RunSequenceCase(const Case& c, const RunOptions& run) {
  const SequenceInput& q = *c.sequence;
  cycle::Options options;
  options.reference = run.reference;
  options.backend = run.backend;
  options.gates = c.gates;
  options.unsigned_profiles = q.unsigned_profiles;
  options.batch = 1;  // the cases describe cycles one pod at a time
  KPLACE_ASSIGN_OR_RETURN(std::unique_ptr<cycle::Scheduler> scheduler,
                          cycle::Scheduler::Create(c.objects, q.config, options));
  // Pending existing pods hold nominations from earlier cycles and are never scheduled here.
  for (const Pod& p : c.objects.pods) {
    if (p.node_name.empty() && !p.nominated_node_name.empty()) scheduler->Nominate(p);
  }
  CaseResult result;
  // A queued case's pods all wait in the queue before it runs; the others arrive one at a
  // time, each just before its own cycle.
  std::vector<cycle::Placement> queued(q.pods.size());
  if (q.queued) {
    std::vector<cycle::Placement> got = scheduler->ScheduleAll(q.pods);
    const std::vector<size_t> order = cycle::QueueOrder(q.pods);
    for (size_t k = 0; k < order.size(); ++k) queued[order[k]] = std::move(got[k]);
  }
  std::map<std::string, std::shared_ptr<const cycle::PodGroupOutcome>> groups;
  for (size_t i = 0; i < q.pods.size(); ++i) {
    const Pod& pod = q.pods[i];
    if (std::find(q.batch_age_exceeded_before.begin(), q.batch_age_exceeded_before.end(), i) !=
        q.batch_age_exceeded_before.end()) {
      scheduler->ExpireBatchState();
    }
    if (!q.queued && !pod.nominated_node_name.empty()) scheduler->Nominate(pod);
    const cycle::Placement got = q.queued ? std::move(queued[i]) : scheduler->Schedule(pod);
    if (got.pod_group) groups[got.pod_group->pod_group] = got.pod_group;
    const PlacementExpectation& want = q.placements[i];
    const std::string what = StrCat("pods[", i, "] ", pod.meta.name);
    const std::string got_node = got.node.empty() ? "null" : StrCat("\"", got.node, "\"");
    const std::string want_node = want.node ? StrCat("\"", *want.node, "\"") : "null";
    if (got_node != want_node) {
      result.diffs.push_back(StrCat(what, " node: expected ", want_node, ", got ", got_node,
                                    got.node.empty() ? StrCat(" (", got.message, ")") : ""));
    }
    if (want.message && got.node.empty() && got.message != *want.message) {
      result.diffs.push_back(StrCat(what, " message: expected \"", *want.message, "\", got \"", got.message, "\""));
    }
    if (i < q.hinted.size() && q.hinted[i] && *q.hinted[i] != got.hinted) {
      result.diffs.push_back(StrCat(what, " hinted: expected ", *q.hinted[i] ? "true" : "false", ", got ",
                                    got.hinted ? "true" : "false"));
    }
  }
  for (const PodGroupExpectation& want : q.pod_groups) {
    auto it = groups.find(want.name);
    const bool scheduled = it != groups.end() && it->second->scheduled;
    if (scheduled != want.scheduled) {
      result.diffs.push_back(StrCat("PodGroup ", want.name, " scheduled: expected ", want.scheduled ? "true" : "false",
                                    ", got ", scheduled ? "true" : "false",
                                    it == groups.end() ? "" : StrCat(" (", it->second->reason, ": ", it->second->message, ")")));
    }
    const std::string message = it == groups.end() ? "" : it->second->message;
    if (want.message && message != *want.message) {
      result.diffs.push_back(StrCat("PodGroup ", want.name, " message: expected \"", *want.message, "\", got \"", message, "\""));
    }
  }
  if (q.evicted) {
    std::vector<std::string> gone;  // sorted: the existing pods are walked in key order below
    std::set<std::string> keys;
    for (const Pod& p : c.objects.pods) {
      if (!p.node_name.empty()) keys.insert(ObjectKey(p.meta));
    }
    for (const std::string& key : keys) {
      if (!scheduler->state().FindBoundPod(key)) gone.push_back(key);
    }
    if (gone != *q.evicted) {
      auto list = [](const std::vector<std::string>& keys) {
        std::string out;
        for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
        return StrCat("[", out, "]");
      };
      result.diffs.push_back(StrCat("evicted: expected ", list(*q.evicted), ", got ", list(gone)));
    }
  }
  result.outcome = result.diffs.empty() ? Outcome::kPass : Outcome::kFail;
  return result;
}

}  // namespace kplace::conform
