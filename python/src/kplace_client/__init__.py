"""kplace-client: a typed client for kplace's placement service (`kplace serve`).

    from kplace_client import PlacementClient
    with PlacementClient("127.0.0.1:7450") as kp:
        kp.reset(open("cluster.json").read())
        print(kp.schedule(open("pods.json").read(), dry_run=True).placements)

`placement_pb2` and `placement_pb2_grpc` are the stubs generated from kplace's
proto/kplace/v1/placement.proto when the package was built.
"""
from . import placement_pb2, placement_pb2_grpc
from .client import DEFAULT_MAX_MESSAGE_BYTES, KplaceError, Objects, PlacementClient, Snapshot, objects_text

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "KplaceError", "Objects", "PlacementClient", "Snapshot", "objects_text",
           "placement_pb2", "placement_pb2_grpc"]
