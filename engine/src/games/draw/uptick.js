// The uptick board in the game viewer (`referee view`, the ladder's game pages):
// `DRAW.uptick(frame, seat)` gives SVG or HTML text, seat -1 for the full state.
// It runs inside the viewer page, with its helpers (`esc`, `svgOpen`, `grid`,
// `caption`, `seatName`, `COLORS`, `H`) in scope; see referee/src/view.html.
DRAW.uptick = (f, seat) => {
  const o = f.observations[seat < 0 ? 0 : seat];
  const n = o.size, cell = Math.max(22, Math.floor(440 / n)), x0 = 26, y0 = 30;
  let s = svgOpen(x0 + n * cell + 20, y0 + n * cell + 64) + grid(n, n, cell, x0, y0, "#fbfbf8");
  for (const d of o.dice) {
    const [c, r] = cellXY(d.cell), x = x0 + c * cell, y = y0 + (n - 1 - r) * cell;
    s += `<g data-die="${d.cell}:${d.seat}:${d.value}"><rect x="${x + 3}" y="${y + 3}" width="${cell - 6}" height="${cell - 6}" rx="5" fill="${COLORS[d.seat]}"` +
      (d.frozen ? ` fill-opacity="0.45" stroke="#1d2330" stroke-dasharray="3 2" stroke-width="1.5"` : "") + `/>` +
      `<text x="${x + cell / 2}" y="${y + cell / 2 + cell * 0.17}" text-anchor="middle" font-size="${cell * 0.48}" font-weight="700" fill="#fff">${d.value}</text></g>`;
  }
  const line = (p) => `${seatName(p)}: reserve ${o.reserve[p]}, captured ${o.captured[p]} pips`;
  s += caption(x0, 18, line(1), COLORS[1]) + caption(x0, y0 + n * cell + 34, line(0), COLORS[0]);
  s += caption(x0, y0 + n * cell + 56, o.over ? `game over after ${o.turn} moves (dashed: frozen)` : `move ${o.turn + 1}: seat ${o.to_move} to move (dashed: frozen)`);
  return s + "</svg>";
};
