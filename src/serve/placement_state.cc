#include "kplace/serve/placement_state.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iterator>
#include <random>
#include <utility>

#include <simdjson.h>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/cycle/placement_json.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"
#include "src/serve/pod_shapes.h"

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

std::string StringField(const json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

// The objects of `text` one by one (Lists opened), each with its place for errors. An item
// that names no kind or apiVersion has its list's (a NodeList's items are v1 Nodes); one
// that still names no kind is a `default_kind` (v1) when that is given.
absl::StatusOr<std::vector<std::pair<json, std::string>>> Items(std::string_view text, const std::string& what,
                                                                 std::string_view default_kind = "") {
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, what));
  std::vector<std::pair<json, std::string>> out;
  for (size_t d = 0; d < docs.size(); ++d) {
    json& doc = docs[d];
    if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
      const std::string kind = StringField(doc, "kind"), version = StringField(doc, "apiVersion");
      json& list = doc["items"];
      out.reserve(out.size() + list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        ImplyListItemType(kind, version, &list[i]);
        out.emplace_back(std::move(list[i]), StrCat(what, ": items[", i, "]"));
      }
    } else if (!doc.is_null()) {
      out.emplace_back(std::move(doc), docs.size() == 1 ? what : StrCat(what, ": document ", d + 1));
    }
  }
  if (!default_kind.empty()) {
    for (auto& [item, where] : out) ImplyListItemType(StrCat(default_kind, "List"), "v1", &item);
  }
  return out;
}

}  // namespace

PlacementState::PlacementState(cycle::Options options) : options_(options) {
  std::random_device rd;
  const uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(id));
  instance_ = hex;
}

absl::Status PlacementState::Check(const Precondition& expected) const {
  if (!expected.instance.empty() && expected.instance != instance_) {
    return absl::FailedPreconditionError(
        StrCat("expected instance ", expected.instance, ", this server is instance ", instance_,
               " (it started anew, and its revisions are not that instance's): Reset from your source of truth, then go on"));
  }
  if (!scheduler_) return absl::FailedPreconditionError("no cluster yet: call Reset first");
  if (expected.revision && *expected.revision != revision_) {
    return absl::FailedPreconditionError(StrCat("expected revision ", *expected.revision, ", the state is at ", revision_));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResetResult> PlacementState::Reset(std::string_view objects, std::string_view config_text) {
  if (fork_) return absl::FailedPreconditionError("Reset: a fork cannot replace the cluster (commit or discard it first)");
  SchedulerConfig config = DefaultSchedulerConfig();
  if (!config_text.empty()) {
    KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(config_text, "config"));
    if (docs.size() != 1) return absl::InvalidArgumentError(StrCat("config: expected one KubeSchedulerConfiguration, got ", docs.size(), " documents"));
    KPLACE_ASSIGN_OR_RETURN(config, DecodeSchedulerConfig(docs[0], "config"));
  }
  KPLACE_ASSIGN_OR_RETURN(auto items, Items(objects, "objects"));
  auto cluster = std::make_unique<ObjectSet>();
  std::vector<std::string> order;
  KeptMap kept, pods;
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
      pods[PodKey(item)] = KeptJson{item, {}};
    } else if (kept.emplace(KeyOf(item), KeptJson{item, {}}).second) {
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

// Watch events of bound and pending pods, each distinct pod shape decoded once. An event
// `{"type":"ADDED|MODIFIED|DELETED","object":<a pod of a shape seen>}` (no other field) is
// the event ParseWatchEvent would give, with the shape's Pod and the cut strings; anything
// else goes through ParseWatchEvent, which also names the errors.
class PlacementState::EventDecoder {
 public:
  EventDecoder(bool shapes, DecodeCounts* counts) : shapes_on_(shapes), counts_(counts) {}

  // The event of `text` (nullopt: a BOOKMARK), and its object's JSON for Snapshot.
  absl::StatusOr<std::optional<state::ClusterEvent>> Decode(std::string_view text, const std::string& where,
                                                            KeptJson* object) {
    std::string_view type_token, object_text;
    PodCuts cuts;
    state::EventType type;
    const bool keyed = shapes_on_ && keyer_.KeyEvent(text, &type_token, &object_text, &cuts) && TypeOf(type_token, &type);
    if (keyed) {
      state::ClusterEvent e;
      const PodShape* shape = shapes_.Find(keyer_.key());
      if (shape && PodShapes::AppendInstance(shape->pod, cuts, &e.object.pods)) {
        e.type = type;
        e.kind = "Pod";
        e.where = where;
        object->text = std::string(object_text);
        ++counts_->shared;
        return std::optional<state::ClusterEvent>(std::move(e));
      }
    }
    KPLACE_ASSIGN_OR_RETURN(std::optional<state::ClusterEvent> e, state::ParseWatchEvent(text, where, &object->value));
    if (e && e->kind == "Pod") ++counts_->decoded;
    if (keyed && e && e->kind == "Pod" && e->object.pods.size() == 1) shapes_.Add(keyer_.key(), PodShape{e->object.pods[0]});
    return e;
  }

 private:
  // The three event types that carry a change (a BOOKMARK or an ERROR goes the general way).
  static bool TypeOf(std::string_view token, state::EventType* type) {
    if (token == "\"ADDED\"") {
      *type = state::EventType::kAdded;
    } else if (token == "\"MODIFIED\"") {
      *type = state::EventType::kModified;
    } else if (token == "\"DELETED\"") {
      *type = state::EventType::kDeleted;
    } else {
      return false;
    }
    return true;
  }

  const bool shapes_on_;
  DecodeCounts* counts_;
  PodShapeKeyer keyer_;
  PodShapes shapes_;
};

absl::Status PlacementState::ApplyOne(std::string_view text, size_t k, EventDecoder* decoder,
                                      std::vector<MirrorUndo>* undo) {
  const std::string where = StrCat("events[", k, "]");
  KeptJson object;
  KPLACE_ASSIGN_OR_RETURN(std::optional<state::ClusterEvent> parsed, decoder->Decode(text, where, &object));
  if (!parsed) return absl::OkStatus();  // BOOKMARK
  state::ClusterEvent& e = *parsed;
  const bool pod = e.kind == "Pod";
  if (pod) {
    KPLACE_RETURN_IF_ERROR(ResolvePriorities(classes_, &e.object.pods, where));
  } else if (e.kind == "PriorityClass") {
    KPLACE_RETURN_IF_ERROR(state::ApplyToObjects(e, &classes_));
  }
  const bool deleted = e.type == state::EventType::kDeleted;
  const bool pending_pod = pod && e.object.pods[0].node_name.empty();
  // A decoded pod's key is the one its JSON gives (PodKey): namespace defaulted, then name.
  std::string key = pod ? ObjectKey(e.object.pods[0].meta) : KeyOf(object.value);
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Apply(std::move(e)));
  KeptMap& into = pod ? pods_ : objects_;
  auto it = into.find(key);
  const bool existed = it != into.end();
  undo->push_back(MirrorUndo{key, existed ? std::optional<KeptJson>(std::move(it->second)) : std::nullopt, pod,
                             pod && pending_.count(key) > 0});
  if (pod) pending_.erase(key);
  if (deleted) {
    if (existed) into.erase(it);
    return absl::OkStatus();
  }
  if (pod && pending_pod) pending_.insert(key);
  if (!pod && !existed) order_.push_back(key);
  if (existed) {
    it->second = std::move(object);
  } else {
    into.emplace(std::move(key), std::move(object));
  }
  return absl::OkStatus();
}

void PlacementState::Rollback(std::vector<MirrorUndo>* undo) {
  for (auto u = undo->rbegin(); u != undo->rend(); ++u) {
    KeptMap& into = u->pod ? pods_ : objects_;
    if (u->before) {
      into[u->key] = std::move(*u->before);
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

absl::StatusOr<uint64_t> PlacementState::Apply(const std::vector<std::string_view>& events,
                                                const Precondition& expected) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Begin());
  std::vector<MirrorUndo> undo;
  undo.reserve(events.size());
  const ObjectSet classes = classes_;
  const size_t order_size = order_.size();
  EventDecoder decoder(shape_decode_, &counts_);
  for (size_t k = 0; k < events.size(); ++k) {
    absl::Status s;
    try {
      s = ApplyOne(events[k], k, &decoder, &undo);
    } catch (const std::exception& e) {  // all or nothing holds even for a bug's exception
      s = absl::InternalError(StrCat("events[", k, "]: ", e.what()));
    }
    if (!s.ok()) {
      (void)scheduler_->state().Revert();
      Rollback(&undo);
      classes_ = classes;
      order_.resize(order_size);
      return absl::Status(s.code(), StrCat(s.message(), " (no event of this call was applied)"));
    }
  }
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Commit());
  if (fork_) std::move(undo.begin(), undo.end(), std::back_inserter(fork_->mirror));
  return undo.empty() ? revision_ : ++revision_;  // only BOOKMARKs, or nothing: no change
}

void PlacementState::RememberForFork(const KeptMap& into, const std::string& key, bool pod) {
  if (!fork_) return;
  auto it = into.find(key);
  fork_->mirror.push_back(MirrorUndo{key, it == into.end() ? std::nullopt : std::optional<KeptJson>(it->second), pod,
                                     pod && pending_.count(key) > 0});
}

absl::Status PlacementState::BeginFork() {
  if (!scheduler_) return absl::FailedPreconditionError("no cluster yet: call Reset first");
  if (fork_) return absl::FailedPreconditionError("a fork is open already");
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Begin());
  fork_ = ForkUndo{revision_, order_.size(), classes_, {}};
  return absl::OkStatus();
}

absl::Status PlacementState::RevertFork() {
  if (!fork_) return absl::FailedPreconditionError("no fork is open");
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Revert());
  Rollback(&fork_->mirror);
  order_.resize(fork_->order_size);
  classes_ = std::move(fork_->classes);
  revision_ = fork_->revision;
  fork_.reset();
  return absl::OkStatus();
}

absl::Status PlacementState::CommitFork() {
  if (!fork_) return absl::FailedPreconditionError("no fork is open");
  KPLACE_RETURN_IF_ERROR(scheduler_->state().Commit());
  fork_.reset();
  return absl::OkStatus();
}

struct PlacementState::RequestPods {
  ObjectSet decoded;  // the pending pods, and the request's PodGroups
  absl::flat_hash_map<std::string, KeptJson> raw;  // pod key -> JSON (keep_json)
  std::vector<json> group_json;  // per decoded.pod_groups entry, for Snapshot after a commit
};

absl::Status PlacementState::AddRequestItem(const json& item, const std::string& where, RequestPods* out) const {
  if (item.contains("kind") && item["kind"] == "PodGroup") {
    KPLACE_RETURN_IF_ERROR(DecodeDocument(item, where, &out->decoded));
    const std::string key = ObjectKey(out->decoded.pod_groups.back().meta);
    for (size_t k = 0; k + 1 < out->decoded.pod_groups.size(); ++k) {
      if (ObjectKey(out->decoded.pod_groups[k].meta) == key) {
        return absl::InvalidArgumentError(StrCat(where, ": PodGroup ", key, " is given twice"));
      }
    }
    out->group_json.push_back(item);
    return absl::OkStatus();
  }
  if (!IsPod(item)) return absl::InvalidArgumentError(StrCat(where, ": kind: expected a Pod or a PodGroup"));
  KPLACE_RETURN_IF_ERROR(DecodeDocument(item, where, &out->decoded));
  const Pod& p = out->decoded.pods.back();
  if (!p.node_name.empty()) {
    const std::string key = ObjectKey(p.meta);
    return absl::InvalidArgumentError(StrCat(where, ": spec.nodeName: Pod ", key, " is already bound to ", p.node_name));
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacementState::RequestPods> PlacementState::DecodeRequest(std::string_view text, bool keep_json) const {
  if (shape_decode_) {
    if (std::optional<RequestPods> fast = DecodeRequestByShape(text, keep_json)) return std::move(*fast);
  }
  int64_t decoded = 0;
  KPLACE_ASSIGN_OR_RETURN(auto items, Items(text, "pods", "Pod"));
  RequestPods out;
  out.decoded.pods.reserve(items.size());
  for (auto& [item, where] : items) {
    const size_t pods = out.decoded.pods.size();
    KPLACE_RETURN_IF_ERROR(AddRequestItem(item, where, &out));
    if (out.decoded.pods.size() == pods) continue;  // a PodGroup
    ++decoded;
    // A dry run keeps nothing; a commit keeps each placed pod's JSON for Snapshot.
    const std::string key = ObjectKey(out.decoded.pods.back().meta);
    auto [at, fresh] = out.raw.emplace(key, keep_json ? KeptJson{std::move(item), {}} : KeptJson{});
    if (!fresh) return absl::InvalidArgumentError(StrCat(where, ": Pod ", key, " is given twice"));
  }
  KPLACE_RETURN_IF_ERROR(FinishRequest(&out));
  counts_.decoded += decoded;
  return out;
}

std::optional<PlacementState::RequestPods> PlacementState::DecodeRequestByShape(std::string_view text,
                                                                              bool keep_json) const {
  // Only a JSON object with "items" (what Items opens) whose every part is valid JSON of
  // the depth ParseDocuments accepts: the top-level fields and each shape's first item are
  // parsed here (simdjson, with room under kMaxNestingDepth for the list's two levels); a
  // later item of a shape is valid as its first was (pod_shapes.h).
  simdjson::dom::parser parser;
  const auto valid = [&](std::string_view part) {
    if (parser.capacity() < part.size() && parser.allocate(part.size(), kMaxNestingDepth - 8)) return false;
    simdjson::dom::element e;
    return !parser.parse(part.data(), part.size(), /*realloc_if_needed=*/true).get(e);
  };
  RequestPods out;
  PodShapeKeyer keyer;
  PodShapes shapes;
  std::vector<std::string_view> fields;
  size_t i = 0;
  int64_t shared = 0;
  const bool split = keyer.SplitList(text, &fields, [&](const PodShapeKeyer::Item& item) {
    const size_t at = i++;
    const auto where = [at] { return StrCat("pods: items[", at, "]"); };
    if (const PodShape* shape = item.keyed ? shapes.Find(keyer.key()) : nullptr) {
      if (item.cuts.node_name && !item.cuts.node_name->empty()) return false;  // already bound: refused
      if (!PodShapes::AppendInstance(shape->pod, item.cuts, &out.decoded.pods)) return false;  // the general decode names the error
      ++shared;
    } else {
      if (!valid(item.text)) return false;
      const json j = json::parse(item.text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return false;
      const size_t pods = out.decoded.pods.size();
      if (!AddRequestItem(j, where(), &out).ok()) return false;
      if (out.decoded.pods.size() == pods) return true;  // a PodGroup
      if (item.keyed) shapes.Add(keyer.key(), PodShape{out.decoded.pods.back()});
    }
    KeptJson kept;
    if (keep_json) kept.text = std::string(item.text);
    return out.raw.emplace(ObjectKey(out.decoded.pods.back().meta), std::move(kept)).second;
  });
  if (!split) return std::nullopt;
  for (std::string_view field : fields) {
    if (!valid(field)) return std::nullopt;
  }
  if (!FinishRequest(&out).ok()) return std::nullopt;
  counts_.shared += shared;
  counts_.decoded += static_cast<int64_t>(out.decoded.pods.size()) - shared;
  return out;
}

absl::Status PlacementState::FinishRequest(RequestPods* out) const {
  // A pod the cluster already holds on a node is not pending: the API server would say it exists.
  for (const Pod& p : out->decoded.pods) {
    const std::string key = ObjectKey(p.meta);
    if (const Pod* bound = scheduler_ ? scheduler_->state().FindBoundPod(key) : nullptr) {
      return absl::InvalidArgumentError(StrCat("pods: Pod ", key, " already exists, bound to node ", bound->node_name));
    }
  }
  return ResolvePriorities(classes_, &out->decoded.pods, "pods");
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

absl::StatusOr<ScheduleResult> PlacementState::Schedule(std::string_view text, bool dry_run, const Precondition& expected,
                                                        const std::vector<GangSpec>& request_gangs, bool explain,
                                                        bool stop_on_failure) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  if (!request_gangs.empty()) {
    return absl::InvalidArgumentError(
        "gangs: request gangs were replaced by PodGroups, decided as kube-scheduler decides them: send a "
        "scheduling.k8s.io/v1beta1 PodGroup among the pods and name it in each member's "
        "spec.schedulingGroup.podGroupName (the service needs --feature-gates GenericWorkload=true; docs/podgroup.md)");
  }
  const ExplainScope scope(scheduler_.get(), explain);
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(text, !dry_run));
  std::vector<Pod>& pods = req.decoded.pods;
  ScheduleResult out;
  if (dry_run) KPLACE_RETURN_IF_ERROR(scheduler_->state().Begin());
  // The request's PodGroups join the cluster before its pods are queued, as objects the API
  // server holds: a commit keeps them.
  for (size_t k = 0; k < req.decoded.pod_groups.size(); ++k) {
    state::ClusterEvent e;
    const std::string key = ObjectKey(req.decoded.pod_groups[k].meta);
    e.type = scheduler_->state().FindPodGroup(key) ? state::EventType::kModified : state::EventType::kAdded;
    e.kind = "PodGroup";
    e.where = "pods";
    e.object.pod_groups.push_back(std::move(req.decoded.pod_groups[k]));
    absl::Status s = scheduler_->state().Apply(std::move(e));
    if (!s.ok()) {
      if (dry_run) scheduler_->state().Revert().IgnoreError();
      return s;
    }
    if (!dry_run) {
      const std::string mirror = KeyOf(req.group_json[k]);
      RememberForFork(objects_, mirror, false);
      auto it = objects_.find(mirror);
      if (it == objects_.end()) {
        order_.push_back(mirror);
        objects_.emplace(mirror, KeptJson{std::move(req.group_json[k]), {}});
      } else {
        it->second = KeptJson{std::move(req.group_json[k]), {}};
      }
    }
  }
  std::function<bool(const cycle::Placement&)> each;
  if (stop_on_failure) {
    each = [](const cycle::Placement& p) { return !p.node.empty() || p.gated || p.other_scheduler; };
  }
  out.placements = scheduler_->ScheduleAll(explain ? pods : std::move(pods), each);  // Explain reads the pods afterwards
  if (stop_on_failure) {  // pods never tried have no attempt
    const size_t all = out.placements.size();
    out.placements.erase(std::remove_if(out.placements.begin(), out.placements.end(),
                                        [](const cycle::Placement& p) { return p.attempts == 0; }),
                         out.placements.end());
    out.stopped = out.placements.size() != all;
  }
  // Each PodGroup decided in this call, in the order its first member came.
  std::map<std::string, size_t> gang_of;
  for (const cycle::Placement& p : out.placements) {
    if (!p.pod_group) continue;
    auto [it, fresh] = gang_of.emplace(p.pod_group->pod_group, out.gangs.size());
    if (fresh) {
      GangResult r;
      r.name = p.pod_group->pod_group;
      r.placed = p.pod_group->scheduled;
      const PodGroup* g = scheduler_->state().FindPodGroup(r.name);
      r.min_count = g ? g->min_count.value_or(1) : 1;
      out.gangs.push_back(std::move(r));
    }
    GangResult& r = out.gangs[it->second];
    if (!p.node.empty()) {
      ++r.placed_count;
    } else if (r.first_unplaced.empty()) {
      r.first_unplaced = p.pod;
      r.reason = p.message;
    }
  }
  if (explain) Explain(pods, &out);
  if (dry_run) {
    KPLACE_RETURN_IF_ERROR(scheduler_->state().Revert());
    out.revision = revision_;
    return out;
  }
  for (const cycle::Placement& p : out.placements) {
    if (p.node.empty()) continue;
    KeptJson pod = std::move(req.raw.at(p.pod));
    if (pod.text.empty()) {
      pod.value["spec"]["nodeName"] = p.node;
    } else {
      pod.node_name = p.node;
    }
    RememberForFork(pods_, p.pod, true);
    pods_[p.pod] = std::move(pod);
    pending_.erase(p.pod);
  }
  // Binds, preemptions (nominations, victims terminating) and PodGroups change the state; a
  // commit that did none of them leaves it, and the revision other writers expect, as it was.
  bool changed = !req.group_json.empty();
  for (const cycle::Placement& p : out.placements) changed = changed || !p.node.empty() || (p.preemption && !p.preemption->nominated_node.empty());
  out.revision = changed ? ++revision_ : revision_;
  return out;
}

absl::StatusOr<ScheduleResult> PlacementState::Evaluate(std::string_view text, const Precondition& expected,
                                                        bool explain) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  const ExplainScope scope(scheduler_.get(), explain);
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(text, /*keep_json=*/false));
  ScheduleResult out;
  out.revision = revision_;
  out.placements.reserve(req.decoded.pods.size());
  for (const Pod& pod : req.decoded.pods) {
    KPLACE_RETURN_IF_ERROR(scheduler_->state().Begin());
    out.placements.push_back(std::move(scheduler_->ScheduleAll({pod})[0]));
    KPLACE_RETURN_IF_ERROR(scheduler_->state().Revert());
  }
  if (explain) Explain(req.decoded.pods, &out);
  return out;
}

json PlacementState::Snapshot() const {
  json items = json::array();
  if (!scheduler_) return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  const ObjectSet now = scheduler_->state().Objects();
  for (const Node& n : now.nodes) {
    auto it = objects_.find(StrCat("Node:/", n.meta.name));
    if (it != objects_.end()) items.push_back(it->second.Get());
  }
  std::set<std::string> seen;
  for (const std::string& key : order_) {
    if (key.rfind("Node:", 0) == 0 || !seen.insert(key).second) continue;
    auto it = objects_.find(key);
    if (it != objects_.end()) items.push_back(it->second.Get());
  }
  for (const Pod& p : now.pods) {
    auto it = pods_.find(ObjectKey(p.meta));
    if (it == pods_.end()) continue;
    json pod = it->second.Get();
    pod["spec"]["nodeName"] = p.node_name;
    if (!p.meta.deletion_timestamp.empty() && !pod["metadata"].contains("deletionTimestamp")) {
      pod["metadata"]["deletionTimestamp"] = p.meta.deletion_timestamp;
    }
    items.push_back(std::move(pod));
  }
  for (const std::string& key : pending_) items.push_back(pods_.at(key).Get());
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

absl::StatusOr<Pod> PlacementState::DecodeOnePod(std::string_view text) const {
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(text, /*keep_json=*/false));
  if (req.decoded.pods.size() != 1) {
    return absl::InvalidArgumentError(StrCat("pod: expected one Pod, got ", req.decoded.pods.size()));
  }
  return std::move(req.decoded.pods[0]);
}

absl::StatusOr<whatif::DrainResult> PlacementState::Drain(const std::vector<std::string>& nodes, const Precondition& expected) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  if (nodes.empty()) return absl::InvalidArgumentError("nodes: at least one node to drain");
  return whatif::Drain(scheduler_.get(), nodes);
}

absl::StatusOr<std::vector<whatif::DrainResult>> PlacementState::Consolidate(const std::vector<std::string>& candidates,
                                                                             const Precondition& expected, size_t part,
                                                                             size_t parts) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  return whatif::Consolidate(scheduler_.get(), candidates, {}, part, parts);
}

absl::StatusOr<whatif::ReplicasResult> PlacementState::Replicas(std::string_view pod, int64_t max, const Precondition& expected) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  KPLACE_ASSIGN_OR_RETURN(Pod p, DecodeOnePod(pod));
  return whatif::Replicas(scheduler_.get(), p, max);
}

absl::StatusOr<std::vector<cycle::NodeFit>> PlacementState::Fits(std::string_view pod, const std::vector<std::string>& nodes,
                                                                 bool first_fit, const Precondition& expected, bool reserve) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  if (!reserve) {
    KPLACE_ASSIGN_OR_RETURN(Pod p, DecodeOnePod(pod));
    return whatif::CanSchedulePod(scheduler_.get(), p, nodes, first_fit);
  }
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(pod, /*keep_json=*/true));
  if (req.decoded.pods.size() != 1) {
    return absl::InvalidArgumentError(StrCat("pod: expected one Pod, got ", req.decoded.pods.size()));
  }
  const Pod& p = req.decoded.pods[0];
  KPLACE_ASSIGN_OR_RETURN(std::vector<cycle::NodeFit> fits, whatif::CanSchedulePod(scheduler_.get(), p, nodes, true));
  if (fits.empty() || !fits.back().status.IsSuccess()) return fits;
  KPLACE_RETURN_IF_ERROR(scheduler_->Assume(p, fits.back().node));
  const std::string key = ObjectKey(p.meta);
  KeptJson kept = std::move(req.raw.at(key));
  if (kept.text.empty()) {
    kept.value["spec"]["nodeName"] = fits.back().node;
  } else {
    kept.node_name = fits.back().node;
  }
  RememberForFork(pods_, key, true);
  pods_[key] = std::move(kept);
  pending_.erase(key);
  ++revision_;
  return fits;
}

absl::StatusOr<whatif::ScaleUpResult> PlacementState::ScaleUp(std::string_view pods, std::string_view node_templates,
                                                             const whatif::ScaleUpOptions& options,
                                                             const Precondition& expected) {
  KPLACE_RETURN_IF_ERROR(Check(expected));
  KPLACE_ASSIGN_OR_RETURN(RequestPods req, DecodeRequest(pods, /*keep_json=*/false));
  ObjectSet templates;
  KPLACE_RETURN_IF_ERROR(DecodeText(node_templates, "node_templates", &templates));
  if (templates.nodes.empty() || !templates.pods.empty()) {
    return absl::InvalidArgumentError(StrCat("node_templates: expected Nodes only, got ", templates.nodes.size(), " Node(s) and ",
                                             templates.pods.size(), " Pod(s)"));
  }
  return whatif::ScaleUp(scheduler_.get(), req.decoded.pods, templates.nodes, options);
}

}  // namespace kplace::serve
