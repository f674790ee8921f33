#pragma once
// The resource columns NodeResourcesFit and NodeResourcesBalancedAllocation read:
// allocatable, requested and non-zero requested per node (noderesources.md §4), kept
// in step with bindings. Included by kernels/plugins/*.cu after kernels/backend.cuh.
#include <map>
#include <string>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/model/requests.h"
#include "kplace/plugins/node_resources_fit.h"

namespace kplace::KPLACE_BACKEND_NS {

/** The resource columns shared by NodeResourcesFit and BalancedAllocation. */
class ResourceColumns {
  using NodeIndex = engine::NodeIndex;
  using Snapshot = engine::Snapshot;
  using FitNodeView = plugins::FitNodeView;

 public:
  void Build(const Snapshot& s) {
    n_ = s.num_nodes();
    pod_level_ = s.gates().Enabled("PodLevelResources");
    for (Column<int64_t>* c : {&alloc_cpu_, &alloc_mem_, &alloc_eph_, &alloc_pods_, &req_cpu_, &req_mem_,
                               &req_eph_, &nz_cpu_, &nz_mem_, &pod_count_}) {
      c->host.assign(n_, 0);
    }
    std::vector<NodeResources> nodes(n_);
    for (NodeIndex i = 0; i < n_; ++i) {
      nodes[i] = ComputeNodeResources(s.node(i), s.pods_on(i), pod_level_);
      for (const auto& [name, v] : nodes[i].allocatable.scalars) SlotOf(name);
      for (const auto& [name, v] : nodes[i].requested.scalars) SlotOf(name);
    }
    alloc_scalar_.host.assign(static_cast<size_t>(slots_.size()) * n_, 0);
    req_scalar_.host.assign(alloc_scalar_.host.size(), 0);
    for (NodeIndex i = 0; i < n_; ++i) SetNode(i, nodes[i], /*upload=*/false);
    for (Column<int64_t>* c : All()) c->Upload();
  }

  /** Adds a bound pod's requests to its node: the node's sums grow by the pod's own, as
   *  upstream's NodeInfo.AddPod does (integer sums, so equal to recomputing the node). */
  void AddPod(const Pod& pod, NodeIndex i, const Snapshot& s) {
    if (!has_last_ || !SameRequests(pod, last_pod_)) {  // consecutive binds are mostly replicas
      last_delta_ = NodeResources{};
      last_delta_.AddPod(pod, pod_level_);
      last_pod_ = pod;
      has_last_ = true;
    }
    const NodeResources& delta = last_delta_;
    for (const auto& [name, v] : delta.requested.scalars) {
      if (!slots_.count(name)) {  // a scalar no node had: grow the columns
        Rebuild(s);
        return;
      }
    }
    auto add = [](Column<int64_t>& c, size_t k, int64_t v) {
      if (v != 0) c.Set(k, c.host[k] + v);
    };
    EachRequestColumn(i, delta, add);
    for (const auto& [name, v] : delta.requested.scalars) add(req_scalar_, static_cast<size_t>(slots_.at(name)) * n_ + i, v);
  }

  /** Column slot of a scalar resource, or -1 when no node has it. */
  int32_t FindSlot(const std::string& name) const {
    auto it = slots_.find(name);
    return it == slots_.end() ? -1 : it->second;
  }

  FitNodeView View() const {
    return FitNodeView{n_,          alloc_cpu_.ptr(), alloc_mem_.ptr(), alloc_eph_.ptr(), alloc_pods_.ptr(),
                       req_cpu_.ptr(), req_mem_.ptr(), req_eph_.ptr(), nz_cpu_.ptr(),    nz_mem_.ptr(),
                       pod_count_.ptr(), alloc_scalar_.ptr(), req_scalar_.ptr()};
  }
  bool pod_level() const { return pod_level_; }

 private:
  std::vector<Column<int64_t>*> All() {
    return {&alloc_cpu_, &alloc_mem_, &alloc_eph_, &alloc_pods_, &req_cpu_,  &req_mem_,
            &req_eph_,   &nz_cpu_,    &nz_mem_,    &pod_count_,  &alloc_scalar_, &req_scalar_};
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

  void SetNode(NodeIndex i, const NodeResources& r, bool upload) {
    auto set = [&](Column<int64_t>& c, size_t k, int64_t v) {
      if (upload) {
        if (c.host[k] != v) c.Set(k, v);
      } else {
        c.host[k] = v;
      }
    };
    set(alloc_cpu_, i, r.allocatable.milli_cpu);
    set(alloc_mem_, i, r.allocatable.memory);
    set(alloc_eph_, i, r.allocatable.ephemeral_storage);
    set(alloc_pods_, i, r.allocatable.allowed_pods);
    EachRequestColumn(i, r, set);
    for (const auto& [name, slot] : slots_) {
      size_t k = static_cast<size_t>(slot) * n_ + i;
      auto a = r.allocatable.scalars.find(name);
      auto q = r.requested.scalars.find(name);
      set(alloc_scalar_, k, a == r.allocatable.scalars.end() ? 0 : a->second);
      set(req_scalar_, k, q == r.requested.scalars.end() ? 0 : q->second);
    }
  }

  int32_t n_ = 0;
  bool pod_level_ = true;
  std::map<std::string, int32_t> slots_;
  bool has_last_ = false;  // the last bound pod's requests and its contribution
  Pod last_pod_;
  NodeResources last_delta_;
  Column<int64_t> alloc_cpu_, alloc_mem_, alloc_eph_, alloc_pods_, req_cpu_, req_mem_, req_eph_, nz_cpu_,
      nz_mem_, pod_count_, alloc_scalar_, req_scalar_;
};

}  // namespace kplace::KPLACE_BACKEND_NS
