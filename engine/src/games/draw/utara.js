// The utara board in the game viewer (`referee view`, the ladder's game pages):
// `DRAW.utara(frame, seat)` gives SVG or HTML text, seat -1 for the full state.
// It runs inside the viewer page, with its helpers (`esc`, `svgOpen`, `grid`,
// `caption`, `seatName`, `COLORS`, `H`) in scope; see referee/src/view.html.
DRAW.utara = (f, seat) => {
  const o = f.observations[seat < 0 ? 0 : seat];
  const [w, h] = o.sky, cell = Math.max(24, Math.floor(440 / Math.max(w, h))), x0 = 26, y0 = 12;
  const glyph = { N: "\u2191", E: "\u2192", S: "\u2193", W: "\u2190", O: "\u2600", C: "\u263E" };
  let s = svgOpen(x0 + w * cell + 20, y0 + h * cell + 40 + 20 * o.totals.length) + grid(w, h, cell, x0, y0, "#f2f5fb");
  for (const b of o.blocks) {
    const [c, r] = cellXY(b);
    s += `<rect data-block="${b}" x="${x0 + c * cell + 2}" y="${y0 + (h - 1 - r) * cell + 2}" width="${cell - 4}" height="${cell - 4}" fill="#3a3f4b"/>`;
  }
  // The path just sailed: the cells whose dice this move collected (read from the
  // states before and after it, not worked out from the rules), dashed.
  const before = f.ply > 0 ? F[f.ply - 1].observations[seat < 0 ? 0 : seat] : null;
  if (before && before.round[0] === o.round[0]) {
    const now = new Set(o.dice.map((d) => d.cell));
    for (const d of before.dice.filter((d) => !now.has(d.cell))) {
      const [c, r] = cellXY(d.cell);
      s += `<rect data-sailed="${d.cell}" x="${x0 + c * cell + 3}" y="${y0 + (h - 1 - r) * cell + 3}" width="${cell - 6}" height="${cell - 6}" rx="5" fill="#fff6d6" stroke="${COLORS[d.owner % COLORS.length]}" stroke-width="2" stroke-dasharray="4 3"/>`;
    }
  }
  for (const d of o.dice) {
    const [c, r] = cellXY(d.cell), x = x0 + c * cell, y = y0 + (h - 1 - r) * cell;
    const sun = o.sun_cell === d.cell;
    s += `<g data-die="${d.cell}:${d.face}"><rect x="${x + 3}" y="${y + 3}" width="${cell - 6}" height="${cell - 6}" rx="5" fill="#fff" stroke="${COLORS[d.owner % COLORS.length]}" stroke-width="${sun ? 4 : 2}"/>` +
      `<text x="${x + cell / 2}" y="${y + cell / 2 + cell * 0.16}" text-anchor="middle" font-size="${cell * 0.46}" fill="${d.face === "O" ? "#c98a00" : d.face === "C" ? "#5a5fa8" : "#1d2330"}">${glyph[d.face] || esc(d.face)}</text></g>`;
  }
  let y = y0 + h * cell + 34;
  s += caption(x0, y, `round ${o.round[0]} of ${o.round[1]} · ${o.phase === "over" ? "game over" : `seat ${o.to_move}: ${o.phase}`} (dashed: collected by the last move)`);
  o.totals.forEach((t, p) => {
    y += 20;
    s += caption(x0, y, `${seatName(p)}: ${t} + ${o.round_points[p]} this round (collected ${o.collected[p] || "-"})`, COLORS[p % COLORS.length]);
  });
  return s + "</svg>";
};
