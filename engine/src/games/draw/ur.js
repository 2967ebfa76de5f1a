// The ur board in the game viewer (`referee view`, the ladder's game pages):
// `DRAW.ur(frame, seat)` gives SVG or HTML text, seat -1 for the full state.
// It runs inside the viewer page, with its helpers (`esc`, `svgOpen`, `grid`,
// `caption`, `seatName`, `COLORS`, `H`) in scope; see referee/src/view.html.
DRAW.ur = (f, seat) => {
  const o = f.observations[seat < 0 ? 0 : seat];
  const cell = 56, pad = 30, w = 8 * cell + 2 * pad, h = 3 * cell + 2 * pad + 34;
  const tablet = o.rules === "tablet";
  const names = tablet ? ["S", "T", "R", "O", "E"] : null;
  // Board column of house h in a seat's own row (houses 1-4 and 13-14).
  const ownCol = (h) => (h <= 4 ? 4 - h : h === 13 ? 7 : 6);
  const rowOf = (p, h) => (h >= 5 && h <= 12 ? 1 : p === 1 ? 0 : 2);
  const colOf = (h) => (h >= 5 && h <= 12 ? h - 5 : ownCol(h));
  const rosette = (r, c) => (r !== 1 && (c === 0 || c === 6)) || (r === 1 && c === 3);
  let s = `<svg viewBox="0 0 ${w} ${h}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui,sans-serif">`;
  for (let r = 0; r < 3; r++) for (let c = 0; c < 8; c++) {
    if (r !== 1 && (c === 4 || c === 5)) continue;
    const x = pad + c * cell, y = pad + r * cell;
    s += `<rect data-cell="${r},${c}" x="${x}" y="${y}" width="${cell}" height="${cell}" fill="${rosette(r, c) ? "#f3e3b5" : "#f6f3ea"}" stroke="#8a7a55"/>`;
    if (rosette(r, c)) s += `<text x="${x + cell / 2}" y="${y + cell / 2 + 6}" text-anchor="middle" font-size="20" fill="#c9a94a">&#x273F;</text>`;
  }
  const waiting = [0, 0], off = [0, 0];
  for (let p = 0; p < 2; p++) o.pieces[p].forEach((house, i) => {
    if (house === 0) { waiting[p]++; return; }
    if (house === 15) { off[p]++; return; }
    const x = pad + colOf(house) * cell + cell / 2, y = pad + rowOf(p, house) * cell + cell / 2;
    const label = tablet ? names[i] : "";
    s += `<g data-piece="${p}:${house}"><circle cx="${x}" cy="${y}" r="${cell * 0.34}" fill="${COLORS[p]}" stroke="#fff" stroke-width="2"/>` +
      (label ? `<text x="${x}" y="${y + 5}" text-anchor="middle" font-size="15" fill="#fff" font-weight="600">${label}</text>` : "") + `</g>`;
  });
  const line = (y, p) => `<text x="${pad}" y="${y}" font-size="17" fill="${COLORS[p]}">${esc(H.seats[p] || "seat " + p)}: ${waiting[p]} waiting, ${off[p]} off` +
    (tablet ? `, ${o.counters[p]} counters` : "") + (seat === p ? " (this view)" : "") + `</text>`;
  s += line(21, 1) + line(pad + 3 * cell + 22, 0);
  const status = o.phase === "over" ? "game over" : `seat ${o.to_move} to play ${o.phase === "converted" ? "converted " : ""}roll ${o.roll}`;
  s += `<text x="${pad}" y="${pad + 3 * cell + 50}" font-size="17" fill="#1d2330">turn ${o.turn} · ${esc(status)}${tablet ? " · pool " + o.pool : ""}</text>`;
  return s + "</svg>";
};
