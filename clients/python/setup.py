"""Build hooks: generate the gRPC stubs from the proto files while the wheel is built.

The stubs are generated into the build tree (never into src/, never committed) at the paths of
their proto files, so `fedsearch/v1/search.proto` becomes the module `fedsearch.v1.search_pb2`
inside this package. The proto files are looked up in $FEDSEARCH_PROTO_DIR, then ./proto (an
sdist carries a copy), then the repository's proto/ two levels up.

The runtime dependencies are pinned to what generated the stubs: protobuf gencode refuses an
older runtime, and the gRPC stubs refuse an older grpcio.
"""

from __future__ import annotations

import os
import shutil
from importlib import metadata, resources
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
MARKER = Path("fedsearch/v1/search.proto")


def proto_root() -> Path:
    candidates = [os.environ.get("FEDSEARCH_PROTO_DIR"), HERE / "proto", HERE.parent.parent / "proto"]
    for c in candidates:
        if c and (Path(c) / MARKER).is_file():
            return Path(c)
    raise SystemExit(f"fedsearch: no proto files found (looked for {MARKER} in {candidates}); set FEDSEARCH_PROTO_DIR")


def generate_stubs(out: Path) -> None:
    from grpc_tools import protoc

    root = proto_root()
    protos = sorted(str(p.relative_to(root)) for p in root.rglob("*.proto"))
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{root}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"fedsearch: grpc_tools.protoc failed on {protos}")
    # Every folder of generated modules becomes a regular package.
    for proto in protos:
        folder = out / Path(proto).parent
        while folder != out / "fedsearch":
            (folder / "__init__.py").touch()
            folder = folder.parent


def runtime_requirements() -> list[str]:
    tools_version = metadata.version("grpcio-tools")
    protobuf = next(
        (r for r in metadata.requires("grpcio-tools") or [] if r.replace(" ", "").startswith("protobuf")),
        "protobuf",
    )
    return [f"grpcio>={tools_version}", protobuf, "googleapis-common-protos>=1.63"]


class BuildPyWithStubs(build_py):
    def run(self) -> None:
        super().run()
        generate_stubs(Path(self.build_lib))


class SdistWithProtos(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        shutil.copytree(proto_root(), Path(base_dir) / "proto", dirs_exist_ok=True)


setup(
    cmdclass={"build_py": BuildPyWithStubs, "sdist": SdistWithProtos},
    install_requires=runtime_requirements(),
)
