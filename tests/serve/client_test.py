#!/usr/bin/env python3
"""Drives a real `kplace serve` process over loopback as a batch scheduler would.

usage: client_test.py KPLACE_BINARY SHARED_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

import grpc
from grpc_tools import protoc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KPLACE, SHARED = sys.argv[1], sys.argv[2]
del sys.argv[1:3]

STUBS = tempfile.mkdtemp(prefix="kplace-stubs-")
if protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={STUBS}", f"--grpc_python_out={STUBS}",
                f"{ROOT}/proto/kplace/v1/placement.proto"]) != 0:
    sys.exit("protoc failed")
sys.path.insert(0, STUBS)
from kplace.v1 import placement_pb2 as pb  # noqa: E402
from kplace.v1 import placement_pb2_grpc as pb_grpc  # noqa: E402


def read(name):
    with open(os.path.join(SHARED, "realworld", name)) as f:
        return f.read()


def pod(name, cpu="100m", ns="default"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}


def node(name, cpu="4"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def event(kind, obj):
    return json.dumps({"type": kind, "object": obj})


def listing(items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, port, cls.metrics_port = start([], metrics=True)
        cls.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        cls.stub = pb_grpc.PlacementStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.proc.send_signal(signal.SIGTERM)
        rest = cls.proc.stderr.read()
        cls.proc.stderr.close()
        assert cls.proc.wait(timeout=30) == 0, rest
        assert "draining" in rest, rest

    def reset_small(self):
        r = self.stub.Reset(pb.ResetRequest(objects=listing([node("a"), node("b", "2")])))
        self.assertEqual(r.nodes, 2)
        return r.revision

    def snapshot(self):
        s = self.stub.Snapshot(pb.SnapshotRequest())
        return s.revision, json.loads(s.objects)

    def test_a_realworld_dump(self):
        items = []
        for name in ("k3s-v1.33-nodes.json", "k3s-v1.33-pods-default.json"):
            doc = json.loads(read(name))
            items += doc["items"] if "items" in doc else [doc]
        objects = listing(items)
        r = self.stub.Reset(pb.ResetRequest(objects=objects))
        self.assertGreater(r.nodes, 0)
        rev, snap = self.snapshot()
        self.assertEqual(rev, r.revision)
        kinds = [o["kind"] for o in snap["items"]]
        self.assertEqual(kinds.count("Node"), r.nodes)
        self.assertEqual(kinds.count("Pod"), r.bound_pods + r.pending_pods)
        # The snapshot is a cluster Reset reads back, to the same decisions.
        probe = listing([pod("probe")])
        first = self.stub.Schedule(pb.ScheduleRequest(pods=probe, mode=pb.DRY_RUN)).placements[0]
        again = self.stub.Reset(pb.ResetRequest(objects=json.dumps(snap)))
        self.assertEqual((again.nodes, again.bound_pods), (r.nodes, r.bound_pods))
        second = self.stub.Schedule(pb.ScheduleRequest(pods=probe, mode=pb.DRY_RUN)).placements[0]
        self.assertEqual((first.node, first.message, first.score), (second.node, second.message, second.score))

    def test_dry_run_then_commit(self):
        rev = self.reset_small()
        pods = listing([pod("p1", "3"), pod("p2", "3"), pod("big", "8")])
        dry = self.stub.Schedule(pb.ScheduleRequest(pods=pods, mode=pb.DRY_RUN))
        self.assertEqual(dry.revision, rev)
        self.assertEqual(self.snapshot()[0], rev)
        got = [(p.pod, p.node) for p in dry.placements]
        self.assertEqual(got[0], ("default/p1", "a"))
        self.assertEqual(got[1][1], "")  # a holds 1 CPU more, b has 2
        self.assertEqual(dry.placements[2].code, "Unschedulable")
        self.assertIn("0/2 nodes are available", dry.placements[2].message)
        self.assertIn("Insufficient cpu", dry.placements[2].message)
        done = self.stub.Schedule(pb.ScheduleRequest(pods=pods, mode=pb.COMMIT))
        self.assertEqual([(p.pod, p.node) for p in done.placements], got)
        self.assertEqual(done.revision, rev + 1)
        bound = {o["metadata"]["name"]: o["spec"].get("nodeName") for o in self.snapshot()[1]["items"] if o["kind"] == "Pod"}
        self.assertEqual(bound, {"p1": "a"})
        # p1 holds 3 of a's 4 CPUs now: another 3-CPU pod fits nowhere.
        again = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("p3", "3")]), mode=pb.DRY_RUN))
        self.assertEqual(again.placements[0].node, "")

    def test_apply_is_all_or_nothing(self):
        rev = self.reset_small()
        ok = self.stub.Apply(pb.ApplyRequest(events=[event("ADDED", node("c")), event("DELETED", node("b"))],
                                             expected_revision=rev))
        self.assertEqual((ok.revision, ok.applied), (rev + 1, 2))
        names = [o["metadata"]["name"] for o in self.snapshot()[1]["items"] if o["kind"] == "Node"]
        self.assertEqual(sorted(names), ["a", "c"])
        with self.assertRaises(grpc.RpcError) as bad:
            self.stub.Apply(pb.ApplyRequest(events=[event("ADDED", node("d")), event("DELETED", node("nope"))]))
        self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("events[1]", bad.exception.details())
        self.assertIn("nope", bad.exception.details())
        rev2, snap = self.snapshot()
        self.assertEqual(rev2, rev + 1)
        self.assertNotIn("d", [o["metadata"]["name"] for o in snap["items"]])
        with self.assertRaises(grpc.RpcError) as stale:
            self.stub.Apply(pb.ApplyRequest(events=[event("ADDED", node("e"))], expected_revision=rev))
        self.assertEqual(stale.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        # Streamed: applied when the stream closes.
        streamed = self.stub.ApplyStream(iter([pb.ApplyRequest(events=[event("ADDED", node(f"s{k}"))]) for k in range(5)]))
        self.assertEqual((streamed.revision, streamed.applied), (rev + 2, 5))

    def test_gangs(self):
        # a: 4 CPUs, b: 2. A PodGroup of three 2-CPU workers fits (two on a, one on b);
        # a request gang of two 3-CPU pods cannot (only a has 3 left... after the first, nothing).
        rev = self.reset_small()
        group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                 "metadata": {"name": "train", "namespace": "default"},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}
        workers = [dict(pod(f"w{k}", "2"), spec=dict(pod(f"w{k}", "2")["spec"], schedulingGroup={"podGroupName": "train"}))
                   for k in range(3)]
        r = self.stub.Schedule(pb.ScheduleRequest(pods=listing([group] + workers), mode=pb.COMMIT))
        self.assertEqual([(g.name, g.placed, g.placed_count) for g in r.gangs], [("default/train", True, 3)])
        self.assertTrue(all(p.node for p in r.placements))
        self.assertEqual(r.revision, rev + 1)
        fail = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("x0", "1"), pod("x1", "1")]), mode=pb.COMMIT,
                                                     gangs=[pb.Gang(name="pair", min_count=2, pods=["default/x0", "default/x1"])]))
        self.assertFalse(fail.gangs[0].placed)
        self.assertEqual(fail.gangs[0].first_unplaced, "default/x0")
        self.assertIn("Insufficient cpu", fail.gangs[0].reason)
        self.assertEqual([p.node for p in fail.placements], ["", ""])
        self.assertIn("gang pair: 0 of 2 members placed, minCount 2", fail.placements[1].message)
        names = sorted(o["metadata"]["name"] for o in self.snapshot()[1]["items"] if o["kind"] == "Pod")
        self.assertEqual(names, ["w0", "w1", "w2"])

    def test_explanations_on_request(self):
        self.reset_small()
        pods = listing([pod("x1", "3"), pod("x2", "9")])
        plain = self.stub.Schedule(pb.ScheduleRequest(pods=pods, mode=pb.DRY_RUN))
        self.assertEqual([p.explanation for p in plain.placements], ["", ""])
        got = self.stub.Schedule(pb.ScheduleRequest(pods=pods, mode=pb.DRY_RUN, explain=True))
        self.assertEqual([p.node for p in got.placements], [p.node for p in plain.placements])
        fits, big = (json.loads(p.explanation) for p in got.placements)
        self.assertEqual(fits["node"], "a")
        self.assertEqual(sorted(n["node"] for n in fits["nodes"]), ["a", "b"])
        on_b = next(n for n in fits["nodes"] if n["node"] == "b")
        self.assertEqual(on_b["filter"]["plugin"], "NodeResourcesFit")
        self.assertIn("Insufficient cpu", on_b["filter"]["reasons"])
        on_a = next(n for n in fits["nodes"] if n["node"] == "a")
        self.assertEqual(on_a["filter"], "passed")
        self.assertIn("kube-scheduler-simulator.sigs.k8s.io/selected-node", fits["annotations"])
        self.assertIsNone(big["node"])
        self.assertEqual(big["postFilter"]["plugin"], "DefaultPreemption")
        ev = self.stub.Evaluate(pb.EvaluateRequest(pods=listing([pod("x3", "1")]), explain=True)).results[0]
        self.assertEqual(len(json.loads(ev.explanation)["nodes"]), 2)

    def test_evaluate(self):
        rev = self.reset_small()
        r = self.stub.Evaluate(pb.EvaluateRequest(pods=listing([pod("e1", "3"), pod("e2", "3"), pod("e3", "9")]),
                                                  expected_revision=rev))
        self.assertEqual(r.revision, rev)
        # Each alone: both 3-CPU pods fit on a (they would not together); 9 CPUs fit nowhere.
        self.assertEqual([(p.pod, p.node) for p in r.results], [("default/e1", "a"), ("default/e2", "a"), ("default/e3", "")])
        self.assertEqual(r.results[0].feasible, 1)
        self.assertIn("Insufficient cpu", r.results[2].message)
        self.assertEqual(self.snapshot()[0], rev)
        self.assertEqual([o for o in self.snapshot()[1]["items"] if o["kind"] == "Pod"], [])

    def test_metrics(self):
        before = scrape(self.metrics_port)
        rev = self.reset_small()
        self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("m1", "1"), pod("m2", "99")]), mode=pb.COMMIT))
        with self.assertRaises(grpc.RpcError):
            self.stub.Schedule(pb.ScheduleRequest(pods="{bad"))
        after = scrape(self.metrics_port)

        def grew(name, **labels):
            key = (name, frozenset(labels.items()))
            return after.get(key, 0) - before.get(key, 0)

        self.assertEqual(grew("kplace_requests_total", call="Reset", code="OK"), 1)
        self.assertEqual(grew("kplace_requests_total", call="Schedule", code="OK"), 1)
        self.assertEqual(grew("kplace_requests_total", call="Schedule", code="INVALID_ARGUMENT"), 1)
        self.assertEqual(grew("kplace_pods_total", mode="COMMIT", result="placed"), 1)
        self.assertEqual(grew("kplace_pods_total", mode="COMMIT", result="unplaced"), 1)
        self.assertEqual(grew("kplace_request_duration_seconds_count", call="Schedule"), 2)
        self.assertEqual(after[("kplace_revision", frozenset())], rev + 1)

    def test_bad_input_changes_nothing(self):
        self.reset_small()
        self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("placed")]), mode=pb.COMMIT))
        rev = self.snapshot()[0]
        cases = [
            # A pod the cluster already holds on a node, asked for again.
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("placed")]), mode=pb.COMMIT)),
            (self.stub.Evaluate, pb.EvaluateRequest(pods=listing([pod("placed")]))),
            (self.stub.Schedule, pb.ScheduleRequest(pods="{not json")),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([node("x")]))),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([dict(pod("bound"), spec={"nodeName": "a", "containers": []})]))),
            (self.stub.Apply, pb.ApplyRequest(events=['{"type":"ADDED","object":{"kind":"Gadget","metadata":{"name":"g"}}}'])),
            (self.stub.Reset, pb.ResetRequest(objects=listing([node("a")]), config="kind: Nonsense")),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("g")]), gangs=[pb.Gang(name="g", min_count=1, pods=["default/nope"])])),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([dict(pod("m"), spec=dict(pod("m")["spec"], schedulingGroup={"podGroupName": "missing"}))]))),
            (self.stub.Evaluate, pb.EvaluateRequest(pods="[1, 2")),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("u")]), mode=7)),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("g")]), gangs=[pb.Gang(name="", min_count=1, pods=["default/g"])])),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("g")]), gangs=[pb.Gang(name="g", min_count=1)])),
            (self.stub.Schedule, pb.ScheduleRequest(pods=listing([pod("g"), pod("h")]),
                                                    gangs=[pb.Gang(name="g", min_count=1, pods=["default/g"]),
                                                           pb.Gang(name="g", min_count=1, pods=["default/h"])])),
        ]
        for call, req in cases:
            with self.assertRaises(grpc.RpcError) as e:
                call(req)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
        self.assertEqual(self.snapshot()[0], rev)

    def test_writes_that_change_nothing_keep_the_revision(self):
        rev = self.reset_small()
        empty = self.stub.Apply(pb.ApplyRequest(events=[], expected_revision=rev))
        self.assertEqual((empty.revision, empty.applied), (rev, 0))
        nowhere = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("huge", "64")]), mode=pb.COMMIT, expected_revision=rev))
        self.assertEqual((nowhere.placements[0].node, nowhere.revision), ("", rev))
        # Another writer's expectation still holds.
        placed = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("small", "1")]), mode=pb.COMMIT, expected_revision=rev))
        self.assertEqual((placed.placements[0].node != "", placed.revision), (True, rev + 1))

    def test_instances_tell_restarts_apart(self):
        rev = self.reset_small()
        first = self.stub.Snapshot(pb.SnapshotRequest()).instance
        self.assertRegex(first, r"^[0-9a-f]{16}$")
        ok = self.stub.Apply(pb.ApplyRequest(events=[event("ADDED", node("i1"))], expected_revision=rev, expected_instance=first))
        self.assertEqual((ok.revision, ok.instance), (rev + 1, first))
        # A restarted server (another process) counts revisions from 1 again: a write that
        # names the old instance is refused even where the number matches.
        proc, port = start([])
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
                other = pb_grpc.PlacementStub(ch)
                fresh = other.Reset(pb.ResetRequest(objects=listing([node("a")])))
                self.assertNotEqual(fresh.instance, first)
                for call, req in ((other.Apply, pb.ApplyRequest(events=[event("ADDED", node("z"))], expected_revision=fresh.revision,
                                                                 expected_instance=first)),
                                  (other.Schedule, pb.ScheduleRequest(pods=listing([pod("z")]), expected_instance=first)),
                                  (other.Evaluate, pb.EvaluateRequest(pods=listing([pod("z")]), expected_instance=first))):
                    with self.assertRaises(grpc.RpcError) as e:
                        call(req)
                    self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertIn("Reset from your source of truth", e.exception.details())
                self.assertEqual(other.Snapshot(pb.SnapshotRequest()).revision, fresh.revision)
        finally:
            stop(proc)

    def test_reflection_lists_and_describes_the_service(self):
        info = self.channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        listed = b"".join(info(iter([b"\x3a\x00"])))  # list_services: ""
        self.assertIn(b"kplace.v1.Placement", listed)
        self.assertIn(b"grpc.health.v1.Health", listed)
        symbol = b"kplace.v1.Placement"
        described = b"".join(info(iter([b"\x22" + bytes([len(symbol)]) + symbol])))  # file_containing_symbol
        for name in (b"kplace/v1/placement.proto", b"ScheduleRequest", b"expected_instance"):
            self.assertIn(name, described)

    def test_what_ifs_leave_the_state_as_it_was(self):
        # a: 4 CPUs, b: 2. p1 (3 CPUs) goes to a.
        self.reset_small()
        done = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("p1", "3")]), mode=pb.COMMIT))
        self.assertEqual(done.placements[0].node, "a")
        rev, snap = self.snapshot()
        drain = self.stub.Drain(pb.DrainRequest(nodes=["a"], expected_revision=rev))
        self.assertEqual((drain.revision, list(drain.result.nodes), drain.result.drainable), (rev, ["a"], False))
        self.assertEqual([(p.pod, p.node) for p in drain.result.pods], [("default/p1", "")])
        self.assertIn("Insufficient cpu", drain.result.pods[0].message)
        consolidate = self.stub.Consolidate(pb.ConsolidateRequest())
        self.assertEqual([(list(c.nodes), c.drainable) for c in consolidate.candidates], [(["a"], False), (["b"], True)])
        fits = self.stub.Fits(pb.FitsRequest(pod=json.dumps(pod("probe", "1"))))
        self.assertEqual(list(fits.fits), ["a", "b"])
        big = self.stub.Fits(pb.FitsRequest(pod=json.dumps(pod("probe", "3"))))
        self.assertEqual(list(big.fits), [])
        self.assertEqual([(v.node, v.plugin, v.code, v.reason) for v in big.rejected],
                         [("a", "NodeResourcesFit", "Unschedulable", "Insufficient cpu"),
                          # b's 2 CPUs could never hold 3: no preemption would help.
                          ("b", "NodeResourcesFit", "UnschedulableAndUnresolvable", "Insufficient cpu")])
        first = self.stub.Fits(pb.FitsRequest(pod=json.dumps(pod("probe", "1")), nodes=["b", "a"], first_fit=True))
        self.assertEqual(list(first.fits), ["b"])
        replicas = self.stub.Replicas(pb.ReplicasRequest(pod=json.dumps(pod("copy", "1")), max=10))
        self.assertEqual((replicas.replicas, dict(replicas.per_node)), (3, {"a": 1, "b": 2}))
        self.assertEqual((replicas.stopped_by.pod, replicas.stopped_by.node), ("default/copy-whatif-3", ""))
        # a has 1 CPU left, b 2: two 2-CPU pods, one on b, one on a new 4-CPU node; 8 CPUs fit none.
        pool = node("pool")
        del pool["metadata"]["labels"]
        scale = self.stub.ScaleUp(pb.ScaleUpRequest(pods=listing([pod("s1", "2"), pod("s2", "2"), pod("s3", "8")]),
                                                    node_templates=json.dumps(pool), expected_revision=rev))
        self.assertEqual((scale.revision, dict(scale.new_nodes)), (rev, {"pool": 1}))
        self.assertEqual([(p.pod, p.node, p.code) for p in scale.pending],
                         [("default/s3", "", "Unschedulable"), ("default/s1", "b", "Success"),
                          ("default/s2", "pool-0", "Success")])
        self.assertEqual(scale.pending[0].message, "0/1 nodes are available: 1 Insufficient cpu.")
        none = self.stub.ScaleUp(pb.ScaleUpRequest(pods=listing([pod("s1", "3")]), node_templates=json.dumps(pool),
                                                   max_nodes=0))
        self.assertEqual((dict(none.new_nodes), none.pending[0].node), ({"pool": 0}, ""))
        self.assertEqual(self.snapshot(), (rev, snap))
        for call, req in ((self.stub.Drain, pb.DrainRequest(nodes=["nope"])),
                          (self.stub.Drain, pb.DrainRequest()),
                          (self.stub.Replicas, pb.ReplicasRequest(pod=json.dumps(pod("copy", "1")), max=0)),
                          (self.stub.Fits, pb.FitsRequest(pod=listing([pod("x"), pod("y")]))),
                          (self.stub.ScaleUp, pb.ScaleUpRequest(pods=listing([pod("x")]), node_templates=listing([])))):
            with self.assertRaises(grpc.RpcError) as e:
                call(req)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.Fits(pb.FitsRequest(pod=json.dumps(pod("probe", "1")), expected_instance="0000000000000000"))
        self.assertEqual(e.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(self.snapshot(), (rev, snap))

    def test_health_and_concurrent_clients(self):
        health = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        self.assertEqual(health(b""), b"\x08\x01")  # status: SERVING
        rev = self.reset_small()
        errors, decided = [], []

        def client(k):
            try:
                for i in range(20):
                    r = self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod(f"c{k}-{i}", "10m")]), mode=pb.COMMIT))
                    decided.append(r.placements[0].node)
            except grpc.RpcError as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual(len(decided), 80)
        self.assertTrue(all(decided))
        rev2, snap = self.snapshot()
        self.assertEqual(rev2, rev + 80)
        names = [o["metadata"]["name"] for o in snap["items"] if o["kind"] == "Pod"]
        self.assertEqual(len(names), 80)
        self.assertEqual(len(set(names)), 80)


def self_signed(directory, name):
    key, cert = os.path.join(directory, f"{name}.key"), os.path.join(directory, f"{name}.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key, cert


def start(args, metrics=False):
    extra = ["--metrics-listen", "127.0.0.1:0"] if metrics else []
    proc = subprocess.Popen([KPLACE, "serve", "--listen", "127.0.0.1:0"] + extra + args, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"port (\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"kplace serve did not start: {line!r}")
    if metrics:
        return proc, int(m.group(1)), int(re.search(r"metrics on \S+ \(port (\d+)\)", line).group(1))
    return proc, int(m.group(1))


def scrape(port):
    """The metrics page as {(name, frozenset(labels)): value}."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=30) == 0


class SecureServeTest(unittest.TestCase):
    """TLS (server and mutual) and the bearer token."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kplace-tls-")
        cls.key, cls.cert = self_signed(cls.dir, "server")
        cls.client_key, cls.client_cert = self_signed(cls.dir, "client")
        cls.token_file = os.path.join(cls.dir, "token")
        with open(cls.token_file, "w") as f:
            f.write("s3cret-token\n")

    def read_file(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_beyond_loopback_needs_tls_and_a_token(self):
        for args in (["--listen", "0.0.0.0:0"], ["--listen", "0.0.0.0:0", "--tls-cert", self.cert, "--tls-key", self.key],
                     ["--tls-cert", self.cert], ["--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0"],
                     ["--listen", "127.0.0.1:99999"], ["--listen", "127.0.0.1:"], ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:70000"]):
            r = subprocess.run([KPLACE, "serve"] + args, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("kplace serve:", r.stderr)

    def test_size_limit(self):
        proc, port = start(["--max-message-mb", "1"])
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
                stub = pb_grpc.PlacementStub(ch)
                rev = stub.Reset(pb.ResetRequest(objects=listing([node("a")]))).revision
                big = listing([node("a")] + [dict(node(f"pad{k}"), metadata={"name": f"pad{k}", "labels": {"x": "y" * 2000}})
                                             for k in range(600)])
                self.assertGreater(len(big), 1 << 20)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.Reset(pb.ResetRequest(objects=big))
                self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                s = stub.Snapshot(pb.SnapshotRequest())
                self.assertEqual(s.revision, rev)
                self.assertEqual([o["metadata"]["name"] for o in json.loads(s.objects)["items"]], ["a"])
        finally:
            stop(proc)

    def test_tls_and_token(self):
        proc, port = start(["--tls-cert", self.cert, "--tls-key", self.key, "--token-file", self.token_file])
        try:
            creds = grpc.ssl_channel_credentials(root_certificates=self.read_file(self.cert))
            with grpc.secure_channel(f"localhost:{port}", creds) as channel:
                stub = pb_grpc.PlacementStub(channel)
                req = pb.ResetRequest(objects=listing([node("a")]))
                for metadata in (None, [("authorization", "Bearer wrong")], [("authorization", "s3cret-token")]):
                    with self.assertRaises(grpc.RpcError) as e:
                        stub.Reset(req, metadata=metadata)
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                good = [("authorization", "Bearer s3cret-token")]
                rev = stub.Reset(req, metadata=good).revision
                # The scheme is case-insensitive (RFC 7235); the token is not.
                for header in ("bearer s3cret-token", "BEARER  s3cret-token"):
                    self.assertEqual(stub.Snapshot(pb.SnapshotRequest(), metadata=[("authorization", header)]).revision, rev)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.Snapshot(pb.SnapshotRequest(), metadata=[("authorization", "Bearer S3CRET-TOKEN")])
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                with self.assertRaises(grpc.RpcError) as e:
                    stub.Apply(pb.ApplyRequest(events=[event("ADDED", node("b"))]), metadata=[("authorization", "Bearer no")])
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                snap = stub.Snapshot(pb.SnapshotRequest(), metadata=good)
                self.assertEqual(snap.revision, rev)  # the refused Apply changed nothing
                self.assertEqual([o["metadata"]["name"] for o in json.loads(snap.objects)["items"]], ["a"])
            # Plain text to a TLS port gets nowhere.
            with grpc.insecure_channel(f"127.0.0.1:{port}") as plain:
                with self.assertRaises(grpc.RpcError) as e:
                    pb_grpc.PlacementStub(plain).Snapshot(pb.SnapshotRequest(), timeout=5)
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        finally:
            stop(proc)

    def test_mutual_tls(self):
        proc, port = start(["--tls-cert", self.cert, "--tls-key", self.key, "--client-ca", self.client_cert])
        try:
            root = self.read_file(self.cert)
            with_cert = grpc.ssl_channel_credentials(root_certificates=root, private_key=self.read_file(self.client_key),
                                                     certificate_chain=self.read_file(self.client_cert))
            with grpc.secure_channel(f"localhost:{port}", with_cert) as channel:
                self.assertGreater(pb_grpc.PlacementStub(channel).Reset(pb.ResetRequest(objects=listing([node("a")]))).revision, 0)
            with grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials(root_certificates=root)) as channel:
                with self.assertRaises(grpc.RpcError) as e:
                    pb_grpc.PlacementStub(channel).Snapshot(pb.SnapshotRequest(), timeout=5)
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        finally:
            stop(proc)


if __name__ == "__main__":
    unittest.main(verbosity=2)
