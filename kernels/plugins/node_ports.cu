// NodePorts on the engine: the used host ports of each node as a slotted CSR with spare
// room for binds, the pod's wanted ports compiled in PreFilter, Filter as a functor.
#include <algorithm>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/node_ports.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::HostPortEntry;
using plugins::NodePortsParams;
using plugins::NodePortsView;

constexpr int32_t kMinSlots = 4;

struct NodePortsFilterFn {
  NodePortsView v;
  NodePortsParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::NodePortsFilterNode(v, p, i); }
};

bool SameEntry(const HostPortEntry& a, const HostPortEntry& b) {
  return a.ip_id == b.ip_id && a.proto_id == b.proto_id && a.port == b.port;
}

class NodePorts final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates&, std::string*) {
    return std::unique_ptr<engine::Plugin>(new NodePorts());
  }

  const char* Name() const override { return "NodePorts"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  void Prepare(const Snapshot& s) override {
    used_.assign(s.num_nodes(), {});
    for (NodeIndex i = 0; i < s.num_nodes(); ++i) {
      for (const Pod* p : s.pods_on(i)) AddUsed(i, *p);
    }
    slots_.assign(s.num_nodes(), 0);
    // Spare room up front, so most binds write in place instead of re-laying the CSR.
    for (NodeIndex i = 0; i < s.num_nodes(); ++i) slots_[i] = std::max(kMinSlots, 2 * static_cast<int32_t>(used_[i].size()));
    Rebuild();
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot&, std::vector<NodeIndex>*, bool*) override {
    std::vector<HostPortEntry> want = Entries(pod);
    has_state_ = !want.empty();
    if (!has_state_) return PluginStatus::Skip();
    wanted_host_ = std::move(want);
    wanted_.assign(wanted_host_.begin(), wanted_host_.end());
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override {
    NodePortsView v{offsets_.ptr(), counts_.ptr(), entries_.ptr()};
    NodePortsParams p{thrust::raw_pointer_cast(wanted_.data()), static_cast<int32_t>(wanted_host_.size()), has_state_};
    ForEachNode(n, codes, NodePortsFilterFn{v, p});
  }

  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    NodePortsView v{offsets_.ptr(), counts_.ptr(), entries_.ptr()};
    NodePortsParams p{thrust::raw_pointer_cast(wanted_.data()), static_cast<int32_t>(wanted_host_.size()), has_state_};
    ForListedNodes(nodes, count, codes, NodePortsFilterFn{v, p});
    return true;
  }
  // A node's verdict reads its own used ports; a bind adds to the bound node's only. Wanted
  // ports intern their IP and protocol, so the compiled pod keeps its ids whatever is bound
  // later (an id no node uses yet matches no entry).
  bool NodeLocal() const override { return true; }

  PluginStatus Verdict(VerdictCode code) const override {
    if (code == plugins::kPortsNoState) {
      return PluginStatus::Error("reading \"PreFilterNodePorts\" from cycleState: not found");
    }
    return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't have free ports for the requested pod ports");
  }

  // The node's set is built again from the pods still on it: another pod may hold the same
  // port, and a set keeps one entry. It only shrinks, so it fits its slots.
  bool OnNodeUpdate(NodeIndex, const Node&, const Snapshot&) override { return true; }  // pods' ports only
  bool OnNodeAdd(NodeIndex, const Snapshot&) override {  // the last node: its slots go at the end
    used_.emplace_back();
    slots_.push_back(kMinSlots);
    counts_.Push(0);
    offsets_.Push(offsets_.host.back() + kMinSlots);
    for (int32_t k = 0; k < kMinSlots; ++k) entries_.Push(HostPortEntry{engine::kNoId, engine::kNoId, 0});
    return true;
  }
  // The node's set from the pods that stay, as OnUnbind builds it.
  bool FilterWithout(NodeIndex node, const std::vector<const Pod*>& removed, VerdictCode current, const Snapshot& s,
                     VerdictCode* code) override {
    if (wanted_host_.empty()) {  // a pod that wants no host port: the verdict reads no pods
      *code = current;
      return true;
    }
    kept_.clear();
    for (const Pod* p : s.pods_on(node)) {
      if (std::find(removed.begin(), removed.end(), p) == removed.end()) AddTo(&kept_, *p);
    }
    const int32_t offsets[1] = {0}, counts[1] = {static_cast<int32_t>(kept_.size())};
    NodePortsParams p{wanted_host_.data(), static_cast<int32_t>(wanted_host_.size()), has_state_};
    *code = plugins::NodePortsFilterNode(NodePortsView{offsets, counts, kept_.data()}, p, 0);
    return true;
  }
  bool OnUnbind(const Pod& pod, NodeIndex node, const Snapshot& s) override {
    if (Entries(pod).empty()) return true;
    used_[node].clear();
    for (const Pod* p : s.pods_on(node)) AddUsed(node, *p);
    const int32_t base = offsets_.host[node];
    for (size_t k = 0; k < used_[node].size(); ++k) entries_.Set(base + static_cast<int32_t>(k), used_[node][k]);
    counts_.Set(node, static_cast<int32_t>(used_[node].size()));
    return true;
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot&) override {
    const size_t before = used_[node].size();
    AddUsed(node, pod);
    const int32_t count = static_cast<int32_t>(used_[node].size());
    if (count == static_cast<int32_t>(before)) return;
    if (count > slots_[node]) {
      slots_[node] = std::max(kMinSlots, 2 * count);
      Rebuild();
      return;
    }
    const int32_t base = offsets_.host[node];
    for (int32_t k = static_cast<int32_t>(before); k < count; ++k) entries_.Set(base + k, used_[node][k]);
    counts_.Set(node, count);
  }

 private:
  NodePorts() { ips_.Intern("0.0.0.0"); }  // id 0 = plugins::kWildcardIpId

  /** HP(pod) of §5, sanitized, with IPs and protocols interned. */
  std::vector<HostPortEntry> Entries(const Pod& pod) {
    std::vector<HostPortEntry> out;
    auto add = [&](const Container& c) {
      for (const ContainerPort& port : c.ports) {
        if (port.host_port <= 0) continue;
        const std::string& ip = port.host_ip.empty() ? kAnyIp : port.host_ip;
        const std::string& proto = port.protocol.empty() ? kTcp : port.protocol;
        HostPortEntry e{ips_.Intern(ip), protocols_.Intern(proto), port.host_port};
        out.push_back(e);
      }
    };
    for (const Container& c : pod.init_containers) {
      if (c.restart_policy && *c.restart_policy == "Always") add(c);
    }
    for (const Container& c : pod.containers) add(c);
    return out;
  }

  /** Adds a pod's ports to node i's set (the used-port table is a set). */
  void AddUsed(NodeIndex i, const Pod& pod) { AddTo(&used_[i], pod); }
  void AddTo(std::vector<HostPortEntry>* set, const Pod& pod) {
    for (const HostPortEntry& e : Entries(pod)) {
      bool present = false;
      for (const HostPortEntry& u : *set) present = present || SameEntry(u, e);
      if (!present) set->push_back(e);
    }
  }

  /** Lays the slotted CSR out again from the host sets and uploads it whole. */
  void Rebuild() {
    const int32_t n = static_cast<int32_t>(used_.size());
    offsets_.host.assign(n + 1, 0);
    counts_.host.assign(n, 0);
    for (NodeIndex i = 0; i < n; ++i) {
      counts_.host[i] = static_cast<int32_t>(used_[i].size());
      offsets_.host[i + 1] = offsets_.host[i] + std::max(slots_[i], counts_.host[i]);
    }
    entries_.host.assign(offsets_.host[n], HostPortEntry{engine::kNoId, engine::kNoId, 0});
    for (NodeIndex i = 0; i < n; ++i) std::copy(used_[i].begin(), used_[i].end(), entries_.host.begin() + offsets_.host[i]);
    offsets_.Upload();
    counts_.Upload();
    entries_.Upload();
  }

  const std::string kAnyIp = "0.0.0.0";
  const std::string kTcp = "TCP";
  engine::Interner ips_, protocols_;
  std::vector<std::vector<HostPortEntry>> used_;  // per node, the host truth
  std::vector<HostPortEntry> kept_;               // FilterWithout's node
  std::vector<int32_t> slots_;                    // per node, room in the CSR
  Column<int32_t> offsets_, counts_;
  Column<HostPortEntry> entries_;
  std::vector<HostPortEntry> wanted_host_;
  vector<HostPortEntry> wanted_;
  bool has_state_ = false;
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodePorts, NodePorts);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
