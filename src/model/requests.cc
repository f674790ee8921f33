#include "kplace/model/requests.h"

#include <algorithm>
#include <utility>

#include "kplace/common/int_math.h"
#include "kplace/model/validation.h"

namespace kplace {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool IsFirstClass(std::string_view n) {
  return n == "cpu" || n == "memory" || n == "ephemeral-storage" || n == "pods";
}

void AddInto(ResourceList& into, const ResourceList& from) {
  for (const auto& [k, v] : from) into[k] += v;
}

void MaxInto(ResourceList& into, const ResourceList& from) {
  for (const auto& [k, v] : from) {
    auto it = into.find(k);
    if (it == into.end() || it->second < v) into[k] = v;
  }
}

ResourceList WithDefaults(const ResourceList& requests, const ResourceList* defaults) {
  if (!defaults) return requests;
  ResourceList out = requests;
  for (const auto& [k, v] : *defaults) out.emplace(k, v);  // only absent keys
  return out;
}

// AddInto(into, WithDefaults(requests, defaults)) without building the defaulted copy: each
// key still gets one add, of its request or else its default.
void AddWithDefaults(ResourceList& into, const ResourceList& requests, const ResourceList* defaults) {
  AddInto(into, requests);
  if (!defaults) return;
  for (const auto& [k, v] : *defaults) {
    if (!requests.count(k)) into[k] += v;
  }
}

bool IsPodLevelSupported(std::string_view name) {
  return name == "cpu" || name == "memory" || IsHugePageResourceName(name);
}

bool HasSupportedPodLevelRequests(const Pod& pod) {
  if (!pod.pod_requests) return false;
  for (const auto& [k, v] : *pod.pod_requests) {
    if (IsPodLevelSupported(k)) return true;
  }
  return false;
}

}  // namespace

bool IsPrefixedNativeResourceName(std::string_view name) {
  return name.find("kubernetes.io/") != std::string_view::npos;
}

bool IsHugePageResourceName(std::string_view name) { return StartsWith(name, "hugepages-"); }

bool IsExtendedResourceName(std::string_view name) {
  bool native = name.find('/') == std::string_view::npos || IsPrefixedNativeResourceName(name);
  if (native || StartsWith(name, "requests.")) return false;
  return IsQualifiedName(std::string("requests.") + std::string(name));
}

bool IsScalarResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || IsHugePageResourceName(name) ||
         IsPrefixedNativeResourceName(name) || StartsWith(name, "attachable-volumes-");
}

const ResourceList& NonZeroDefaults() {
  static const auto* defaults = new ResourceList{
      {"cpu", Quantity::FromNanos(static_cast<__int128>(100) * 1000000)},
      {"memory", Quantity::FromUnits(200LL * 1024 * 1024)},
  };
  return *defaults;
}

ResourceList PodRequests(const Pod& pod, const ResourceList* defaults, bool pod_level_resources) {
  ResourceList sum;
  for (const Container& c : pod.containers) AddWithDefaults(sum, c.requests, defaults);
  ResourceList sidecars, init_max;
  for (const Container& c : pod.init_containers) {
    ResourceList req = WithDefaults(c.requests, defaults);
    if (c.restart_policy && *c.restart_policy == "Always") {
      AddInto(sum, req);
      AddInto(sidecars, req);
      MaxInto(init_max, sidecars);
    } else {
      ResourceList candidate = req;
      AddInto(candidate, sidecars);
      MaxInto(init_max, candidate);
    }
  }
  ResourceList out = std::move(sum);
  MaxInto(out, init_max);
  if (pod_level_resources && HasSupportedPodLevelRequests(pod)) {
    for (const auto& [k, v] : *pod.pod_requests) {
      if (IsPodLevelSupported(k)) out[k] = v;
    }
  }
  AddInto(out, pod.overhead);
  return out;
}

Resource Resource::From(const ResourceList& list, bool keep_pods) {
  Resource r;
  for (const auto& [name, q] : list) {
    if (name == "cpu") {
      r.milli_cpu = q.MilliValue();
    } else if (name == "memory") {
      r.memory = q.Value();
    } else if (name == "ephemeral-storage") {
      r.ephemeral_storage = q.Value();
    } else if (name == "pods") {
      if (keep_pods) r.allowed_pods = q.Value();
    } else if (IsScalarResourceName(name)) {
      r.scalars[name] = q.Value();
    }
  }
  return r;
}

void Resource::Add(const Resource& o) {
  // Quantities reach int64's range; their sums stay there (kplace/common/int_math.h).
  milli_cpu = SaturatingAdd(milli_cpu, o.milli_cpu);
  memory = SaturatingAdd(memory, o.memory);
  ephemeral_storage = SaturatingAdd(ephemeral_storage, o.ephemeral_storage);
  allowed_pods = SaturatingAdd(allowed_pods, o.allowed_pods);
  for (const auto& [k, v] : o.scalars) scalars[k] = SaturatingAdd(scalars[k], v);
}

int64_t Resource::Get(std::string_view name) const {
  if (name == "cpu") return milli_cpu;
  if (name == "memory") return memory;
  if (name == "ephemeral-storage") return ephemeral_storage;
  if (name == "pods") return allowed_pods;
  auto it = scalars.find(std::string(name));
  return it == scalars.end() ? 0 : it->second;
}

void NodeResources::AddPod(const Pod& pod, bool pod_level_resources) {
  ResourceList raw = PodRequests(pod, nullptr, pod_level_resources);
  requested.Add(Resource::From(raw, /*keep_pods=*/false));
  ResourceList non_zero;
  if (pod_level_resources && HasSupportedPodLevelRequests(pod)) {
    // Defaults apply only to a resource missing at both container and pod level.
    ResourceList defaults;
    for (const auto& [k, v] : NonZeroDefaults()) {
      if (!raw.count(k)) defaults[k] = v;
    }
    non_zero = PodRequests(pod, &defaults, pod_level_resources);
  } else {
    non_zero = PodRequests(pod, &NonZeroDefaults(), pod_level_resources);
  }
  Resource nz = Resource::From(non_zero, false);
  non_zero_milli_cpu = SaturatingAdd(non_zero_milli_cpu, nz.milli_cpu);
  non_zero_memory = SaturatingAdd(non_zero_memory, nz.memory);
  ++pod_count;
}

void NodeResources::Add(const NodeResources& pod) {
  requested.Add(pod.requested);
  non_zero_milli_cpu = SaturatingAdd(non_zero_milli_cpu, pod.non_zero_milli_cpu);
  non_zero_memory = SaturatingAdd(non_zero_memory, pod.non_zero_memory);
  pod_count += pod.pod_count;
}

bool SameRequests(const Pod& a, const Pod& b) {
  auto same = [](const std::vector<Container>& x, const std::vector<Container>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i].requests != y[i].requests || x[i].limits != y[i].limits || x[i].restart_policy != y[i].restart_policy) {
        return false;
      }
    }
    return true;
  };
  return same(a.containers, b.containers) && same(a.init_containers, b.init_containers) && a.overhead == b.overhead &&
         a.pod_requests == b.pod_requests && a.pod_limits == b.pod_limits;
}

NodeResources ComputeNodeResources(const Node& node, const std::vector<const Pod*>& pods,
                                   bool pod_level_resources) {
  NodeResources r;
  r.allocatable = Resource::From(node.allocatable, /*keep_pods=*/true);
  for (const Pod* p : pods) r.AddPod(*p, pod_level_resources);
  return r;
}

constexpr char kTooManyPods[] = "Too many pods";
constexpr char kInsufficient[] = "Insufficient ";

std::vector<InsufficientResource> InsufficientResources(const Resource& request, const NodeResources& node,
                                                        const std::function<bool(const std::string&)>& ignored) {
  std::vector<InsufficientResource> out;
  if (node.pod_count + 1 > node.allocatable.allowed_pods) {
    out.push_back({"pods", 1, node.pod_count, node.allocatable.allowed_pods});
  }
  const bool nothing = request.milli_cpu == 0 && request.memory == 0 && request.ephemeral_storage == 0 &&
                       request.scalars.empty();
  if (nothing) return out;
  auto check = [&](const std::string& name, int64_t want) {
    const int64_t alloc = node.allocatable.Get(name), used = node.requested.Get(name);
    if (want > 0 && want > alloc - used) out.push_back({name, want, used, alloc});
  };
  check("cpu", request.milli_cpu);
  check("memory", request.memory);
  check("ephemeral-storage", request.ephemeral_storage);
  for (const auto& [name, want] : request.scalars) {
    if (!ignored || !ignored(name)) check(name, want);
  }
  return out;
}

std::string InsufficientReason(const InsufficientResource& r) {
  return r.resource == "pods" ? kTooManyPods : kInsufficient + r.resource;
}

bool IsInsufficientReason(const std::string& reason) {
  return reason == kTooManyPods || reason.rfind(kInsufficient, 0) == 0;
}

}  // namespace kplace
