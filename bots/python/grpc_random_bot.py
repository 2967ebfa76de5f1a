#!/usr/bin/env python3
"""An astragal bot served over gRPC, in Python (documentation example).

Not run by the tests (it needs packages from PyPI). To try it:

    python3 -m pip install grpcio grpcio-tools
    python3 -m grpc_tools.protoc -I proto --python_out=bots/python --grpc_python_out=bots/python \
        proto/astragal/v1/bot.proto
    python3 bots/python/grpc_random_bot.py 127.0.0.1:50051
    referee play --game ur --bot grpc://127.0.0.1:50051 --bot builtin:random

The service is `astragal.v1.Bot` (proto/astragal/v1/bot.proto). One server may
play many games at once: every call names its session.
"""

import random
import sys
from concurrent import futures

import grpc

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from astragal.v1 import bot_pb2, bot_pb2_grpc  # noqa: E402  (generated, see above)

PROTOCOL_VERSION = 1


class RandomBot(bot_pb2_grpc.BotServicer):
    def __init__(self):
        self.sessions = {}  # session -> random.Random

    def Hello(self, request, context):
        if request.version != PROTOCOL_VERSION:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "speaks protocol version 1")
        seed = bot_pb2.OptionDecl(name="seed", spin=bot_pb2.Spin(default=1, min=0, max=2**31))
        return bot_pb2.HelloReply(name="py-grpc-random", author="astragal examples",
                                  options=[seed], version=PROTOCOL_VERSION)

    def NewGame(self, request, context):
        seed = int(request.bot_options.get("seed", "1"))
        self.sessions[request.session] = random.Random(seed * 1000 + request.seat)
        return bot_pb2.NewGameReply()

    def Ping(self, request, context):
        return bot_pb2.PingReply()

    def Go(self, request, context):
        rng = self.sessions.get(request.session)
        if rng is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown session")
        # request.observation_json holds the seat's observation (json.loads it).
        return bot_pb2.GoReply(id=request.id, move=rng.choice(list(request.legal)))

    def GameOver(self, request, context):
        self.sessions.pop(request.session, None)
        return bot_pb2.GameOverReply()


def main():
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    bot_pb2_grpc.add_BotServicer_to_server(RandomBot(), server)
    server.add_insecure_port(address)
    server.start()
    print("serving on", address, file=sys.stderr)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
