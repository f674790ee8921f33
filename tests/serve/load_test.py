#!/usr/bin/env python3
"""Load on a real `kplace serve`: N concurrent clients for S seconds (bounded by count too).

usage: load_test.py KPLACE_BINARY [--clients 8] [--seconds 60] [--max-calls 100000] [--nodes 500]

Each client loops over: a COMMIT of a few pods, a DRY_RUN, an Evaluate and an Apply of a
pod deletion (of a pod it placed earlier). At the end the final Snapshot must hold exactly
the pods committed and not deleted (none lost, none twice), every call must have succeeded,
and the per-call latencies (p50/p99) are printed: the line docs/benchmarks.md records.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from grpc_tools import protoc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stubs():
    out = tempfile.mkdtemp(prefix="kplace-stubs-")
    if protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={out}", f"--grpc_python_out={out}",
                    f"{ROOT}/proto/kplace/v1/placement.proto"]) != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, out)


def pod(name, cpu="10m"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "load"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}}}]}}


def node(k, zones=10):
    name = f"node-{k}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{k % zones}"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "250"}}}


def listing(items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100.0 * len(values)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kplace")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--max-calls", type=int, default=100000, help="stop after this many calls in all")
    ap.add_argument("--nodes", type=int, default=500)
    args = ap.parse_args()
    stubs()
    from kplace.v1 import placement_pb2 as pb
    from kplace.v1 import placement_pb2_grpc as pb_grpc

    proc = subprocess.Popen([args.kplace, "serve", "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"port (\d+)", line)
    if not m:
        proc.kill()
        sys.exit(f"kplace serve did not start: {line!r}")
    channel = grpc.insecure_channel(f"127.0.0.1:{m.group(1)}", options=[("grpc.max_receive_message_length", 1 << 30)])
    stub = pb_grpc.PlacementStub(channel)
    stub.Reset(pb.ResetRequest(objects=listing([node(k) for k in range(args.nodes)])))

    lock = threading.Lock()
    latencies = {"Schedule": [], "DryRun": [], "Evaluate": [], "Apply": []}
    errors, committed, deleted = [], set(), set()
    calls = [0]
    deadline = time.monotonic() + args.seconds

    def timed(kind, f):
        t = time.perf_counter()
        r = f()
        with lock:
            latencies[kind].append(time.perf_counter() - t)
            calls[0] += 1
        return r

    def client(c):
        placed, i = [], 0
        try:
            while time.monotonic() < deadline:
                with lock:
                    if calls[0] >= args.max_calls:
                        return
                names = [f"c{c}-{i}-{k}" for k in range(4)]
                i += 1
                r = timed("Schedule", lambda: stub.Schedule(pb.ScheduleRequest(pods=listing([pod(n) for n in names]), mode=pb.COMMIT)))
                for p in r.placements:
                    if not p.node:
                        raise AssertionError(f"{p.pod} not placed: {p.message}")
                    placed.append((p.pod.split("/", 1)[1], p.node))
                with lock:
                    committed.update(n for n in names)
                timed("DryRun", lambda: stub.Schedule(pb.ScheduleRequest(pods=listing([pod(f"dry-{c}-{i}")]), mode=pb.DRY_RUN)))
                timed("Evaluate", lambda: stub.Evaluate(pb.EvaluateRequest(pods=listing([pod(f"ev-{c}-{i}-{k}") for k in range(4)]))))
                gone, on = placed.pop(0)
                bound = dict(pod(gone), spec=dict(pod(gone)["spec"], nodeName=on))
                timed("Apply", lambda: stub.Apply(pb.ApplyRequest(events=[json.dumps({"type": "DELETED", "object": bound})])))
                with lock:
                    deleted.add(gone)
        except Exception as e:  # reported below
            with lock:
                errors.append(f"client {c}: {e!r}")

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    snap = json.loads(stub.Snapshot(pb.SnapshotRequest()).objects)
    names = [o["metadata"]["name"] for o in snap["items"] if o["kind"] == "Pod"]
    channel.close()
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    rc = proc.wait(timeout=30)

    want = committed - deleted
    ok = not errors and rc == 0 and len(names) == len(set(names)) and set(names) == want
    summary = ", ".join(f"{k} p50 {percentile(v, 50) * 1e3:.2f} ms p99 {percentile(v, 99) * 1e3:.2f} ms ({len(v)})"
                        for k, v in latencies.items())
    print(f"load: {args.clients} clients, {took:.1f} s, {calls[0]} calls, {len(committed)} pods committed, "
          f"{len(deleted)} deleted, {len(names)} in the final Snapshot; {summary}")
    for e in errors[:5]:
        print(e)
    if len(names) != len(set(names)):
        print("duplicated placements in the final Snapshot")
    if set(names) != want:
        print(f"lost: {sorted(want - set(names))[:5]}, unexpected: {sorted(set(names) - want)[:5]}")
    if rc != 0:
        print(f"kplace serve exited {rc}: {rest}")
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
