// Runs FORMAT.md's preemption cases: one DefaultPreemption entry point each, over the case's
// cluster, with upstream's fake filter plugins and extenders standing in where the case
// names them.
#include <algorithm>
#include <memory>
#include <set>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/conform/runner.h"
#include "kplace/cycle/preemption.h"
#include "kplace/model/decode.h"
#include "kplace/reference/plugin.h"
#include "kplace/state/node_tree.h"

namespace kplace::conform {
namespace {

using cycle::Candidate;
using cycle::NodeToStatus;

// Upstream's fake Filter plugins (FORMAT.md, "test:" names).
class TestFilter final : public reference::Plugin {
 public:
  explicit TestFilter(std::string name) : name_(std::move(name)) {}
  const char* Name() const override { return name_.c_str(); }
  unsigned ExtensionPoints() const override { return kFilterPoint; }
  PluginStatus Filter(reference::CycleState&, const Pod& pod, const reference::NodeInfo& node,
                      const reference::ClusterState&) override {
    const PluginStatus fake = PluginStatus::Make(Code::kUnschedulable, "Nodes failed the fake plugin");
    if (name_ == "test:TrueFilter") return PluginStatus::Success();
    if (name_ == "test:FalseFilter") return fake;
    if (name_ == "test:MatchFilter") return pod.meta.name == node.node->meta.name ? PluginStatus::Success() : fake;
    return PluginStatus::Make(Code::kUnschedulable, StrCat("injecting failure for pod ", pod.meta.name));
  }

 private:
  std::string name_;
};

bool IsTestFilter(const std::string& name) {
  return name == "test:TrueFilter" || name == "test:FalseFilter" || name == "test:MatchFilter" ||
         name == "test:RejectAllFilter";
}

// Upstream's fake extender with a fixed preemption behaviour.
class TestExtender final : public cycle::PreemptionExtender {
 public:
  explicit TestExtender(conform::PreemptionExtender spec) : spec_(std::move(spec)) {}
  std::string Name() const override { return spec_.name; }
  bool IsIgnorable() const override { return spec_.ignorable; }
  bool IsInterested(const Pod&) const override { return spec_.interested; }
  bool ProcessPreemption(const Pod&, std::map<std::string, Candidate>* candidates, std::string* error) override {
    if (spec_.preemption == "error") {
      *error = "injected error";
      return false;
    }
    if (spec_.preemption == "dropAll") candidates->clear();
    if (spec_.preemption == "keepNode1") {
      for (auto it = candidates->begin(); it != candidates->end();) it = it->first == "node1" ? std::next(it) : candidates->erase(it);
    }
    return true;
  }

 private:
  conform::PreemptionExtender spec_;
};

std::string GoQuoteName(const std::string& s) { return StrCat("\"", s, "\""); }

PluginStatus ToStatus(const StatusExpectation& s) { return PluginStatus{s.code, s.reasons}; }

std::vector<std::string> Keys(const std::vector<const Pod*>& pods) {
  std::vector<std::string> out;
  for (const Pod* p : pods) out.push_back(ObjectKey(p->meta));
  std::sort(out.begin(), out.end());
  return out;
}

std::string List(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? " " : "") + items[i];
  return out + "]";
}

// Everything one case's entry point runs on.
struct Setup {
  reference::ClusterState state;
  std::vector<std::unique_ptr<reference::Plugin>> plugins;
  std::vector<const Pod*> nominated;
  std::unique_ptr<cycle::ReferenceDryRunHost> host;
};

absl::Status Build(const Case& c, Setup* s) {
  s->state = reference::MakeClusterState(c.objects, c.gates);
  const std::vector<std::string> registered = reference::RegisteredPlugins();
  std::vector<cycle::ReferenceDryRunHost::Named> pre_filter, filter;
  for (const std::string& name : c.plugins) {
    if (IsTestFilter(name)) {
      s->plugins.push_back(std::make_unique<TestFilter>(name));
    } else if (!std::binary_search(registered.begin(), registered.end(), name)) {
      return absl::UnavailableError(StrCat("plugin ", name, " is not registered on the reference"));
    } else {
      auto p = reference::MakePlugin(name, c.args, c.gates);
      if (!p.ok()) return absl::InvalidArgumentError(StrCat("creating plugin ", name, ": ", p.status().message()));
      s->plugins.push_back(std::move(*p));
    }
    reference::Plugin* p = s->plugins.back().get();
    if (p->ExtensionPoints() & kPreFilterPoint) pre_filter.emplace_back(name, p);
    if (p->ExtensionPoints() & kFilterPoint) filter.emplace_back(name, p);
  }
  for (const Pod& p : c.objects.pods) {
    if (p.node_name.empty() && !p.nominated_node_name.empty()) s->nominated.push_back(&p);
  }
  s->host = std::make_unique<cycle::ReferenceDryRunHost>(s->state, pre_filter, filter, s->nominated);
  return absl::OkStatus();
}

NodeToStatus Statuses(const PreemptionInput& in, const cycle::DryRunHost& host) {
  NodeToStatus m;
  for (const auto& [node, st] : in.filter_statuses) {
    const int32_t row = host.IndexOf(node);
    if (row >= 0) {
      m.Set(row, ToStatus(st));
    } else {
      m.unplaced.push_back(ToStatus(st));
    }
  }
  m.absent = ToStatus(in.absent);
  return m;
}

// The snapshot's node list, as upstream's tests build it: the node tree's order.
std::vector<int32_t> AllNodes(const cycle::DryRunHost& host) {
  std::vector<const Node*> nodes;
  for (int32_t i = 0; i < host.NumNodes(); ++i) nodes.push_back(&host.NodeAt(i));
  return state::ZoneRoundRobinOrder(nodes);
}

void Diff(std::vector<std::string>* diffs, const std::string& what, const std::string& want, const std::string& got) {
  if (want != got) diffs->push_back(StrCat(what, ": expected ", want, ", got ", got));
}

void ComparePostFilter(const PostFilterExpectation& want, const cycle::PostFilterResult& got,
                       std::vector<std::string>* diffs) {
  if (want.code) {
    Diff(diffs, "postFilter.code", CodeName(*want.code), CodeName(got.status.code));
  } else if (got.status.code == Code::kError) {
    diffs->push_back(StrCat("postFilter.code: expected no Error, got Error ", got.status.Message()));
  }
  Diff(diffs, "postFilter.nominatedNodeName", want.has_result ? GoQuoteName(want.nominated_node_name) : "null",
       got.has_result ? GoQuoteName(got.nominated_node) : "null");
  if (want.message) Diff(diffs, "postFilter.message", StrCat("\"", *want.message, "\""), StrCat("\"", got.status.Message(), "\""));
  if (want.victims) {
    // Victims are deleted only when PostFilter succeeded.
    std::vector<std::string> victims = got.status.IsSuccess() ? Keys(got.victims) : std::vector<std::string>{};
    Diff(diffs, "postFilter.victims", List(*want.victims), List(victims));
  }
}

}  // namespace

absl::StatusOr<CaseResult> RunPreemptionCase(const Case& c) {
  const PreemptionInput& in = *c.preemption;
  const Expectations& e = c.expect;
  Setup s;
  KPLACE_RETURN_IF_ERROR(Build(c, &s));
  cycle::DryRunHost& host = *s.host;
  CaseResult result;
  std::vector<std::string>& diffs = result.diffs;
  cycle::PostFilterOptions options;
  options.args = c.args.default_preemption;
  const int32_t offset = in.offset.value_or(0);
  options.offset = [offset](int32_t n) { return offset % n; };
  options.node_order = AllNodes(host);

  if (in.entry == "PostFilter" || in.entry == "PreEnqueue") {
    std::vector<std::unique_ptr<TestExtender>> extenders;
    for (const PreemptionExtender& x : in.extenders) {
      extenders.push_back(std::make_unique<TestExtender>(x));
      options.extenders.push_back(extenders.back().get());
    }
    cycle::PostFilterResult got = cycle::PostFilter(host, c.pod, Statuses(in, host), c.objects.pdbs, options);
    if (e.post_filter) ComparePostFilter(*e.post_filter, got, &diffs);
    if (e.pre_enqueue) {
      std::set<std::string> preempting;
      if (got.status.IsSuccess() && in.victim_deletion == "pending") preempting.insert(c.pod.meta.uid);
      const Pod& check = in.check_pod ? *in.check_pod : c.pod;
      PluginStatus pe = cycle::PreEnqueue(check, c.gates.Enabled("SchedulerAsyncPreemption"), preempting);
      Diff(&diffs, "preEnqueue.code", CodeName(e.pre_enqueue->code), CodeName(pe.code));
      if (e.pre_enqueue->message) Diff(&diffs, "preEnqueue.message", *e.pre_enqueue->message, pe.Message());
    }
  } else if (in.entry == "DryRunPreemption" || in.entry == "SelectCandidate") {
    std::vector<int32_t> nodes = AllNodes(host);
    bool select = in.entry == "SelectCandidate";
    const std::vector<PodDisruptionBudget> none;
    cycle::DryRunResult dry = cycle::DryRunPreemption(host, c.pod, nodes, select ? none : c.objects.pdbs,
                                                      offset % std::max<int32_t>(1, host.NumNodes()),
                                                      cycle::NumCandidates(host.NumNodes(), options.args));
    if (e.candidates) {
      std::map<std::string, std::string> want, got;
      for (const auto& [node, ce] : *e.candidates) want[node] = StrCat(List(ce.victims), " pdbViolations=", ce.num_pdb_violations);
      for (const Candidate& cand : dry.candidates) {
        got[host.NodeAt(cand.node).meta.name] = StrCat(List(Keys(cand.victims)), " pdbViolations=", cand.num_pdb_violations);
      }
      std::set<std::string> names;
      for (const auto& [n, v] : want) names.insert(n);
      for (const auto& [n, v] : got) names.insert(n);
      for (const std::string& n : names) {
        Diff(&diffs, StrCat("candidates.", n), want.count(n) ? want[n] : "no candidate", got.count(n) ? got[n] : "no candidate");
      }
    }
    if (e.filter_calls) Diff(&diffs, "filterCalls", StrCat(*e.filter_calls), StrCat(host.filter_calls()));
    if (e.selected_node) {
      int32_t best = cycle::SelectCandidate(dry.candidates);
      std::string chosen = best < 0 ? "none" : host.NodeAt(dry.candidates[best].node).meta.name;
      if (std::find(e.selected_node->begin(), e.selected_node->end(), chosen) == e.selected_node->end()) {
        diffs.push_back(StrCat("selectedNode: expected one of ", List(*e.selected_node), ", got ", chosen));
      }
    }
  } else if (in.entry == "SelectVictimsOnNode") {
    Candidate cand;
    PluginStatus st = cycle::SelectVictimsOnNode(host, c.pod, host.IndexOf(in.node), c.objects.pdbs, &cand);
    if (e.victims_on_node) {
      Diff(&diffs, "victimsOnNode.code", CodeName(e.victims_on_node->code), CodeName(st.code));
      if (e.victims_on_node->victims && st.IsSuccess()) {
        Diff(&diffs, "victimsOnNode.victims", List(*e.victims_on_node->victims), List(Keys(cand.victims)));
      }
      if (e.victims_on_node->num_pdb_violations && st.IsSuccess()) {
        Diff(&diffs, "victimsOnNode.numPDBViolations", StrCat(*e.victims_on_node->num_pdb_violations),
             StrCat(cand.num_pdb_violations));
      }
    }
  } else if (in.entry == "PodEligibleToPreemptOthers") {
    std::optional<PluginStatus> nominated;
    if (in.nominated_node_status) nominated = ToStatus(*in.nominated_node_status);
    std::string why;
    bool eligible = cycle::PodEligibleToPreemptOthers(c.pod, nominated ? &*nominated : nullptr, host, &why);
    if (e.eligible) Diff(&diffs, "eligible", *e.eligible ? "true" : "false", eligible ? "true" : "false");
  } else if (in.entry == "NodesForStatusCode") {
    std::vector<std::string> got;
    for (int32_t i : cycle::NodesForStatusCode(Statuses(in, host), in.status_code, host, &options.node_order)) got.push_back(host.NodeAt(i).meta.name);
    std::sort(got.begin(), got.end());
    if (e.potential_nodes) Diff(&diffs, "potentialNodes", List(*e.potential_nodes), List(got));
  }
  result.outcome = diffs.empty() ? Outcome::kPass : Outcome::kFail;
  return result;
}

}  // namespace kplace::conform
