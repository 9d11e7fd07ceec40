// Difference view: two panels side by side (compare: two models; what if: the free
// translation and the forced one), and under them what differs, row for row:
//   d[t][j] = B[t][j] - A[t][j]    the attention each panel shows (its own map, layer, head)
// on one diverging scale, symmetric about 0 (blue: A attends more, red: B more):
// absolute -1 to +1, relative -m to +m with m = max |d|, printed in the legend.
// Row t pairs A's t-th output subword with B's; a row whose subwords differ is
// marked (bold, "\u2260"), a row only one side has is hatched. Beside each row:
// log P(y_t) of both and its change (nmt.viz.token_scores); above: the score
// and log P(output) differences. After Strobelt et al. 2018 (Seq2Seq-Vis,
// arXiv:1804.09299), who compare a translation with a corrected one.

const DIVERGING = ["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fddbc7", "#ef8a62", "#b2182b"];
const DIFFS = [];   // the difference views shown, repainted with the panels

function divergingColour(x) {   // x in [-1, 1] -> blue, white at 0, red
  const f = (Math.min(1, Math.max(-1, x)) + 1) / 2 * (DIVERGING.length - 1);
  const i = Math.min(DIVERGING.length - 2, Math.floor(f));
  const a = hexRgb(DIVERGING[i]), b = hexRgb(DIVERGING[i + 1]), t = f - i;
  return "rgb(" + a.map((c, k) => Math.round(c + (b[k] - c) * t)).join(",") + ")";
}

function sumOf(values) { return (values || []).reduce((s, v) => s + v, 0); }

function signed(x, digits) { return (x > 0 ? "+" : x < 0 ? "\u2212" : "\u00b1") + Math.abs(x).toFixed(digits); }

function differenceSummary(a, b) {   // the scores and log-probabilities, B - A
  const parts = [];
  if (a.result.score !== null && b.result.score !== null) {
    parts.push(`score ${b.result.score.toFixed(3)} \u2212 ${a.result.score.toFixed(3)} = ` +
               signed(b.result.score - a.result.score, 3));
  }
  if (a.result.token_logp && b.result.token_logp) {
    const la = sumOf(a.result.token_logp), lb = sumOf(b.result.token_logp);
    parts.push(`log P(output | source) ${lb.toFixed(3)} \u2212 ${la.toFixed(3)} = ${signed(lb - la, 3)} (natural log)`);
  }
  const ra = a.result.tgt_pieces, rb = b.result.tgt_pieces, n = Math.max(ra.length, rb.length);
  let changed = 0;
  for (let t = 0; t < n; t++) if (ra[t] !== rb[t]) changed += 1;
  parts.push(`${changed} of ${n} output rows differ`);
  return parts.join("; ");
}

function differenceMatrix(a, b) {   // -> {d: (T, S) with null where a row is missing, m: max |d|} or a reason
  if (a.map.name !== b.map.name) return {why: `the panels show different maps (${a.map.title}; ${b.map.title}): ` +
                                               "pick the same one in both"};
  if (a.map.cols.join("\u0000") !== b.map.cols.join("\u0000")) {
    return {why: "the panels' columns are other subwords (other vocabularies): no cell-by-cell difference"};
  }
  const T = Math.max(a.w.length, b.w.length), S = a.map.cols.length;
  let m = 0;
  const d = [];
  for (let t = 0; t < T; t++) {
    if (t >= a.w.length || t >= b.w.length) { d.push(null); continue; }
    d.push(Array.from(a.w[t], (v, j) => {   // a plain array: a row may be a Float64Array, which holds no null
      const masked = isMasked(a.map, t, j) || isMasked(b.map, t, j), x = masked ? null : b.w[t][j] - v;
      if (x !== null) m = Math.max(m, Math.abs(x));
      return x;
    }));
  }
  return {d: d, m: m, T: T, S: S};
}

function paintDifference(diff, top) {   // -> a PNG data URL, a pixel a cell: the diverging colour, grey where none
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, diff.S); canvas.height = Math.max(1, diff.T);
  const ctx = canvas.getContext("2d"), image = ctx.createImageData(canvas.width, canvas.height);
  const px = new Uint32Array(image.data.buffer), grey = rgba32(hexRgb(RULE.masked));
  const LUT = Array.from({length: LEVELS + 1}, (_, i) => rgba32(divergingColour(2 * i / LEVELS - 1)
    .slice(4, -1).split(",").map(Number)));                         // LEVELS steps from -1 to +1
  diff.d.forEach((row, t) => {
    for (let c = 0; c < diff.S; c++) {
      const x = row === null ? null : row[c];
      px[t * diff.S + c] = x === null ? grey
        : LUT[Math.round((Math.min(1, Math.max(-1, x / top)) + 1) / 2 * LEVELS)];
    }
  });
  ctx.putImageData(image, 0, 0);
  return canvas.toDataURL();
}

function diffRowLabel(pieces, t) { return t < pieces.length ? shownLabels(pieces)[t] : "\u2014"; }

function drawDifference(box, a, b, names) {   // a, b: {result, map, w, layer, head} of the two panels
  box.textContent = "";
  box.appendChild(el("h3", {class: "view-title"}, `Difference: ${names[1]} \u2212 ${names[0]}`));
  box.appendChild(el("p", {class: "diff-summary"}, differenceSummary(a, b)));
  const diff = differenceMatrix(a, b);
  const what = (p, n) => `${n}: ${p.map.title}, layer ${p.layer + 1}, head ${p.head === "mean" ? "mean" : p.head + 1}`;
  if (diff.why) { box.appendChild(el("p", {class: "legend diff-why"}, diff.why)); return; }
  const scale = currentScale(), top = scale === "absolute" ? 1 : Math.max(RULE.min_max, diff.m);
  const rowsA = a.map.rows, rowsB = b.map.rows, logA = a.result.token_logp, logB = b.result.token_logp;
  const withLogp = a.map.name === "cross" && logA && logB;
  const cell = Math.max(14, Math.min(26, Math.floor(520 / Math.max(diff.S, 1))));
  const labelW = Math.min(170, textWidth(rowsA.concat(rowsB).map((_, i) => "\u2260 " + (rowsA[i] || rowsB[i]))) + 8);
  const left = 8 + labelW, top0 = Math.min(170, Math.max(36, textWidth(a.map.cols) * 0.72 + 22));
  const gridW = diff.S * cell, gridH = diff.T * cell, rightX = left + gridW + 8;
  const width = rightX + labelW + (withLogp ? 210 : 10) + 100, height = top0 + Math.max(gridH, 120) + 40;
  const large = diff.T * diff.S > CELL_BUDGET;   // painted on a canvas, not one rect a cell
  const tip = (t, c) => {
    const x = diff.d[t] === null ? null : diff.d[t][c];
    return x === null
      ? `row ${t + 1}: ${diff.d[t] === null ? "only one translation has this row" : "masked in a panel"}`
      : `row ${t + 1}: ${names[0]} \u201c${rowsA[t]}\u201d, ${names[1]} \u201c${rowsB[t]}\u201d\n` +
        `source ${pieceText(a.map.cols, c)}\n${weightText(b.w[t][c], false)} \u2212 ` +
        `${weightText(a.w[t][c], false)} = ${signed(x, 4)}`;
  };
  const root = svg("svg", {width: width, height: height, class: "diff-map", "data-map": a.map.name,
                           "data-top": top, "data-scale": scale, role: "img", "aria-label": "attention difference"});
  const hatch = "d" + Math.random().toString(36).slice(2);
  const pattern = svg("pattern", {id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                  patternTransform: "rotate(45)"});
  pattern.appendChild(svg("rect", {width: 6, height: 6, fill: RULE.masked}));
  pattern.appendChild(svg("line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#9a9aa2", "stroke-width": 2}));
  const defs = svg("defs"); defs.appendChild(pattern); root.appendChild(defs);
  const colLabels = shownLabels(a.map.cols);
  colLabels.forEach((label, c) => {
    const x = left + (c + 0.5) * cell, y = top0 - 8;
    root.appendChild(svg("text", {x: x, y: y, transform: `rotate(-50 ${x} ${y})`}, label));
  });
  root.appendChild(svg("text", {x: left - 6, y: top0 - 8, "text-anchor": "end", "font-style": "italic"}, names[0]));
  root.appendChild(svg("text", {x: rightX, y: top0 - 8, "font-style": "italic"}, names[1]));
  if (withLogp) root.appendChild(svg("text", {x: rightX + labelW, y: top0 - 8, "font-style": "italic"},
                                     "log P(y_t): A, B, B \u2212 A"));
  for (let t = 0; t < diff.T; t++) {
    const y = top0 + t * cell, changed = rowsA[t] !== rowsB[t];
    const cls = changed ? "diff-row changed" : "diff-row";
    const mark = changed ? "\u2260 " : "";
    root.appendChild(svg("text", {x: left - 6, y: y + cell / 2 + 4, "text-anchor": "end", class: cls,
                                  "data-row": t}, mark + diffRowLabel(rowsA, t)));
    root.appendChild(svg("text", {x: rightX, y: y + cell / 2 + 4, class: cls, "data-row": t},
                         diffRowLabel(rowsB, t)));
    if (withLogp) {
      const la = logA[t], lb = logB[t];
      const said = [la, lb].map(v => v === undefined ? "\u2014" : v.toFixed(2)).join("  ") +
                   (la !== undefined && lb !== undefined ? "  " + signed(lb - la, 2) : "");
      root.appendChild(svg("text", {x: rightX + labelW, y: y + cell / 2 + 4, class: "diff-logp " + cls,
                                    "data-row": t}, said));
    }
    const row = diff.d[t];
    for (let c = 0; c < diff.S && !large; c++) {
      const x = row === null ? null : row[c];
      const rect = svg("rect", {x: left + c * cell, y: y, width: cell, height: cell, class: "diff-cell",
                                "data-row": t, "data-col": c, "data-value": x === null ? "none" : x,
                                fill: x === null ? `url(#${hatch})` : divergingColour(x / top)});
      rect.addEventListener("mousemove", event => showTip(event, tip(t, c)));
      rect.addEventListener("mouseleave", hideTip);
      root.appendChild(rect);
    }
  }
  if (large) {                      // one picture and one pointer target, as a large heatmap (CELL_BUDGET)
    root.appendChild(svg("image", {x: left, y: top0, width: gridW, height: gridH, href: paintDifference(diff, top),
                                   preserveAspectRatio: "none", class: "diff-image", "image-rendering": "pixelated"}));
    const overlay = svg("rect", {x: left, y: top0, width: gridW, height: gridH, fill: "transparent",
                                 class: "diff-overlay", "data-rows": diff.T, "data-cols": diff.S});
    overlay.addEventListener("mousemove", event => {
      const at = overlay.getBoundingClientRect();
      showTip(event, tip(Math.min(diff.T - 1, Math.floor((event.clientY - at.top) / cell)),
                         Math.min(diff.S - 1, Math.floor((event.clientX - at.left) / cell))));
    });
    overlay.addEventListener("mouseleave", hideTip);
    root.appendChild(overlay);
  }
  const barX = width - 90, barH = Math.max(gridH, 120);
  const grad = svg("linearGradient", {id: "dg" + Math.random().toString(36).slice(2), x1: 0, y1: 1, x2: 0, y2: 0});
  DIVERGING.forEach((c, i) => grad.appendChild(svg("stop", {offset: i / (DIVERGING.length - 1), "stop-color": c})));
  defs.appendChild(grad);
  root.appendChild(svg("rect", {x: barX, y: top0, width: 14, height: barH, fill: `url(#${grad.id})`, stroke: "#888",
                                class: "diff-scale"}));
  [-1, 0, 1].forEach(f => {
    const y = top0 + barH * (1 - f) / 2;
    root.appendChild(svg("text", {x: barX + 20, y: y + 4}, f === 0 ? "0" : signed(f * top, 2)));
  });
  box.appendChild(root);
  box.appendChild(el("p", {class: "legend diff-legend"},
    `one diverging scale for the difference, ${scale} \u2212${topText(top)} to +${topText(top)}` +
    (scale === "relative" ? " (the largest |difference| shown)" : "") +
    `: red, ${names[1]} attends more; blue, ${names[0]} more; white, the same. ` +
    `${what(a, names[0])}; ${what(b, names[1])}. \u2260: the rows' subwords differ; ${large ? "grey" : "hatched"}: a row only one ` +
    "translation has, or a masked cell."));
}

function alignPanels(panels) {   // the heatmaps of panels side by side start at one height: row t beside row t
  const boxes = panels.map(p => p.querySelector(".heatmap-box")).filter(b => b);
  if (boxes.length < 2) return;
  boxes.forEach(b => { b.style.marginTop = "0px"; });
  if (boxes[0].closest(".panel").offsetTop !== boxes[1].closest(".panel").offsetTop) return;   // stacked
  const tops = boxes.map(b => b.getBoundingClientRect().top), high = Math.max(...tops);
  boxes.forEach((b, i) => { b.style.marginTop = `${high - tops[i]}px`; });
}

function pairRow(box, first, second, names) {   // two panels side by side, their difference under them
  const row = el("div", {class: "pair"});
  row.appendChild(first); row.appendChild(second);
  box.appendChild(row);
  const a = PANELS.find(p => p.panel === first), b = PANELS.find(p => p.panel === second);
  if (!a || !b || !a.shown || !b.shown) return row;    // a panel with an error or no maps: nothing to subtract
  const diffBox = el("section", {class: "diff-view"});
  box.appendChild(diffBox);
  DIFFS.push({paint: () => { alignPanels([first, second]); drawDifference(diffBox, a.shown(), b.shown(), names); }});
  return row;
}
