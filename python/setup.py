"""Builds kplace-client; the settings live in pyproject.toml.

The stubs are generated from the repository's .proto when the package is built (never
committed, so they cannot drift from it): build_py runs grpcio-tools' protoc into the
package and makes the gRPC module import its messages from the package.
"""
import pathlib
import re
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

PROTO_ROOT = pathlib.Path(__file__).resolve().parent.parent / "proto"
PROTO = "kplace/v1/placement.proto"


def generate(out: pathlib.Path) -> None:
    source = PROTO_ROOT / PROTO
    if not source.is_file():
        raise SystemExit(f"kplace-client: {source} not found: build from a kplace checkout (pip install ./python)")
    # The descriptor keeps its name kplace/v1/placement.proto (reflection and other stubs of
    # the same file agree with it); only the modules move into the package.
    with tempfile.TemporaryDirectory(prefix="kplace-client-") as gen:
        _protoc(source, pathlib.Path(gen), out)


def _protoc(source: pathlib.Path, gen: pathlib.Path, out: pathlib.Path) -> None:
    from grpc_tools import protoc  # a build requirement (pyproject.toml)
    import grpc_tools

    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    if protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={gen}", f"--pyi_out={gen}",
                    f"--grpc_python_out={gen}", str(source)]) != 0:
        raise SystemExit(f"kplace-client: protoc failed on {source}")
    for name in ("placement_pb2.py", "placement_pb2.pyi", "placement_pb2_grpc.py"):
        text = (gen / "kplace" / "v1" / name).read_text()
        # `from kplace.v1 import placement_pb2` would need a top-level `kplace` package.
        text = re.sub(r"^from kplace\.v1 import placement_pb2", "from . import placement_pb2", text, flags=re.M)
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        generate(pathlib.Path(self.build_lib) / "kplace_client")


setup(cmdclass={"build_py": BuildPyWithStubs})
