#pragma once
// The resource columns NodeResourcesFit and NodeResourcesBalancedAllocation read:
// allocatable, requested and non-zero requested per node (noderesources.md §4), kept
// in step with bindings. Included by kernels/plugins/*.cu after kernels/backend.cuh.
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/common/int_math.h"
#include "kplace/model/requests.h"
#include "kplace/plugins/node_resources_balanced_allocation.h"
#include "kplace/plugins/node_resources_fit.h"

namespace kplace::KPLACE_BACKEND_NS {

/** The resource columns shared by NodeResourcesFit and BalancedAllocation. */
class ResourceColumns {
  using NodeIndex = engine::NodeIndex;
  using Snapshot = engine::Snapshot;
  using FitNodeView = plugins::FitNodeView;

 public:
  /** Keep own_balance_ too (BalancedAllocation reads it; NodeResourcesFit's copy does not). */
  void KeepsOwnBalance() { keeps_own_balance_ = true; }

  void Build(const Snapshot& s) {
    n_ = s.num_nodes();
    pod_level_ = s.gates().Enabled("PodLevelResources");
    for (Column<int64_t>* c : {&alloc_cpu_, &alloc_mem_, &alloc_eph_, &alloc_pods_, &req_cpu_, &req_mem_,
                               &req_eph_, &nz_cpu_, &nz_mem_, &pod_count_, &own_balance_}) {
      c->host.assign(n_, 0);
    }
    rows_.host.assign(n_, plugins::FitNodeRow{});
    std::vector<NodeResources> nodes(n_);
    for (NodeIndex i = 0; i < n_; ++i) {
      nodes[i] = NodeSums(s, i);
      for (const auto& [name, v] : nodes[i].allocatable.scalars) SlotOf(name);
      for (const auto& [name, v] : nodes[i].requested.scalars) SlotOf(name);
    }
    // Sparse scalars: per node, the slots it has allocatable or requested, sorted.
    scalar_offsets_.host.assign(n_ + 1, 0);
    scalar_slot_.host.clear();
    alloc_scalar_.host.clear();
    req_scalar_.host.clear();
    for (NodeIndex i = 0; i < n_; ++i) {
      std::map<int32_t, std::pair<int64_t, int64_t>> entries;  // slot -> (allocatable, requested)
      for (const auto& [name, v] : nodes[i].allocatable.scalars) entries[slots_.at(name)].first = v;
      for (const auto& [name, v] : nodes[i].requested.scalars) entries[slots_.at(name)].second = v;
      for (const auto& [slot, amounts] : entries) {
        scalar_slot_.host.push_back(slot);
        alloc_scalar_.host.push_back(amounts.first);
        req_scalar_.host.push_back(amounts.second);
      }
      scalar_offsets_.host[i + 1] = static_cast<int32_t>(scalar_slot_.host.size());
      SetNode(i, nodes[i]);
    }
    scalar_offsets_.Upload();
    scalar_slot_.Upload();
    for (Column<int64_t>* c : All()) c->Upload();
    rows_.Upload();
  }

  /** Adds a bound pod's requests to its node: the node's sums grow by the pod's own, as
   *  upstream's NodeInfo.AddPod does (integer sums, so equal to recomputing the node). */
  void AddPod(const Pod& pod, NodeIndex i, const Snapshot& s) {
    const NodeResources& delta = s.RequestsOf(pod, i);
    std::vector<std::pair<int32_t, int64_t>>& scalar_adds = scalar_adds_;  // (entry, amount)
    scalar_adds.clear();
    for (const auto& [name, v] : delta.requested.scalars) {
      if (v == 0) continue;
      const int32_t entry = FindEntry(i, FindSlot(name));
      if (entry < 0) {  // a scalar this node had no entry for: lay the entries out again
        Rebuild(s);
        return;
      }
      scalar_adds.emplace_back(entry, v);
    }
    auto add = [](Column<int64_t>& c, size_t k, int64_t v) {
      if (v != 0) c.Set(k, SaturatingAdd(c.host[k], v));
    };
    EachRequestColumn(i, delta, add);
    for (const auto& [entry, v] : scalar_adds) add(req_scalar_, static_cast<size_t>(entry), v);
    KeepDerived(i);
  }

  /** Node i's allocatable and the sums of its pods' requests: ComputeNodeResources, from
   *  the snapshot's per-pod requests (computed once per pod, shared by equal pods). */
  static NodeResources NodeSums(const Snapshot& s, NodeIndex i) {
    NodeResources r;
    r.allocatable = Resource::From(s.node(i).allocatable, /*keep_pods=*/true);
    for (size_t k = 0; k < s.pods_on(i).size(); ++k) r.Add(s.RequestsAt(i, k));
    return r;
  }

  /** Node i's entry for scalar `slot`, -1 when it has none. */
  int32_t FindEntry(NodeIndex i, int32_t slot) const {
    if (slot < 0) return -1;
    for (int32_t k = scalar_offsets_.host[i]; k < scalar_offsets_.host[i + 1]; ++k) {
      if (scalar_slot_.host[k] == slot) return k;
    }
    return -1;
  }

  /** After `pod` left node i: the node's sums lose the pod's own. A sum at the saturation
   *  bound may hold more than its parts, so then (and for a scalar with no entry) the
   *  node is computed again from the pods still there. A scalar the node no longer
   *  requests keeps its entry at zero, which reads as no entry. */
  void RemovePod(const Pod& pod, NodeIndex i, const Snapshot& s) {
    const NodeResources& delta = s.RequestsOf(pod, i);
    bool exact = true;
    auto check = [&](Column<int64_t>& c, size_t k, int64_t v) {
      if (v != 0 && c.host[k] == std::numeric_limits<int64_t>::max()) exact = false;
    };
    EachRequestColumn(i, delta, check);
    scalar_adds_.clear();
    for (const auto& [name, v] : delta.requested.scalars) {
      if (v == 0) continue;
      const int32_t entry = FindEntry(i, FindSlot(name));
      if (entry < 0 || req_scalar_.host[entry] == std::numeric_limits<int64_t>::max()) exact = false;
      scalar_adds_.emplace_back(entry, v);
    }
    if (!exact) return RecomputeNode(i, s);
    auto sub = [](Column<int64_t>& c, size_t k, int64_t v) {
      if (v != 0) c.Set(k, c.host[k] - v);
    };
    EachRequestColumn(i, delta, sub);
    for (const auto& [entry, v] : scalar_adds_) sub(req_scalar_, static_cast<size_t>(entry), v);
    KeepDerived(i);
  }

  /** Node i's columns as one node (index 0) on the host, as they would be without the pods
   *  `removed` (bound there): preemption's dry run. False when a sum it would lower is
   *  saturated (its parts are unknown) or a removed pod's scalar has no entry there. */
  struct NodeRow {
    int64_t alloc_cpu, alloc_mem, alloc_eph, alloc_pods, req_cpu, req_mem, req_eph, nz_cpu, nz_mem, pod_count;
    int32_t offsets[2];
    std::vector<int32_t> slot;
    std::vector<int64_t> alloc_scalar, req_scalar;
    FitNodeView View() const {
      return FitNodeView{1,        &alloc_cpu, &alloc_mem, &alloc_eph, &alloc_pods,         &req_cpu,
                         &req_mem, &req_eph,   &nz_cpu,    &nz_mem,    &pod_count,          offsets,
                         slot.data(), alloc_scalar.data(), req_scalar.data()};
    }
  };
  bool RowWithout(NodeIndex i, const std::vector<const Pod*>& removed, const Snapshot& s, NodeRow* row) {
    // Field by field: the row's lists keep their capacity from call to call.
    row->alloc_cpu = alloc_cpu_.host[i];
    row->alloc_mem = alloc_mem_.host[i];
    row->alloc_eph = alloc_eph_.host[i];
    row->alloc_pods = alloc_pods_.host[i];
    row->req_cpu = req_cpu_.host[i];
    row->req_mem = req_mem_.host[i];
    row->req_eph = req_eph_.host[i];
    row->nz_cpu = nz_cpu_.host[i];
    row->nz_mem = nz_mem_.host[i];
    row->pod_count = pod_count_.host[i];
    row->offsets[0] = 0;
    row->slot.clear();
    row->alloc_scalar.clear();
    row->req_scalar.clear();
    for (int32_t k = scalar_offsets_.host[i]; k < scalar_offsets_.host[i + 1]; ++k) {
      row->slot.push_back(scalar_slot_.host[k]);
      row->alloc_scalar.push_back(alloc_scalar_.host[k]);
      row->req_scalar.push_back(req_scalar_.host[k]);
    }
    row->offsets[1] = static_cast<int32_t>(row->slot.size());
    constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
    bool exact = true;
    auto sub = [&](int64_t* sum, int64_t v) {
      if (v == 0) return;
      if (*sum == kSaturated) exact = false;
      *sum -= v;
    };
    for (const Pod* pod : removed) {
      const NodeResources& d = s.RequestsOf(*pod, i);
      sub(&row->req_cpu, d.requested.milli_cpu);
      sub(&row->req_mem, d.requested.memory);
      sub(&row->req_eph, d.requested.ephemeral_storage);
      sub(&row->nz_cpu, d.non_zero_milli_cpu);
      sub(&row->nz_mem, d.non_zero_memory);
      sub(&row->pod_count, d.pod_count);
      for (const auto& [name, v] : d.requested.scalars) {
        if (v == 0) continue;
        const int32_t slot = FindSlot(name);
        auto at = std::find(row->slot.begin(), row->slot.end(), slot);
        if (slot < 0 || at == row->slot.end()) return false;
        sub(&row->req_scalar[at - row->slot.begin()], v);
      }
    }
    return exact;
  }
  /** Node i's object changed: its allocatable is written in place, or false when its
   *  scalar resources no longer fit the layout (the caller builds again). */
  bool UpdateNode(NodeIndex i, const Snapshot& s) {
    const NodeResources r = NodeSums(s, i);
    std::vector<std::pair<int32_t, int64_t>> scalars;  // (entry, allocatable)
    for (int32_t k = scalar_offsets_.host[i]; k < scalar_offsets_.host[i + 1]; ++k) scalars.emplace_back(k, 0);
    for (const auto& [name, v] : r.allocatable.scalars) {
      const int32_t entry = FindEntry(i, FindSlot(name));
      if (entry < 0) return false;
      for (auto& [k, amount] : scalars) {
        if (k == entry) amount = v;
      }
    }
    auto set = [](Column<int64_t>& c, size_t k, int64_t v) {
      if (c.host[k] != v) c.Set(k, v);
    };
    set(alloc_cpu_, i, r.allocatable.milli_cpu);
    set(alloc_mem_, i, r.allocatable.memory);
    set(alloc_eph_, i, r.allocatable.ephemeral_storage);
    set(alloc_pods_, i, r.allocatable.allowed_pods);
    for (const auto& [k, amount] : scalars) set(alloc_scalar_, static_cast<size_t>(k), amount);
    KeepDerived(i);
    return true;
  }

  /** Node i joined (the last index): its columns go at the end. */
  void AddNode(NodeIndex i, const Snapshot& s) {
    const NodeResources r = NodeSums(s, i);
    n_ = s.num_nodes();
    std::map<int32_t, std::pair<int64_t, int64_t>> entries;  // slot -> (allocatable, requested)
    for (const auto& [name, v] : r.allocatable.scalars) entries[SlotOf(name)].first = v;
    for (const auto& [name, v] : r.requested.scalars) entries[SlotOf(name)].second = v;
    for (const auto& [slot, amounts] : entries) {
      scalar_slot_.Push(slot);
      alloc_scalar_.Push(amounts.first);
      req_scalar_.Push(amounts.second);
    }
    scalar_offsets_.Push(static_cast<int32_t>(scalar_slot_.host.size()));
    for (Column<int64_t>* c : {&alloc_cpu_, &alloc_mem_, &alloc_eph_, &alloc_pods_, &req_cpu_, &req_mem_, &req_eph_,
                               &nz_cpu_, &nz_mem_, &pod_count_, &own_balance_}) {
      c->Push(0);
    }
    rows_.Push(plugins::FitNodeRow{});
    auto set = [](Column<int64_t>& c, size_t k, int64_t v) { c.Set(k, v); };
    set(alloc_cpu_, i, r.allocatable.milli_cpu);
    set(alloc_mem_, i, r.allocatable.memory);
    set(alloc_eph_, i, r.allocatable.ephemeral_storage);
    set(alloc_pods_, i, r.allocatable.allowed_pods);
    EachRequestColumn(i, r, set);
    KeepDerived(i);
  }

  /** Node i's request sums computed again from its pods. */
  void RecomputeNode(NodeIndex i, const Snapshot& s) {
    const NodeResources r = NodeSums(s, i);
    auto set = [](Column<int64_t>& c, size_t k, int64_t v) {
      if (c.host[k] != v) c.Set(k, v);
    };
    EachRequestColumn(i, r, set);
    for (int32_t k = scalar_offsets_.host[i]; k < scalar_offsets_.host[i + 1]; ++k) {
      int64_t v = 0;
      for (const auto& [name, amount] : r.requested.scalars) {
        if (FindSlot(name) == scalar_slot_.host[k]) v = amount;
      }
      set(req_scalar_, static_cast<size_t>(k), v);
    }
    KeepDerived(i);
  }

  /** Column slot of a scalar resource, or -1 when no node has it. */
  int32_t FindSlot(const std::string& name) const {
    auto it = slots_.find(name);
    return it == slots_.end() ? -1 : it->second;
  }

  FitNodeView View() const {
    return FitNodeView{n_,          alloc_cpu_.ptr(), alloc_mem_.ptr(), alloc_eph_.ptr(), alloc_pods_.ptr(),
                       req_cpu_.ptr(), req_mem_.ptr(), req_eph_.ptr(), nz_cpu_.ptr(),    nz_mem_.ptr(),
                       pod_count_.ptr(), scalar_offsets_.ptr(), scalar_slot_.ptr(), alloc_scalar_.ptr(),
                       req_scalar_.ptr(), keeps_own_balance_ ? own_balance_.ptr() : nullptr, rows_.ptr()};
  }
  bool pod_level() const { return pod_level_; }
  /** Prefetches node i's row (ForListedNodesAhead's `ahead`). */
  auto RowAhead() const {
    const plugins::FitNodeRow* rows = rows_.ptr();
    return [rows](NodeIndex i) { KPLACE_PREFETCH(rows + i); };
  }

 private:
  std::vector<Column<int64_t>*> All() {
    return {&alloc_cpu_, &alloc_mem_, &alloc_eph_, &alloc_pods_, &req_cpu_,  &req_mem_,
            &req_eph_,   &nz_cpu_,    &nz_mem_,    &pod_count_,  &alloc_scalar_, &req_scalar_, &own_balance_};
  }
  /** BalancedOwnCpuMemory of node i's host columns (0 where an allocatable is 0:
   *  BalancedAllocation's fast path does not read it there). */
  int64_t OwnBalance(NodeIndex i) const {
    const int64_t a_cpu = alloc_cpu_.host[i], a_mem = alloc_mem_.host[i];
    return a_cpu == 0 || a_mem == 0 ? 0 : plugins::BalancedOwnCpuMemory(req_cpu_.host[i], a_cpu, req_mem_.host[i], a_mem);
  }
  /** Node i's FitNodeRow of its host columns. */
  plugins::FitNodeRow RowOf(NodeIndex i) const {
    return plugins::FitNodeRow{alloc_cpu_.host[i], alloc_mem_.host[i], req_cpu_.host[i], req_mem_.host[i],
                               nz_cpu_.host[i],    nz_mem_.host[i],    alloc_pods_.host[i], pod_count_.host[i]};
  }
  /** After node i's columns changed: what is kept from them (its row, its own balance). */
  void KeepDerived(NodeIndex i) {
    rows_.Set(i, RowOf(i));
    if (!keeps_own_balance_) return;
    const int64_t b = OwnBalance(i);
    if (own_balance_.host[i] != b) own_balance_.Set(i, b);
  }
  int32_t SlotOf(const std::string& name) {
    auto [it, inserted] = slots_.emplace(name, static_cast<int32_t>(slots_.size()));
    return it->second;
  }
  // Existing slots keep their numbers (new names are appended), so a pod compiled before
  // the rebuild still reads the right columns.
  void Rebuild(const Snapshot& s) { Build(s); }
  /** f(column, i, value) for node i's columns that sum over its pods. */
  template <typename F>
  void EachRequestColumn(NodeIndex i, const NodeResources& r, F f) {
    f(req_cpu_, i, r.requested.milli_cpu);
    f(req_mem_, i, r.requested.memory);
    f(req_eph_, i, r.requested.ephemeral_storage);
    f(nz_cpu_, i, r.non_zero_milli_cpu);
    f(nz_mem_, i, r.non_zero_memory);
    f(pod_count_, i, r.pod_count);
  }

  /** Node i's dense columns on the host (Build uploads them). */
  void SetNode(NodeIndex i, const NodeResources& r) {
    auto set = [](Column<int64_t>& c, size_t k, int64_t v) { c.host[k] = v; };
    set(alloc_cpu_, i, r.allocatable.milli_cpu);
    set(alloc_mem_, i, r.allocatable.memory);
    set(alloc_eph_, i, r.allocatable.ephemeral_storage);
    set(alloc_pods_, i, r.allocatable.allowed_pods);
    EachRequestColumn(i, r, set);
    if (keeps_own_balance_) own_balance_.host[i] = OwnBalance(i);
    rows_.host[i] = RowOf(i);
  }

  int32_t n_ = 0;
  bool pod_level_ = true;
  std::map<std::string, int32_t> slots_;
  Column<int64_t> alloc_cpu_, alloc_mem_, alloc_eph_, alloc_pods_, req_cpu_, req_mem_, req_eph_, nz_cpu_,
      nz_mem_, pod_count_, alloc_scalar_, req_scalar_;
  Column<int64_t> own_balance_;  // BalancedOwnCpuMemory per node, when keeps_own_balance_
  Column<plugins::FitNodeRow> rows_;  // RowOf per node, kept with the columns
  bool keeps_own_balance_ = false;
  Column<int32_t> scalar_offsets_, scalar_slot_;
  std::vector<std::pair<int32_t, int64_t>> scalar_adds_;
};

/** A plugin that reads ResourceColumns: binds, unbinds and node events keep them. */
class ResourceColumnsPlugin : public engine::Plugin {
 public:
  void OnBind(const Pod& pod, engine::NodeIndex node, const engine::Snapshot& s) override { columns_.AddPod(pod, node, s); }
  bool OnUnbind(const Pod& pod, engine::NodeIndex node, const engine::Snapshot& s) override {
    columns_.RemovePod(pod, node, s);
    return true;
  }
  bool OnNodeUpdate(engine::NodeIndex node, const Node&, const engine::Snapshot& s) override {
    return columns_.UpdateNode(node, s);
  }
  bool OnNodeAdd(engine::NodeIndex node, const engine::Snapshot& s) override {
    columns_.AddNode(node, s);
    return true;
  }

 protected:
  ResourceColumns columns_;
};

}  // namespace kplace::KPLACE_BACKEND_NS
