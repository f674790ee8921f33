#pragma once
// Decoding of Kubernetes objects from JSON and multi-document YAML.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"
#include "kplace/model/objects.h"

namespace kplace {

/** Deepest nesting of lists and maps an input may have (deeper is refused, not parsed). */
constexpr int kMaxNestingDepth = 256;

/** @brief Parses JSON or (multi-document) YAML text into JSON documents.
 *  @return InvalidArgument naming `file` and the line on a syntax error. */
absl::StatusOr<std::vector<nlohmann::json>> ParseDocuments(std::string_view text,
                                                           std::string_view file);

/** Kind -> how many objects of it were skipped. */
using SkippedKinds = std::map<std::string, int64_t>;

/** @brief Reads a file and decodes every object in it (single objects, `kind: List`,
 *  multi-document YAML) into `out`, appending in input order.
 *  Objects of kinds scheduling does not read (Events, ConfigMaps, Deployments, ...) are
 *  skipped; with `skipped` given, so are kinds kplace does not know (a dump's
 *  HorizontalPodAutoscalers, CRDs, custom resources), counted there by kind.
 *  @return NotFound when the file cannot be read; InvalidArgument naming file,
 *  object and field path for bad input, and for an unknown kind when `skipped` is null. */
absl::Status DecodeFile(const std::string& path, ObjectSet* out, SkippedKinds* skipped = nullptr,
                        std::vector<std::string>* invalid = nullptr);

/** @brief DecodeFile for text in memory (`file` names it in errors): JSON through simdjson,
 *  YAML through ParseDocuments. */
absl::Status DecodeText(std::string_view text, std::string_view file, ObjectSet* out,
                        SkippedKinds* skipped = nullptr, std::vector<std::string>* invalid = nullptr);

/** @brief Decodes one document (an object or a List) from `file` into `out`. With
 *  `invalid` given, an object that fails its validation (InvalidArgument) is left out and
 *  its message added there instead of ending the decode (`--skip-invalid`); a file that
 *  does not parse still ends it. */
absl::Status DecodeDocument(const nlohmann::json& doc, std::string_view file, ObjectSet* out,
                            SkippedKinds* skipped = nullptr, std::vector<std::string>* invalid = nullptr);

/** @brief The kind of a list's items when they name none: the kind of a `*List` minus `List`
 *  (`PodList` -> "Pod"), "" for a `List` (each item names its own); nullopt when `kind` is
 *  not a list. */
std::optional<std::string> ListItemKind(std::string_view kind);

/** @brief Gives `item`, of a list of `list_kind` and `list_api_version`, the kind and
 *  apiVersion the list implies where it names none (as the API server's list decoding does):
 *  a NodeList's items are Nodes of its version. Nothing changes for a `List`, or when `item`
 *  is not an object. Every decoder of lists (DecodeText, the service's requests) goes by this. */
void ImplyListItemType(std::string_view list_kind, std::string_view list_api_version, nlohmann::json* item);

/** @brief "skipped: 3 HorizontalPodAutoscaler, 1 CustomResourceDefinition (not used by
 *  scheduling)", kinds sorted by name; "" when nothing was skipped. */
std::string SkippedLine(const SkippedKinds& skipped);

/** @brief Decodes a core/v1 Node. `where` prefixes error messages (e.g. "nodes.json").
 *  `strict`: the API server's value rules apply (non-negative quantities, taint effects);
 *  false for objects of upstream's test tables, which never passed through it. */
absl::StatusOr<Node> DecodeNode(const nlohmann::json& j, std::string_view where, bool strict = true);
/** @brief Decodes a core/v1 Pod (`strict` as DecodeNode: also toleration operators and
 *  effects, topology spread fields, preferred weights). */
absl::StatusOr<Pod> DecodePod(const nlohmann::json& j, std::string_view where, bool strict = true);
/** @brief Decodes a Service, ReplicaSet, StatefulSet or ReplicationController. */
absl::StatusOr<Workload> DecodeWorkload(const nlohmann::json& j, std::string_view kind,
                                        std::string_view where);
/** @brief Decodes a Namespace. */
absl::StatusOr<Namespace> DecodeNamespace(const nlohmann::json& j, std::string_view where);
/** @brief Decodes storage objects (PV, PVC, ...) keeping their JSON for later plugins. */
absl::StatusOr<GenericObject> DecodeGeneric(const nlohmann::json& j, std::string_view kind,
                                            std::string_view where);


/** @brief Decodes a policy/v1 PodDisruptionBudget. */
absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const nlohmann::json& j, std::string_view where);
/** @brief Decodes a scheduling.k8s.io/v1beta1 PodGroup (another version is InvalidArgument
 *  naming apiVersion; none given reads as v1beta1). */
absl::StatusOr<PodGroup> DecodePodGroup(const nlohmann::json& j, std::string_view where);
/** @brief Decodes a scheduling.k8s.io/v1 PriorityClass. */
absl::StatusOr<PriorityClass> DecodePriorityClass(const nlohmann::json& j, std::string_view where);
/** @brief Decodes a resource.k8s.io ResourceClaim (v1, v1beta2 or v1beta1; another version is
 *  InvalidArgument naming apiVersion). ResourceClaimTemplate, DeviceClass and ResourceSlice
 *  decode through DecodeDocument with the same version rule. */
absl::StatusOr<ResourceClaim> DecodeResourceClaim(const nlohmann::json& j, std::string_view where);

/** The globalDefault PriorityClass admission uses (the lowest value when several claim it);
 *  null when none. */
const PriorityClass* GlobalDefaultClass(const std::vector<PriorityClass>& classes);
/** @brief Does what priority admission does for `pods`: a pod without spec.priority gets
 *  its priorityClassName's value (the built-in system-node-critical and
 *  system-cluster-critical included), else the globalDefault class's, else stays unset
 *  (priority 0); spec.preemptionPolicy comes from the class when unset.
 *  @return InvalidArgument naming `where` and the pod when its class does not exist. */
absl::Status ResolvePriorities(const ObjectSet& cluster, std::vector<Pod>* pods, std::string_view where);

/** @brief "namespace/name" (or "name" for cluster-scoped objects). */
std::string ObjectKey(const ObjectMeta& meta);

}  // namespace kplace
