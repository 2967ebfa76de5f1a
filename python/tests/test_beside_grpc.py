"""The package lives beside the protocol's generated gRPC code: `astragal.v1`
(what the gRPC starter kit imports) and `astragal_engine` in one process, as a
bot that is served over gRPC and searches with the engine would have them."""

import os
import pathlib
import sys

import pytest

import astragal_engine

PROTO = pathlib.Path(__file__).resolve().parents[2] / "proto"


def test_the_grpc_stubs_and_the_engine_import_together(tmp_path):
    try:
        from grpc_tools import protoc
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("grpcio-tools is missing (pip install -r bots/starters/python-grpc/requirements.txt)")
        pytest.skip("grpcio-tools is missing")
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    status = protoc.main(
        ["protoc", f"-I{PROTO}", f"-I{include}", f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}", "astragal/v1/bot.proto"]
    )
    assert status == 0
    sys.path.insert(0, str(tmp_path))
    try:
        from astragal.v1 import bot_pb2  # noqa: F401  (a namespace package of generated code)

        assert hasattr(bot_pb2, "GoRequest")
        assert astragal_engine.new_game("ur", seed=1).legal_moves()
    finally:
        sys.path.remove(str(tmp_path))
