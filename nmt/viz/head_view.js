// Head view: one layer's attention as lines from each row token to the
// column tokens it attends, one colour per head, all heads overlaid.
// After Vig 2019, A Multiscale Visualization of Attention in the Transformer
// Model (BertViz), arXiv:1906.05714, Sec. 2.1. A line's opacity is the weight
// itself (0 invisible, 1 opaque), the same number as the matrix cell; heads
// are shown or hidden by their boxes; hovering a token keeps only its lines.

const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                      "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"];
const LINE_ROW_PX = 22, LINE_GAP_PX = 150;
// Lines under a threshold are not drawn: every line (0) while a layer has at most LINE_BUDGET of
// them, 0.05 above that (an opus-mt layer of 100 words has 135,000), or the one chosen.
const LINE_BUDGET = 5000, LINE_THRESHOLDS = [0, 0.01, 0.05, 0.1, 0.2, 0.5];
let lineThreshold = null;   // null: chosen by the rule above

function headColour(head) { return HEAD_COLOURS[head % HEAD_COLOURS.length]; }

function headToggles(box, H, shown, redraw) {
  const bar = el("div", {class: "head-toggles"});
  for (let h = 0; h < H; h++) {
    const label = el("label", {class: "head-toggle"});
    const box_ = el("input", {type: "checkbox", "data-head": h + 1});
    box_.checked = shown.has(h);
    box_.addEventListener("change", () => { if (box_.checked) shown.add(h); else shown.delete(h); redraw(); });
    label.appendChild(box_);
    label.appendChild(el("span", {class: "swatch", style: `background:${headColour(h)}`}));
    label.appendChild(document.createTextNode(H > 1 ? `head ${h + 1}` : "the one map"));
    bar.appendChild(label);
  }
  const pick = el("select", {class: "line-threshold", title: "lines under this weight are not drawn"});
  pick.appendChild(option("auto", "auto"));
  LINE_THRESHOLDS.forEach(t => pick.appendChild(option(t, `\u2265 ${t}`)));
  pick.value = lineThreshold === null ? "auto" : String(lineThreshold);
  pick.addEventListener("change", () => { lineThreshold = pick.value === "auto" ? null : +pick.value; redraw(); });
  const label = el("label", {class: "head-toggle"}, "lines ");
  label.appendChild(pick);
  bar.appendChild(label);
  box.prepend(bar);
}

function drawHeadView(box, map, layer, shown) {
  // another layer of the map drawn in `box` keeps its tokens (hundreds of text nodes): only the lines change
  const old = box.querySelector("svg.head-view");
  const kept = old && old.nmtMap === map && old.nmtLabels === labelPick.value ? old : null;
  Array.from(box.children).forEach(child => { if (child !== kept) child.remove(); });
  const heads = map.layers[layer], H = heads.length;
  headToggles(box, H, shown, () => drawHeadView(box, map, layer, shown));
  const R = map.rows.length, C = map.cols.length;
  const leftW = Math.min(180, textWidth(map.cols.concat([map.col_axis])) + 10),
        rightW = Math.min(180, textWidth(map.rows.concat([map.row_axis])) + 10);
  const x1 = leftW, x2 = leftW + LINE_GAP_PX, top = 30;
  const height = top + Math.max(R, C) * LINE_ROW_PX + 10;
  const yOf = i => top + (i + 0.5) * LINE_ROW_PX;
  const counts = lineCounts(map, layer);
  let positive = 0, drawn = 0;
  shown.forEach(h => { if (h < H) positive += counts[h]; });
  const least = lineThreshold === null ? (positive > LINE_BUDGET ? 0.05 : 0) : lineThreshold;
  const drawnLines = document.createDocumentFragment();
  heads.forEach((weights, h) => {
    if (!shown.has(h)) return;
    const colour = headColour(h);
    for (let r = 0; r < weights.length; r++) {
      const row = weights[r];
      for (let c = 0; c < row.length; c++) {
        const value = row[c];
        if (value <= 0 || value < least) continue;
        drawn++;
        drawnLines.appendChild(svg("line", {x1: x1, y1: yOf(c), x2: x2, y2: yOf(r), stroke: colour,
                                            "stroke-width": 2, "stroke-opacity": value, "data-head": h + 1,
                                            "data-row": r, "data-col": c, "data-value": value}));
      }
    }
  });
  if (kept) {
    const lines = kept.querySelector("g.lines");
    lines.textContent = "";
    lines.appendChild(drawnLines);
    kept.setAttribute("data-layer", layer + 1);
    box.appendChild(headLegend(layer, least, drawn, positive));
    return;
  }
  const root = svg("svg", {width: x2 + rightW, height: height, class: "head-view", "data-map": map.name,
                           "data-layer": layer + 1, role: "img", "aria-label": map.title + " head view"});
  Object.assign(root, {nmtMap: map, nmtLabels: labelPick.value});
  root.appendChild(svg("text", {x: x1 - 6, y: 14, "text-anchor": "end", "font-style": "italic"}, map.col_axis));
  root.appendChild(svg("text", {x: x2 + 6, y: 14, "font-style": "italic"}, map.row_axis));
  const lines = svg("g", {class: "lines"});
  lines.appendChild(drawnLines);
  root.appendChild(lines);
  const focus = (attr, index) => lines.querySelectorAll("line").forEach(line =>
    line.classList.toggle("faded", index !== null && +line.getAttribute(attr) !== index));
  const token = (label, x, y, anchor, attr, index) => {
    const t = svg("text", {x: x, y: y + 4, "text-anchor": anchor, class: "token"}, label);
    t.addEventListener("mouseenter", () => { t.classList.add("hot"); focus(attr, index); });
    t.addEventListener("mouseleave", () => { t.classList.remove("hot"); focus(attr, null); });
    root.appendChild(t);
  };
  const cols = shownLabels(map.cols), rows = shownLabels(map.rows);    // words or subwords, as the page says
  cols.forEach((label, c) => token(label, x1 - 6, yOf(c), "end", "data-col", c));
  rows.forEach((label, r) => token(label, x2 + 6, yOf(r), "start", "data-row", r));
  box.appendChild(root);
  box.appendChild(headLegend(layer, least, drawn, positive));
}

function lineCounts(map, layer) {   // each head's count of weights above 0 at `layer`, counted once, kept on the map
  const kept = map.lineCounts || (map.lineCounts = {});
  if (!kept[layer]) {
    kept[layer] = map.layers[layer].map(weights => {
      let n = 0;
      for (const row of weights) for (let c = 0; c < row.length; c++) if (row[c] > 0) n++;
      return n;
    });
  }
  return kept[layer];
}

function headLegend(layer, least, drawn, positive) {
  return el("p", {class: "legend head-legend"}, `layer ${layer + 1}: a line's opacity is its weight ` +
    "on the absolute scale 0 to 1, whatever the colour scale; hover a token to see only its lines; " +
    (least > 0 ? `${drawn} of ${positive} lines drawn, those of weight \u2265 ${least}` : `all ${positive} lines drawn`));
}
