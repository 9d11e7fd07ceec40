// Reference links (--links, Pharaoh) over the cross-attention map, and the
// AER, precision and recall of the links the shown layer and head read
// (Och & Ney 2003; the study's readings: the same step and one step later).

function drawLinks(box, map, alignment) {
  const root = box.querySelector("svg.heatmap");
  if (!root || map.name !== "cross" || !alignment || !alignment.links) return;
  const linked = new Set(alignment.links.map(([i, j]) => i + "-" + j));
  const g = svg("g", {class: "links", "pointer-events": "none"});
  root.querySelectorAll("rect.cell").forEach(rect => {
    const r = +rect.getAttribute("data-row"), c = +rect.getAttribute("data-col");
    if (r >= alignment.tgt_words.length || c >= alignment.src_words.length) return;
    if (!linked.has(alignment.src_words[c] + "-" + alignment.tgt_words[r])) return;
    const x = +rect.getAttribute("x"), y = +rect.getAttribute("y"), w = +rect.getAttribute("width");
    g.appendChild(svg("rect", {x: x + w * 0.22, y: y + w * 0.22, width: w * 0.56, height: w * 0.56, fill: "none",
                               stroke: "#ff2d55", "stroke-width": 2, class: "link", "data-row": r, "data-col": c}));
  });
  root.appendChild(g);
}

function alignmentText(alignment, map, layer, head) {
  if (alignment.error) return alignment.error;
  if (map.name !== "cross") return "reference links: shown on the cross-attention map";
  const key = `${layer + 1}-${head === "mean" ? "mean" : head + 1}`, reading = alignment.readings[key];
  if (!reading) return "reference links: no reading for this layer and head";
  const say = s => s.aer === null ? "n/a" : `AER ${s.aer.toFixed(3)} (precision ${s.precision === null ? "n/a" :
    s.precision.toFixed(3)}, recall ${s.recall === null ? "n/a" : s.recall.toFixed(3)})`;
  return `reference links (red squares, ${alignment.links.length}): read at the same step ${say(reading.same)}; ` +
         `one step later (Shift-Att) ${say(reading.next)}`;
}
