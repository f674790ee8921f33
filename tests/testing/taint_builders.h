#pragma once
// Builders for taints, tolerations and host ports (TaintToleration, NodeUnschedulable,
// NodeName and NodePorts tests).
#include <string>
#include <vector>

#include "kplace/engine/framework.h"
#include "kplace/model/objects.h"

namespace kplace::testing {

inline Taint MakeTaint(const std::string& key, const std::string& value, const std::string& effect) {
  return Taint{key, value, effect};
}

inline Toleration MakeToleration(const std::string& key, const std::string& op, const std::string& value,
                                 const std::string& effect) {
  Toleration t;
  t.key = key;
  t.op = op;
  t.value = value;
  t.effect = effect;
  return t;
}

inline Node MakeTaintedNode(const std::string& name, std::vector<Taint> taints, bool unschedulable = false) {
  Node n;
  n.meta.name = name;
  n.taints = std::move(taints);
  n.unschedulable = unschedulable;
  return n;
}

inline Pod MakeTolerantPod(const std::string& name, std::vector<Toleration> tolerations) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = "default";
  p.containers.push_back(Container{});
  p.tolerations = std::move(tolerations);
  return p;
}

inline ContainerPort MakeHostPort(int32_t host_port, const std::string& protocol = "TCP",
                                  const std::string& host_ip = "") {
  ContainerPort p;
  p.host_port = host_port;
  p.protocol = protocol;
  p.host_ip = host_ip;
  return p;
}

/** A pod with one container carrying `ports`, bound to `node_name` when given. */
inline Pod MakePortPod(const std::string& name, std::vector<ContainerPort> ports, const std::string& node_name = "") {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = "default";
  p.node_name = node_name;
  Container c;
  c.name = "c";
  c.ports = std::move(ports);
  p.containers.push_back(std::move(c));
  return p;
}

/** The backends to run engine tests on: omp, plus cuda when a device is present. */
inline std::vector<engine::Backend> TestBackends() {
  std::vector<engine::Backend> out = {engine::Backend::kOmp};
  if (engine::CudaAvailable()) out.push_back(engine::Backend::kCuda);
  return out;
}

}  // namespace kplace::testing
