#include "kplace/cycle/queueing_hints.h"

#include <gtest/gtest.h>

#include <deque>
#include <utility>

#include "kplace/config/profile.h"
#include "tests/testing/differential.h"
#include "tests/testing/inter_pod_affinity_builders.h"
#include "tests/testing/pod_topology_spread_builders.h"
#include "tests/testing/taint_builders.h"

// Rows carry the meaning of upstream's hint tests (Test_isSchedulableAfterNodeChange,
// Test_isSchedulableAfterPodChange, TestIsSchedulableAfterPodDeleted, ... in each plugin's
// *_test.go), asked through the queue: the event is derived, matched against the
// rejectors' registrations and their hints run.
namespace kplace::cycle {
namespace {

using state::EventType;
using testing::MakeHostPort;
using testing::MakeNode;
using testing::MakePod;
using testing::MakePortPod;
using testing::MakeTaint;
using testing::MakeTaintedNode;
using testing::MakeTolerantPod;
using testing::MakeToleration;
using testing::Q;
namespace ipa = testing::ipa;

// Events point at copies kept for the whole run, so rows may name temporaries.
template <typename T>
const T* Keep(T object) {
  static std::deque<T> kept;
  kept.push_back(std::move(object));
  return &kept.back();
}
HintEvent NodeAdded(Node n) { return {EventType::kAdded, "Node", nullptr, Keep(std::move(n))}; }
HintEvent NodeUpdated(Node o, Node n) { return {EventType::kModified, "Node", Keep(std::move(o)), Keep(std::move(n))}; }
HintEvent NodeDeleted(Node o) { return {EventType::kDeleted, "Node", Keep(std::move(o)), nullptr}; }
HintEvent PodAdded(Pod p) { return {EventType::kAdded, "Pod", nullptr, nullptr, nullptr, Keep(std::move(p))}; }
HintEvent PodUpdated(Pod o, Pod n) {
  return {EventType::kModified, "Pod", nullptr, nullptr, Keep(std::move(o)), Keep(std::move(n))};
}
HintEvent PodDeleted(Pod o) { return {EventType::kDeleted, "Pod", nullptr, nullptr, Keep(std::move(o)), nullptr}; }
HintEvent Other(EventType type, const std::string& kind) { return {type, kind}; }

struct Row {
  const char* name;
  HintEvent event;
  bool want;
};

void ExpectRows(const Pod& pod, const std::vector<std::string>& rejectors, const std::vector<Row>& rows,
                const Profile& profile = DefaultProfile(), const FeatureGates& gates = {}) {
  for (const Row& r : rows) {
    EXPECT_EQ(IsPodWorthRequeuing(pod, rejectors, r.event, profile, gates), r.want) << r.name;
  }
}

Pod Bound(Pod p, const std::string& node) {
  p.node_name = node;
  return p;
}

Pod WithLabels(Pod p, Labels labels) {
  p.meta.labels = std::move(labels);
  return p;
}

// ---- derivation -------------------------------------------------------------------------

using Derived = std::vector<std::pair<EventResource, ActionType>>;

Derived Derive(const Pod& pod, const HintEvent& e) {
  Derived out;
  for (const QueueEvent& q : DeriveQueueEvents(pod, e, FeatureGates{})) out.emplace_back(q.resource, q.actions);
  return out;
}

struct DeriveRow {
  const char* name;
  HintEvent event;
  Derived want;
};

void ExpectDerived(const Pod& pod, const std::vector<DeriveRow>& rows) {
  for (const DeriveRow& r : rows) EXPECT_EQ(Derive(pod, r.event), r.want) << r.name;
}

TEST(QueueingHintsTest, NodeUpdatesBecomeOneEventPerChangedProperty) {
  using R = EventResource;
  const Pod pod = MakePod("p", {{"cpu", "1"}});
  const Node base = MakeNode("n", {{"cpu", "2"}}, {{"zone", "a"}});
  Node more_cpu = base;
  more_cpu.allocatable["cpu"] = Q("4");
  Node relabeled = base;
  relabeled.meta.labels["zone"] = "b";
  Node tainted = base;
  tainted.taints = {MakeTaint("k", "v", "NoSchedule")};
  Node cordoned = base;
  cordoned.unschedulable = true;
  Node annotated = base;
  annotated.meta.annotations["a"] = "1";
  Node both = more_cpu;
  both.meta.labels["zone"] = "b";

  ExpectDerived(
      pod,
      {
          {"add", NodeAdded(base), {{R::kNode, action::kAdd}}},
          {"delete", NodeDeleted(base), {{R::kNode, action::kDelete}}},
          {"allocatable", NodeUpdated(base, more_cpu), {{R::kNode, action::kUpdateNodeAllocatable}}},
          {"labels", NodeUpdated(base, relabeled), {{R::kNode, action::kUpdateNodeLabel}}},
          {"taints", NodeUpdated(base, tainted), {{R::kNode, action::kUpdateNodeTaint}}},
          {"uncordon counts as a taint change", NodeUpdated(cordoned, base), {{R::kNode, action::kUpdateNodeTaint}}},
          {"cordon gives nothing", NodeUpdated(base, cordoned), {}},
          {"annotations", NodeUpdated(base, annotated), {{R::kNode, action::kUpdateNodeAnnotation}}},
          {"nothing read changed", NodeUpdated(base, base), {}},
          {"update of a node not known yet: an add",
           {EventType::kModified, "Node", nullptr, Keep(base)},
           {{R::kNode, action::kAdd}}},
          {"two properties, upstream's order",
           NodeUpdated(base, both),
           {{R::kNode, action::kUpdateNodeAllocatable}, {R::kNode, action::kUpdateNodeLabel}}},
      });
}

TEST(QueueingHintsTest, PodEventsSplitIntoAssignedAndTargetPod) {
  using R = EventResource;
  Pod target = MakePod("target", {{"cpu", "1"}});
  target.priority = 10;
  const Pod assigned = Bound(MakePod("a", {{"cpu", "2"}}), "n");
  const Pod assigned_relabeled = WithLabels(assigned, {{"app", "x"}});
  Pod assigned_smaller = assigned;
  assigned_smaller.containers[0].requests["cpu"] = Q("1");
  Pod assigned_annotated = assigned;
  assigned_annotated.meta.annotations["a"] = "1";

  Pod target_tolerating = target;
  target_tolerating.tolerations = {MakeToleration("k", "Exists", "", "")};
  Pod target_gated = target;
  target_gated.scheduling_gates = {"g1", "g2"};
  Pod target_one_gate = target;
  target_one_gate.scheduling_gates = {"g2"};
  const Pod target_relabeled = WithLabels(target, {{"app", "x"}});

  Pod other = MakePod("other", {{"cpu", "1"}});
  const Pod other_relabeled = WithLabels(other, {{"app", "x"}});
  Pod other_nominated = other;
  other_nominated.nominated_node_name = "n";
  other_nominated.priority = 10;
  Pod other_nominated_low = other_nominated;
  other_nominated_low.priority = 5;
  Pod other_renominated = other_nominated;
  other_renominated.nominated_node_name = "m";
  const Pod other_bound = Bound(other, "n");
  Pod target_uid = target;
  target_uid.meta.uid = "u1";
  Pod recreated = WithLabels(target, {{"app", "x"}});
  recreated.meta.uid = "u2";
  Pod recreated_old = target;
  recreated_old.meta.uid = "u2";

  ExpectDerived(
      target,
      {
          {"assigned pod added", PodAdded(assigned), {{R::kAssignedPod, action::kAdd}}},
          {"assigned pod deleted", PodDeleted(assigned), {{R::kAssignedPod, action::kDelete}}},
          {"assigned pod labels",
           PodUpdated(assigned, assigned_relabeled),
           {{R::kAssignedPod, action::kUpdatePodLabel}}},
          {"assigned pod scaled down",
           PodUpdated(assigned, assigned_smaller),
           {{R::kAssignedPod, action::kUpdatePodScaleDown}}},
          {"assigned pod scaled up is a general update",
           PodUpdated(assigned_smaller, assigned),
           {{R::kAssignedPod, action::kUpdate}}},
          {"assigned pod annotation: general update",
           PodUpdated(assigned, assigned_annotated),
           {{R::kAssignedPod, action::kUpdate}}},
          {"own toleration added",
           PodUpdated(target, target_tolerating),
           {{R::kTargetPod, action::kUpdatePodToleration}}},
          {"own gates eliminated",
           PodUpdated(target_one_gate, target),
           {{R::kTargetPod, action::kUpdatePodSchedulingGatesEliminated}}},
          {"own gate removed, one left: general update",
           PodUpdated(target_gated, target_one_gate),
           {{R::kTargetPod, action::kUpdate}}},
          {"own labels", PodUpdated(target, target_relabeled), {{R::kTargetPod, action::kUpdatePodLabel}}},
          {"own delete: the pod leaves", PodDeleted(target), {}},
          {"another pending pod added", PodAdded(other), {}},
          {"another pending pod updated", PodUpdated(other, other_relabeled), {}},
          {"another pending pod deleted", PodDeleted(other), {}},
          {"a nominated pod of equal priority deleted",
           PodDeleted(other_nominated),
           {{R::kAssignedPod, action::kDelete}}},
          {"a nominated pod of lower priority deleted", PodDeleted(other_nominated_low), {}},
          {"a nomination moved", PodUpdated(other_nominated, other_renominated), {{R::kAssignedPod, action::kDelete}}},
          {"a pending pod bound", PodUpdated(other, other_bound), {{R::kAssignedPod, action::kAdd}}},
          {"a pod seen bound, no old version",
           {EventType::kModified, "Pod", nullptr, nullptr, nullptr, Keep(other_bound)},
           {{R::kAssignedPod, action::kAdd}}},
          {"PVC added", Other(EventType::kAdded, "PersistentVolumeClaim"), {{R::kPersistentVolumeClaim, action::kAdd}}},
          {"StorageClass updated", Other(EventType::kModified, "StorageClass"), {{R::kStorageClass, action::kUpdate}}},
          {"Namespace: no informer", Other(EventType::kAdded, "Namespace"), {}},
          {"Service: no informer", Other(EventType::kModified, "Service"), {}},
      });
  // Same name, another UID: a recreated pod is another pending pod.
  EXPECT_EQ(Derive(target_uid, PodUpdated(recreated_old, recreated)), Derived{});
  EXPECT_EQ(Derive(target_uid, PodUpdated(target_uid, WithLabels(target_uid, {{"app", "x"}}))),
            (Derived{{R::kTargetPod, action::kUpdatePodLabel}}));
}

// ---- combination rules -------------------------------------------------------------------

TEST(QueueingHintsTest, CombinationRules) {
  const Pod pod = MakeTolerantPod("p", {});
  const Node roomy = MakeNode("roomy", {{"cpu", "4"}, {"pods", "10"}});
  Node roomy_relabeled = roomy;
  roomy_relabeled.meta.labels["x"] = "y";
  Node roomy_tainted = roomy;
  roomy_tainted.taints = {MakeTaint("dedicated", "gpu", "NoSchedule")};
  const Pod assigned = Bound(MakePod("a", {}), "roomy");

  // No rejectors (the last attempt failed with an error): any event the queue acts on.
  EXPECT_TRUE(IsPodWorthRequeuing(pod, {}, NodeAdded(roomy), DefaultProfile(), {}));
  EXPECT_TRUE(IsPodWorthRequeuing(pod, {}, NodeUpdated(roomy, roomy_relabeled), DefaultProfile(), {}));
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {}, NodeUpdated(roomy, roomy), DefaultProfile(), {}));
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {}, Other(EventType::kAdded, "Namespace"), DefaultProfile(), {}));
  // A profile without PodTopologySpread/InterPodAffinity has nothing for a label update of
  // an assigned pod (its general Update reaches no registration).
  Pod relabeled_assigned = WithLabels(assigned, {{"app", "x"}});
  EXPECT_TRUE(IsPodWorthRequeuing(pod, {}, PodUpdated(assigned, relabeled_assigned), DefaultProfile(), {}));
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {}, PodUpdated(assigned, relabeled_assigned),
                                   SinglePluginsProfile({"NodeResourcesFit"}), {}));

  // A rejector that does not register for the event: no requeue.
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {"NodeName"}, PodDeleted(assigned), DefaultProfile(), {}));
  // Score-only plugins register nothing.
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {"ImageLocality"}, NodeAdded(roomy), DefaultProfile(), {}));
  // Two rejectors: one Queue is enough; both Skip is not.
  const Pod big = MakePod("big", {{"cpu", "8"}});
  EXPECT_TRUE(IsPodWorthRequeuing(pod, {"TaintToleration", "NodeResourcesFit"}, NodeAdded(roomy_tainted),
                                  DefaultProfile(), {}));
  EXPECT_FALSE(IsPodWorthRequeuing(big, {"TaintToleration", "NodeResourcesFit"}, NodeAdded(roomy_tainted),
                                   DefaultProfile(), {}));
  // Plugins kplace cannot evaluate register every event, always Queue.
  EXPECT_TRUE(
      IsPodWorthRequeuing(pod, {"DynamicResources"}, NodeUpdated(roomy, roomy_relabeled), DefaultProfile(), {}));
  EXPECT_TRUE(
      IsPodWorthRequeuing(pod, {"MyOutOfTreePlugin"}, PodUpdated(assigned, relabeled_assigned), DefaultProfile(), {}));
  // DefaultPreemption's PreEnqueue hint skips deletions.
  EXPECT_FALSE(IsPodWorthRequeuing(pod, {"DefaultPreemption"}, PodDeleted(assigned), DefaultProfile(), {}));
}

TEST(QueueingHintsTest, AHintThatWouldFailQueues) {
  // An unparsable affinity selector: upstream's hint returns an error, read as Queue, even
  // for an added pod that matches nothing.
  Pod pod = MakePod("p", {});
  ipa::RequireAffinity(pod, ipa::Term(ipa::Sel({ipa::Req("app", "Bogus", {"x"})}), "zone"));
  const Pod unrelated = Bound(WithLabels(MakePod("u", {}), {{"other", "1"}}), "n");
  EXPECT_TRUE(IsPodWorthRequeuing(pod, {"InterPodAffinity"}, PodAdded(unrelated), DefaultProfile(), {}));
}

TEST(QueueingHintsTest, GatedPodsMoveOnlyWhenTheirGatesAreGone) {
  Pod gated = MakePod("g", {});
  gated.scheduling_gates = {"a", "b"};
  Pod one_gate = gated;
  one_gate.scheduling_gates = {"b"};
  Pod open = gated;
  open.scheduling_gates.clear();
  const Node node = MakeNode("n", {{"cpu", "4"}, {"pods", "10"}});
  const std::vector<std::string> gates = {"SchedulingGates"};
  ExpectRows(gated, gates,
             {
                 {"a cluster event never reaches a gated pod", NodeAdded(node), false},
                 {"one gate of two removed: still gated", PodUpdated(gated, one_gate), false},
             });
  ExpectRows(one_gate, gates, {{"last gate removed", PodUpdated(one_gate, open), true}});
  // Whatever the rejectors, a pod still gated after its update is gated again.
  EXPECT_FALSE(IsPodWorthRequeuing(gated, {}, PodUpdated(gated, one_gate), DefaultProfile(), {}));
}

TEST(QueueingHintsTest, NodeAddedWithoutTaintUpdateGetsTheTaintWorkaround) {
  // buildQueueingHintMap adds Node/UpdateNodeTaint (always Queue) to plugins that register
  // Node/Add without it: a taint change retries NodeAffinity's pod even though it cannot
  // change that plugin's verdict; a label change that does not make it match does not.
  Pod pod = MakePod("p", {});
  pod.node_selector = {{"zone", "a"}};
  const Node b = MakeNode("n", {}, {{"zone", "b"}});
  Node b_tainted = b;
  b_tainted.taints = {MakeTaint("k", "", "NoSchedule")};
  Node b_relabeled = b;
  b_relabeled.meta.labels["rack"] = "1";
  ExpectRows(pod, {"NodeAffinity"},
             {
                 {"taint added", NodeUpdated(b, b_tainted), true},
                 {"unrelated label", NodeUpdated(b, b_relabeled), false},
             });
  // NodeUnschedulable registers taint updates itself: no workaround, its own hint decides.
  ExpectRows(MakePod("q", {}), {"NodeUnschedulable"}, {{"taint added", NodeUpdated(b, b_tainted), false}});
}

// ---- per plugin ----------------------------------------------------------------------------

TEST(QueueingHintsTest, NodeResourcesFit) {
  const Pod pod = MakePod("p", {{"cpu", "2"}});
  const Node small = MakeNode("small", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "10"}});
  const Node big = MakeNode("big", {{"cpu", "4"}, {"memory", "1Gi"}, {"pods", "10"}});
  Node bigger = big;
  bigger.allocatable["cpu"] = Q("8");
  Node big_more_memory = big;
  big_more_memory.allocatable["memory"] = Q("2Gi");
  Node big_more_pods = big;
  big_more_pods.allocatable["pods"] = Q("20");
  Node small_more_cpu = small;
  small_more_cpu.allocatable["cpu"] = Q("1500m");
  Node big_relabeled = big;
  big_relabeled.meta.labels["x"] = "y";
  Node big_tainted = big;
  big_tainted.taints = {MakeTaint("k", "", "NoSchedule")};

  const Pod assigned = Bound(MakePod("a", {{"cpu", "2"}, {"memory", "1Gi"}}), "big");
  Pod assigned_less_cpu = assigned;
  assigned_less_cpu.containers[0].requests["cpu"] = Q("1");
  Pod assigned_less_memory = assigned;
  assigned_less_memory.containers[0].requests["memory"] = Q("512Mi");
  Pod pending = MakePod("other", {{"cpu", "2"}});
  Pod pending_nominated = pending;
  pending_nominated.nominated_node_name = "big";
  Pod pod_smaller = pod;
  pod_smaller.containers[0].requests["cpu"] = Q("1");

  ExpectRows(pod, {"NodeResourcesFit"},
             {
                 {"queue-on-node-add", NodeAdded(big), true},
                 {"skip-queue-on-node-add-insufficient", NodeAdded(small), false},
                 {"queue-on-node-changes (cpu grew)", NodeUpdated(big, bigger), true},
                 {"queue-on-node-changes (pods grew)", NodeUpdated(big, big_more_pods), true},
                 {"skip-queue-on-node-unrelated-changes (memory grew)", NodeUpdated(big, big_more_memory), false},
                 {"skip: cpu grew, still too small", NodeUpdated(small, small_more_cpu), false},
                 {"skip: label change is not registered", NodeUpdated(big, big_relabeled), false},
                 {"queue: taint change (the Node/Add workaround)", NodeUpdated(big, big_tainted), true},
                 {"skip: node delete is not registered", NodeDeleted(big), false},
                 {"queue-on-deleted-assigned-pod", PodDeleted(assigned), true},
                 {"skip-on-deleted-unscheduled-pod", PodDeleted(pending), false},
                 {"queue-on-deleted-nominated-pod", PodDeleted(pending_nominated), true},
                 {"queue-on-assigned-pod-scale-down (cpu)", PodUpdated(assigned, assigned_less_cpu), true},
                 {"skip-on-scale-down of a resource the pod does not request",
                  PodUpdated(assigned, assigned_less_memory), false},
                 {"queue-on-target-pod-scale-down", PodUpdated(pod, pod_smaller), true},
                 {"skip-on-assigned-pod-scale-up", PodUpdated(assigned_less_cpu, assigned), false},
             });
  // Without InPlacePodVerticalScaling no scale-down is registered.
  FeatureGates off;
  off.overrides["InPlacePodVerticalScaling"] = false;
  ExpectRows(pod, {"NodeResourcesFit"},
             {
                 {"scale down ignored", PodUpdated(assigned, assigned_less_cpu), false},
                 {"own scale down ignored", PodUpdated(pod, pod_smaller), false},
             },
             DefaultProfile(), off);
}

TEST(QueueingHintsTest, NodeAffinity) {
  Pod pod = MakePod("p", {});
  pod.affinity.emplace().node_affinity.emplace().required =
      NodeSelector{{NodeSelectorTerm{{NodeSelectorRequirement{"foo", "In", {"bar"}}}, {}}}};
  const Node unmatched = MakeNode("n", {}, {{"other", "x"}});
  const Node matched = MakeNode("n", {}, {{"foo", "bar"}});
  Node matched_relabeled = matched;
  matched_relabeled.meta.labels["extra"] = "1";
  ExpectRows(pod, {"NodeAffinity"},
             {
                 {"queue-on-add", NodeAdded(matched), true},
                 {"skip-unrelated-changes (add, no match)", NodeAdded(unmatched), false},
                 {"queue-on-labels-change-makes-pod-schedulable", NodeUpdated(unmatched, matched), true},
                 {"skip-labels-changes-on-suitable-node", NodeUpdated(matched, matched_relabeled), false},
                 {"skip-labels-changes-on-node-from-suitable-to-unsuitable", NodeUpdated(matched, unmatched), false},
             });

  Profile enforced = DefaultProfile();
  enforced.args.node_affinity.added_affinity.emplace().required =
      NodeSelector{{NodeSelectorTerm{{NodeSelectorRequirement{"zone", "In", {"a"}}}, {}}}};
  Node matched_zone_a = matched;
  matched_zone_a.meta.labels["zone"] = "a";
  ExpectRows(pod, {"NodeAffinity"},
             {
                 {"skip-queue-on-add-scheduler-enforced-node-affinity", NodeAdded(matched), false},
                 {"queue-on-add-scheduler-enforced-node-affinity", NodeAdded(matched_zone_a), true},
             },
             enforced);
}

TEST(QueueingHintsTest, NodeNameAndNodePorts) {
  const Node node = MakeNode("n", {{"pods", "10"}});
  Node relabeled = node;
  relabeled.meta.labels["x"] = "y";
  ExpectRows(MakePod("p", {}), {"NodeName"},
             {
                 {"node added: no hint, Queue", NodeAdded(node), true},
                 {"label change: not registered", NodeUpdated(node, relabeled), false},
             });

  const Pod pod = MakePortPod("p", {MakeHostPort(8080)});
  ExpectRows(pod, {"NodePorts"},
             {
                 {"deleted pod held the same port", PodDeleted(MakePortPod("a", {MakeHostPort(8080)}, "n")), true},
                 {"deleted pod held another port", PodDeleted(MakePortPod("a", {MakeHostPort(9090)}, "n")), false},
                 {"same port, other protocol", PodDeleted(MakePortPod("a", {MakeHostPort(8080, "UDP")}, "n")), false},
                 {"deleted pod had no ports", PodDeleted(MakePod("a", {}, "n")), false},
                 {"deleted pod was unscheduled", PodDeleted(MakePortPod("a", {MakeHostPort(8080)})), false},
                 {"node added", NodeAdded(node), true},
             });
}

TEST(QueueingHintsTest, NodeUnschedulable) {
  const Node schedulable = MakeTaintedNode("n", {});
  const Node cordoned = MakeTaintedNode("n", {}, /*unschedulable=*/true);
  Node cordoned_relabeled = cordoned;
  cordoned_relabeled.meta.labels["x"] = "y";
  const Pod pod = MakeTolerantPod("p", {});
  Pod tolerates_cordon = pod;
  tolerates_cordon.tolerations = {MakeToleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")};
  Pod unrelated_toleration = pod;
  unrelated_toleration.tolerations = {MakeToleration("other", "Exists", "", "NoSchedule")};
  ExpectRows(pod, {"NodeUnschedulable"},
             {
                 {"schedulable node added", NodeAdded(schedulable), true},
                 {"unschedulable node added", NodeAdded(cordoned), false},
                 {"node uncordoned", NodeUpdated(cordoned, schedulable), true},
                 {"still unschedulable", NodeUpdated(cordoned, cordoned_relabeled), false},
                 {"toleration of the cordon added", PodUpdated(pod, tolerates_cordon), true},
                 {"unrelated toleration added", PodUpdated(pod, unrelated_toleration), false},
             });
}

TEST(QueueingHintsTest, TaintToleration) {
  const Pod pod = MakeTolerantPod("p", {MakeToleration("foo", "Equal", "bar", "NoSchedule")});
  const Node tolerated = MakeTaintedNode("n", {MakeTaint("foo", "bar", "NoSchedule")});
  const Node untolerated = MakeTaintedNode("n", {MakeTaint("foo", "baz", "NoSchedule")});
  const Node untolerated_too = MakeTaintedNode("n", {MakeTaint("foo", "qux", "NoExecute")});
  const Node prefer_only =
      MakeTaintedNode("n", {MakeTaint("foo", "bar", "NoSchedule"), MakeTaint("x", "", "PreferNoSchedule")});
  Pod more_tolerant = pod;
  more_tolerant.tolerations.push_back(MakeToleration("foo", "Exists", "", ""));
  Pod pod_annotated = pod;
  pod_annotated.meta.annotations["a"] = "1";
  Pod other = MakeTolerantPod("other", {});
  Pod other_tolerant = other;
  other_tolerant.tolerations = {MakeToleration("foo", "Exists", "", "")};
  ExpectRows(pod, {"TaintToleration"},
             {
                 {"node added with a tolerated taint", NodeAdded(tolerated), true},
                 {"node added with an untolerated taint", NodeAdded(untolerated), false},
                 {"taint changed to a tolerated one", NodeUpdated(untolerated, tolerated), true},
                 {"taint changed, still untolerated", NodeUpdated(untolerated, untolerated_too), false},
                 {"tolerated before and after", NodeUpdated(tolerated, prefer_only), false},
                 {"the pod got a toleration", PodUpdated(pod, more_tolerant), true},
                 {"another pending pod got a toleration", PodUpdated(other, other_tolerant), false},
                 // A general Update shares bits with UpdatePodToleration but is larger: no match.
                 {"the pod's own annotation changed", PodUpdated(pod, pod_annotated), false},
             });
}

TEST(QueueingHintsTest, InterPodAffinity) {
  Pod pod = MakePod("p", {});
  ipa::RequireAffinity(pod, ipa::Term(testing::MatchLabels({{"service", "securityscan"}}), "zone"));
  ipa::RequireAnti(pod, ipa::Term(testing::MatchLabels({{"aaa", "a"}}), "hostname"));
  const Pod matching = Bound(WithLabels(MakePod("m", {}), {{"service", "securityscan"}}), "n");
  const Pod plain = Bound(WithLabels(MakePod("m", {}), {{"service", "other"}}), "n");
  const Pod matching_too = WithLabels(matching, {{"service", "securityscan"}, {"extra", "1"}});
  const Pod anti = Bound(WithLabels(MakePod("x", {}), {{"aaa", "a"}}), "n");
  const Pod not_anti = WithLabels(anti, {{"aaa", "b"}});
  Pod other_namespace = matching;
  other_namespace.meta.namespace_ = "elsewhere";
  ExpectRows(
      pod, {"InterPodAffinity"},
      {
          {"add a pod which matches the pod affinity", PodAdded(matching), true},
          {"add an un-scheduled pod", PodAdded(WithLabels(MakePod("u", {}), {{"service", "securityscan"}})), false},
          {"add a pod in another namespace", PodAdded(other_namespace), false},
          {"update a pod from non-match to match pod affinity", PodUpdated(plain, matching), true},
          {"matches both before and after the label change", PodUpdated(matching, matching_too), false},
          {"update a pod from match to non-match the pod affinity", PodUpdated(matching, plain), false},
          {"update a pod from match to non-match pod's anti-affinity", PodUpdated(anti, not_anti), true},
          {"update a pod from non-match to match pod's anti-affinity", PodUpdated(not_anti, anti), false},
          {"delete a pod which doesn't match pod's anti-affinity", PodDeleted(not_anti), false},
          {"delete a pod which matches pod's anti-affinity", PodDeleted(anti), true},
      });
  const Node with_zone = MakeNode("n", {}, {{"zone", "z1"}});
  const Node without_keys = MakeNode("n", {}, {{"rack", "r1"}});
  Node with_zone_relabeled = with_zone;
  with_zone_relabeled.meta.labels["rack"] = "r2";
  Node without_keys_relabeled = without_keys;
  without_keys_relabeled.meta.labels["rack"] = "r2";
  Node with_hostname = without_keys;
  with_hostname.meta.labels["hostname"] = "h";
  ExpectRows(pod, {"InterPodAffinity"},
             {
                 {"add a new node with matched pod affinity topologyKey", NodeAdded(with_zone), true},
                 {"add a new node without matched topologyKey", NodeAdded(without_keys), false},
                 {"update node topologyKey (anti-affinity key)", NodeUpdated(without_keys, with_hostname), true},
                 {"update node label but not topologyKey", NodeUpdated(without_keys, without_keys_relabeled), false},
                 {"label change on a node carrying a key", NodeUpdated(with_zone, with_zone_relabeled), true},
             });
}

TEST(QueueingHintsTest, PodTopologySpreadNodeChanges) {
  using testing::HardSpread;
  using testing::MatchLabels;
  Pod pod = testing::SpreadPod("p", {{"foo", ""}});
  pod.topology_spread_constraints = {HardSpread(1, "zone", MatchLabels({{"foo", ""}})),
                                     HardSpread(1, "node", MatchLabels({{"foo", ""}}))};
  const Node both = testing::SpreadNode("n", {{"zone", "zone1"}, {"node", "node1"}});
  const Node zone_only = testing::SpreadNode("n", {{"zone", "zone1"}});
  const Node unrelated = testing::SpreadNode("n", {{"foo", "bar"}});
  Node both_moved = both;
  both_moved.meta.labels["zone"] = "zone2";
  Node both_extra = both;
  both_extra.meta.labels["extra"] = "1";
  Node unrelated_changed = unrelated;
  unrelated_changed.meta.labels["foo"] = "baz";
  Node both_tainted = both;
  both_tainted.taints = {MakeTaint("k", "", "NoSchedule")};
  Node zone_only_tainted = zone_only;
  zone_only_tainted.taints = {MakeTaint("k", "", "NoSchedule")};
  Node zone_only_moved = zone_only;
  zone_only_moved.meta.labels["zone"] = "zone2";
  ExpectRows(
      pod, {"PodTopologySpread"},
      {
          {"node updates label which matches topologyKey", NodeUpdated(both, both_moved), true},
          {"node that doesn't match updates non-related label", NodeUpdated(unrelated, unrelated_changed), false},
          {"node that matches adds non-related label", NodeUpdated(both, both_extra), false},
          {"create node with non-related labels", NodeAdded(unrelated), false},
          {"create node with related labels", NodeAdded(both), true},
          {"delete node with non-related labels", NodeDeleted(unrelated), false},
          {"delete node with related labels", NodeDeleted(both), true},
          {"add node that matches only one constraint's key", NodeAdded(zone_only), false},
          {"update node matching only one constraint's key", NodeUpdated(zone_only, zone_only_moved), false},
          {"different taints on a node matching all constraints", NodeUpdated(both, both_tainted), true},
          {"different taints on a node matching one constraint", NodeUpdated(zone_only, zone_only_tainted), false},
          {"node gains the missing key", NodeUpdated(zone_only, both), true},
      });
}

TEST(QueueingHintsTest, PodTopologySpreadPodChanges) {
  using testing::HardSpread;
  using testing::MatchExpression;
  using testing::SpreadPod;
  Pod pod = SpreadPod("p", {{"foo", ""}});
  pod.topology_spread_constraints = {HardSpread(1, "zone", MatchExpression("foo", "Exists"))};
  const Pod matching = SpreadPod("a", {{"foo", ""}}, "n");
  const Pod plain = SpreadPod("a", {{"bar", ""}}, "n");
  const Pod matching_changed = SpreadPod("a", {{"foo", "v"}}, "n");
  const Pod plain_changed = SpreadPod("a", {{"bar", "v"}}, "n");
  const Pod matching_extra = SpreadPod("a", {{"foo", ""}, {"baz", ""}}, "n");
  ExpectRows(
      pod, {"PodTopologySpread"},
      {
          {"add pod with labels match topologySpreadConstraints selector", PodAdded(matching), true},
          {"add un-scheduled pod", PodAdded(SpreadPod("u", {{"foo", ""}})), false},
          {"update un-scheduled pod", PodUpdated(SpreadPod("u", {{"foo", ""}}), SpreadPod("u", {{"bar", ""}})), false},
          {"delete un-scheduled pod", PodDeleted(SpreadPod("u", {{"foo", ""}})), false},
          {"add pod with different namespace", PodAdded(SpreadPod("a", {{"foo", ""}}, "n", "ns2")), false},
          {"add pod with labels don't match", PodAdded(plain), false},
          {"delete pod with labels that match", PodDeleted(matching), true},
          {"delete pod with labels that don't match", PodDeleted(plain), false},
          {"update pod's non-related label", PodUpdated(matching, matching_extra), false},
          {"add pod's label that matches the selector", PodUpdated(plain, matching), true},
          {"delete pod label that matches the selector", PodUpdated(matching, plain), true},
          {"change pod's label that matches the selector", PodUpdated(matching, matching_changed), false},
          {"change pod's label that doesn't match the selector", PodUpdated(plain, plain_changed), false},
      });

  // Two constraints: any selector whose verdict flips.
  Pod two = pod;
  two.topology_spread_constraints.push_back(HardSpread(1, "node", MatchExpression("bar", "Exists")));
  ExpectRows(two, {"PodTopologySpread"},
             {
                 {"add pod's label that matches the second constraint",
                  PodUpdated(matching, SpreadPod("a", {{"foo", ""}, {"bar", ""}}, "n")), true},
                 {"non-related label added", PodUpdated(matching, matching_extra), false},
                 {"label moves from one selector to the other", PodUpdated(matching, plain), true},
                 {"value change that flips no selector", PodUpdated(plain, plain_changed), false},
             });

  // The pod's own update: a new toleration counts only with NodeTaintsPolicy: Honor.
  Pod honor = pod;
  honor.topology_spread_constraints[0].node_taints_policy = "Honor";
  Pod honor_tolerant = honor;
  honor_tolerant.tolerations = {MakeToleration("k", "Exists", "", "")};
  Pod ignore_tolerant = pod;
  ignore_tolerant.tolerations = {MakeToleration("k", "Exists", "", "")};
  ExpectRows(honor, {"PodTopologySpread"},
             {{"NodeTaintsPolicy Honor, new toleration", PodUpdated(honor, honor_tolerant), true}});
  ExpectRows(pod, {"PodTopologySpread"},
             {
                 {"NodeTaintsPolicy Ignore, new toleration", PodUpdated(pod, ignore_tolerant), false},
                 {"own label leaves the selector", PodUpdated(pod, WithLabels(pod, {{"bar", ""}})), true},
             });
}

TEST(QueueingHintsTest, VolumePlugins) {
  auto with_volume = [](Pod p, const std::string& source, const std::string& id, const std::string& claim = "") {
    Volume v;
    v.name = "v";
    v.source = source;
    v.disk_id = id;
    v.claim_name = claim;
    p.volumes.push_back(v);
    return p;
  };
  const Pod disk_pod = with_volume(MakePod("p", {}), "gcePersistentDisk", "pd-1");
  const Pod same_disk = with_volume(MakePod("a", {}, "n"), "gcePersistentDisk", "pd-1");
  const Pod other_disk = with_volume(MakePod("a", {}, "n"), "gcePersistentDisk", "pd-2");
  Pod same_disk_elsewhere = same_disk;
  same_disk_elsewhere.meta.namespace_ = "ns2";
  const Pod claim_pod = with_volume(MakePod("p", {}), "persistentVolumeClaim", "", "data");
  const Pod same_claim = with_volume(MakePod("a", {}, "n"), "persistentVolumeClaim", "", "data");
  const Pod scratch = with_volume(MakePod("a", {}, "n"), "emptyDir", "");
  const Node node = MakeNode("n", {}, {{"zone", "a"}});
  Node relabeled = node;
  relabeled.meta.labels["zone"] = "b";
  Node more_cpu = node;
  more_cpu.allocatable["cpu"] = Q("4");

  ExpectRows(disk_pod, {"VolumeRestrictions"},
             {
                 {"deleted pod used the same disk", PodDeleted(same_disk), true},
                 {"deleted pod used another disk", PodDeleted(other_disk), false},
                 {"deleted pod in another namespace", PodDeleted(same_disk_elsewhere), false},
                 {"node added", NodeAdded(node), true},
                 {"PVC added (not decidable here)", Other(EventType::kAdded, "PersistentVolumeClaim"), true},
                 {"PVC updated: not registered", Other(EventType::kModified, "PersistentVolumeClaim"), false},
             });
  ExpectRows(claim_pod, {"VolumeRestrictions"}, {{"deleted pod used the same claim", PodDeleted(same_claim), true}});

  ExpectRows(claim_pod, {"NodeVolumeLimits"},
             {
                 {"deleted pod had a claim", PodDeleted(same_claim), true},
                 {"deleted pod had only an emptyDir", PodDeleted(scratch), false},
                 {"deleted pod had no volumes", PodDeleted(MakePod("a", {}, "n")), false},
                 {"CSINode added", Other(EventType::kAdded, "CSINode"), true},
                 {"VolumeAttachment deleted", Other(EventType::kDeleted, "VolumeAttachment"), true},
                 {"node added: not registered", NodeAdded(node), false},
             });

  ExpectRows(claim_pod, {"VolumeBinding"},
             {
                 {"node label change", NodeUpdated(node, relabeled), true},
                 {"node allocatable change: not registered", NodeUpdated(node, more_cpu), false},
                 {"PV added", Other(EventType::kAdded, "PersistentVolume"), true},
                 {"CSIDriver added: only updates registered", Other(EventType::kAdded, "CSIDriver"), false},
                 {"Namespace", Other(EventType::kAdded, "Namespace"), false},
             });

  ExpectRows(
      claim_pod, {"VolumeZone"},
      {
          {"StorageClass added", Other(EventType::kAdded, "StorageClass"), true},
          {"StorageClass updated: binding mode is immutable", Other(EventType::kModified, "StorageClass"), false},
          {"PV updated", Other(EventType::kModified, "PersistentVolume"), true},
      });
}

}  // namespace
}  // namespace kplace::cycle
