#!/usr/bin/env node
// A starter bot for astragal, in JavaScript (Node, no packages).
//
// Copy this folder and change `choose`. The protocol is in docs/protocol.md; each
// game's observation is documented in docs/rules/<game>.md. This bot plays the
// Game of Ur with a one-move heuristic (it beats the built-in `first`) and any
// other game with a random legal move.
"use strict";
const readline = require("readline");

const NAME = "starter-js";

// A small seeded generator (mulberry32), seeded from each game's salt.
let state = 1;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

// A protocol line as [command, fields]; `obs=` takes the rest of the line.
function parse(line) {
  const at = line.indexOf(" obs=");
  const head = at >= 0 ? line.slice(0, at) : line;
  const words = head.match(/"(?:[^"\\]|\\.)*"|\S+/g) || [""];
  const fields = {};
  for (const w of words.slice(1)) {
    const eq = w.indexOf("=");
    if (eq > 0) fields[w.slice(0, eq)] = w.slice(eq + 1).replace(/^"(.*)"$/, "$1");
  }
  if (at >= 0) fields.obs = line.slice(at + 5);
  return [words[0], fields];
}

const BIRDS = ["swallow", "storm", "raven", "rooster", "eagle"];

// How good a move of the Game of Ur looks, from the observation alone.
function urScore(obs, move) {
  if (move === "gamble") return -1;
  let from, to;
  if (move.includes(":")) {
    const [bird, house] = move.split(":");
    from = obs.pieces[obs.seat][BIRDS.indexOf(bird)];
    to = house;
  } else {
    [from, to] = move.split("-");
    from = Number(from);
  }
  if (to === "off") return 20;
  to = Number(to);
  let score = to / 20;
  if (to >= 5 && to <= 12 && obs.pieces[1 - obs.seat].includes(to)) score += 12; // capture
  if (to === 4 || to === 8 || to === 14) score += 8; // rosettes are safe and pay
  if (from === 0) score += 4; // enter pieces while the roll allows
  if (from >= 5 && from <= 12 && from !== 8) score += 2; // leave the shared row, where pieces are taken
  const theirs = obs.pieces[1 - obs.seat];
  if (to >= 5 && to <= 12 && to !== 8 && theirs.some((t) => to - t >= 1 && to - t <= 4)) {
    score -= 3; // within reach of a piece behind
  }
  return score;
}

function choose(game, obs, legal) {
  if (game === "ur") {
    return legal.reduce((best, m) => (urScore(obs, m) > urScore(obs, best) ? m : best));
  }
  return legal[Math.floor(random() * legal.length)];
}

let game = null;
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const [command, f] = parse(line.replace(/\r$/, ""));
  switch (command) {
    case "astragal":
      process.stdout.write(`id name=${NAME} author=you\nastragalok version=1\n`);
      break;
    case "newgame":
      game = f.game;
      state = Number(BigInt(f.salt || "0") & 0xffffffffn) | 0;
      break;
    case "isready":
      process.stdout.write("readyok\n");
      break;
    case "go": {
      const move = choose(game, JSON.parse(f.obs), f.legal.split(","));
      process.stdout.write(`move id=${f.id} move=${move}\n`);
      break;
    }
    case "quit":
      process.exit(0);
    // Everything else (played, gameover, setoption, new commands) is ignored.
  }
});
