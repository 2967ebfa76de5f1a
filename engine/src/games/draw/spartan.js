// The spartan board in the game viewer (`referee view`, the ladder's game pages):
// `DRAW.spartan(frame, seat)` gives SVG or HTML text, seat -1 for the full state.
// It runs inside the viewer page, with its helpers (`esc`, `svgOpen`, `grid`,
// `caption`, `seatName`, `COLORS`, `H`) in scope; see referee/src/view.html.
DRAW.spartan = (f, seat) => {
  const obs = f.observations, o = obs[seat < 0 ? 0 : seat];
  let s = svgOpen(470, 424);
  for (let a = 0; a < 2; a++) {
    const y = a === 1 ? 4 : 144, color = COLORS[a];
    s += `<text data-hp="${a}:${o.hp[a]}" x="12" y="${y + 16}" font-size="16" fill="${color}" font-weight="600">${esc(seatName(a))} · HP ${o.hp[a]}/10${o.mercenary === a ? " · holds the Mercenary" : ""}</text>`;
    s += `<rect x="12" y="${y + 24}" width="200" height="10" fill="#e6e8ee"/><rect x="12" y="${y + 24}" width="${20 * o.hp[a]}" height="10" fill="${color}"/>`;
    // Its dice this turn: its own seat's observation shows them; another seat
    // sees only how many (the full state shows both).
    const known = seat < 0 || seat === a;
    const dice = known ? obs[a].your_dice : Array(o.in_hand[a]).fill(0);
    dice.forEach((v, k) => {
      const x = 12 + k * 44;
      s += `<g data-die="${a}:${v || "?"}"><rect x="${x}" y="${y + 44}" width="38" height="38" rx="6" fill="#fff" stroke="${color}" stroke-width="2"/>` +
        `<text x="${x + 19}" y="${y + 70}" text-anchor="middle" font-size="20" font-weight="700" fill="${color}">${v || "?"}</text></g>`;
    });
    s += caption(12, y + 104, `in hand ${o.in_hand[a]} · resting ${o.resting[a]} · graveyard ${o.graveyard[a]}`, "#5b6475");
  }
  const r = o.last_reveal;
  const status = o.phase === "over" ? "game over" : `turn ${o.turn}: ${o.phase === "reroll1" ? "first" : "second"} reroll`;
  s += caption(12, 296, status);
  if (r) {
    // What both armies saw at the reveal: the dice, the Mercenary's roll, the sums.
    s += `<g data-reveal="${r.dice[0].join("")}:${r.dice[1].join("")}:${r.mercenary ? r.mercenary.seat + "-" + r.mercenary.roll : "-"}">`;
    s += caption(12, 318, "last reveal:", "#5b6475");
    for (let a = 0; a < 2; a++) {
      const merc = r.mercenary && r.mercenary.seat === a ? ` + Mercenary rolled ${r.mercenary.roll}` : "";
      s += caption(24, 336 + 18 * a, `${seatName(a)}: ${r.dice[a].join(" ")}${merc}`, COLORS[a]);
    }
    s += caption(24, 372, `attack ${r.attack.join("/")}, defence ${r.defence.join("/")}, damage ${r.damage.join("/")}`, "#5b6475") + "</g>";
  }
  s += caption(12, 396, "faces: 1 plague · 2-3 warrior · 4 hoplite", "#5b6475") + caption(12, 414, "5 phalanx · 6 necromancer", "#5b6475");
  return s + "</svg>";
};
