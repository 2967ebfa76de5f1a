#!/usr/bin/env python3
"""A starter bot for astragal served over gRPC, in Python.

Needs `python3 -m pip install grpcio grpcio-tools` (requirements.txt). The Python
code for the service is generated from proto/astragal/v1/bot.proto when the bot
starts, into a folder of its own, so nothing generated is kept here.

    python3 bot.py 127.0.0.1:50051
    referee check-bot grpc://127.0.0.1:50051

Copy this folder and change `choose`. One server plays many games at once: each
call names its session. This bot plays the Game of Ur with a one-move heuristic (it
beats the built-in `first`) and any other game with a random legal move.
"""

import json
import os
import random
import sys
import tempfile
from concurrent import futures

import grpc
from grpc_tools import protoc

PROTOCOL_VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.environ.get("ASTRAGAL_PROTO", os.path.join(HERE, "..", "..", "..", "proto"))


def load_stubs():
    """Generates the service's Python modules from the .proto and imports them."""
    out = tempfile.mkdtemp(prefix="astragal-grpc-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    status = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
                          f"--grpc_python_out={out}", "astragal/v1/bot.proto"])
    if status != 0:
        sys.exit(f"cannot compile {PROTO_ROOT}/astragal/v1/bot.proto (set ASTRAGAL_PROTO to the proto folder)")
    sys.path.insert(0, out)
    from astragal.v1 import bot_pb2, bot_pb2_grpc
    return bot_pb2, bot_pb2_grpc


bot_pb2, bot_pb2_grpc = load_stubs()
BIRDS = ["swallow", "storm", "raven", "rooster", "eagle"]


def ur_score(obs, move):
    """How good a move of the Game of Ur looks, from the observation alone."""
    if move == "gamble":
        return -1.0
    if ":" in move:  # tablet rules: <bird>:<house>
        bird, _, to = move.partition(":")
        frm = obs["pieces"][obs["seat"]][BIRDS.index(bird)]
    else:  # finkel rules: <from>-<to>
        frm, _, to = move.partition("-")
        frm = int(frm)
    if to == "off":
        return 20.0
    to = int(to)
    score = to / 20
    if 5 <= to <= 12 and to in obs["pieces"][1 - obs["seat"]]:
        score += 12  # a capture sends the other piece home
    if to in (4, 8, 14):
        score += 8  # rosettes are safe and pay
    if frm == 0:
        score += 4  # enter pieces while the roll allows
    if 5 <= frm <= 12 and frm != 8:
        score += 2  # leave the shared row, where pieces are taken
    theirs = obs["pieces"][1 - obs["seat"]]
    if 5 <= to <= 12 and to != 8 and any(1 <= to - t <= 4 for t in theirs):
        score -= 3  # within reach of a piece behind
    return score


def choose(game, obs, legal, rng):
    if game == "ur":
        return max(legal, key=lambda m: ur_score(obs, m))
    return rng.choice(legal)


class StarterBot(bot_pb2_grpc.BotServicer):
    def __init__(self):
        self.sessions = {}  # session -> (game, random.Random)

    def Hello(self, request, context):
        if request.version != PROTOCOL_VERSION:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "speaks protocol version 1")
        return bot_pb2.HelloReply(name="starter-python-grpc", author="you", version=PROTOCOL_VERSION)

    def NewGame(self, request, context):
        self.sessions[request.session] = (request.game, random.Random(request.salt))
        return bot_pb2.NewGameReply()

    def Ping(self, request, context):
        return bot_pb2.PingReply()

    def Go(self, request, context):
        if request.session not in self.sessions:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown session")
        game, rng = self.sessions[request.session]
        move = choose(game, json.loads(request.observation_json), list(request.legal), rng)
        return bot_pb2.GoReply(id=request.id, move=move)

    def GameOver(self, request, context):
        self.sessions.pop(request.session, None)
        return bot_pb2.GameOverReply()


def main():
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    bot_pb2_grpc.add_BotServicer_to_server(StarterBot(), server)
    if server.add_insecure_port(address) == 0:
        sys.exit(f"cannot listen on {address}")
    server.start()
    print("serving on", address, file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
