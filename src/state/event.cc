#include "kplace/state/event.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/state/node_tree.h"

namespace kplace::state {
namespace {

using json = nlohmann::json;

size_t CountObjects(const ObjectSet& o) {
  return o.nodes.size() + o.pods.size() + o.namespaces.size() + o.workloads.size() + o.storage.size() +
         o.configs.size() + o.pdbs.size() + o.priority_classes.size() + o.pod_groups.size() + o.resource_claims.size() +
         o.resource_claim_templates.size() + o.device_classes.size() + o.resource_slices.size();
}

std::string KindOf(const ObjectSet& o) {
  if (!o.nodes.empty()) return "Node";
  if (!o.pods.empty()) return "Pod";
  if (!o.namespaces.empty()) return "Namespace";
  if (!o.workloads.empty()) return o.workloads[0].kind;
  if (!o.storage.empty()) return o.storage[0].kind;
  if (!o.pdbs.empty()) return "PodDisruptionBudget";
  if (!o.priority_classes.empty()) return "PriorityClass";
  if (!o.pod_groups.empty()) return "PodGroup";
  if (!o.resource_claims.empty()) return "ResourceClaim";
  if (!o.resource_claim_templates.empty()) return "ResourceClaimTemplate";
  if (!o.device_classes.empty()) return "DeviceClass";
  if (!o.resource_slices.empty()) return "ResourceSlice";
  return "KubeSchedulerConfiguration";
}

const ObjectMeta& MetaOf(const ObjectSet& o) {
  if (!o.nodes.empty()) return o.nodes[0].meta;
  if (!o.pods.empty()) return o.pods[0].meta;
  if (!o.namespaces.empty()) return o.namespaces[0].meta;
  if (!o.workloads.empty()) return o.workloads[0].meta;
  if (!o.storage.empty()) return o.storage[0].meta;
  if (!o.pdbs.empty()) return o.pdbs[0].meta;
  if (!o.priority_classes.empty()) return o.priority_classes[0].meta;
  if (!o.pod_groups.empty()) return o.pod_groups[0].meta;
  if (!o.resource_claims.empty()) return o.resource_claims[0].meta;
  if (!o.resource_claim_templates.empty()) return o.resource_claim_templates[0].meta;
  if (!o.device_classes.empty()) return o.device_classes[0].meta;
  if (!o.resource_slices.empty()) return o.resource_slices[0].meta;
  return o.configs[0].meta;
}

template <typename T>
ClusterEvent Single(EventType type, std::string kind, T object, std::vector<T> ObjectSet::*list) {
  ClusterEvent e;
  e.type = type;
  e.kind = std::move(kind);
  (e.object.*list).push_back(std::move(object));
  return e;
}

// The list an object of `event`'s kind lives in, and how to tell its kind apart there.
template <typename T>
absl::Status ApplyIn(const ClusterEvent& event, std::vector<T>* list, const T& object, bool same_kind_only,
                     Undo* undo, std::optional<size_t> at, std::vector<T> ObjectSet::*member) {
  const std::string key = ObjectKey(object.meta);
  auto matches = [&](const T& o) {
    if (ObjectKey(o.meta) != key) return false;
    if constexpr (std::is_same_v<T, Workload> || std::is_same_v<T, GenericObject>) {
      if (same_kind_only && o.kind != event.kind) return false;
    }
    return true;
  };
  auto it = std::find_if(list->begin(), list->end(), matches);
  const size_t index = static_cast<size_t>(it - list->begin());
  auto inverse = [&](EventType type, const T& old) {
    if (!undo) return;
    undo->event = Single(type, event.kind, old, member);
    undo->index = index;
  };
  switch (event.type) {
    case EventType::kAdded: {
      if (it != list->end()) return absl::AlreadyExistsError(StrCat(event.where, ": ", event.kind, " ", key, " already exists"));
      size_t pos = at ? std::min(*at, list->size()) : list->size();
      if constexpr (std::is_same_v<T, Node>) {
        if (!at) {
          // After the last node of its zone; a new zone goes last.
          const std::string zone = ZoneKey(object);
          for (size_t k = list->size(); k-- > 0;) {
            if (ZoneKey((*list)[k]) == zone) {
              pos = k + 1;
              break;
            }
          }
        }
      }
      list->insert(list->begin() + static_cast<std::ptrdiff_t>(pos), object);
      if (undo) {
        undo->event = Single(EventType::kDeleted, event.kind, object, member);
        undo->index = pos;
      }
      return absl::OkStatus();
    }
    case EventType::kModified: {
      if (it == list->end()) return absl::NotFoundError(StrCat(event.where, ": ", event.kind, " ", key, " not found (MODIFIED before ADDED)"));
      if constexpr (std::is_same_v<T, Node>) {
        if (ZoneKey(*it) != ZoneKey(object)) {
          // The node tree removes it from its zone and adds it to the new one: a delete and
          // an add here, undone by a delete and an add of the old version at its place.
          T old = *it;
          list->erase(it);
          ClusterEvent add = event;
          add.type = EventType::kAdded;
          KPLACE_RETURN_IF_ERROR(ApplyIn(add, list, object, same_kind_only, nullptr, at, member));
          if (undo) {
            undo->event = Single(EventType::kModified, event.kind, old, member);
            undo->index = index;
          }
          return absl::OkStatus();
        }
      }
      inverse(EventType::kModified, *it);
      *it = object;
      return absl::OkStatus();
    }
    case EventType::kDeleted:
      if (it == list->end()) return absl::NotFoundError(StrCat(event.where, ": ", event.kind, " ", key, " not found (DELETED)"));
      inverse(EventType::kAdded, *it);
      list->erase(it);
      return absl::OkStatus();
  }
  return absl::InternalError("unknown event type");
}

}  // namespace

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "?";
}

std::string ClusterEvent::Key() const { return ObjectKey(MetaOf(object)); }

absl::StatusOr<ClusterEvent> MakeEvent(EventType type, ObjectSet object, std::string where) {
  const size_t n = CountObjects(object);
  if (n != 1) return absl::InvalidArgumentError(StrCat(where, ": an event carries one object, not ", n));
  if (!object.configs.empty()) {
    return absl::InvalidArgumentError(StrCat(where, ": KubeSchedulerConfiguration: not a cluster object (pass it with --config)"));
  }
  ClusterEvent e;
  e.type = type;
  e.kind = KindOf(object);
  e.object = std::move(object);
  e.where = std::move(where);
  return e;
}

ClusterEvent PodEvent(EventType type, const Pod& pod) { return Single(type, "Pod", pod, &ObjectSet::pods); }
ClusterEvent NodeEvent(EventType type, const Node& node) { return Single(type, "Node", node, &ObjectSet::nodes); }

absl::StatusOr<std::optional<ClusterEvent>> ParseWatchEvent(std::string_view line, const std::string& where) {
  return ParseWatchEvent(line, where, nullptr);
}

absl::StatusOr<std::optional<ClusterEvent>> ParseWatchEvent(std::string_view line, const std::string& where,
                                                            json* object_out) {
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(line, where));
  if (docs.size() != 1 || !docs[0].is_object()) {
    return absl::InvalidArgumentError(StrCat(where, ": expected one watch event object {\"type\": ..., \"object\": {...}}"));
  }
  const json& doc = docs[0];
  if (!doc.contains("type") || !doc["type"].is_string()) {
    return absl::InvalidArgumentError(StrCat(where, ": type: expected ADDED, MODIFIED, DELETED or BOOKMARK"));
  }
  const std::string type = doc["type"].get<std::string>();
  if (type == "BOOKMARK") return std::optional<ClusterEvent>();
  if (type == "ERROR") {
    std::string msg = doc.contains("object") && doc["object"].is_object() && doc["object"].contains("message") &&
                              doc["object"]["message"].is_string()
                          ? doc["object"]["message"].get<std::string>()
                          : "";
    return absl::InvalidArgumentError(StrCat(where, ": the watch reported an ERROR event: ", msg));
  }
  EventType t;
  if (type == "ADDED") {
    t = EventType::kAdded;
  } else if (type == "MODIFIED") {
    t = EventType::kModified;
  } else if (type == "DELETED") {
    t = EventType::kDeleted;
  } else {
    return absl::InvalidArgumentError(StrCat(where, ": type: unknown event type \"", type, "\" (ADDED, MODIFIED, DELETED or BOOKMARK)"));
  }
  if (!doc.contains("object") || !doc["object"].is_object()) {
    return absl::InvalidArgumentError(StrCat(where, ": object: expected a Kubernetes object"));
  }
  const json& object = doc["object"];
  if (object.contains("kind") && object["kind"].is_string()) {
    const std::string kind = object["kind"].get<std::string>();
    if (kind.size() >= 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
      return absl::InvalidArgumentError(StrCat(where, ": object.kind: a watch event carries one object, not a ", kind));
    }
  }
  ObjectSet decoded;
  KPLACE_RETURN_IF_ERROR(DecodeDocument(object, where, &decoded, nullptr));
  KPLACE_ASSIGN_OR_RETURN(ClusterEvent e, MakeEvent(t, std::move(decoded), where));
  if (object_out) *object_out = std::move(docs[0]["object"]);
  return std::optional<ClusterEvent>(std::move(e));
}

absl::StatusOr<bool> WatchReader::Next(std::string* text, std::string* where) {
  text->clear();
  int depth = 0;
  bool in_string = false, escaped = false, started = false;
  std::string line;
  while (std::getline(*in_, line)) {
    ++line_;
    for (char c : line) {
      if (!started) {
        if (c == ' ' || c == '\t' || c == '\r') continue;
        started = true;
        *where = StrCat(file_, ":", line_);
      }
      text->push_back(c);
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') in_string = true;
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
    }
    if (!started) continue;  // blank line
    // A line that does not open an object is one event (an error, if it is not JSON).
    if (depth <= 0 || text->front() != '{') return true;
    text->push_back('\n');
  }
  if (started) return absl::InvalidArgumentError(StrCat(*where, ": the event that starts here is not closed at the end of the file"));
  return false;
}

absl::Status ApplyToObjects(const ClusterEvent& event, ObjectSet* objects, Undo* undo, std::optional<size_t> at) {
  const ObjectSet& o = event.object;
  if (!o.nodes.empty()) return ApplyIn(event, &objects->nodes, o.nodes[0], false, undo, at, &ObjectSet::nodes);
  if (!o.namespaces.empty()) {
    return ApplyIn(event, &objects->namespaces, o.namespaces[0], false, undo, at, &ObjectSet::namespaces);
  }
  if (!o.workloads.empty()) return ApplyIn(event, &objects->workloads, o.workloads[0], true, undo, at, &ObjectSet::workloads);
  if (!o.storage.empty()) return ApplyIn(event, &objects->storage, o.storage[0], true, undo, at, &ObjectSet::storage);
  if (!o.pdbs.empty()) return ApplyIn(event, &objects->pdbs, o.pdbs[0], false, undo, at, &ObjectSet::pdbs);
  if (!o.priority_classes.empty()) {
    return ApplyIn(event, &objects->priority_classes, o.priority_classes[0], false, undo, at, &ObjectSet::priority_classes);
  }
  if (!o.pod_groups.empty()) {
    return ApplyIn(event, &objects->pod_groups, o.pod_groups[0], false, undo, at, &ObjectSet::pod_groups);
  }
  if (!o.resource_claims.empty()) {
    return ApplyIn(event, &objects->resource_claims, o.resource_claims[0], false, undo, at, &ObjectSet::resource_claims);
  }
  if (!o.resource_claim_templates.empty()) {
    return ApplyIn(event, &objects->resource_claim_templates, o.resource_claim_templates[0], false, undo, at,
                   &ObjectSet::resource_claim_templates);
  }
  if (!o.device_classes.empty()) {
    return ApplyIn(event, &objects->device_classes, o.device_classes[0], false, undo, at, &ObjectSet::device_classes);
  }
  if (!o.resource_slices.empty()) {
    return ApplyIn(event, &objects->resource_slices, o.resource_slices[0], false, undo, at, &ObjectSet::resource_slices);
  }
  return absl::InvalidArgumentError(StrCat(event.where, ": ", event.kind, ": not applied to the object set (pods are the scheduler's)"));
}

}  // namespace kplace::state
