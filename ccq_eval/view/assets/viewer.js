// The ccq-eval report: pages drawn from the JSON block #report-data. Every string from the store enters
// the page through text nodes (el() below); nothing here parses markup.
"use strict";

const DATA = JSON.parse(document.getElementById("report-data").textContent);
const PAGE_SIZE = 50;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "on") for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmt(value, digits) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") {
    if (Number.isInteger(value)) return String(value);
    if (digits !== undefined) return value.toFixed(digits);
    return String(Number(value.toFixed(Math.abs(value) >= 100 ? 1 : 3)));
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

function lengthText(tokens) {
  return tokens % 1024 === 0 ? (tokens / 1024) + "K" : String(tokens);
}

function hashOf(...parts) {
  return "#" + parts.map(p => encodeURIComponent(String(p))).join("/");
}

function unitLink(unit, text) {
  return el("a", {href: hashOf("samples", unit.label, unit.task, unit.length)}, text);
}

function findUnit(label, task, length) {
  return DATA.units.find(u => u.label === label && u.task === task && u.length === length);
}

function primary(unit) {
  const row = unit.metrics.find(m => m[4]) || unit.metrics[0];
  return row ? row[1] : null;
}

function table(headings, rows, attrs) {
  return el("table", attrs || {},
    el("thead", {}, el("tr", {}, headings.map(h => el("th", {}, h)))),
    el("tbody", {}, rows));
}

// --- #runs ------------------------------------------------------------------------------------------
function runsPage(section) {
  section.append(el("h2", {}, "Runs"));
  if (!DATA.runs.length) {
    section.append(el("p", {class: "empty"}, "This store holds no run yet: run a suite (ccq-eval --model CKPT --suite sniah), then write the report again."));
    return;
  }
  const rows = DATA.runs.map(run => el("tr", {"data-run": run.id},
    el("td", {}, run.label), el("td", {}, run.model), el("td", {class: "hash"}, run.weights),
    el("td", {}, run.commit || "–"), el("td", {}, run.dtype), el("td", {}, run.device), el("td", {}, fmt(run.threads)),
    el("td", {}, run.started), el("td", {}, run.finished || "–"), el("td", {class: "status-" + run.status.split(":")[0]}, run.status),
    el("td", {}, run.complete + " / " + run.units),
    el("td", {}, el("details", {}, el("summary", {}, "versions, command"),
      el("dl", {}, Object.entries(run.versions).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]),
        el("dt", {}, "ccq-eval commit"), el("dd", {}, run.git || "–"),
        el("dt", {}, "command line"), el("dd", {}, el("code", {}, run.command)))))));
  section.append(table(["label", "model", "weights sha256", "hub commit", "dtype", "device", "threads", "started",
    "finished", "status", "units complete", "provenance"], rows, {id: "runs-table"}));
  section.append(el("h3", {}, "Failed units"));
  if (!DATA.failed.length) {
    section.append(el("p", {class: "note"}, "No unit failed."));
    return;
  }
  section.append(table(["label", "suite", "task", "length", "finished", "reason"], DATA.failed.map(f => el("tr", {},
    el("td", {}, f.label), el("td", {}, f.suite), el("td", {}, f.task), el("td", {}, lengthText(f.length)),
    el("td", {}, f.finished || "–"), el("td", {class: "reason"}, f.reason || "–"))), {id: "failed-table"}));
}

// --- #tables ----------------------------------------------------------------------------------------
function tablesPage(section) {
  section.append(el("h2", {}, "Tables"),
    el("p", {class: "note"}, "As ccq-eval tables --ci --reference renders them: 95% intervals, reported rows in italics, delta rows shaded, the best measured value of a column in bold."));
  if (!DATA.tables.length) {
    section.append(el("p", {class: "empty"}, "No table: the store holds no complete unit yet."));
    return;
  }
  for (const t of DATA.tables) {
    section.append(el("h3", {id: "table-" + t.name}, t.name),
      t.caption ? el("p", {class: "caption"}, t.caption) : null,
      el("div", {class: "scroll"}, table(["label", ...t.columns], t.rows.map(row => el("tr", {class: "row-" + row.kind, "data-label": row.label},
        el("th", {scope: "row"}, row.label),
        row.cells.map((cell, i) => el("td", {class: row.bold[i] ? "best" : null, "data-column": t.columns[i]}, cell)))),
        {"data-table": t.name})));
  }
}

// --- #samples ---------------------------------------------------------------------------------------
function samplesIndex(section) {
  section.append(el("h2", {}, "Samples"));
  if (!DATA.units.length) {
    section.append(el("p", {class: "empty"}, "No complete unit in this store yet."));
    return;
  }
  section.append(el("p", {class: "note"}, "The unit behind every table cell (the latest complete one of each label, task and length)."));
  section.append(table(["label", "suite", "task", "length", "samples", "primary metric"], DATA.units.map(u => el("tr", {},
    el("td", {}, u.label), el("td", {}, u.suite), el("td", {}, u.task), el("td", {}, lengthText(u.length)),
    el("td", {}, u.rows ? u.rows.length : "none stored"), el("td", {}, unitLink(u, fmt(primary(u)))))), {id: "units-table"}));
}

function contextNode(context) {
  if (!context) return null;
  return el("details", {class: "context"}, el("summary", {}, context.label),
    el("p", {class: "prompt"}, "…", context.before, el("mark", {}, context.needle), context.after, "…"),
    context.prompt ? el("details", {}, el("summary", {}, "whole prompt"), el("p", {class: "prompt"}, context.prompt)) : null);
}

function compareValues(a, b) {
  const missingA = a === null || a === undefined, missingB = b === null || b === undefined;
  if (missingA || missingB) return missingA - missingB;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

function unitPage(section, label, task, length) {
  // a length as the tables write it ("4K") or in tokens ("4096")
  const tokens = /^\d+[kK]$/.test(length) ? parseInt(length, 10) * 1024 : Number(length);
  const unit = findUnit(label, task, tokens);
  if (!unit) {
    missing(section, "No complete unit of " + label + " / " + task + " / " + length + " in this report.");
    return;
  }
  const view = DATA.views[unit.suite];
  section.append(el("h2", {}, unit.label + " · " + unit.display + " · " + lengthText(unit.length)),
    el("p", {class: "note"}, unit.suite + " / " + unit.task + ", finished " + unit.finished +
      (unit.reused_from ? " (the result of unit " + unit.reused_from + ", computed under another label)" : "")),
    table(["metric", "value", "stderr", "n"], unit.metrics.map(m => el("tr", {class: m[4] ? "primary" : null},
      el("td", {}, m[0]), el("td", {}, fmt(m[1])), el("td", {}, fmt(m[2])), el("td", {}, fmt(m[3])))), {class: "metrics"}));
  if (!view || !unit.rows) {
    section.append(el("p", {class: "empty"}, "This suite stores no per-sample rows."));
    return;
  }
  const state = {filter: "all", depth: "", search: "", sort: 0, descending: false, page: 0};
  const controls = el("div", {class: "controls"});
  const count = el("p", {id: "sample-count", class: "count"});
  const body = el("tbody");
  const pager = el("div", {class: "pager"});
  const headRow = el("tr");
  const searchable = view.columns.map((_, i) => unit.rows.some(r => typeof r[i] === "string"));
  const draw = () => {
    const needle = state.search.toLowerCase();
    let rows = unit.rows.map((row, i) => ({row, i}));
    if (view.graded && state.filter !== "all") rows = rows.filter(({row}) => (row[view.score] > 0) === (state.filter === "correct"));
    if (view.depth !== null && state.depth !== "") {
      const bin = Number(state.depth);
      rows = rows.filter(({row}) => row[view.depth] !== null && Math.min(9, Math.floor(row[view.depth] / 10)) === bin);
    }
    if (needle) rows = rows.filter(({row}) => row.some((v, i) => searchable[i] && typeof v === "string" && v.toLowerCase().includes(needle)));
    rows.sort((a, b) => (state.descending ? -1 : 1) * compareValues(a.row[state.sort], b.row[state.sort]) || a.i - b.i);
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    const shown = rows.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
    count.replaceChildren(rows.length + " of " + unit.rows.length + " samples");
    count.dataset.count = rows.length;
    body.replaceChildren(...shown.map(({row, i}) => el("tr", {"data-idx": row[0]},
      row.map((v, c) => el("td", {class: c === view.prediction || c === view.target ? "text" : null}, fmt(v))),
      el("td", {}, contextNode(unit.context ? unit.context[i] : null)))));
    pager.replaceChildren(
      el("button", {type: "button", disabled: state.page === 0, on: {click: () => { state.page--; draw(); }}}, "previous"),
      " page " + (state.page + 1) + " of " + pages + " ",
      el("button", {type: "button", disabled: state.page >= pages - 1, on: {click: () => { state.page++; draw(); }}}, "next"));
    headRow.replaceChildren(...view.columns.map((h, c) => el("th", {class: "sortable", "data-column": h,
      on: {click: () => { state.descending = state.sort === c ? !state.descending : false; state.sort = c; draw(); }}},
      h + (state.sort === c ? (state.descending ? " ▼" : " ▲") : ""))), el("th", {}, "context"));
  };
  if (view.graded) {
    controls.append(el("label", {}, "show ", el("select", {id: "filter-correct", on: {change: e => { state.filter = e.target.value; state.page = 0; draw(); }}},
      el("option", {value: "all"}, "all"), el("option", {value: "correct"}, "correct (score > 0)"), el("option", {value: "wrong"}, "wrong (score 0)"))));
  }
  if (view.depth !== null) {
    const bins = [el("option", {value: ""}, "every depth")];
    for (let b = 0; b < 10; b++) bins.push(el("option", {value: String(b)}, (10 * b) + "–" + (10 * b + 10) + "%"));
    controls.append(el("label", {}, " depth ", el("select", {id: "filter-depth", on: {change: e => { state.depth = e.target.value; state.page = 0; draw(); }}}, bins)));
  }
  controls.append(el("label", {}, " search ", el("input", {id: "filter-search", type: "search", placeholder: "text in any column",
    on: {input: e => { state.search = e.target.value; state.page = 0; draw(); }}})));
  section.append(controls, count, el("div", {class: "scroll"}, el("table", {id: "samples-table"}, el("thead", {}, headRow), body)), pager);
  draw();
}

// --- #compare ---------------------------------------------------------------------------------------
function labels() {
  return [...new Set(DATA.runs.map(r => r.label))].sort();
}

function compareIndex(section) {
  section.append(el("h2", {}, "Compare two models"));
  if (!DATA.compare.length) {
    section.append(el("p", {class: "empty"}, "No two labels share a unit with per-sample scores."));
    return;
  }
  if (DATA.pairs.length) {
    section.append(el("h3", {}, "CCQ against its backbone"),
      el("ul", {}, DATA.pairs.map(([a, b]) => el("li", {}, el("a", {href: hashOf("compare", a, b)}, a + " against " + b)))));
  }
  const choose = id => el("select", {id}, labels().map(l => el("option", {value: l}, l)));
  const first = choose("compare-a"), second = choose("compare-b");
  if (second.options.length > 1) second.selectedIndex = 1;
  section.append(el("h3", {}, "Any two labels"), el("p", {}, first, " against ", second, " ",
    el("button", {type: "button", on: {click: () => { location.hash = hashOf("compare", first.value, second.value); }}}, "compare")),
    el("p", {class: "note"}, "Every pair of labels shares a page here when the store holds at most 16 labels; otherwise the CCQ pairs and those named by ccq-eval view --compare A,B."));
}

function flipped(cell) {
  const out = {...cell, delta: cell.delta === null ? null : -cell.delta,
    low: cell.high === null ? null : -cell.high, high: cell.low === null ? null : -cell.low,
    better: cell.worse, worse: cell.better};
  if (cell.discordant) out.discordant = cell.discordant.map(([ia, ib, sa, sb]) => [ib, ia, sb, sa]);
  if (cell.docs) out.docs = cell.docs.map(([ia, ib, pa, pb]) => [ib, ia, pb, pa]);
  out.delta_text = cell.delta_text_flipped;
  return out;
}

function sampleRow(unit, idx) {
  return unit && unit.rows ? unit.rows.find(r => r[0] === idx) : null;
}

function scoreCell(section, a, b, cell) {
  const unitA = findUnit(a, cell.task, cell.length), unitB = findUnit(b, cell.task, cell.length);
  const view = DATA.views[(unitA || unitB).suite];
  const counts = cell.binary
    ? [a + " right, " + b + " wrong: ", a + " wrong, " + b + " right: ", "McNemar "]
    : [a + " higher: ", b + " higher: ", "sign test "];
  section.append(el("p", {class: "counts", "data-column": cell.column},
    counts[0], el("span", {"data-count": "better"}, cell.better), " · ",
    counts[1], el("span", {"data-count": "worse"}, cell.worse), " · ",
    counts[2], el("span", {"data-count": "p"}, cell.p_text),
    " · " + a + " − " + b + " = " + cell.delta_text + " points on " + cell.n + " prompts"));
  if (!cell.discordant.length) {
    section.append(el("p", {class: "note"}, "No prompt where the two differ."));
    return;
  }
  const predicted = row => row && view && view.prediction !== null ? fmt(row[view.prediction]) : "–";
  const rows = cell.discordant.map(([ia, ib, sa, sb]) => {
    const rowA = sampleRow(unitA, ia), rowB = sampleRow(unitB, ib);
    return el("tr", {},
      el("td", {}, unitA ? el("a", {href: hashOf("samples", a, cell.task, cell.length)}, fmt(ia)) : fmt(ia)),
      el("td", {}, rowA && view.depth !== null ? fmt(rowA[view.depth]) : "–"),
      el("td", {class: "text"}, rowA && view.target !== null ? fmt(rowA[view.target]) : "–"),
      el("td", {class: "text"}, predicted(rowA)), el("td", {}, fmt(sa)),
      el("td", {class: "text"}, predicted(rowB)), el("td", {}, fmt(sb)));
  });
  section.append(el("details", {open: cell.discordant.length <= 20},
    el("summary", {}, cell.discordant.length + " discordant prompts"),
    table(["#", "depth", "expected", a + " prediction", a + " score", b + " prediction", b + " score"], rows, {class: "discordant"})));
}

function perplexityCell(section, a, b, cell) {
  section.append(el("p", {class: "counts", "data-column": cell.column},
    "perplexity " + a + " − " + b + " = " + cell.delta_text + " (paired bootstrap over " + cell.n + " documents, ",
    el("span", {"data-count": "p"}, cell.p_text), ")"));
  const rows = cell.docs.map(([ia, ib, pa, pb]) => el("tr", {}, el("td", {}, fmt(ia)), el("td", {}, fmt(pa, 3)),
    el("td", {}, fmt(pb, 3)), el("td", {}, pa === null || pb === null ? "–" : fmt(pa - pb, 3))));
  section.append(el("details", {}, el("summary", {}, "per document, largest difference first"),
    table(["#", a + " ppl", b + " ppl", "difference"], rows, {class: "documents"})));
}

function comparePage(section, a, b) {
  let entry = DATA.compare.find(e => e.a === a && e.b === b), flip = false;
  if (!entry) { entry = DATA.compare.find(e => e.a === b && e.b === a); flip = true; }
  if (!entry) {
    missing(section, a + " and " + b + " share no unit with per-sample scores in this report.");
    return;
  }
  section.append(el("h2", {}, a + " against " + b),
    el("p", {class: "note"}, "Samples matched by prompt, as the pairs table matches them; the same tests: McNemar's exact test on 0/100 scores (the sign test otherwise), a paired bootstrap on perplexity."));
  for (const stored of entry.cells) {
    const cell = flip ? flipped(stored) : stored;
    section.append(el("h3", {}, cell.column, " ", el("a", {class: "small", href: hashOf("samples", a, cell.task, cell.length)}, a + " samples"),
      " ", el("a", {class: "small", href: hashOf("samples", b, cell.task, cell.length)}, b + " samples")));
    (cell.kind === "perplexity" ? perplexityCell : scoreCell)(section, a, b, cell);
  }
}

// --- routing ----------------------------------------------------------------------------------------
function firstPage() {
  return document.querySelector("section.page[data-page]").dataset.page;
}

function missing(section, text) {
  section.append(el("p", {class: "empty"}, text), el("p", {}, el("a", {href: "#" + firstPage()}, "back to the " + firstPage())));
}

// how each page the report holds is drawn (the pages and their order are the file's own sections and navigation;
// the figures page comes drawn)
const DRAW = {
  runs: section => runsPage(section),
  tables: section => tablesPage(section),
  samples: (section, parts) => parts.length >= 4 ? unitPage(section, parts[1], parts[2], parts[3]) : samplesIndex(section),
  compare: (section, parts) => parts.length >= 3 ? comparePage(section, parts[1], parts[2]) : compareIndex(section),
};

function route() {
  const parts = location.hash.replace(/^#/, "").split("/").map(p => { try { return decodeURIComponent(p); } catch (e) { return p; } });
  const name = parts[0] || firstPage();
  document.querySelectorAll("section.page").forEach(s => { s.hidden = true; });
  const page = [...document.querySelectorAll("section.page[data-page]")].find(s => s.dataset.page === name);
  const section = page || document.getElementById("page-missing");
  if (!page || DRAW[name]) section.replaceChildren();
  section.hidden = false;
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("current", a.getAttribute("href") === "#" + name));
  if (!page) missing(section, "No page " + location.hash + " in this report.");
  else if (DRAW[name]) DRAW[name](section, parts);
  document.title = "ccq-eval report · " + name;
  performance.mark("page-shown");  // benchmarks/viewer_scale.py reads when the first page was drawn
}

document.getElementById("summary").append(DATA.runs.length
  ? DATA.runs.length + " runs of " + labels().length + " labels · " + DATA.units.length + " units · " +
    DATA.units.reduce((n, u) => n + (u.rows ? u.rows.length : 0), 0) + " samples · " + DATA.failed.length + " failed units"
  : "This store is empty: no run has been stored yet.");
window.addEventListener("hashchange", route);
route();
