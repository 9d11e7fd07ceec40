// The beam search as a tree: every hypothesis the search kept at each step,
// the best of those it pruned (grey), the finished ones (ended by </s>), and
// the finals with the penalties that ranked them. After Strobelt et al. 2018,
// Seq2Seq-Vis: A Visual Debugging Tool for Sequence-to-Sequence Models, IEEE
// VIS, arXiv:1804.09299. Clicking a node draws the attention of its prefix.

const TREE_COL_PX = 104, TREE_ROW_PX = 24, TREE_NODE_W = 92, TREE_NODE_H = 18;

function treeLayout(nodes) {   // id -> {x, y}: steps across, each step's nodes by score, best at the top
  const byStep = new Map();
  nodes.forEach(n => { if (!byStep.has(n.step)) byStep.set(n.step, []); byStep.get(n.step).push(n); });
  const at = new Map();
  let rows = 1;
  byStep.forEach((list, step) => {
    list.sort((a, b) => (a.state === "pruned") - (b.state === "pruned") || b.score - a.score);
    list.forEach((n, i) => at.set(n.id, {x: 8 + step * TREE_COL_PX, y: 8 + i * TREE_ROW_PX}));
    rows = Math.max(rows, list.length);
  });
  return {at: at, steps: byStep.size, rows: rows};
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

function drawTreeGraph(tree, finals, onPick) {
  const {at, steps, rows} = treeLayout(tree.nodes);
  const root = svg("svg", {width: 16 + steps * TREE_COL_PX, height: 16 + rows * TREE_ROW_PX, class: "beam-tree"});
  const edges = svg("g"), boxes = svg("g");
  tree.nodes.forEach(n => {
    const p = at.get(n.id), final = finals.get(n.id);
    if (n.parent !== null) {
      const q = at.get(n.parent);
      edges.appendChild(svg("line", {x1: q.x + TREE_NODE_W, y1: q.y + TREE_NODE_H / 2, x2: p.x,
                                     y2: p.y + TREE_NODE_H / 2, class: "edge " + n.state}));
    }
    const g = svg("g", {class: `node ${n.state}${final ? " final" : ""}`, "data-node": n.id, "data-state": n.state});
    if (final) g.setAttribute("data-rank", final.rank);
    g.appendChild(svg("rect", {x: p.x, y: p.y, width: TREE_NODE_W, height: TREE_NODE_H, rx: 4}));
    const label = n.parent === null ? "<s>" : `${n.piece.length > 8 ? n.piece.slice(0, 7) + "\u2026" : n.piece} ` +
                                             n.score.toFixed(2);
    g.appendChild(svg("text", {x: p.x + 4, y: p.y + 13}, label));
    g.addEventListener("mousemove", event => showTip(event, nodeText(n, final)));
    g.addEventListener("mouseleave", hideTip);
    if (n.parent !== null) g.addEventListener("click", () => onPick(n.id));
    boxes.appendChild(g);
  });
  root.appendChild(edges); root.appendChild(boxes);
  return root;
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

function drawBeamTree(box, tree) {
  box.textContent = "";
  const finals = new Map(tree.finals.map(f => [f.node, f]));
  box.appendChild(el("p", {class: "legend"},
    `beam ${tree.beam_size}: each column a step, each box a hypothesis (subword and log P of the prefix); ` +
    "blue kept, grey pruned (the best candidates outside the beam), green ended by </s>, " +
    (tree.ranking === "generate" ? "yellow the forced prefix (given, not scored), " : "") + "thick border: a final. " +
    rankingText(tree) + " Click a box to see its prefix's attention."));
  const scroll = el("div", {class: "tree-scroll"});
  const detail = el("div", {class: "tree-detail"});
  const pick = id => {
    scroll.querySelectorAll("g.node").forEach(g => g.classList.toggle("picked", +g.dataset.node === id));
    drawHeatmap(detail, prefixMap(tree, id), 0, 0, "prefix-heatmap");
  };
  scroll.appendChild(drawTreeGraph(tree, finals, pick));
  box.appendChild(scroll);
  box.appendChild(finalsTable(tree));
  box.appendChild(detail);
}
