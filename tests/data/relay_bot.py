#!/usr/bin/env python3
"""The `relay` attack of tests/src/bin/attack_bot.rs, as an uploaded bot would
play it (python3 runtime, standard library only), for Spartan Yahtzee.

Words are byte-range read locks on a file every sandbox shows, at offset
`key << 16 | value`; a thread copies every word another process holds onto a
descriptor of its own, so a word lives while any process of the bot lives on
the machine. At the first request of each game it reads the word under its own
secret first roll (where a process that played the other rotation of the group
spelled the roll the other army holds now); after the reveal it writes
`ATTACK relay: escaped|contained ...` to stderr and spells its own word.

With `--honest` it only plays (the first legal move, as the attack does): the
opponent the attack is measured against must play the same in both rotations,
since the roll it checks is the other army's dice as revealed after its rerolls.
"""

import fcntl
import json
import os
import shlex
import struct
import sys
import threading
import time

F_OFD_GETLK, F_OFD_SETLK = 36, 37
KEYS = 1 << 12
FILE = next(p for p in ("/usr/bin/env", "/bin/sh") if os.path.exists(p))


def lock_record(kind, start, length):
    return struct.pack("hhqqi", kind, os.SEEK_SET, start, length, 0)


def other_lock(fd, start, end):
    """The offset of a read lock another descriptor holds in [start, end)."""
    got = fcntl.fcntl(fd, F_OFD_GETLK, lock_record(fcntl.F_WRLCK, start, end - start))
    kind, _, at, _, _ = struct.unpack("hhqqi", got)
    return None if kind == fcntl.F_UNLCK else max(at, start)


def hold(fd, at):
    try:
        fcntl.fcntl(fd, F_OFD_SETLK, lock_record(fcntl.F_RDLCK, at, 1))
    except OSError:
        pass


def mark(roll):
    h = 0x811C9DC5
    for b in roll.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return ((h ^ (h >> 16)) & 0xFFFF) | 1


def roll_key(dice):
    return "".join(str(d) for d in sorted(dice))


def relay():
    copies, look = os.open(FILE, os.O_RDONLY), os.open(FILE, os.O_RDONLY)
    while True:
        for key in range(KEYS):
            at = key << 16
            while (found := other_lock(look, at, (key + 1) << 16)) is not None:
                hold(copies, found)
                at = found + 1
        time.sleep(0.001)


def main():
    honest = "--honest" in sys.argv[1:]
    if not honest:
        threading.Thread(target=relay, daemon=True).start()
    spoken = os.open(FILE, os.O_RDONLY)
    first_roll, heard = None, None
    for line in sys.stdin:
        head, _, obs = line.rstrip("\n").partition(" obs=")
        words = shlex.split(head)
        command = words[0] if words else ""
        fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if command == "astragal":
            print("id name=relay\nastragalok version=1", flush=True)
        elif command == "isready":
            print("readyok", flush=True)
        elif command == "quit":
            return
        elif command == "go":
            o = json.loads(obs)
            if honest:
                pass
            elif o.get("phase") == "reroll1" and o.get("turn") == 1:
                first_roll = roll_key(o["your_dice"])
                key = mark(first_roll) % KEYS
                probe = os.open(FILE, os.O_RDONLY)
                found = other_lock(probe, key << 16, (key + 1) << 16)
                os.close(probe)
                heard = None if found is None else found & 0xFFFF
            elif o.get("phase") == "reroll1" and o.get("turn") == 2 and first_roll:
                theirs = roll_key(o["last_reveal"]["dice"][1 - o["seat"]])
                right = heard == mark(theirs)
                verdict = "escaped" if right else "contained"
                print(f"ATTACK relay: {verdict} heard {heard}, the other army rolled {theirs}",
                      file=sys.stderr, flush=True)
                hold(spoken, (mark(theirs) % KEYS) << 16 | mark(first_roll))
                first_roll = None
            time.sleep(0.003)
            move = fields["legal"].split(",")[0]
            print(f"move id={fields['id']} move={move}", flush=True)


main()
