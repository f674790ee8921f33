#pragma once
// Upstream's queueing hints (SchedulerQueueingHints, GA and locked on since v1.34): which
// cluster events move a pod that the default plugins rejected out of the unschedulable
// pool. Each plugin registers (resource, action bits) pairs with a hint function
// (EventsToRegister); the queue turns a watch event into fine-grained events and asks
// only the hints of the plugins that rejected the pod. Host-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "kplace/config/profile.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"
#include "kplace/state/event.h"

namespace kplace::cycle {

/** fwk.ActionType bits, in upstream's order: an incoming event matches a registration
 *  only when they share a bit and the incoming value is no larger (so a general Update
 *  never reaches a hint registered for one kind of update). */
using ActionType = uint32_t;
namespace action {
constexpr ActionType kAdd = 1u << 0;
constexpr ActionType kDelete = 1u << 1;
constexpr ActionType kUpdateNodeAllocatable = 1u << 2;
constexpr ActionType kUpdateNodeLabel = 1u << 3;
constexpr ActionType kUpdateNodeTaint = 1u << 4;  // taints, or spec.unschedulable turned off
constexpr ActionType kUpdateNodeCondition = 1u << 5;
constexpr ActionType kUpdateNodeAnnotation = 1u << 6;
constexpr ActionType kUpdatePodLabel = 1u << 7;
constexpr ActionType kUpdatePodScaleDown = 1u << 8;
constexpr ActionType kUpdatePodToleration = 1u << 9;
constexpr ActionType kUpdatePodSchedulingGatesEliminated = 1u << 10;
constexpr ActionType kUpdatePodGeneratedResourceClaim = 1u << 11;
constexpr ActionType kAll = (1u << 12) - 1;
constexpr ActionType kUpdate = kAll & ~(kAdd | kDelete);
}  // namespace action

/** fwk.EventResource. Incoming pod events are kAssignedPod, kUnscheduledPod or kTargetPod
 *  (the pending pod's own update); kPod and kWildCard appear only in registrations, where
 *  kPod matches all three. */
enum class EventResource : uint8_t {
  kWildCard, kPod, kAssignedPod, kUnscheduledPod, kTargetPod, kNode, kPersistentVolume,
  kPersistentVolumeClaim, kStorageClass, kCSINode, kCSIDriver, kCSIStorageCapacity,
  kVolumeAttachment, kResourceClaim, kResourceSlice, kDeviceClass, kPodGroup,
};

/** A cluster change as queueing hints see it. Node: old_node null for an add, new_node
 *  null for a delete. Pod: old_pod / new_pod likewise (an assigned pod, another pending
 *  pod, or the target pod itself when it is updated). Other kinds: only `kind` and `type`. */
struct HintEvent {
  state::EventType type = state::EventType::kAdded;
  std::string kind;  // "Node", "Pod", "PersistentVolumeClaim", "StorageClass", "Namespace", ...
  const Node* old_node = nullptr;
  const Node* new_node = nullptr;
  const Pod* old_pod = nullptr;
  const Pod* new_pod = nullptr;
};

/** One event as the queue matches it against registrations, with the objects its hints see. */
struct QueueEvent {
  EventResource resource = EventResource::kWildCard;
  ActionType actions = 0;
  const Node* old_node = nullptr;
  const Node* new_node = nullptr;
  const Pod* old_pod = nullptr;
  const Pod* new_pod = nullptr;
};

/**
 * @brief The events upstream's queue offers `pod` (pending, unschedulable) for `event`,
 * in upstream's order; empty when the queue sees nothing for it. A node update becomes
 * one event per changed property (allocatable, labels, taints or uncordon, annotations;
 * none when nothing the scheduler reads changed). An assigned pod's add, update (labels,
 * requests scaled down, tolerations added; else a general update) or delete is an
 * kAssignedPod event; a pending pod bound elsewhere is an assigned-pod add. `pod`'s own
 * update is kTargetPod (the same split, plus scheduling gates eliminated). Another pending
 * pod matters only when it leaves a nominated node (deleted, or its nomination changed):
 * an assigned-pod delete of its old version, offered only to pods of no higher priority.
 * Storage, DRA and PodGroup kinds map to their resource with Add / Update / Delete; kinds no
 * scheduler informer watches (Namespace, Service, ...) give nothing.
 */
std::vector<QueueEvent> DeriveQueueEvents(const Pod& pod, const HintEvent& event, const FeatureGates& gates);

/**
 * @brief True when upstream's queue would move `pod` back to be retried after `event`:
 * some plugin of `plugins` (its UnschedulablePlugins ∪ PendingPlugins, kplace names)
 * registers for one of the derived events and its hint returns Queue (a hint that cannot
 * decide here, or that upstream would fail, counts as Queue). `profile` gives plugin args
 * and, for a pod without rejectors, the enabled plugins: such a pod moves on any event
 * some enabled PreEnqueue/PreFilter/Filter plugin registers for (its own update: always).
 * A pod whose scheduling gates remain (after its own update) never moves: PreEnqueue
 * gates it again. Score-only plugins register nothing; plugins kplace does not know, and
 * DynamicResources, register for every event.
 */
bool IsPodWorthRequeuing(const Pod& pod, const std::vector<std::string>& plugins, const HintEvent& event,
                         const Profile& profile, const FeatureGates& gates);

}  // namespace kplace::cycle
