#!/usr/bin/env python3
"""Drives a real `kplace serve` process over loopback as a batch scheduler would, through
kplace-client (python/; ctest installs it into the build tree and puts it on PYTHONPATH).

usage: PYTHONPATH=SITE client_test.py KPLACE_BINARY SHARED_DIR
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
from concurrent import futures

import grpc
from kplace_client import KplaceError, PlacementClient
from kplace_client import placement_pb2 as pb
from kplace_client import placement_pb2_grpc as pb_grpc

KPLACE, SHARED = sys.argv[1], sys.argv[2]
del sys.argv[1:3]


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
        cls.proc, port, cls.metrics_port = start(["--feature-gates", "GenericWorkload=true"], metrics=True)
        cls.kp = PlacementClient(f"127.0.0.1:{port}")
        # The generated stub, for what the client does not send (a mode out of range, raw frames).
        cls.channel, cls.stub = cls.kp.channel, cls.kp.stub

    @classmethod
    def tearDownClass(cls):
        cls.kp.close()
        cls.proc.send_signal(signal.SIGTERM)
        rest = cls.proc.stderr.read()
        cls.proc.stderr.close()
        assert cls.proc.wait(timeout=30) == 0, rest
        assert "draining" in rest, rest

    def reset_small(self):
        r = self.kp.reset([node("a"), node("b", "2")])
        self.assertEqual(r.nodes, 2)
        return r.revision

    def snapshot(self):
        s = self.kp.snapshot()
        return s.revision, s.objects

    def test_a_realworld_dump(self):
        items = []
        for name in ("k3s-v1.33-nodes.json", "k3s-v1.33-pods-default.json"):
            doc = json.loads(read(name))
            items += doc["items"] if "items" in doc else [doc]
        r = self.kp.reset(items)
        self.assertGreater(r.nodes, 0)
        rev, snap = self.snapshot()
        self.assertEqual(rev, r.revision)
        kinds = [o["kind"] for o in snap["items"]]
        self.assertEqual(kinds.count("Node"), r.nodes)
        self.assertEqual(kinds.count("Pod"), r.bound_pods + r.pending_pods)
        # The snapshot is a cluster Reset reads back, to the same decisions.
        probe = [pod("probe")]
        first = self.kp.schedule(probe, dry_run=True).placements[0]
        again = self.kp.reset(snap)
        self.assertEqual((again.nodes, again.bound_pods), (r.nodes, r.bound_pods))
        second = self.kp.schedule(probe, dry_run=True).placements[0]
        self.assertEqual((first.node, first.message, first.score), (second.node, second.message, second.score))

    def test_dry_run_then_commit(self):
        rev = self.reset_small()
        pods = [pod("p1", "3"), pod("p2", "3"), pod("big", "8")]
        dry = self.kp.schedule(pods, dry_run=True)
        self.assertEqual(dry.revision, rev)
        self.assertEqual(self.snapshot()[0], rev)
        got = [(p.pod, p.node) for p in dry.placements]
        self.assertEqual(got[0], ("default/p1", "a"))
        self.assertEqual(got[1][1], "")  # a holds 1 CPU more, b has 2
        self.assertEqual(dry.placements[2].code, "Unschedulable")
        self.assertIn("0/2 nodes are available", dry.placements[2].message)
        self.assertIn("Insufficient cpu", dry.placements[2].message)
        done = self.kp.schedule(pods)
        self.assertEqual([(p.pod, p.node) for p in done.placements], got)
        self.assertEqual(done.revision, rev + 1)
        bound = {o["metadata"]["name"]: o["spec"].get("nodeName") for o in self.snapshot()[1]["items"] if o["kind"] == "Pod"}
        self.assertEqual(bound, {"p1": "a"})
        # p1 holds 3 of a's 4 CPUs now: another 3-CPU pod fits nowhere.
        again = self.kp.schedule([pod("p3", "3")], dry_run=True)
        self.assertEqual(again.placements[0].node, "")

    def test_apply_is_all_or_nothing(self):
        rev = self.reset_small()
        ok = self.kp.apply([event("ADDED", node("c")), event("DELETED", node("b"))], expected_revision=rev)
        self.assertEqual((ok.revision, ok.applied), (rev + 1, 2))
        names = [o["metadata"]["name"] for o in self.snapshot()[1]["items"] if o["kind"] == "Node"]
        self.assertEqual(sorted(names), ["a", "c"])
        with self.assertRaises(KplaceError) as bad:
            self.kp.apply([event("ADDED", node("d")), event("DELETED", node("nope"))])
        self.assertEqual(bad.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("events[1]", bad.exception.details)
        self.assertIn("nope", bad.exception.details)
        rev2, snap = self.snapshot()
        self.assertEqual(rev2, rev + 1)
        self.assertNotIn("d", [o["metadata"]["name"] for o in snap["items"]])
        with self.assertRaises(KplaceError) as stale:
            self.kp.apply([event("ADDED", node("e"))], expected_revision=rev)
        self.assertEqual(stale.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        # Streamed: applied when the stream closes.
        streamed = self.stub.ApplyStream(iter([pb.ApplyRequest(events=[event("ADDED", node(f"s{k}"))]) for k in range(5)]))
        self.assertEqual((streamed.revision, streamed.applied), (rev + 2, 5))

    def test_gangs(self):
        # a: 4 CPUs, b: 2. A PodGroup of three 2-CPU workers fits (two on a, one on b); a
        # second gang of two 3-CPU pods then cannot: nothing of it is bound.
        rev = self.reset_small()

        def group(name, min_count):
            return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}

        def member(name, cpu, g):
            p = pod(name, cpu)
            return dict(p, spec=dict(p["spec"], schedulingGroup={"podGroupName": g}))

        r = self.kp.schedule([group("train", 3)] + [member(f"w{k}", "2", "train") for k in range(3)])
        self.assertEqual([(g.name, g.placed, g.placed_count) for g in r.gangs], [("default/train", True, 3)])
        self.assertTrue(all(p.node for p in r.placements))
        self.assertEqual(r.revision, rev + 1)
        fail = self.kp.schedule([group("pair", 2), member("x0", "3", "pair"), member("x1", "3", "pair")])
        self.assertFalse(fail.gangs[0].placed)
        self.assertEqual(fail.gangs[0].first_unplaced, "default/x0")
        self.assertEqual(fail.gangs[0].reason, "0/2 nodes are available: 2 Insufficient cpu. "
                         "preemption: not eligible due to workload aware preemption enabled")
        self.assertEqual([p.node for p in fail.placements], ["", ""])
        self.assertEqual(fail.placements[1].message, "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")
        names = sorted(o["metadata"]["name"] for o in self.snapshot()[1]["items"] if o["kind"] == "Pod")
        self.assertEqual(names, ["w0", "w1", "w2"])
        groups = sorted(o["metadata"]["name"] for o in self.snapshot()[1]["items"] if o["kind"] == "PodGroup")
        self.assertEqual(groups, ["pair", "train"])
        # The service's own request gangs are gone: refused, naming what replaces them.
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.Schedule(pb.ScheduleRequest(pods=listing([pod("g")]), gangs=[pb.Gang(name="g", min_count=1, pods=["default/g"])]))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("spec.schedulingGroup.podGroupName", e.exception.details())

    def test_explanations_on_request(self):
        self.reset_small()
        pods = [pod("x1", "3"), pod("x2", "9")]
        plain = self.kp.schedule(pods, dry_run=True)
        self.assertEqual([p.explanation for p in plain.placements], ["", ""])
        got = self.kp.schedule(pods, dry_run=True, explain=True)
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
        ev = self.kp.evaluate([pod("x3", "1")], explain=True).results[0]
        self.assertEqual(len(json.loads(ev.explanation)["nodes"]), 2)

    def test_evaluate(self):
        rev = self.reset_small()
        r = self.kp.evaluate([pod("e1", "3"), pod("e2", "3"), pod("e3", "9")], expected_revision=rev)
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
        self.kp.schedule([pod("m1", "1"), pod("m2", "99")])
        with self.assertRaises(KplaceError):
            self.kp.schedule("{bad")
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
        self.kp.schedule([pod("placed")])
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
        empty = self.kp.apply([], expected_revision=rev)
        self.assertEqual((empty.revision, empty.applied), (rev, 0))
        nowhere = self.kp.schedule([pod("huge", "64")], expected_revision=rev)
        self.assertEqual((nowhere.placements[0].node, nowhere.revision), ("", rev))
        # Another writer's expectation still holds.
        placed = self.kp.schedule([pod("small", "1")], expected_revision=rev)
        self.assertEqual((placed.placements[0].node != "", placed.revision), (True, rev + 1))

    def test_instances_tell_restarts_apart(self):
        rev = self.reset_small()
        first = self.kp.snapshot().instance
        self.assertRegex(first, r"^[0-9a-f]{16}$")
        ok = self.kp.apply([event("ADDED", node("i1"))], expected_revision=rev, expected_instance=first)
        self.assertEqual((ok.revision, ok.instance), (rev + 1, first))
        self.assertEqual((self.kp.revision, self.kp.instance), (rev + 1, first))  # the client remembers both
        # A restarted server (another process) counts revisions from 1 again: a write that
        # names the old instance is refused even where the number matches.
        proc, port = start([])
        try:
            with PlacementClient(f"127.0.0.1:{port}") as other:
                fresh = other.reset([node("a")])
                self.assertNotEqual(fresh.instance, first)
                for call in (lambda: other.apply([event("ADDED", node("z"))], expected_revision=fresh.revision, expected_instance=first),
                             lambda: other.schedule([pod("z")], expected_instance=first),
                             lambda: other.evaluate([pod("z")], expected_instance=first)):
                    with self.assertRaises(KplaceError) as e:
                        call()
                    self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertIn("Reset from your source of truth", e.exception.details)
                self.assertEqual(other.snapshot().revision, fresh.revision)
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
        done = self.kp.schedule([pod("p1", "3")])
        self.assertEqual(done.placements[0].node, "a")
        rev, snap = self.snapshot()
        drain = self.kp.drain(["a"], expected_revision=rev)
        self.assertEqual((drain.revision, list(drain.result.nodes), drain.result.drainable), (rev, ["a"], False))
        self.assertEqual([(p.pod, p.node) for p in drain.result.pods], [("default/p1", "")])
        self.assertIn("Insufficient cpu", drain.result.pods[0].message)
        consolidate = self.kp.consolidate()
        self.assertEqual([(list(c.nodes), c.drainable) for c in consolidate.candidates], [(["a"], False), (["b"], True)])
        fits = self.kp.fits(pod("probe", "1"))
        self.assertEqual(list(fits.fits), ["a", "b"])
        big = self.kp.fits(pod("probe", "3"))
        self.assertEqual(list(big.fits), [])
        self.assertEqual([(v.node, v.plugin, v.code, v.reason) for v in big.rejected],
                         [("a", "NodeResourcesFit", "Unschedulable", "Insufficient cpu"),
                          # b's 2 CPUs could never hold 3: no preemption would help.
                          ("b", "NodeResourcesFit", "UnschedulableAndUnresolvable", "Insufficient cpu")])
        first = self.kp.fits(pod("probe", "1"), ["b", "a"], first_fit=True)
        self.assertEqual(list(first.fits), ["b"])
        replicas = self.kp.replicas(pod("copy", "1"), max=10)
        self.assertEqual((replicas.replicas, dict(replicas.per_node)), (3, {"a": 1, "b": 2}))
        self.assertEqual((replicas.stopped_by.pod, replicas.stopped_by.node), ("default/copy-whatif-3", ""))
        # a has 1 CPU left, b 2: two 2-CPU pods, one on b, one on a new 4-CPU node; 8 CPUs fit none.
        pool = node("pool")
        del pool["metadata"]["labels"]
        scale = self.kp.scale_up([pod("s1", "2"), pod("s2", "2"), pod("s3", "8")], pool, expected_revision=rev)
        self.assertEqual((scale.revision, dict(scale.new_nodes)), (rev, {"pool": 1}))
        self.assertEqual([(p.pod, p.node, p.code) for p in scale.pending],
                         [("default/s3", "", "Unschedulable"), ("default/s1", "b", "Success"),
                          ("default/s2", "pool-0", "Success")])
        self.assertEqual(scale.pending[0].message, "0/1 nodes are available: 1 Insufficient cpu.")
        none = self.kp.scale_up([pod("s1", "3")], pool, max_nodes=0)
        self.assertEqual((dict(none.new_nodes), none.pending[0].node), ({"pool": 0}, ""))
        self.assertEqual(self.snapshot(), (rev, snap))
        for call in (lambda: self.kp.drain(["nope"]), lambda: self.kp.drain([]),
                     lambda: self.kp.replicas(pod("copy", "1"), max=0), lambda: self.kp.fits([pod("x"), pod("y")])):
            with self.assertRaises(KplaceError) as e:
                call()
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT, e.exception.details)
        with self.assertRaises(grpc.RpcError) as e:  # no template
            self.stub.ScaleUp(pb.ScaleUpRequest(pods=listing([pod("x")]), node_templates=listing([])))
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
        with self.assertRaises(KplaceError) as e:
            self.kp.fits(pod("probe", "1"), expected_instance="0000000000000000")
        self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(self.snapshot(), (rev, snap))

    def test_forks(self):
        # a: 4 CPUs, b: 2. Cluster Autoscaler's check and reserve in a fork: 3-CPU pods fit
        # a once, then nowhere; a 2-CPU pod then fits b only.
        rev = self.reset_small()
        _, snap = self.snapshot()
        f = self.kp.fork(ttl_seconds=30)
        self.assertEqual((f.revision, f.ttl_seconds), (rev, 30))
        self.assertTrue(f.fork)
        self.assertEqual(self.kp.revision, rev)
        one = self.kp.fits(pod("r1", "3"), reserve=True, fork=f.fork)
        self.assertEqual((list(one.fits), one.revision), (["a"], rev + 1))
        two = self.kp.fits(pod("r2", "3"), reserve=True, fork=f.fork)
        self.assertEqual(list(two.fits), [])
        self.assertEqual([(v.node, v.reason) for v in two.rejected], [("a", "Insufficient cpu"), ("b", "Insufficient cpu")])
        three = self.kp.schedule([pod("r3", "2")], fork=f.fork)
        self.assertEqual(three.placements[0].node, "b")
        self.assertEqual(self.kp.revision, rev)  # a fork's replies are not the state's revision
        forked = self.kp.snapshot(fork=f.fork)
        self.assertEqual(sorted((o["metadata"]["name"], o["spec"].get("nodeName")) for o in forked.objects["items"]
                                if o["kind"] == "Pod"), [("r1", "a"), ("r3", "b")])
        self.assertEqual(self.snapshot(), (rev, snap))  # the state does not see the fork
        self.assertEqual(self.kp.fits(pod("x", "3")).fits, ["a"])
        done = self.kp.commit_fork(f.fork)
        self.assertEqual(done.revision, rev + 2)
        self.assertEqual(self.kp.snapshot().objects, forked.objects)
        with self.assertRaises(KplaceError) as e:
            self.kp.fits(pod("x"), fork=f.fork)
        self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND, e.exception.details)
        # Discarded on leaving the block; a commit refused once the state moved on.
        with self.kp.forked() as g:
            self.kp.apply([event("DELETED", node("b", "2"))], fork=g)
            self.assertEqual([o["metadata"]["name"] for o in self.kp.snapshot(fork=g).objects["items"]
                              if o["kind"] == "Node"], ["a"])
            self.kp.schedule([pod("moved", "10m")])
            with self.assertRaises(KplaceError) as e:
                self.kp.commit_fork(g)
            self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION, e.exception.details)
        self.assertEqual([o["metadata"]["name"] for o in self.kp.snapshot().objects["items"] if o["kind"] == "Node"],
                         ["a", "b"])
        for call, code in ((lambda: self.kp.fits(pod("x"), reserve=True), grpc.StatusCode.INVALID_ARGUMENT),
                           (lambda: self.kp.fork(ttl_seconds=4000), grpc.StatusCode.INVALID_ARGUMENT),
                           (lambda: self.kp.discard_fork("fork-0000"), grpc.StatusCode.NOT_FOUND)):
            with self.assertRaises(KplaceError) as e:
                call()
            self.assertEqual(e.exception.code, code, e.exception.details)

    def test_stop_on_failure(self):
        # a: 4 CPUs, b: 2. p1 fits a, p2 (3 CPUs) fits nowhere: p3 is not tried.
        rev = self.reset_small()
        r = self.kp.schedule([pod("p1", "3"), pod("p2", "3"), pod("p3", "1")], dry_run=True, stop_on_failure=True)
        self.assertTrue(r.stopped)
        self.assertEqual([(p.pod, p.node) for p in r.placements], [("default/p1", "a"), ("default/p2", "")])
        r = self.kp.schedule([pod("p1", "3"), pod("p2", "3"), pod("p3", "1")], dry_run=True)
        self.assertFalse(r.stopped)
        self.assertEqual([p.node for p in r.placements], ["a", "", "b"])
        self.assertEqual(r.revision, rev)

    def test_health_and_concurrent_clients(self):
        health = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        self.assertEqual(health(b""), b"\x08\x01")  # status: SERVING
        rev = self.reset_small()
        errors, decided = [], []

        def client(k):
            try:
                for i in range(20):
                    r = self.kp.schedule([pod(f"c{k}-{i}", "10m")])
                    decided.append(r.placements[0].node)
            except KplaceError as e:  # pragma: no cover - reported below
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
            with PlacementClient(f"127.0.0.1:{port}") as kp:
                rev = kp.reset([node("a")]).revision
                big = listing([node("a")] + [dict(node(f"pad{k}"), metadata={"name": f"pad{k}", "labels": {"x": "y" * 2000}})
                                             for k in range(600)])
                self.assertGreater(len(big), 1 << 20)
                with self.assertRaises(KplaceError) as e:
                    kp.reset(big)  # refused by the server's limit, not the client's (256 MiB)
                self.assertEqual(e.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
                s = kp.snapshot()
                self.assertEqual(s.revision, rev)
                self.assertEqual([o["metadata"]["name"] for o in s.objects["items"]], ["a"])
        finally:
            stop(proc)

    def test_tls_and_token(self):
        proc, port = start(["--tls-cert", self.cert, "--tls-key", self.key, "--token-file", self.token_file])
        try:
            root = self.read_file(self.cert)
            with PlacementClient(f"localhost:{port}", root_certificates=root, token="s3cret-token") as kp:
                stub = kp.stub  # the generated stub sends no token: each call below names its header
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
                snap = kp.snapshot()  # the client's token, on every call (streams too)
                self.assertEqual(snap.revision, rev)  # the refused Apply changed nothing
                self.assertEqual([o["metadata"]["name"] for o in snap.objects["items"]], ["a"])
                self.assertEqual(kp.evaluate([pod("t")]).results[0].node, "a")
            for token in (None, "wrong"):
                with PlacementClient(f"localhost:{port}", root_certificates=root, token=token) as kp:
                    for call in (kp.snapshot, lambda: kp.evaluate([pod("t")])):
                        with self.assertRaises(KplaceError) as e:
                            call()
                        self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
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
            with PlacementClient(f"localhost:{port}", root_certificates=root, private_key=self.read_file(self.client_key),
                                 certificate_chain=self.read_file(self.client_cert)) as kp:
                self.assertGreater(kp.reset([node("a")]).revision, 0)
            with PlacementClient(f"localhost:{port}", root_certificates=root, timeout=5) as kp:
                with self.assertRaises(KplaceError) as e:
                    kp.snapshot()
                self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)
        finally:
            stop(proc)


def generated_cluster(nodes, pods):
    """`kplace gen`'s cluster of `nodes` nodes and `pods` bound pods, as JSON text."""
    return subprocess.run([KPLACE, "gen", "--nodes", str(nodes), "--existing-pods", str(pods), "--zones", "3"],
                          capture_output=True, text=True, check=True, timeout=60).stdout


class ClientKitTest(unittest.TestCase):
    """kplace-client against a real server: the streamed reads equal the unary ones."""

    @classmethod
    def setUpClass(cls):
        cls.proc, port = start([])
        cls.kp = PlacementClient(f"127.0.0.1:{port}")

    @classmethod
    def tearDownClass(cls):
        cls.kp.close()
        stop(cls.proc)

    def test_snapshot_stream_equals_the_unary_snapshot(self):
        r = self.kp.reset(generated_cluster(200, 300))
        streamed = self.kp.snapshot(max_chunk_bytes=4096)
        unary = self.kp.stub.Snapshot(pb.SnapshotRequest())
        self.assertGreater(streamed.chunks, 5)
        self.assertEqual((streamed.revision, streamed.instance), (r.revision, r.instance))
        self.assertEqual(streamed.objects, json.loads(unary.objects))
        self.assertEqual(len(streamed.objects["items"]), 500)
        # Each chunk is a List of its own within the limit (an object larger than that alone).
        chunks = list(self.kp.stub.SnapshotStream(pb.SnapshotRequest(max_chunk_bytes=4096)))
        self.assertEqual([c.index for c in chunks], list(range(len(chunks))))
        self.assertEqual([c.last for c in chunks], [False] * (len(chunks) - 1) + [True])
        for c in chunks:
            items = json.loads(c.objects)["items"]
            self.assertTrue(c.ByteSize() <= 4096 or len(items) == 1, f"chunk {c.index}: {c.ByteSize()} bytes, {len(items)} items")
        with self.assertRaises(KplaceError) as e:
            self.kp.snapshot(max_chunk_bytes=100)
        self.assertEqual((e.exception.call, e.exception.code), ("SnapshotStream", grpc.StatusCode.INVALID_ARGUMENT))
        self.assertIn("max_chunk_bytes", e.exception.details)

    def test_evaluate_stream_equals_the_unary_evaluate(self):
        self.kp.reset(generated_cluster(60, 100))
        pods = [pod(f"q{k}", cpu) for k, cpu in enumerate(["1", "500m", "64"])]
        streamed = self.kp.evaluate(pods, explain=True, max_chunk_bytes=4096)
        unary = self.kp.stub.Evaluate(pb.EvaluateRequest(pods=listing(pods), explain=True))
        self.assertEqual(streamed, unary)
        self.assertEqual([bool(p.node) for p in streamed.results], [True, True, False])
        # Every explanation was longer than a chunk: the reply above was reassembled from pieces.
        self.assertTrue(all(len(p.explanation) > 4096 for p in streamed.results))
        chunks = list(self.kp.stub.EvaluateStream(pb.EvaluateRequest(pods=listing(pods), explain=True, max_chunk_bytes=4096)))
        self.assertGreater(sum(1 for c in chunks if c.explanation_continued), 3)
        self.assertTrue(all(c.ByteSize() <= 4096 for c in chunks))
        self.assertEqual(self.kp.evaluate(pods), self.kp.stub.Evaluate(pb.EvaluateRequest(pods=listing(pods))))
        with self.assertRaises(KplaceError) as e:
            self.kp.evaluate(pods, expected_revision=streamed.revision + 1)
        self.assertEqual((e.exception.call, e.exception.code), ("EvaluateStream", grpc.StatusCode.FAILED_PRECONDITION))

    def test_errors_carry_the_call_code_and_message(self):
        self.kp.reset([node("a")])
        with self.assertRaises(KplaceError) as e:
            self.kp.schedule([node("x")])
        err = e.exception
        self.assertEqual((err.call, err.code), ("Schedule", grpc.StatusCode.INVALID_ARGUMENT))
        self.assertIn("pods: items[0]: kind", err.details)
        self.assertEqual(str(err), f"kplace Schedule: INVALID_ARGUMENT: {err.details}")
        self.assertIsInstance(err.__cause__, grpc.RpcError)
        with self.assertRaises(KplaceError) as e:
            self.kp.schedule([pod("x")], expected_revision=self.kp.revision + 1)
        self.assertEqual((e.exception.call, e.exception.code), ("Schedule", grpc.StatusCode.FAILED_PRECONDITION))
        proc, port = start([])
        try:
            with PlacementClient(f"127.0.0.1:{port}") as fresh:
                for call in (fresh.snapshot, lambda: fresh.evaluate([pod("x")]), lambda: fresh.schedule([pod("x")])):
                    with self.assertRaises(KplaceError) as e:
                        call()
                    self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertIn("Reset", e.exception.details)
        finally:
            stop(proc)
        with PlacementClient("127.0.0.1:1", timeout=5) as nowhere:
            with self.assertRaises(KplaceError) as e:
                nowhere.wait_ready(timeout=0.5)
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)

    def test_the_client_remembers_revision_and_instance(self):
        r = self.kp.reset([node("a"), node("b")])
        self.assertEqual((self.kp.revision, self.kp.instance), (r.revision, r.instance))
        self.kp.schedule([pod("r1")], expected_revision=self.kp.revision, expected_instance=self.kp.instance)
        self.assertEqual(self.kp.revision, r.revision + 1)
        self.kp.fits(pod("probe"))  # reads report the revision they read
        self.assertEqual(self.kp.revision, r.revision + 1)


class ScriptedPlacement(pb_grpc.PlacementServicer):
    """A server that answers the streams with the chunks a test scripts (the rest: UNIMPLEMENTED)."""

    def __init__(self):
        self.snapshot_chunks, self.evaluate_chunks = None, None

    def SnapshotStream(self, request, context):
        if self.snapshot_chunks is None:
            return super().SnapshotStream(request, context)
        return iter(self.snapshot_chunks)

    def Snapshot(self, request, context):
        return pb.SnapshotResponse(revision=7, instance="unary", objects=listing([node("u")]))

    def EvaluateStream(self, request, context):
        if self.evaluate_chunks is None:
            return super().EvaluateStream(request, context)
        return iter(self.evaluate_chunks)

    def Evaluate(self, request, context):
        return pb.EvaluateResponse(revision=7, instance="unary", results=[pb.PodPlacement(pod="default/u", node="a")])


class ClientReassemblyTest(unittest.TestCase):
    """kplace-client's reassembly of streamed replies, against scripted chunks."""

    @classmethod
    def setUpClass(cls):
        cls.placement = ScriptedPlacement()
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_PlacementServicer_to_server(cls.placement, cls.server)
        port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.kp = PlacementClient(f"127.0.0.1:{port}", timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.kp.close()
        cls.server.stop(None)

    def setUp(self):
        self.placement.snapshot_chunks = self.placement.evaluate_chunks = None

    def test_the_package_ships_its_types_and_the_protos_stubs(self):
        package = os.path.dirname(pb.__file__)
        for name in ("py.typed", "placement_pb2.pyi"):
            self.assertTrue(os.path.isfile(os.path.join(package, name)), f"{package}: no {name}")
        # The descriptor keeps the .proto's own name (as reflection gives it), the modules their package.
        self.assertEqual(pb.DESCRIPTOR.name, "kplace/v1/placement.proto")
        # ...and the stubs are those of the checkout's .proto, every rpc in its order.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(root, "proto", pb.DESCRIPTOR.name)) as f:
            rpcs = re.findall(r"^\s*rpc (\w+)\(", f.read(), re.M)
        self.assertEqual([m.name for m in pb.DESCRIPTOR.services_by_name["Placement"].methods], rpcs)

    def test_without_the_streams_the_unary_calls_answer(self):
        s = self.kp.snapshot()
        self.assertEqual((s.revision, s.instance, s.chunks, s.objects["items"][0]["metadata"]["name"]), (7, "unary", 1, "u"))
        self.assertEqual([(p.pod, p.node) for p in self.kp.evaluate([pod("u")]).results], [("default/u", "a")])

    def test_explanations_continue_across_chunks(self):
        placement = lambda name, explanation: pb.PodPlacement(pod=name, node="a", explanation=explanation)  # noqa: E731
        self.placement.evaluate_chunks = [
            pb.EvaluateChunk(revision=3, instance="i", results=[placement("p0", "{whole}"), placement("p1", "{be")]),
            pb.EvaluateChunk(revision=3, instance="i", explanation_continued="gun, "),
            pb.EvaluateChunk(revision=3, instance="i", explanation_continued="ended}"),
            pb.EvaluateChunk(revision=3, instance="i", results=[placement("p2", "{x")]),
            pb.EvaluateChunk(revision=3, instance="i", explanation_continued="}", last=True)]
        r = self.kp.evaluate([pod("p0")], explain=True)
        self.assertEqual([(p.pod, p.explanation) for p in r.results],
                         [("p0", "{whole}"), ("p1", "{begun, ended}"), ("p2", "{x}")])
        self.assertEqual((r.revision, r.instance, self.kp.revision, self.kp.instance), (3, "i", 3, "i"))

    def test_snapshot_chunks_join_into_one_list(self):
        self.placement.snapshot_chunks = [
            pb.SnapshotChunk(revision=4, instance="i", index=k, objects=listing(items), last=k == 2)
            for k, items in enumerate([[node("a"), node("b")], [], [pod("p")]])]
        s = self.kp.snapshot()
        self.assertEqual(json.loads(s.text()), s.objects)
        self.assertEqual([o["metadata"]["name"] for o in s.objects["items"]], ["a", "b", "p"])
        self.assertEqual((s.revision, s.chunks), (4, 3))

    def test_a_torn_stream_is_an_error_not_part_of_a_reply(self):
        chunk = lambda k, revision=4, last=False: pb.SnapshotChunk(revision=revision, instance="i", index=k,  # noqa: E731
                                                                   objects=listing([]), last=last)
        for chunks, says in (([chunk(0), chunk(1)], "before the chunk marked last"),
                             ([chunk(0), chunk(1, revision=5, last=True)], "chunk 1: revision 5"),
                             ([chunk(0), chunk(2, last=True)], "chunk 1: index 2"),
                             ([chunk(0, last=True), chunk(1)], "a chunk after the one marked last")):
            self.placement.snapshot_chunks = chunks
            with self.assertRaises(KplaceError) as e:
                self.kp.snapshot()
            self.assertEqual(e.exception.code, grpc.StatusCode.DATA_LOSS)
            self.assertIn(says, e.exception.details)
        self.placement.evaluate_chunks = [pb.EvaluateChunk(revision=1, explanation_continued="x", last=True)]
        with self.assertRaises(KplaceError) as e:
            self.kp.evaluate([pod("p")])
        self.assertIn("explanation_continued before any result", e.exception.details)


if __name__ == "__main__":
    unittest.main(verbosity=2)
