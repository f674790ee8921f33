"""PlacementClient: kplace's placement service (`kplace serve`, kplace.v1.Placement) from Python."""
from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import grpc

from . import placement_pb2 as pb
from . import placement_pb2_grpc as pb_grpc

#: Kubernetes objects as the service takes them: JSON or YAML text as is, one object (a
#: mapping), or several objects (sent as one v1 List).
Objects = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]

#: kplace serve's default --max-message-mb (256): the largest reply it sends.
DEFAULT_MAX_MESSAGE_BYTES = 256 << 20

_Reply = TypeVar("_Reply")
# The requests that name the state they expect (expected_revision, expected_instance).
_Request = TypeVar("_Request", "pb.ApplyRequest", "pb.ScheduleRequest", "pb.EvaluateRequest", "pb.DrainRequest",
                   "pb.ConsolidateRequest", "pb.ReplicasRequest", "pb.FitsRequest", "pb.ForkRequest")


class KplaceError(Exception):
    """A call the service refused or could not answer.

    Attributes:
        call: the RPC (``Schedule``, ``SnapshotStream``, ...).
        code: the gRPC status code (``grpc.StatusCode.INVALID_ARGUMENT``, ...).
        details: the service's message; it names the request's item and field.
    """

    def __init__(self, call: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"kplace {call}: {code.name}: {details}")
        self.call = call
        self.code = code
        self.details = details


@dataclass
class Snapshot:
    """The service's objects at one revision, as one v1 List.

    Attributes:
        revision: the revision every chunk was read at.
        instance: the server process that answered.
        objects: the v1 List (``{"apiVersion": "v1", "kind": "List", "items": [...]}``).
        chunks: how many messages carried it (1 for the unary Snapshot).
    """

    revision: int
    instance: str
    objects: Dict[str, Any]
    chunks: int

    def text(self) -> str:
        """The List as JSON, as Reset and `kplace schedule --cluster` read it."""
        return json.dumps(self.objects)


def objects_text(objects: Objects) -> str:
    """`objects` as the text a request carries (a sequence of objects becomes one v1 List)."""
    if isinstance(objects, str):
        return objects
    if isinstance(objects, Mapping):
        return json.dumps(objects)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


class PlacementClient:
    """A connection to one `kplace serve`.

    Every reply's revision and instance are remembered (`revision`, `instance`), so a caller
    can send them back as `expected_revision` / `expected_instance` (docs/serve.md, "Calls");
    threads that share a client see the latest reply of any of them there. Every failure is
    raised as KplaceError.

    Args:
        target: the server's HOST:PORT (``kplace serve --listen``).
        token: sent as ``authorization: Bearer <token>`` on every call (``--token-file``).
        root_certificates: PEM of the CA that signed the server's certificate: TLS is used when
            given (or when `private_key` is).
        private_key, certificate_chain: PEM of this client's key and certificate, for mutual TLS
            (``--client-ca``).
        max_message_bytes: the largest message sent or received (gRPC's default receive limit is
            4 MiB; kplace serve sends up to its --max-message-mb, 256 MiB by default).
        timeout: seconds each call may take; None: no deadline.
        options: further gRPC channel options.
    """

    def __init__(self, target: str = "127.0.0.1:7450", *, token: Optional[str] = None,
                 root_certificates: Optional[bytes] = None, private_key: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 timeout: Optional[float] = None, options: Sequence[Tuple[str, Any]] = ()) -> None:
        channel_options = [("grpc.max_receive_message_length", max_message_bytes),
                           ("grpc.max_send_message_length", max_message_bytes), *options]
        if root_certificates is not None or private_key is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates, private_key=private_key,
                                                 certificate_chain=certificate_chain)
            self.channel = grpc.secure_channel(target, creds, options=channel_options)
        else:
            self.channel = grpc.insecure_channel(target, options=channel_options)
        self.stub = pb_grpc.PlacementStub(self.channel)
        self.timeout = timeout
        self._metadata = [("authorization", f"Bearer {token}")] if token is not None else None
        #: The revision of the last reply (None before any).
        self.revision: Optional[int] = None
        #: The server instance of the last reply (None before any).
        self.instance: Optional[str] = None

    def close(self) -> None:
        """Closes the channel."""
        self.channel.close()

    def __enter__(self) -> "PlacementClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Waits until the server accepts connections (e.g. just after `kplace serve &`).

        Raises KplaceError (UNAVAILABLE) when it does not within `timeout` seconds.
        """
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise KplaceError("connect", grpc.StatusCode.UNAVAILABLE, f"no server ready within {timeout} s") from None

    # --- writes ------------------------------------------------------------------------

    def reset(self, objects: Objects, config: str = "") -> pb.ResetResponse:
        """Makes the cluster `objects` under `config` (a KubeSchedulerConfiguration; empty: the
        default profile). Returns the revision and the counts of nodes, bound and pending pods."""
        return self._call("Reset", self.stub.Reset, pb.ResetRequest(objects=objects_text(objects), config=config))

    def apply(self, events: Iterable[Union[str, Mapping[str, Any]]], *, expected_revision: Optional[int] = None,
              expected_instance: Optional[str] = None, fork: Optional[str] = None) -> pb.ApplyResponse:
        """Applies watch events (``{"type": "ADDED|MODIFIED|DELETED", "object": {...}}``, as text or
        mappings) in order, all or none; to `fork` (a `fork()` handle) instead of the state when given."""
        texts = [e if isinstance(e, str) else json.dumps(e) for e in events]
        req = _expecting(pb.ApplyRequest(events=texts, fork=fork or ""), expected_revision, expected_instance)
        return self._call("Apply", self.stub.Apply, req)

    def schedule(self, pods: Objects, *, dry_run: bool = False, explain: bool = False,
                 expected_revision: Optional[int] = None, expected_instance: Optional[str] = None,
                 fork: Optional[str] = None, stop_on_failure: bool = False) -> pb.ScheduleResponse:
        """Schedules pending pods in queue order: COMMIT binds the placed ones, `dry_run` decides
        the same and changes nothing. PodGroups (scheduling.k8s.io/v1beta1) may come with the
        pods: with the server's GenericWorkload gate their members are decided as kube-scheduler
        decides a PodGroup (gangs all or nothing; each group's outcome in `gangs`). `explain`
        fills each placement's `explanation` (JSON, as `kplace explain` writes it).
        `stop_on_failure` ends at the first pod tried and not placed (`stopped` says so); the
        pods after it are not tried."""
        req = pb.ScheduleRequest(pods=objects_text(pods), mode=pb.DRY_RUN if dry_run else pb.COMMIT, explain=explain,
                                 fork=fork or "", stop_on_failure=stop_on_failure)
        _expecting(req, expected_revision, expected_instance)
        return self._call("Schedule", self.stub.Schedule, req)

    # --- reads -------------------------------------------------------------------------

    def evaluate(self, pods: Objects, *, explain: bool = False, expected_revision: Optional[int] = None,
                 expected_instance: Optional[str] = None, max_chunk_bytes: int = 0,
                 fork: Optional[str] = None) -> pb.EvaluateResponse:
        """Which of these pods could start now: each decided alone, nothing changes.

        Read through EvaluateStream (messages of at most `max_chunk_bytes`, 0: the server's 1 MiB),
        so long explanations need no raised receive limit; the unary Evaluate where the server
        has no EvaluateStream. Either way the reply is one EvaluateResponse.
        """
        req = pb.EvaluateRequest(pods=objects_text(pods), explain=explain, max_chunk_bytes=max_chunk_bytes,
                                 fork=fork or "")
        _expecting(req, expected_revision, expected_instance)
        chunks = self._stream("EvaluateStream", self.stub.EvaluateStream, req)
        if chunks is None:
            return self._call("Evaluate", self.stub.Evaluate, req)
        whole = pb.EvaluateResponse()
        for k, chunk in enumerate(chunks):
            self._same_read("EvaluateStream", k, whole, chunk)
            whole.results.extend(chunk.results)
            if chunk.explanation_continued:
                # The rest of the last result's explanation, cut where one message was full.
                if not whole.results:
                    raise KplaceError("EvaluateStream", grpc.StatusCode.DATA_LOSS,
                                      f"chunk {k}: explanation_continued before any result")
                whole.results[-1].explanation += chunk.explanation_continued
        return whole

    def snapshot(self, *, max_chunk_bytes: int = 0, fork: Optional[str] = None) -> Snapshot:
        """The cluster's objects at one revision, as one v1 List.

        Read through SnapshotStream (Lists of at most `max_chunk_bytes`, 0: the server's 1 MiB;
        their items joined in order), the unary Snapshot where the server has no SnapshotStream.
        """
        req = pb.SnapshotRequest(max_chunk_bytes=max_chunk_bytes, fork=fork or "")
        chunks = self._stream("SnapshotStream", self.stub.SnapshotStream, req)
        if chunks is None:
            whole = self._call("Snapshot", self.stub.Snapshot, pb.SnapshotRequest(fork=fork or ""))
            return Snapshot(whole.revision, whole.instance, json.loads(whole.objects), 1)
        items: List[Any] = []
        first = pb.SnapshotResponse()
        count = 0
        for count, chunk in enumerate(chunks, start=1):
            self._same_read("SnapshotStream", count - 1, first, chunk)
            if chunk.index != count - 1:
                raise KplaceError("SnapshotStream", grpc.StatusCode.DATA_LOSS,
                                  f"chunk {count - 1}: index {chunk.index}, expected {count - 1}")
            items += json.loads(chunk.objects).get("items", [])
        return Snapshot(first.revision, first.instance, {"apiVersion": "v1", "kind": "List", "items": items}, count)

    # --- what-ifs (docs/whatif.md): the state and revision do not change ---------------
    # Each also runs on a fork when `fork` names one (its reservations included).

    def drain(self, nodes: Sequence[str], *, expected_revision: Optional[int] = None,
              expected_instance: Optional[str] = None, fork: Optional[str] = None) -> pb.DrainResponse:
        """Drains `nodes` in a transaction that is undone: where their pods would go, the
        PodDisruptionBudgets it breaks, drainable or not."""
        req = _expecting(pb.DrainRequest(nodes=list(nodes), fork=fork or ""), expected_revision, expected_instance)
        return self._call("Drain", self.stub.Drain, req)

    def consolidate(self, candidates: Sequence[str] = (), *, expected_revision: Optional[int] = None,
                    expected_instance: Optional[str] = None, fork: Optional[str] = None) -> pb.ConsolidateResponse:
        """Each candidate node drained on its own (empty: every node): which nodes can go."""
        req = _expecting(pb.ConsolidateRequest(candidates=list(candidates), fork=fork or ""), expected_revision, expected_instance)
        return self._call("Consolidate", self.stub.Consolidate, req)

    def replicas(self, pod: Objects, max: int, *, expected_revision: Optional[int] = None,
                 expected_instance: Optional[str] = None, fork: Optional[str] = None) -> pb.ReplicasResponse:
        """How many copies of `pod` (one Pod) fit, up to `max`, and on which nodes."""
        req = _expecting(pb.ReplicasRequest(pod=objects_text(pod), max=max, fork=fork or ""), expected_revision, expected_instance)
        return self._call("Replicas", self.stub.Replicas, req)

    def fits(self, pod: Objects, nodes: Sequence[str] = (), *, first_fit: bool = False, reserve: bool = False,
             expected_revision: Optional[int] = None, expected_instance: Optional[str] = None,
             fork: Optional[str] = None) -> pb.FitsResponse:
        """The nodes `pod` (one Pod) passes Filter on, among `nodes` (empty: every node), and
        each other node's rejecting plugin and reason; `first_fit` stops at the first fit.
        `reserve` (in a `fork` only) also binds the pod to that first fit, so later calls count it."""
        req = pb.FitsRequest(pod=objects_text(pod), nodes=list(nodes), first_fit=first_fit, reserve=reserve,
                             fork=fork or "")
        _expecting(req, expected_revision, expected_instance)
        return self._call("Fits", self.stub.Fits, req)

    def scale_up(self, pods: Objects, node_templates: Objects, *, max_nodes: Optional[int] = None,
                 expected_revision: Optional[int] = None, expected_instance: Optional[str] = None,
                 fork: Optional[str] = None) -> pb.ScaleUpResponse:
        """How many new nodes of each template (Nodes, tried in order) the pending `pods` need,
        and where each pod would go or why it stays pending (docs/whatif.md, scale-up)."""
        req = pb.ScaleUpRequest(pods=objects_text(pods), node_templates=objects_text(node_templates), fork=fork or "")
        if max_nodes is not None:
            req.max_nodes = max_nodes
        _expecting(req, expected_revision, expected_instance)
        return self._call("ScaleUp", self.stub.ScaleUp, req)

    # --- forks (docs/serve.md, "Forks") -------------------------------------------------

    def fork(self, *, ttl_seconds: int = 0, expected_revision: Optional[int] = None,
             expected_instance: Optional[str] = None) -> pb.ForkResponse:
        """A private copy of the state at its newest revision: name `reply.fork` in any call's
        `fork` to run it there. It lives `ttl_seconds` without a call (0: the server's default)."""
        req = _expecting(pb.ForkRequest(ttl_seconds=ttl_seconds), expected_revision, expected_instance)
        return self._call("Fork", self.stub.Fork, req)

    def commit_fork(self, fork: str) -> pb.CommitForkResponse:
        """Applies the fork's writes to the state, all of them, and ends the fork. Raises
        KplaceError FAILED_PRECONDITION when the state was written since the fork was made."""
        return self._call("CommitFork", self.stub.CommitFork, pb.ForkHandle(fork=fork))

    def discard_fork(self, fork: str) -> pb.DiscardForkResponse:
        """Ends the fork; the state never saw it."""
        return self._call("DiscardFork", self.stub.DiscardFork, pb.ForkHandle(fork=fork))

    @contextlib.contextmanager
    def forked(self, *, ttl_seconds: int = 0, expected_revision: Optional[int] = None,
               expected_instance: Optional[str] = None) -> Iterator[str]:
        """``with kp.forked() as f:`` a fork's handle, discarded on leaving unless committed."""
        handle = self.fork(ttl_seconds=ttl_seconds, expected_revision=expected_revision,
                           expected_instance=expected_instance).fork
        try:
            yield handle
        finally:
            try:
                self.discard_fork(handle)
            except KplaceError as e:
                if e.code != grpc.StatusCode.NOT_FOUND:  # committed, or expired: nothing to end
                    raise

    # --- plumbing ----------------------------------------------------------------------

    def _call(self, name: str, method: Callable[..., _Reply], request: Any) -> _Reply:
        try:
            reply: _Reply = method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise _error(name, e) from e
        self._remember(reply, request)
        return reply

    def _stream(self, name: str, method: Callable[..., Any], request: Any) -> Optional[Iterable[Any]]:
        """The stream's messages up to the one marked last; None when the server lacks the call."""
        try:
            stream = method(request, timeout=self.timeout, metadata=self._metadata)
            first = next(stream, None)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise _error(name, e) from e
        return self._rest(name, first, stream, request)

    def _rest(self, name: str, first: Any, stream: Any, request: Any) -> Iterable[Any]:
        chunk = first
        try:
            while chunk is not None:
                self._remember(chunk, request)
                yield chunk
                if chunk.last:
                    # Read on to the call's status, so that it ends OK rather than cancelled.
                    if next(stream, None) is not None:
                        raise KplaceError(name, grpc.StatusCode.DATA_LOSS, "a chunk after the one marked last")
                    return
                chunk = next(stream, None)
        except grpc.RpcError as e:
            raise _error(name, e) from e
        finally:
            stream.cancel()  # nothing once the call has ended; frees it when reading stopped early
        # A stream that ends without its last chunk lost messages: never hand back part of a reply.
        raise KplaceError(name, grpc.StatusCode.DATA_LOSS, "the stream ended before the chunk marked last")

    @staticmethod
    def _same_read(name: str, k: int, whole: Any, chunk: Any) -> None:
        """Every chunk of one reply is of the first chunk's revision and instance."""
        if k == 0:
            whole.revision, whole.instance = chunk.revision, chunk.instance
        elif (chunk.revision, chunk.instance) != (whole.revision, whole.instance):
            raise KplaceError(name, grpc.StatusCode.DATA_LOSS,
                              f"chunk {k}: revision {chunk.revision} of instance {chunk.instance}, "
                              f"chunk 0 was revision {whole.revision} of instance {whole.instance}")

    def _remember(self, reply: Any, request: Any) -> None:
        if getattr(request, "fork", "") and not isinstance(request, pb.ForkHandle):
            return  # a fork's revision is not the state's
        self.revision, self.instance = reply.revision, reply.instance


def _expecting(request: _Request, revision: Optional[int], instance: Optional[str]) -> _Request:
    """`request` with the revision and instance it expects the state at (None: any)."""
    if revision is not None:
        request.expected_revision = revision
    if instance:
        request.expected_instance = instance
    return request


def _error(call: str, e: grpc.RpcError) -> KplaceError:
    # Every RpcError a call raises is also a grpc.Call with code() and details().
    return KplaceError(call, e.code(), e.details() or "")
