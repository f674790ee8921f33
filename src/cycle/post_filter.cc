#include "cycle_scheduler.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "kplace/common/strings.h"
#include "kplace/cycle/engine_dry_run.h"
#include "kplace/model/decode.h"

// The host's extension points of the cycle: PreEnqueue, PreBind with the objects a binding
// writes, and PostFilter (the host plugins', then DefaultPreemption).
namespace kplace::cycle {

// PreEnqueue, in the profile's order: the first plugin that does not pass holds the pod back.
bool CycleScheduler::PreEnqueue(const Pod& pod, size_t ev_index, Placement* out) {
  for (HostPlugin* p : host_[ev_index].pre_enqueue()) {
    PluginStatus s = p->PreEnqueue(pod, objects());
    if (s.IsSuccess()) continue;
    out->gated = true;
    out->gating_plugin = p->name();
    out->code = s.code;
    out->message = s.Message();
    return false;
  }
  return true;
}

// PreBind for `pod`, about to be bound: the objects the binding writes, applied by Write
// once it is bound. False, with `out` the Error, when the binding would fail.
bool CycleScheduler::PreBind(const Pod& pod, size_t ev_index, ObjectSet* writes, Placement* out) {
  for (HostPlugin* p : host_[ev_index].pre_bind()) {
    PluginStatus s = p->PreBind(pod, objects(), writes);
    if (s.IsSuccess()) continue;
    out->code = Code::kError;
    out->message = s.Message();
    return false;
  }
  return true;
}

// Objects the scheduler wrote (PreBind's, PostFilter's): later cycles see them as the
// informer would deliver the update.
void CycleScheduler::Write(ObjectSet writes, Placement* out) {
  for (ResourceClaim& c : writes.resource_claims) {
    state::ClusterEvent e;
    e.type = state::EventType::kModified;
    e.kind = "ResourceClaim";
    e.where = "kplace";
    e.object.resource_claims.push_back(std::move(c));
    const std::string key = e.Key();
    absl::Status s = state_.Apply(std::move(e));
    if (!s.ok()) {
      out->code = Code::kError;
      out->message = StrCat("writing ResourceClaim ", key, ": ", s.message());
      return;
    }
  }
}

// PostFilter, timed when the profile has PostFilter plugins (upstream observes it then only).
Placement CycleScheduler::TimedPostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses,
                                          std::vector<HostPlugin::PostFilterInput> inputs, Placement out) {
  if (!options_.time_extension_points || ev->profile().post_filter.empty()) {
    return PostFilter(pod, ev, ev_index, statuses, inputs, std::move(out));
  }
  PointTimes spent;
  Placement result;
  {
    const PointTimer timer(&spent, kTimedPostFilter);
    result = PostFilter(pod, ev, ev_index, statuses, inputs, std::move(out));
  }
  result.times.Add(kTimedPostFilter, spent.seconds[kTimedPostFilter]);
  return result;
}

// The profile's PostFilter plugins after a failed cycle (`out` holds the FitError), as
// RunPostFilterPlugins runs them in order: the first Success or UnschedulableAndUnresolvable
// answers, an Error ends the pass, Unschedulable reasons are joined. The host plugins run
// first (`inputs`: what each learns of the cycle); DefaultPreemption nominates, and its
// victims start terminating.
Placement CycleScheduler::PostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses,
                                     const std::vector<HostPlugin::PostFilterInput>& inputs, Placement out) {
  const Profile& profile = dry_[ev_index]->profile();
  std::vector<std::string> reasons;
  ObjectSet writes;
  auto finish = [&](std::string message) {
    out.post_filter_message = std::move(message);
    if (!out.post_filter_message.empty()) out.message += " " + out.post_filter_message;
    Write(std::move(writes), &out);
    return std::move(out);
  };
  const bool preemption = host_[ev_index].preempts();
  const std::vector<HostPlugin*>& on_host = host_[ev_index].post_filter();
  for (size_t h = 0; h < on_host.size(); ++h) {
    const PluginStatus s = on_host[h]->PostFilter(pod, objects(), inputs[h], &writes);
    // Before DefaultPreemption: an Error keeps it from running (and keeps any nomination:
    // no PostFilter result).
    if (!s.IsRejected()) return finish(s.Message());
    reasons.insert(reasons.end(), s.reasons.begin(), s.reasons.end());
  }
  auto joined = [&] {
    std::string m;
    for (const std::string& r : reasons) m += (m.empty() ? "" : ", ") + r;
    return m;
  };
  if (!preemption) {
    if (!profile.post_filter.empty() || state_.Nomination(out.pod)) state_.ClearNomination(out.pod);
    return finish(joined());
  }
  const bool generic_workload = state_.gates().Enabled("GenericWorkload");
  PostFilterResult r;
  if (!pod.scheduling_group.empty() && generic_workload) {
    // A member of a PodGroup: the group's own preemption decides (PodGroupPostFilter).
    r.status = PluginStatus::Make(Code::kUnschedulable, "preemption: not eligible due to workload aware preemption enabled");
  } else {
    std::unique_ptr<DryRunHost> host;
    if (auto* engine_ev = dynamic_cast<EngineEvaluator*>(ev); engine_ev && state_.snapshot()) {
      // The engine answers the dry run's filter calls it can (the pod's PreFilter is current).
      std::vector<const Pod*> nominated;
      for (const auto& [key, q] : state_.nominated()) nominated.push_back(&q);
      host = std::make_unique<EngineDryRunHost>(
          engine_ev->framework(), engine_ev->pre_filter(), pod, *state_.snapshot(),
          [this](const std::string& name) { return static_cast<int32_t>(state_.Row(name)); }, std::move(nominated),
          [this, ev_index] { return std::unique_ptr<DryRunHost>(MakeHost(ev_index)); });
    } else {
      host = MakeHost(ev_index);
    }
    PostFilterOptions options;
    options.args = profile.args.default_preemption;
    options.node_order = state_.order();
    options.offset = [this](int32_t potential) {
      return static_cast<int32_t>(preempt_rng_() % static_cast<uint64_t>(potential));
    };
    options.generic_workload = generic_workload;
    r = cycle::PostFilter(*host, pod, statuses, objects().pdbs, options);
  }
  if (r.status.refused) {  // the dry run reached what kplace does not model
    out.code = Code::kError;
    out.message = r.status.Message();
    return std::move(out);
  }
  // Success and anything but Unschedulable answer alone; Unschedulable joins the reasons.
  if (r.status.code == Code::kUnschedulable) reasons.insert(reasons.end(), r.status.reasons.begin(), r.status.reasons.end());
  std::string msg = r.status.code == Code::kUnschedulable ? joined() : r.status.Message();
  if (r.status.code == Code::kError) out.code = Code::kError;
  PreemptionOutcome& po = out.preemption.emplace();
  if (options_.explain) ExplainPostFilter(r, &po);  // only explain reads the dry run's details
  if (!r.has_result) return finish(std::move(msg));
  if (!r.status.IsSuccess()) {
    state_.ClearNomination(out.pod);
    return finish(std::move(msg));
  }
  po.nominated_node = r.nominated_node;
  for (const Pod* v : r.victims) po.victims.push_back(ObjectKey(v->meta));
  Pod nominated = pod;
  nominated.nominated_node_name = r.nominated_node;
  // Lower-priority pods nominated to the same node lose their nomination.
  std::vector<std::string> lower;
  for (const auto& [key, q] : state_.nominated()) {
    if (q.nominated_node_name == r.nominated_node && PodPriority(q) < PodPriority(pod)) lower.push_back(key);
  }
  for (const std::string& key : lower) state_.ClearNomination(key);
  state_.Nominate(nominated);
  state_.MarkTerminating(r.victims, profile.scheduler_name);
  return finish(std::move(msg));
}

// The dry run's candidates, their criteria and the nodes it ruled out, by name.
void CycleScheduler::ExplainPostFilter(const PostFilterResult& r, PreemptionOutcome* po) const {
  for (const Candidate& c : r.candidates) {
    PreemptionOutcome::Candidate pc{objects().nodes[c.node].meta.name, {}, c.num_pdb_violations, {}};
    for (const Pod* v : c.victims) pc.victims.push_back(ObjectKey(v->meta));
    for (int32_t k = 0; k < kNumCandidateCriteria; ++k) pc.scores.push_back(CandidateScore(c, k));
    po->candidates.push_back(std::move(pc));
  }
  po->decided_by = r.decided_by < kNumCandidateCriteria ? kCandidateCriteria[r.decided_by] : "first found";
  for (size_t row = 0; row < r.dry_run_statuses.of_row.size(); ++row) {
    const int32_t row_i = static_cast<int32_t>(row);
    if (r.dry_run_statuses.Has(row_i)) po->rejected[objects().nodes[row].meta.name] = r.dry_run_statuses.Get(row_i).Message();
  }
}

}  // namespace kplace::cycle
