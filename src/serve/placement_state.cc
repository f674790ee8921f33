#include "kplace/serve/placement_state.h"

#include <utility>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/cycle/placement_json.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"

namespace kplace::serve {
namespace {

using json = nlohmann::json;

std::string Field(const json& o, const char* a, const char* b) {
  if (!o.contains(a) || !o[a].is_object() || !o[a].contains(b) || !o[a][b].is_string()) return "";
  return o[a][b].get<std::string>();
}

// kind:namespace/name: one object, whatever its kind.
std::string KeyOf(const json& o) {
  const std::string kind = o.contains("kind") && o["kind"].is_string() ? o["kind"].get<std::string>() : "";
  return StrCat(kind, ":", Field(o, "metadata", "namespace"), "/", Field(o, "metadata", "name"));
}

std::string PodKey(const json& o) {
  const std::string ns = Field(o, "metadata", "namespace");
  return StrCat(ns.empty() ? "default" : ns, "/", Field(o, "metadata", "name"));
}

bool IsPod(const json& o) { return o.contains("kind") && o["kind"] == "Pod"; }

// The objects of `text` one by one (Lists opened), each with its place for errors.
absl::StatusOr<std::vector<std::pair<json, std::string>>> Items(std::string_view text, const std::string& what) {
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, what));
  std::vector<std::pair<json, std::string>> out;
  for (size_t d = 0; d < docs.size(); ++d) {
    json& doc = docs[d];
    if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
      json& list = doc["items"];
      out.reserve(out.size() + list.size());
      for (size_t i = 0; i < list.size(); ++i) out.emplace_back(std::move(list[i]), StrCat(what, ": items[", i, "]"));
    } else if (!doc.is_null()) {
      out.emplace_back(std::move(doc), docs.size() == 1 ? what : StrCat(what, ": document ", d + 1));
    }
  }
  return out;
}

}  // namespace

absl::Status PlacementState::Check(std::optional<uint64_t> expected) const {
  if (!scheduler_) return absl::FailedPreconditionError("no cluster yet: call Reset first");
  if (expected && *expected != revision_) {
    return absl::FailedPreconditionError(StrCat("expected revision ", *expected, ", the state is at ", revision_));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResetResult> PlacementState::Reset(std::string_view objects, std::string_view config_text) {
  SchedulerConfig config = DefaultSchedulerConfig();
  if (!config_text.empty()) {
    KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(config_text, "config"));
    if (docs.size() != 1) return absl::InvalidArgumentError(StrCat("config: expected one KubeSchedulerConfiguration, got ", docs.size(), " documents"));
    KPLACE_ASSIGN_OR_RETURN(config, DecodeSchedulerConfig(docs[0], "config"));
  }
  KPLACE_ASSIGN_OR_RETURN(auto items, Items(objects, "objects"));
  auto cluster = std::make_unique<ObjectSet>();
  std::vector<std::string> order;
  std::map<std::string, json> kept, pods;
  std::set<std::string> pending;
  SkippedKinds skipped;
  for (const auto& [item, where] : items) {
    int64_t before = 0;
    for (const auto& [kind, n] : skipped) before += n;
    KPLACE_RETURN_IF_ERROR(DecodeDocument(item, where, cluster.get(), &skipped));
    int64_t after = 0;
    for (const auto& [kind, n] : skipped) after += n;
    if (after != before) continue;  // a kind scheduling does not read
    if (IsPod(item)) {
      pods[PodKey(item)] = item;
    } else if (kept.emplace(KeyOf(item), item).second) {
      order.push_back(KeyOf(item));
    }
  }
  // Pods without a node are the cluster's pending pods: kept for Snapshot, not scheduled.
  std::vector<Pod> bound;
  for (Pod& p : cluster->pods) {
    if (p.node_name.empty() && p.phase != "Succeeded" && p.phase != "Failed") {
      pending.insert(ObjectKey(p.meta));
    } else {
      bound.push_back(std::move(p));
    }
  }
  cluster->pods = std::move(bound);
  KPLACE_RETURN_IF_ERROR(ResolvePriorities(*cluster, &cluster->pods, "objects"));
  KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(*cluster, config, options_));
  ResetResult out;
  out.nodes = static_cast<int32_t>(cluster->nodes.size());
  out.bound_pods = static_cast<int32_t>(cluster->pods.size());
  out.pending_pods = static_cast<int32_t>(pending.size());
  scheduler_.reset();
  cluster_ = std::move(cluster);
  scheduler_ = std::move(scheduler);
  config_ = std::move(config);
  order_ = std::move(order);
  objects_ = std::move(kept);
  pods_ = std::move(pods);
  pending_ = std::move(pending);
  classes_.priority_classes = cluster_->priority_classes;
  out.revision = ++revision_;
  return out;
}

absl::Status PlacementState::ApplyOne(const std::string& text, const std::string& where, std::vector<MirrorUndo>* undo) {
  json object;
  KPLACE_ASSIGN_OR_RETURN(std::optional<state::ClusterEvent> parsed, state::ParseWatchEvent(text, where, &object));
  if (!parsed) return absl::OkStatus();  // BOOKMARK
  state::ClusterEvent& e = *parsed;
  if (e.kind == "Pod") {
    KPLACE_RETURN_IF_ERROR(ResolvePriorities(classes_, &e.object.pods, where));
  } else if (e.kind == "PriorityClass") {
    KPLACE_RETURN_IF_ERROR(state::ApplyToObjects(e, &classes_));
  }
  const bool deleted = e.type == state::EventType::kDeleted;
  const bool pending_pod = e.kind == "Pod" && e.object.pods[0].node_name.empty();
  KPLACE_RETURN_IF_ERROR(scheduler_->Apply(std::move(e)));
  if (IsPod(object)) {
    const std::string key = PodKey(object);
    auto it = pods_.find(key);
    undo->push_back(MirrorUndo{key, it == pods_.end() ? std::nullopt : std::optional<json>(it->second), true, pending_.count(key) > 0});
    pending_.erase(key);
    if (deleted) {
      pods_.erase(key);
    } else {
      if (pending_pod) pending_.insert(key);
      pods_[key] = std::move(object);
    }
    return absl::OkStatus();
  }
  const std::string key = KeyOf(object);
  auto it = objects_.find(key);
  undo->push_back(MirrorUndo{key, it == objects_.end() ? std::nullopt : std::optional<json>(it->second), false, false});
  if (deleted) {
    objects_.erase(key);
  } else {
    if (it == objects_.end()) order_.push_back(key);
    objects_[key] = std::move(object);
  }
  return absl::OkStatus();
}

void PlacementState::Rollback(std::vector<MirrorUndo>* undo) {
  for (auto u = undo->rbegin(); u != undo->rend(); ++u) {
    std::map<std::string, json>& into = u->pod ? pods_ : objects_;
    if (u->before) {
      into[u->key] = *u->before;
    } else {
      into.erase(u->key);
    }
    if (u->pod) {
      if (u->was_pending) {
        pending_.insert(u->key);
      } else {
        pending_.erase(u->key);
      }
    }
  }
}

absl::StatusOr<uint64_t> PlacementState::Apply(const std::vector<std::string>& events, std::optional<uint64_t> expected) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  KPLACE_RETURN_IF_ERROR(scheduler_->Begin());
  std::vector<MirrorUndo> undo;
  const ObjectSet classes = classes_;
  const size_t order_size = order_.size();
  for (size_t k = 0; k < events.size(); ++k) {
    absl::Status s;
    try {
      s = ApplyOne(events[k], StrCat("events[", k, "]"), &undo);
    } catch (const std::exception& e) {  // all or nothing holds even for a bug's exception
      s = absl::InternalError(StrCat("events[", k, "]: ", e.what()));
    }
    if (!s.ok()) {
      (void)scheduler_->Revert();
      Rollback(&undo);
      classes_ = classes;
      order_.resize(order_size);
      return absl::Status(s.code(), StrCat(s.message(), " (no event of this call was applied)"));
    }
  }
  KPLACE_RETURN_IF_ERROR(scheduler_->Commit());
  return ++revision_;
}

struct PlacementState::RequestPods {
  ObjectSet decoded;
  std::map<std::string, json> raw;               // pod key -> JSON (keep_json)
  std::map<std::string, GangSpec> pod_groups;    // PodGroup ns/name -> gang
  std::vector<std::string> group_of;             // per pod: its PodGroup's ns/name, or ""
};

absl::StatusOr<PlacementState::RequestPods> PlacementState::DecodeRequest(std::string_view text, bool keep_json) const {
  KPLACE_ASSIGN_OR_RETURN(auto items, Items(text, "pods"));
  RequestPods out;
  out.decoded.pods.reserve(items.size());
  std::map<std::string, std::string> named;  // member -> where its reference was read
  for (auto& [item, where] : items) {
    if (item.contains("kind") && item["kind"] == "PodGroup") {
      // scheduling.k8s.io PodGroup: only its gang policy matters here.
      const std::string ns = Field(item, "metadata", "namespace");
      const std::string key = StrCat(ns.empty() ? "default" : ns, "/", Field(item, "metadata", "name"));
      const json* policy = item.contains("spec") && item["spec"].is_object() && item["spec"].contains("schedulingPolicy")
                               ? &item["spec"]["schedulingPolicy"]
                               : nullptr;
      if (!policy || !policy->is_object() || !policy->contains("gang")) continue;  // a basic policy: no gang
      const json& gang = (*policy)["gang"];
      if (!gang.is_object() || !gang.contains("minCount") || !gang["minCount"].is_number_integer() ||
          gang["minCount"].get<int64_t>() < 1 || gang["minCount"].get<int64_t>() > (1 << 30)) {
        return absl::InvalidArgumentError(
            StrCat(where, ": PodGroup ", key, ": spec.schedulingPolicy.gang.minCount: must be a positive integer"));
      }
      GangSpec g{key, static_cast<int32_t>(gang["minCount"].get<int64_t>()), {}};
      if (!out.pod_groups.emplace(key, std::move(g)).second) {
        return absl::InvalidArgumentError(StrCat(where, ": PodGroup ", key, " is given twice"));
      }
      continue;
    }
    if (!IsPod(item)) return absl::InvalidArgumentError(StrCat(where, ": kind: expected a Pod or a PodGroup"));
    KPLACE_RETURN_IF_ERROR(DecodeDocument(item, where, &out.decoded));
    const Pod& p = out.decoded.pods.back();
    const std::string key = ObjectKey(p.meta);
    if (!p.node_name.empty()) {
      return absl::InvalidArgumentError(StrCat(where, ": spec.nodeName: Pod ", key, " is already bound to ", p.node_name));
    }
    std::string group;
    if (item["spec"].contains("schedulingGroup") && item["spec"]["schedulingGroup"].is_object()) {
      const json& g = item["spec"]["schedulingGroup"];
      if (g.contains("podGroupName")) {
        if (!g["podGroupName"].is_string() || g["podGroupName"].get<std::string>().empty()) {
          return absl::InvalidArgumentError(StrCat(where, ": Pod ", key, ": spec.schedulingGroup.podGroupName: must be a name"));
        }
        group = StrCat(p.meta.namespace_, "/", g["podGroupName"].get<std::string>());
        named[key] = where;
      }
    }
    out.group_of.push_back(group);
    // A dry run keeps nothing; a commit keeps each placed pod's JSON for Snapshot.
    auto [at, fresh] = out.raw.emplace(key, keep_json ? std::move(item) : json());
    if (!fresh) return absl::InvalidArgumentError(StrCat(where, ": Pod ", key, " is given twice"));
  }
  for (size_t k = 0; k < out.decoded.pods.size(); ++k) {
    if (out.group_of[k].empty()) continue;
    auto g = out.pod_groups.find(out.group_of[k]);
    const std::string key = ObjectKey(out.decoded.pods[k].meta);
    if (g == out.pod_groups.end()) {
      return absl::InvalidArgumentError(StrCat(named.at(key), ": Pod ", key, ": spec.schedulingGroup.podGroupName: PodGroup ",
                                               out.group_of[k], " with a gang policy is not in the request"));
    }
    g->second.pods.push_back(key);
  }
  KPLACE_RETURN_IF_ERROR(ResolvePriorities(classes_, &out.decoded.pods, "pods"));
  return out;
}

// Explanations for one call only: the scheduler keeps them while `on`, then batches again.
class PlacementState::ExplainScope {
 public:
  ExplainScope(cycle::Scheduler* s, bool on) : s_(on ? s : nullptr) {
    if (s_) s_->SetExplain(true);
  }
  ~ExplainScope() {
    if (s_) s_->SetExplain(false);
  }
  ExplainScope(const ExplainScope&) = delete;
  ExplainScope& operator=(const ExplainScope&) = delete;

 private:
  cycle::Scheduler* s_;
};

void PlacementState::Explain(const std::vector<Pod>& pods, ScheduleResult* out) const {
  std::map<std::string, const Profile*> profile_of;  // pod key -> its profile
  for (const Pod& pod : pods) {
    for (const Profile& profile : config_.profiles) {
      if (profile.scheduler_name == pod.scheduler_name) profile_of[ObjectKey(pod.meta)] = &profile;
    }
  }
  static const Profile kNone;  // a pod for another scheduler runs no plugin
  for (const cycle::Placement& p : out->placements) {
    auto it = profile_of.find(p.pod);
    out->explanations.push_back(cycle::PlacementJson(p, true, it == profile_of.end() ? kNone : *it->second).dump());
  }
}

absl::StatusOr<ScheduleResult> PlacementState::Schedule(std::string_view text, bool dry_run, std::optional<uint64_t> expected,
                                                        const std::vector<GangSpec>& request_gangs, bool explain) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  const ExplainScope scope(scheduler_.get(), explain);
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(text, !dry_run));
  const std::vector<Pod>& pods = req.decoded.pods;
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < pods.size(); ++k) index[ObjectKey(pods[k].meta)] = k;
  // Every gang, and each pod's gang (-1: none).
  std::vector<GangSpec> gangs;
  for (auto& [key, g] : req.pod_groups) {
    if (!g.pods.empty()) gangs.push_back(std::move(g));
  }
  for (size_t k = 0; k < request_gangs.size(); ++k) {
    const GangSpec& g = request_gangs[k];
    const std::string where = StrCat("gangs[", k, "] ", g.name);
    if (g.min_count < 1) return absl::InvalidArgumentError(StrCat(where, ": minCount: must be at least 1"));
    for (const std::string& member : g.pods) {
      if (!index.count(member)) return absl::InvalidArgumentError(StrCat(where, ": pods: ", member, " is not among the request's pods"));
    }
    gangs.push_back(g);
  }
  std::vector<int32_t> gang_of(pods.size(), -1);
  for (size_t g = 0; g < gangs.size(); ++g) {
    for (const std::string& member : gangs[g].pods) {
      int32_t& slot = gang_of[index.at(member)];
      if (slot >= 0) return absl::InvalidArgumentError(StrCat("Pod ", member, " is a member of two gangs (", gangs[slot].name, ", ", gangs[g].name, ")"));
      slot = static_cast<int32_t>(g);
    }
  }

  ScheduleResult out;
  if (dry_run) KPLACE_RETURN_IF_ERROR(scheduler_->Begin());
  const std::vector<size_t> order = cycle::QueueOrder(pods);
  std::vector<cycle::Placement> placed(pods.size());
  std::vector<size_t> run;  // consecutive pods of no gang, scheduled together
  auto flush = [&] {
    if (run.empty()) return;
    std::vector<Pod> batch;
    for (size_t k : run) batch.push_back(pods[k]);
    std::vector<cycle::Placement> r = scheduler_->ScheduleAll(batch);
    for (size_t j = 0; j < run.size(); ++j) placed[run[j]] = std::move(r[j]);
    run.clear();
  };
  std::vector<bool> done(gangs.size(), false);
  for (size_t k : order) {
    if (gang_of[k] < 0) {
      run.push_back(k);
      continue;
    }
    const int32_t g = gang_of[k];
    if (done[g]) continue;
    done[g] = true;
    flush();
    std::vector<size_t> members;
    for (size_t m : order) {
      if (gang_of[m] == g) members.push_back(m);
    }
    KPLACE_ASSIGN_OR_RETURN(GangResult r, PlaceGang(gangs[g], pods, members, &placed));
    out.gangs.push_back(std::move(r));
  }
  flush();
  for (size_t k : order) out.placements.push_back(std::move(placed[k]));
  if (explain) Explain(pods, &out);
  if (dry_run) {
    KPLACE_RETURN_IF_ERROR(scheduler_->Revert());
    out.revision = revision_;
    return out;
  }
  for (const cycle::Placement& p : out.placements) {
    if (p.node.empty()) continue;
    json pod = std::move(req.raw.at(p.pod));
    pod["spec"]["nodeName"] = p.node;
    pods_[p.pod] = std::move(pod);
    pending_.erase(p.pod);
  }
  out.revision = ++revision_;
  return out;
}

absl::StatusOr<GangResult> PlacementState::PlaceGang(const GangSpec& gang, const std::vector<Pod>& pods,
                                                    const std::vector<size_t>& members,
                                                    std::vector<cycle::Placement>* placed) {
  GangResult r;
  r.name = gang.name;
  r.min_count = gang.min_count;
  KPLACE_RETURN_IF_ERROR(scheduler_->Begin());
  std::vector<Pod> batch;
  for (size_t m : members) batch.push_back(pods[m]);
  std::vector<cycle::Placement> got = scheduler_->ScheduleAll(batch);
  for (size_t j = 0; j < members.size(); ++j) {
    if (!got[j].node.empty()) {
      ++r.placed_count;
    } else if (r.first_unplaced.empty()) {
      r.first_unplaced = got[j].pod;
      r.reason = got[j].message;
    }
  }
  r.placed = r.placed_count >= gang.min_count;
  if (r.placed) {
    KPLACE_RETURN_IF_ERROR(scheduler_->Commit());
  } else {
    KPLACE_RETURN_IF_ERROR(scheduler_->Revert());
    if (r.first_unplaced.empty()) r.reason = StrCat("the gang has ", members.size(), " members");
    const std::string why = StrCat("gang ", gang.name, ": ", r.placed_count, " of ", members.size(),
                                   " members placed, minCount ", gang.min_count,
                                   r.first_unplaced.empty() ? "" : StrCat("; first unplaced: ", r.first_unplaced, ": ", r.reason));
    for (cycle::Placement& p : got) {
      p.node.clear();
      p.score = 0;
      p.preemption.reset();
      if (p.code == Code::kSuccess) p.code = Code::kUnschedulable;
      p.message = p.message.empty() ? why : StrCat(why, " (this pod: ", p.message, ")");
    }
    r.placed_count = 0;
  }
  for (size_t j = 0; j < members.size(); ++j) (*placed)[members[j]] = std::move(got[j]);
  return r;
}

absl::StatusOr<ScheduleResult> PlacementState::Evaluate(std::string_view text, std::optional<uint64_t> expected,
                                                        bool explain) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  const ExplainScope scope(scheduler_.get(), explain);
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(text, /*keep_json=*/false));
  ScheduleResult out;
  out.revision = revision_;
  out.placements.reserve(req.decoded.pods.size());
  for (const Pod& pod : req.decoded.pods) {
    KPLACE_RETURN_IF_ERROR(scheduler_->Begin());
    out.placements.push_back(std::move(scheduler_->ScheduleAll({pod})[0]));
    KPLACE_RETURN_IF_ERROR(scheduler_->Revert());
  }
  if (explain) Explain(req.decoded.pods, &out);
  return out;
}

json PlacementState::Snapshot() const {
  json items = json::array();
  if (!scheduler_) return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  const ObjectSet now = scheduler_->Objects();
  for (const Node& n : now.nodes) {
    auto it = objects_.find(StrCat("Node:/", n.meta.name));
    if (it != objects_.end()) items.push_back(it->second);
  }
  std::set<std::string> seen;
  for (const std::string& key : order_) {
    if (key.rfind("Node:", 0) == 0 || !seen.insert(key).second) continue;
    auto it = objects_.find(key);
    if (it != objects_.end()) items.push_back(it->second);
  }
  for (const Pod& p : now.pods) {
    auto it = pods_.find(ObjectKey(p.meta));
    if (it == pods_.end()) continue;
    json pod = it->second;
    pod["spec"]["nodeName"] = p.node_name;
    if (!p.meta.deletion_timestamp.empty() && !pod["metadata"].contains("deletionTimestamp")) {
      pod["metadata"]["deletionTimestamp"] = p.meta.deletion_timestamp;
    }
    items.push_back(std::move(pod));
  }
  for (const std::string& key : pending_) items.push_back(pods_.at(key));
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

}  // namespace kplace::serve
