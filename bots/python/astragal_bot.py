"""A small, standard-library-only helper for writing astragal bots in Python.

Write a function ``choose(obs, legal, info)`` that returns one of ``legal``, then::

    from astragal_bot import run
    run(choose, name="my-bot", author="me")

``obs`` is the seat's observation (a dict, see docs/rules/<game>.md), ``legal`` the
list of legal moves in the game's notation, and ``info`` a dict with ``game``,
``seat``, ``seats``, ``options`` (dict) and the clock (``time_ms``, ``inc_ms``,
``movetime_ms``, each possibly None). The protocol itself is in docs/protocol.md.
"""

import json
import sys

PROTOCOL_VERSION = 1


def parse_fields(rest):
    """Split 'k=v k="quoted v" ...' into a dict; 'obs=' takes the rest of the line."""
    fields = {}
    i, n = 0, len(rest)
    while i < n:
        while i < n and rest[i].isspace():
            i += 1
        if i >= n:
            break
        eq = rest.find("=", i)
        sp = next((j for j in range(i, n) if rest[j].isspace()), n)
        if eq == -1 or eq > sp:
            i = sp  # not a field: ignore it (forward compatibility)
            continue
        key = rest[i:eq]
        i = eq + 1
        if key == "obs":
            fields[key] = rest[i:]
            break
        if i < n and rest[i] == '"':
            i += 1
            value = []
            while i < n and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(rest[i])
                i += 1
            i += 1
            fields[key] = "".join(value)
        else:
            j = i
            while j < n and not rest[j].isspace():
                j += 1
            fields[key] = rest[i:j]
            i = j
    return fields


def quote(value):
    value = str(value)
    if value == "" or any(c.isspace() or c in '"\\' for c in value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def split_list(value):
    return [] if value in ("", "-") else value.split(",")


def run(choose, name, author="anonymous", options=None, on_option=None, stdin=None, stdout=None):
    """Serve the protocol until 'quit' or end of input.

    options: list of declarations such as
        {"name": "depth", "type": "spin", "default": 2, "min": 1, "max": 9}
    on_option(name, value) is called for each setoption.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout

    def send(line):
        stdout.write(line + "\n")
        stdout.flush()  # the referee waits for this line

    info = {"game": None, "seat": None, "seats": None, "options": {}}
    for raw in stdin:
        line = raw.rstrip("\r\n")
        command, _, rest = line.strip().partition(" ")
        fields = parse_fields(rest)
        if command == "astragal":
            send("id name=%s author=%s" % (quote(name), quote(author)))
            for opt in options or []:
                parts = ["option", "name=" + quote(opt["name"]), "type=" + opt["type"]]
                for key in ("default", "min", "max"):
                    if key in opt:
                        parts.append("%s=%s" % (key, quote(str(opt[key]).lower() if isinstance(opt[key], bool) else opt[key])))
                if "values" in opt:
                    parts.append("values=" + ",".join(opt["values"]))
                send(" ".join(parts))
            send("astragalok version=%d" % PROTOCOL_VERSION)
        elif command == "isready":
            send("readyok")
        elif command == "setoption":
            if on_option:
                on_option(fields.get("name"), fields.get("value"))
        elif command == "newgame":
            opts = dict(kv.split("=", 1) for kv in split_list(fields.get("options", "")) if "=" in kv)
            info = {"game": fields.get("game"), "seat": int(fields.get("seat", 0)),
                    "seats": int(fields.get("seats", 2)), "options": opts,
                    # A per-game value for the bot's own randomness (None from older referees).
                    "salt": int(fields["salt"]) if "salt" in fields else None}
        elif command == "go":
            legal = split_list(fields.get("legal", ""))
            obs = json.loads(fields.get("obs", "null") or "null")
            clock = {k + "_ms": (int(fields[k]) if k in fields else None) for k in ("time", "inc", "movetime")}
            move = choose(obs, legal, dict(info, **clock))
            if move not in legal:  # never send an illegal move by mistake
                move = legal[0]
            send("move id=%s move=%s" % (fields["id"], quote(move)))
        elif command == "quit":
            return
        # played, gameover and anything unknown: nothing to do
