// Model view: every layer x head of every map at once, as small heatmaps.
// After Vig 2019, A Multiscale Visualization of Attention in the Transformer
// Model (BertViz), arXiv:1906.05714, Sec. 2.2. Rows: layers (1 at the top);
// columns: heads. The thumbnails of a map share one colour scale, the page's
// (nmt.viz.colour_scale): absolute 0 to 1 by default, so a head that spreads
// its attention is dark; relative: 0 to the largest weight of all its
// thumbnails, printed above them. Masked cells are grey. Clicking one opens
// it large (the matrix view above, with its hover). From the explorer's server the
// thumbnails are its block maxima (nmt.viz.on_demand): at most 24 x 24 cells, each map's peaks kept.

const THUMB_PX = 96;   // the longer side of a thumbnail

function thumbMax(map, weights) {   // the largest weight of a thumbnail: null cells (all masked) left out
  return map.thumbs ? Math.max(RULE.min_max, ...weights.map(row => Math.max(0, ...row.filter(v => v !== null))))
                    : scaleMax(weights, "relative", map, null);
}

function thumbnail(map, weights, layer, head, onPick, vmax) {
  // weights: the map itself, or the server's thumbnail of it (map.thumbs: block maxima, null all masked)
  const R = weights.length, C = weights[0].length;
  const cell = Math.max(2, Math.min(10, Math.floor(THUMB_PX / Math.max(R, C, 1))));
  const own = thumbMax(map, weights);
  const canvas = el("canvas", {width: C * cell, height: R * cell, class: "thumb", "data-map": map.name,
                               "data-layer": layer + 1, "data-head": head + 1, "data-top": vmax,
                               title: `${map.title}: layer ${layer + 1}, head ${head + 1} ` +
                                      `(largest weight ${own.toFixed(2)}); click to open it large`});
  paintGrid(canvas, weights, cell, vmax, map, map.thumbs ? (r, c) => weights[r][c] === null : (r, c) => isMasked(map, r, c));
  canvas.addEventListener("click", () => onPick(map.name, layer, head));
  return canvas;
}

function drawModelView(box, maps, onPick) {
  box.textContent = "";
  const scale = currentScale();
  maps.forEach(map => {
    const pictures = map.thumbs || map.layers, H = pictures[0].length;    // the server's thumbnails, or the maps
    const all = [].concat(...pictures.map(heads => heads.map(w => thumbMax(map, w))));
    const vmax = scale === "absolute" ? Math.max(1, ...all) : Math.max(RULE.min_max, ...all);
    const said = el("p", {class: "legend model-scale"});
    said.appendChild(el("span", {class: "scale-strip"}));
    said.appendChild(document.createTextNode(` ${scale} scale 0 (dark) to ${topText(vmax)} (yellow)` +
      (scale === "relative" ? `, the largest of its ${all.length} maps` : "") +
      (map.mask ? "; grey: masked cells" : "") + "; rows are layers, columns heads; click a map to open it large"));
    const section = el("div", {class: "model-map", "data-map": map.name});
    section.appendChild(el("h3", {}, `${map.title}: ${map.layers.length} layer` +
                                     `${map.layers.length > 1 ? "s" : ""} \u00d7 ${H} head${H > 1 ? "s" : ""}`));
    const grid = el("div", {class: "thumb-grid"});
    grid.style.gridTemplateColumns = `auto repeat(${H}, auto)`;
    grid.appendChild(el("span"));
    for (let h = 0; h < H; h++) grid.appendChild(el("span", {class: "thumb-label"}, `head ${h + 1}`));
    pictures.forEach((heads, l) => {
      grid.appendChild(el("span", {class: "thumb-label"}, `layer ${l + 1}`));
      heads.forEach((weights, h) => grid.appendChild(thumbnail(map, weights, l, h, onPick, vmax)));
    });
    section.appendChild(said);
    section.appendChild(grid);
    box.appendChild(section);
  });
}

function markPicked(box, name, layer, head) {   // head: index or "mean"
  box.querySelectorAll("canvas.thumb").forEach(c => c.classList.toggle("picked",
    c.dataset.map === name && +c.dataset.layer === layer + 1 && (head === "mean" || +c.dataset.head === head + 1)));
}
