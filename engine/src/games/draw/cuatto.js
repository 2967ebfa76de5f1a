// The cuatto board in the game viewer (`referee view`, the ladder's game pages):
// `DRAW.cuatto(frame, seat)` gives SVG or HTML text, seat -1 for the full state.
// It runs inside the viewer page, with its helpers (`esc`, `svgOpen`, `grid`,
// `caption`, `seatName`, `COLORS`, `H`) in scope; see referee/src/view.html.
DRAW.cuatto = (f, seat) => {
  const o = f.observations[seat < 0 ? 0 : seat];
  const n = o.length, perRow = Math.min(n, 12), rows = Math.ceil(n / perRow), cell = 40, x0 = 12, y0 = 40;
  const teams = o.teams.length;
  let s = svgOpen(x0 * 2 + perRow * cell, y0 + rows * (cell + 18) + 40 + 20 * teams);
  const at = {}, start = [], off = [], bridge = [];
  o.teams.forEach((spots, t) => spots.forEach((spot) => {
    const kind = spot.endsWith("p") ? "pin" : spot.endsWith("s") ? "strong" : "";
    const where = kind ? spot.slice(0, -1) : spot;
    if (where === "0") start.push([t, spot]);
    else if (where === "off") off.push([t, spot]);
    else if (where.startsWith("b")) bridge.push([t, spot]);
    else (at[where] = at[where] || []).push([t, spot, kind]);
  }));
  for (let i = 1; i <= n; i++) {
    const c = (i - 1) % perRow, r = Math.floor((i - 1) / perRow), x = x0 + c * cell, y = y0 + r * (cell + 18);
    // A block: one team with two or more checkers here (closed to the others).
    const counts = {};
    (at[String(i)] || []).forEach(([t]) => { counts[t] = (counts[t] || 0) + 1; });
    const blockers = Object.keys(counts).filter((t) => counts[t] >= 2);
    blockers.forEach((t, k) => {
      s += `<rect data-block="${i}:${t}" x="${x - 2 - 2 * k}" y="${y - 2 - 2 * k}" width="${cell + 4 + 4 * k}" height="${cell + 4 + 4 * k}" fill="none" stroke="${COLORS[t % COLORS.length]}" stroke-width="3"/>`;
    });
    s += `<rect x="${x}" y="${y}" width="${cell}" height="${cell}" fill="#f6f3ea" stroke="#8a7a55"/>` +
      `<text x="${x + cell / 2}" y="${y + cell + 13}" text-anchor="middle" font-size="11" fill="#5b6475">${i}</text>`;
    (at[String(i)] || []).forEach(([t, spot, kind], k) => {
      const cx = x + 10 + (k % 2) * 20, cy = y + 10 + Math.floor(k / 2) * 20, color = COLORS[t % COLORS.length];
      s += `<g data-checker="${t}:${spot}">` + (kind === "pin"
        ? `<rect x="${cx - 8}" y="${cy - 8}" width="16" height="16" fill="${color}"/>`
        : `<circle cx="${cx}" cy="${cy}" r="8" fill="${color}"${kind === "strong" ? ' stroke="#1d2330" stroke-width="3"' : ""}/>`) + `</g>`;
    });
  }
  const list = (items) => items.map(([t, spot]) => `<tspan data-checker="${t}:${spot}" fill="${COLORS[t % COLORS.length]}">\u25CF</tspan>`).join("");
  s += `<text x="${x0}" y="18" font-size="15">start ${list(start)}${bridge.length ? "  bridges " + list(bridge) : ""}</text>`;
  let y = y0 + rows * (cell + 18) + 16;
  s += `<text x="${x0}" y="${y}" font-size="15">off ${list(off)}</text>`;
  s += caption(x0, y + 20, (o.to_move === undefined || o.dice.length === 0 ? `turn ${o.turn}: game over` : `turn ${o.turn}: team ${o.to_move} to move, dice ${o.dice.join(" ")}`) + " (framed: a block)");
  o.pips.forEach((p, t) => { s += caption(x0, y + 40 + 20 * t, `team ${t} (${seatName(t)}): ${p} pips to go${o.finished.includes(t) ? ", finished " + (o.finished.indexOf(t) + 1) : ""}`, COLORS[t % COLORS.length]); });
  return s + "</svg>";
};
