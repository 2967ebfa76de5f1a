#!/usr/bin/env node
// An astragal bot in JavaScript (Node, no packages): plays a random legal move.
// The protocol is in docs/protocol.md; this file is a complete, minimal client.
'use strict';
const readline = require('readline');

function fields(rest) {
  const out = {};
  let i = 0;
  while (i < rest.length) {
    while (i < rest.length && /\s/.test(rest[i])) i++;
    if (i >= rest.length) break;
    const eq = rest.indexOf('=', i);
    let sp = rest.slice(i).search(/\s/);
    sp = sp === -1 ? rest.length : i + sp;
    if (eq === -1 || eq > sp) { i = sp; continue; } // not a field: ignore it
    const key = rest.slice(i, eq);
    i = eq + 1;
    if (key === 'obs') { out.obs = rest.slice(i); break; }
    if (rest[i] === '"') {
      let v = '';
      i++;
      while (i < rest.length && rest[i] !== '"') {
        if (rest[i] === '\\' && i + 1 < rest.length) i++;
        v += rest[i++];
      }
      i++;
      out[key] = v;
    } else {
      let j = i;
      while (j < rest.length && !/\s/.test(rest[j])) j++;
      out[key] = rest.slice(i, j);
      i = j;
    }
  }
  return out;
}

const send = (line) => process.stdout.write(line + '\n');
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (raw) => {
  const line = raw.replace(/\r$/, '').trim();
  const sp = line.indexOf(' ');
  const command = sp === -1 ? line : line.slice(0, sp);
  const f = fields(sp === -1 ? '' : line.slice(sp + 1));
  if (command === 'astragal') {
    send('id name=js-random author="astragal examples"');
    send('astragalok version=1');
  } else if (command === 'isready') {
    send('readyok');
  } else if (command === 'go') {
    const legal = f.legal === '-' ? [] : f.legal.split(',');
    send(`move id=${f.id} move=${legal[Math.floor(Math.random() * legal.length)]}`);
  } else if (command === 'quit') {
    rl.close();
    process.exit(0);
  }
});
