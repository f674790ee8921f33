#!/usr/bin/env python3
"""Cluster Autoscaler's anti-affinity surge for `kplace whatif scale-up` (docs/whatif.md).

usage: surge_pods.py CLUSTER N OUT_CLUSTER OUT_PODS OUT_TEMPLATE

From a `kplace gen` cluster: OUT_CLUSTER with one pod of app=surge bound on every node,
OUT_PODS with N pending pods of the same ReplicaSet, each required anti-affine on
kubernetes.io/hostname with app=surge (no existing node can take one), and OUT_TEMPLATE, the
first node as a template named "pool" (its hostname label dropped: each new node gets its own).
"""
import json
import sys


def pod(name, node=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "default", "labels": {"app": "surge"},
                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "surge",
                                           "uid": "rs-surge", "controller": True}]},
         "spec": {"containers": [{"name": "c", "image": "app",
                                  "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                  "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                      {"labelSelector": {"matchLabels": {"app": "surge"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}
    if node:
        p["spec"]["nodeName"] = node
    return p


def main():
    cluster_in, n, cluster_out, pods_out, template_out = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
    with open(cluster_in) as f:
        cluster = json.load(f)
    nodes = [o for o in cluster["items"] if o["kind"] == "Node"]
    cluster["items"] += [pod(f"old-{i}", node["metadata"]["name"]) for i, node in enumerate(nodes)]
    template = json.loads(json.dumps(nodes[0]))
    labels = {k: v for k, v in nodes[0]["metadata"].get("labels", {}).items() if k != "kubernetes.io/hostname"}
    template["metadata"] = {"name": "pool", "labels": labels}
    for path, doc in ((cluster_out, cluster),
                      (pods_out, {"apiVersion": "v1", "kind": "List", "items": [pod(f"surge-{k}") for k in range(n)]}),
                      (template_out, template)):
        with open(path, "w") as f:
            json.dump(doc, f)


if __name__ == "__main__":
    main()
