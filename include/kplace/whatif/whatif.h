#pragma once
// What-if questions that batch schedulers and autoscalers ask, answered by the scheduler's
// own cycle on its live state inside a transaction that is reverted: the state is left as
// it was (objects, node order, start index), and each answer is what the plain cycle decides
// on the equivalent cluster (docs/whatif.md).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::whatif {

/** Whether draining its node evicts `pod`: not owned by a DaemonSet, not a mirror pod
 *  (kubernetes.io/config.mirror), not completed (Succeeded or Failed), not terminating
 *  already. Such pods go with the node instead. */
bool Evicted(const Pod& pod);

/** A PodDisruptionBudget that evicting the pods would take below its allowance. */
struct PdbViolation {
  std::string pdb;        // namespace/name
  int32_t evicted = 0;    // evicted pods it selects (not already in status.disruptedPods)
  int32_t allowed = 0;    // its status.disruptionsAllowed
};

struct DrainResult {
  std::vector<std::string> nodes;      // the drained nodes, as asked
  /** Every evicted pod placed on another node without preempting anything, and no
   *  PodDisruptionBudget violated. */
  bool drainable = false;
  std::vector<cycle::Placement> pods;  // the evicted pods in queue order, each its last attempt
  std::vector<PdbViolation> pdb_violations;
};

/** @brief Deletes `nodes` with every pod on them, then schedules the pods a drain evicts
 *  (Evicted; spec.nodeName and status.nominatedNodeName cleared) with ScheduleAll: queue
 *  order, the full cycle, DefaultPreemption included. Reverted afterwards (it nests in an
 *  open transaction). InvalidArgument for an unknown or repeated node. */
absl::StatusOr<DrainResult> Drain(cycle::Scheduler* scheduler, const std::vector<std::string>& nodes);

/** @brief Drain of each candidate on its own, against the otherwise unchanged state: which
 *  nodes can go and where their pods would land. `candidates` empty: every node, in
 *  node-tree order. `done` (may be empty) hears of each candidate finished: (done, total).
 *  `part` of `parts`: only that share of the candidates, in order (the k-th of `parts`
 *  equal runs), so that copies of one state can each take a share; errors name the
 *  candidate's place in the whole list. */
absl::StatusOr<std::vector<DrainResult>> Consolidate(cycle::Scheduler* scheduler, std::vector<std::string> candidates,
                                                     const std::function<void(size_t, size_t)>& done = {},
                                                     size_t part = 0, size_t parts = 1);

/** @brief Consolidate with the candidates shared among `states`, copies of one state (built
 *  from the same objects, configuration and options, or kept in step): a share on each, on
 *  threads of their own, the answers joined in the candidates' order, which is the list one
 *  of them gives alone. `done` hears of every candidate finished (calls are serialized). */
absl::StatusOr<std::vector<DrainResult>> Consolidate(const std::vector<cycle::Scheduler*>& states,
                                                     const std::vector<std::string>& candidates,
                                                     const std::function<void(size_t, size_t)>& done = {});

struct ReplicasResult {
  int64_t replicas = 0;                    // copies placed before the first that was not
  std::map<std::string, int64_t> per_node;  // node -> copies placed there
  /** The first copy that found no node (its upstream message), none when `max` were placed. */
  std::optional<cycle::Placement> stopped_by;
};

/** @brief How many copies of `pod` fit (scheduler-library's SchedulePodsByTemplate): copies
 *  named `<name>-whatif-<k>` scheduled one after another through the full cycle without
 *  preemption (spec.preemptionPolicy Never, which changes no Filter or Score) until one
 *  finds no node or `max` are placed. Reverted afterwards. InvalidArgument for a bound
 *  pod or `max` < 1. */
absl::StatusOr<ReplicasResult> Replicas(cycle::Scheduler* scheduler, const Pod& pod, int64_t max);

/** @brief Which of `candidates` (names; empty: every node in scan order) `pod` passes
 *  PreFilter and Filter on, each node's verdict in the candidates' order
 *  (scheduler-library's CanSchedulePod); with `first_fit`, the verdicts up to the first
 *  node that fits. Nothing changes. */
absl::StatusOr<std::vector<cycle::NodeFit>> CanSchedulePod(cycle::Scheduler* scheduler, const Pod& pod,
                                                           std::vector<std::string> candidates = {},
                                                           bool first_fit = false);

/** @brief The first node of `order` (names; empty: scan order) that `pod` passes Filter
 *  on, Cluster Autoscaler's predicate check; nullopt when none. Nothing changes, unless
 *  `reserve`: then the pod is bound there (Scheduler::Assume), so the next check counts it,
 *  as Cluster Autoscaler reserves a fitted pod in its snapshot; a transaction undoes it. */
absl::StatusOr<std::optional<std::string>> FirstFit(cycle::Scheduler* scheduler, const Pod& pod,
                                                    std::vector<std::string> order = {}, bool reserve = false);

struct ScaleUpOptions {
  /** New nodes the plan may add, over all templates (Cluster Autoscaler's estimation
   *  limit, --max-nodes-per-scaleup 1000 by default). */
  int64_t max_nodes = 1000;
};

struct ScaleUpResult {
  /** Template name -> new nodes of it the pods need; every template listed, 0 included. */
  std::map<std::string, int64_t> new_nodes;
  /** The new nodes in the order added: a template's copy named `<template>-<i>`. */
  std::vector<Node> nodes;
  /** Each pending pod in the order tried (ScaleUp's), placed (`node`) or why it stays
   *  pending: the FitError of Filter on an empty node of every template, the node limit,
   *  or not for this plan (SchedulingGates, another scheduler). */
  std::vector<cycle::Placement> pods;
};

/** @brief How many new nodes of each template the pending `pods` need: Cluster Autoscaler's
 *  binpacking estimator (first-fit decreasing) with the cycle's own PreFilter and Filter,
 *  pods placed so far counted (topology spread, inter-pod affinity). Pods are grouped as CA
 *  groups them (the same controller and scheduling signature; no controller: alone) and
 *  groups tried largest first (CPU plus memory requests relative to the first template's
 *  allocatable; ties in input order). Within a group, pods go to the first node in scan
 *  order they fit (existing nodes and the ones added) until one fits none; that pod and the
 *  group's rest try the last added node only, else a new node of the first template (in
 *  the given order) an empty node of which they fit. A pod that fits no template's empty
 *  node leaves its group's rest pending with the same reason, as does the node limit.
 *  Reverted afterwards (it nests in an open transaction). InvalidArgument naming the pod or
 *  template: a bound or repeated pod, a template without a name or named twice, a negative
 *  limit. docs/whatif.md. */
absl::StatusOr<ScaleUpResult> ScaleUp(cycle::Scheduler* scheduler, const std::vector<Pod>& pods,
                                      const std::vector<Node>& templates, const ScaleUpOptions& options = {});

}  // namespace kplace::whatif
