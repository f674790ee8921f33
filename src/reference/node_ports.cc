// Reference NodePorts, straight from small-plugins.md §5.
#include <set>
#include <tuple>

#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr char kPreFilterKey[] = "PreFilterNodePorts";
constexpr char kAnyIp[] = "0.0.0.0";

struct HostPort {
  std::string ip, protocol;
  int32_t port = 0;
};

/** HP(pod): sidecar init containers, then regular containers; hostPort > 0 only. */
std::vector<HostPort> HostPorts(const Pod& pod) {
  std::vector<HostPort> out;
  auto add = [&](const Container& c) {
    for (const ContainerPort& p : c.ports) {
      if (p.host_port > 0) out.push_back({p.host_ip, p.protocol, p.host_port});
    }
  };
  for (const Container& c : pod.init_containers) {
    if (c.restart_policy && *c.restart_policy == "Always") add(c);
  }
  for (const Container& c : pod.containers) add(c);
  return out;
}

void Sanitize(std::string* ip, std::string* protocol) {
  if (ip->empty()) *ip = kAnyIp;
  if (protocol->empty()) *protocol = "TCP";
}

/** The used-port table of a node: a set of (ip, protocol, port). */
class UsedPorts {
 public:
  void Add(HostPort p) {
    Sanitize(&p.ip, &p.protocol);
    table_.insert({p.ip, p.protocol, p.port});
  }
  bool Conflicts(HostPort p) const {
    Sanitize(&p.ip, &p.protocol);
    if (p.ip == kAnyIp) {
      for (const auto& [ip, protocol, port] : table_) {
        if (protocol == p.protocol && port == p.port) return true;
      }
      return false;
    }
    return table_.count({kAnyIp, p.protocol, p.port}) > 0 || table_.count({p.ip, p.protocol, p.port}) > 0;
  }

 private:
  std::set<std::tuple<std::string, std::string, int32_t>> table_;
};

struct PreFilterState {
  std::vector<HostPort> wanted;
};

class NodePorts final : public Plugin {
 public:
  const char* Name() const override { return "NodePorts"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  PluginStatus PreFilter(CycleState& state, const Pod& pod, const ClusterState&, NodeNameSet*) override {
    std::vector<HostPort> wanted = HostPorts(pod);
    if (wanted.empty()) return PluginStatus::Skip();
    auto s = std::make_shared<PreFilterState>();
    s->wanted = std::move(wanted);
    state.Put(kPreFilterKey, s);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& state, const Pod&, const NodeInfo& node, const ClusterState&) override {
    const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey);
    if (s == nullptr) return PluginStatus::Error("reading \"PreFilterNodePorts\" from cycleState: not found");
    UsedPorts used;
    for (const Pod* p : node.pods) {
      for (const HostPort& hp : HostPorts(*p)) used.Add(hp);
    }
    for (const HostPort& want : s->wanted) {
      if (used.Conflicts(want)) {
        return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't have free ports for the requested pod ports");
      }
    }
    return PluginStatus::Success();
  }
};

KPLACE_REGISTER_REFERENCE_PLUGIN(NodePorts, [](const PluginArgs&, const FeatureGates&)
                                                -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::unique_ptr<Plugin>(new NodePorts());
});

}  // namespace
}  // namespace kplace::reference
