// The beam search as a tree: every hypothesis the search kept at each step,
// the best of those it pruned (grey), the finished ones (ended by </s>), and
// the finals with the penalties that ranked them. After Strobelt et al. 2018,
// Seq2Seq-Vis: A Visual Debugging Tool for Sequence-to-Sequence Models, IEEE
// VIS, arXiv:1804.09299. Clicking a node draws the attention of its prefix.

const TREE_ROW_PX = 26, TREE_NODE_H = 18, TREE_GAP_PX = 34, TREE_AXIS_PX = 22, TREE_LABEL_CHARS = 16;

function treeChildren(nodes) {   // id -> its children, best first (kept and finished before pruned, then by score)
  const children = new Map(nodes.map(n => [n.id, []]));
  nodes.forEach(n => { if (n.parent !== null) children.get(n.parent).push(n); });
  children.forEach(list => list.sort((a, b) => (a.state === "pruned") - (b.state === "pruned") || b.score - a.score));
  return children;
}

function onFinalPaths(nodes, finals) {   // the ids of the nodes some final passes through: the search's live branches
  const byId = new Map(nodes.map(n => [n.id, n])), live = new Set();
  finals.forEach((_, id) => { for (let n = byId.get(id); n && !live.has(n.id); n = byId.get(n.parent)) live.add(n.id); });
  return live;
}

function treeLayout(nodes) {
  // A tidy tree (after Reingold & Tilford 1981, simplified): x = the step (a node's column is after
  // its parent's, so every parent is at its child's left), y = the leaves one row each in depth-first
  // order, best child first, and a parent level with its best child (the best continuation runs
  // straight on, the others branch below it): no edge crosses another.
  const children = treeChildren(nodes), at = new Map();
  const root = nodes.find(n => n.parent === null);
  const steps = Math.max(...nodes.map(n => n.step)) + 1;
  const colW = [];                                      // each step's width: its longest label
  nodes.forEach(n => { colW[n.step] = Math.max(colW[n.step] || 0, nodeLabel(n).length * 6.6 + 10); });
  const colX = [8];
  for (let s = 1; s < steps; s++) colX[s] = colX[s - 1] + (colW[s - 1] || 40) + TREE_GAP_PX;
  let leaf = 0;
  const place = n => {                                  // iterative: a long tree never overflows the stack
    const stack = [[n, false]];
    while (stack.length) {
      const [node, done] = stack.pop(), kids = children.get(node.id);
      if (!kids.length) { at.set(node.id, {x: colX[node.step], y: TREE_AXIS_PX + 6 + leaf++ * TREE_ROW_PX}); continue; }
      if (done) {
        at.set(node.id, {x: colX[node.step], y: at.get(kids[0].id).y});   // level with its best child
        continue;
      }
      stack.push([node, true]);
      for (let k = kids.length - 1; k >= 0; k--) stack.push([kids[k], false]);
    }
  };
  place(root);
  return {at: at, colX: colX, colW: colW, steps: steps, rows: leaf,
          width: colX[steps - 1] + (colW[steps - 1] || 40) + 16};
}

function nodeLabel(n) {   // the piece (cut at TREE_LABEL_CHARS; the tooltip has it whole) and log P of the prefix
  if (n.parent === null) return "<s>";
  const piece = n.piece.length > TREE_LABEL_CHARS ? n.piece.slice(0, TREE_LABEL_CHARS - 1) + "\u2026" : n.piece;
  return `${piece} ${n.score.toFixed(2)}`;
}

function prefixMap(tree, id) {   // the attention of the prefix ending at node `id`, as a map
  const byId = new Map(tree.nodes.map(n => [n.id, n]));
  const path = [];
  for (let n = byId.get(id); n && n.parent !== null; n = byId.get(n.parent)) path.unshift(n);
  return {name: "prefix", title: "attention of this prefix", rows: path.map(n => n.piece), cols: tree.src_pieces,
          row_axis: "target", col_axis: "source", center: null, window: null, exact_zeros: tree.exact_zeros,
          layers: [[path.map(n => n.attention)]]};
}

function nodeText(n, final) {
  let text = `\u201c${n.piece}\u201d (${n.state}, step ${n.step})\nlog P(token) ${n.logp.toFixed(4)}\n` +
             `log P(prefix) ${n.score.toFixed(4)}`;
  if (final) {
    text += `\nfinal #${final.rank}: |Y| ${final.length}, lp ${final.length_penalty.toFixed(4)}, ` +
            `cp ${final.coverage_penalty.toFixed(4)}\nscore = ${final.log_prob.toFixed(4)} / lp + cp = ` +
            final.score.toFixed(4);
  }
  return text;
}

function isForced(n, tree) {   // the forced prefix: HF's generate() gives it ("forced"), nmt's search scores it
  return n.state === "forced" || (n.parent !== null && n.step <= (tree.forced || 0));
}

function drawTreeGraph(tree, finals, onPick) {
  const layout = treeLayout(tree.nodes), {at} = layout, live = onFinalPaths(tree.nodes, finals);
  const height = TREE_AXIS_PX + 12 + layout.rows * TREE_ROW_PX;
  const root = svg("svg", {width: layout.width, height: height, class: "beam-tree"});
  const edges = svg("g", {class: "edges"}), boxes = svg("g", {class: "nodes"});
  const width = n => layout.colW[n.step];
  tree.nodes.forEach(n => {
    const p = at.get(n.id), final = finals.get(n.id), faded = !live.has(n.id);
    const state = isForced(n, tree) ? "forced" : n.state;
    if (n.parent !== null) {                            // from the parent's right edge to this node's left edge
      const q = at.get(n.parent), parent = tree.nodes[n.parent] || tree.nodes.find(m => m.id === n.parent);
      const x1 = q.x + width(parent), y1 = q.y + TREE_NODE_H / 2, x2 = p.x, y2 = p.y + TREE_NODE_H / 2, mid = (x1 + x2) / 2;
      edges.appendChild(svg("path", {d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, fill: "none",
                                     class: `edge ${state}${faded ? " faded" : ""}`, "data-from": n.parent,
                                     "data-to": n.id}));
    }
    const g = svg("g", {class: `node ${state}${final ? " final" : ""}${faded ? " faded" : ""}`, "data-node": n.id,
                        "data-parent": n.parent === null ? "" : n.parent, "data-step": n.step, "data-state": n.state,
                        "data-x": p.x, "data-y": p.y, "data-width": width(n)});
    if (final) g.setAttribute("data-rank", final.rank);
    g.appendChild(svg("rect", {x: p.x, y: p.y, width: width(n), height: TREE_NODE_H, rx: 4}));
    g.appendChild(svg("text", {x: p.x + 4, y: p.y + 13}, nodeLabel(n)));
    g.addEventListener("mousemove", event => showTip(event, nodeText(n, final)));
    g.addEventListener("mouseleave", hideTip);
    if (n.parent !== null) g.addEventListener("click", () => onPick(n.id));
    boxes.appendChild(g);
  });
  root.appendChild(edges); root.appendChild(boxes);
  return [root, layout];
}

function stepAxis(layout) {   // the steps, kept in view (sticky) while the tree scrolls under them
  const axis = svg("svg", {width: layout.width, height: TREE_AXIS_PX, class: "tree-axis"});
  axis.appendChild(svg("rect", {x: 0, y: 0, width: layout.width, height: TREE_AXIS_PX, fill: "#fafafc"}));
  layout.colX.forEach((x, s) => axis.appendChild(svg("text", {x: x + 2, y: 15, class: "step-label"},
                                                     s ? `step ${s}` : "start")));
  return axis;
}

function finalsTable(tree) {
  const table = el("table", {class: "finals"});
  const head = el("tr");
  ["rank", "translation", "log P(Y | X)", "|Y|", "lp(Y)", "cp(X; Y)", "score"].forEach(h => head.appendChild(el("th", {}, h)));
  table.appendChild(head);
  tree.finals.forEach(f => {
    const tr = el("tr", {class: "final-row", "data-node": f.node});
    [f.rank, f.text, f.log_prob.toFixed(4), f.length, f.length_penalty.toFixed(4), f.coverage_penalty.toFixed(4),
     f.score.toFixed(4)].forEach((v, i) => tr.appendChild(el("td", {class: ["rank", "text", "logp", "len", "lp", "cp",
                                                                             "final-score"][i]}, String(v))));
    table.appendChild(tr);
  });
  return table;
}

function rankingText(tree) {   // the rule that ranked the finals: nmt's beam or a Hugging Face generate()
  if (tree.ranking === "generate") {
    return `Finals are ranked as Hugging Face generate() ranks them: score = log P(Y | X) / lp(Y), ` +
           `lp = |Y|^${tree.alpha}, |Y| the generated subwords with </s>.`;
  }
  return `Finals are ranked by score = log P(Y | X) / lp(Y) + cp(X; Y), lp = ((5 + |Y|) / 6)^${tree.alpha}, ` +
         `cp = ${tree.beta} \u00d7 \u03a3 log min(attention received, 1) (Wu et al. 2016).`;
}

function prefixTitle(L, H, layer, head) {   // which layer and head the clicked node's map is
  if (L === 1 && H === 1) return "the decoder's one attention";
  return `layer ${layer + 1} of ${L}, ` + (head === "mean" ? `mean over its ${H} heads` : `head ${head + 1} of ${H}`);
}

function drawPrefix(detail, map, at, shown, onChoose) {
  // map: the prefix's attention; at: [layer, head] of it to draw; shown: {L, H, layer, head, search}
  // what that is, said in the title; onChoose(layer, head): another layer or head (none: no choice)
  detail.textContent = "";
  const {L, H, layer, head} = shown;
  detail.appendChild(el("h3", {class: "view-title prefix-title"}, `Attention of this prefix: ` +
    prefixTitle(L, H, layer, head) + (shown.search ? " (the attention the search recorded)" : "")));
  if (onChoose && (L > 1 || H > 1)) {
    const bar = el("div", {class: "controls"}), layerSel = el("select", {class: "prefix-layer"}),
          headSel = el("select", {class: "prefix-head"});
    for (let l = 0; l < L; l++) layerSel.appendChild(option(l, String(l + 1)));
    if (H > 1) headSel.appendChild(option("mean", "mean"));
    for (let h = 0; h < H; h++) headSel.appendChild(option(h, String(h + 1)));
    layerSel.value = String(layer); headSel.value = String(head);
    const chosen = () => onChoose(+layerSel.value, headSel.value === "mean" ? "mean" : +headSel.value);
    layerSel.addEventListener("change", chosen); headSel.addEventListener("change", chosen);
    for (const [name, sel] of [["layer", layerSel], ["head", headSel]]) {
      const label = el("label", {}, name + " "); label.appendChild(sel); bar.appendChild(label);
    }
    detail.appendChild(bar);
  }
  const box = el("div");
  detail.appendChild(box);
  drawHeatmap(box, map, at[0], at[1], "prefix-heatmap");
}

function pathTokens(tree, id) {   // the token ids of the prefix ending at node `id`
  const byId = new Map(tree.nodes.map(n => [n.id, n])), tokens = [];
  for (let n = byId.get(id); n && n.parent !== null; n = byId.get(n.parent)) tokens.unshift(n.token);
  return tokens;
}

function drawBeamTree(box, tree, dims, fetchPrefix) {
  // dims: {layers, heads} of the model's cross-attention; fetchPrefix(tokens) -> Promise of the
  // prefix's map with every layer and head (the explorer's server), or none (a page on its own)
  box.textContent = "";
  const finals = new Map(tree.finals.map(f => [f.node, f]));
  box.appendChild(el("p", {class: "legend"},
    `beam ${tree.beam_size}: each column a step (the axis stays in view), each box a hypothesis (subword and ` +
    "log P of the prefix) after the one it continues; blue kept, grey pruned (the best candidates outside the " +
    "beam), green ended by </s>, yellow the forced prefix" +
    (tree.ranking === "generate" ? " (given, not scored)" : " (scored)") + ", thick border: a final; faded: " +
    "a branch no final continues. " + rankingText(tree) + " Hover a box for its whole subword; click it for its " +
    "prefix's attention."));
  const scroll = el("div", {class: "tree-scroll"});
  const detail = el("div", {class: "tree-detail"});
  const L = (dims && dims.layers) || 1, H = (dims && dims.heads) || 1, cache = new Map();
  const pick = (id, layer = L - 1, head = H > 1 ? "mean" : 0) => {
    scroll.querySelectorAll("g.node").forEach(g => g.classList.toggle("picked", +g.dataset.node === id));
    const choose = fetchPrefix ? (l, h) => pick(id, l, h) : null, shown = {L: L, H: H, layer: layer, head: head};
    if (cache.has(id)) return drawPrefix(detail, cache.get(id), [layer, head], shown, choose);
    if (layer === L - 1 && (head === "mean" || H === 1)) {      // the search's own: the tree carries it
      return drawPrefix(detail, prefixMap(tree, id), [0, 0], Object.assign(shown, {search: true}), choose);
    }
    detail.querySelectorAll("select").forEach(s => { s.disabled = true; });
    fetchPrefix(pathTokens(tree, id)).then(map => { cache.set(id, map); pick(id, layer, head); })
      .catch(error => { detail.textContent = String(error.message || error); });
  };
  const [graph, layout] = drawTreeGraph(tree, finals, id => pick(id));
  const axis = el("div", {class: "tree-axis-box"});
  axis.appendChild(stepAxis(layout));
  scroll.appendChild(axis);
  scroll.appendChild(graph);
  box.appendChild(scroll);
  box.appendChild(finalsTable(tree));
  box.appendChild(detail);
}
