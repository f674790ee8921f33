#!/usr/bin/env python3
"""kplace serve from Python, with kplace-client (python/): the README's service example.

usage: serve_client.py [--target HOST:PORT] [DIR]   (DIR: this folder's JSON files)

Resets the service to DIR/cluster.json, dry-runs DIR/pods.json, commits DIR/job.json as a
gang of four (a PodGroup), asks which of DIR/queue.json's pods could start now, reserves
them one after another in a fork the state never sees, and reads the cluster back.
"""
import argparse
import json
import os

from kplace_client import KplaceError, PlacementClient


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="127.0.0.1:7450", help="kplace serve's address (--listen)")
    ap.add_argument("dir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()

    def read(name: str) -> str:
        with open(os.path.join(args.dir, name)) as f:
            return f.read()

    with PlacementClient(args.target) as kp:
        kp.wait_ready()  # the server may still be starting (`kplace serve &`)
        r = kp.reset(read("cluster.json"))
        print(f"reset: revision {r.revision}, {r.nodes} nodes, {r.bound_pods} bound pods")
        # DRY_RUN decides exactly as a commit would and changes nothing.
        for p in kp.schedule(read("pods.json"), dry_run=True).placements:
            print(f"dry run: {p.pod} -> {p.node or p.message}")
        # A gang (PodGroup "job", minCount 4): at least 4 of the job's pods, or none; committed
        # at the revision just read.
        g = kp.schedule(read("job.json"), expected_revision=kp.revision, expected_instance=kp.instance)
        for p in g.placements:
            print(f"gang job: {p.pod} -> {p.node or p.message}")
        print(f"gang job: placed {g.gangs[0].placed} ({g.gangs[0].placed_count} of {g.gangs[0].min_count}), revision {g.revision}")
        # Which queued pods could start now (each alone; nothing changes).
        for p in kp.evaluate(read("queue.json")).results:
            print(f"evaluate: {p.pod} -> {p.node or '- (' + p.message + ')'}")
        # Cluster Autoscaler's check and reserve, in a fork: each pod bound where it first fits,
        # so the next one counts it; leaving the block discards the fork (commit_fork keeps it).
        with kp.forked() as fork:
            for pod in json.loads(read("queue.json"))["items"]:
                r = kp.fits(pod, reserve=True, fork=fork)
                print(f"fork: {pod['metadata']['name']} -> {r.fits[0] if r.fits else 'no node'}")
        s = kp.snapshot()
        bound = sum(1 for o in s.objects["items"] if o["kind"] == "Pod" and o["spec"].get("nodeName"))
        print(f"snapshot: revision {s.revision}, {len(s.objects['items'])} objects, {bound} bound pods, {s.chunks} chunk(s)")
        try:
            kp.schedule(read("job.json"), expected_revision=s.revision - 1)
        except KplaceError as e:  # the cluster has moved on: nothing is scheduled
            print(f"stale write refused: {e.code.name}")


if __name__ == "__main__":
    main()
