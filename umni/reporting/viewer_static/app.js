// umni view: tables, a filtered and paginated case list, case detail with transcript, comparison.
// All text from runs is put into the page with textContent (never parsed as HTML).
"use strict";

const PAGE = 50;
const state = { index: null, tables: null, page: 0, filters: { wrong: false, failed: false, category: "", run: "", q: "", failure: "", sort: "", max: "" }, selected: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmt(v, decimals) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "boolean") return v ? "✓" : "✗";
  if (typeof v === "number") return v.toFixed(decimals === undefined ? 2 : decimals);
  return String(v);
}

let pending = 0;
async function getJSON(url) {
  document.body.dataset.busy = String(++pending);
  try {
    const r = await fetch(url);
    if (!r.ok) throw new Error(url + ": " + r.status);
    return await r.json();
  } finally {
    document.body.dataset.busy = String(--pending);
  }
}

function thumb(sha, alt) {
  if (!sha) return el("span", { class: "muted" }, "no image");
  return el("img", { class: "thumb", src: "thumb/" + sha + ".png", loading: "lazy", alt: alt || "image", "data-full": "img/" + sha + ".png", onclick: openFull });
}

function openFull(ev) {
  const ov = document.getElementById("overlay");
  document.getElementById("overlay-img").src = ev.currentTarget.dataset.full;
  ov.hidden = false;
}

// ------------------------------------------------------------------------------------ tables
function cellNode(c) {
  if (c.applies === false) return el("td", { class: "na muted", title: "does not apply (not a missing score)" }, "–");
  const td = el("td", { class: c.incomplete ? "incomplete" : null, title: c.incomplete ? "computed on incomplete coverage" : null });
  if (c.answered !== null && c.total !== null && c.value === null && c.ci === null && c.coverage_only) {
    td.append(c.answered + "/" + c.total);
    return td;
  }
  td.append(fmt(c.value, c.decimals));
  if (c.value === null && c.reason) { td.title = c.reason; td.append(" ", el("span", { class: "reason muted" }, "(" + c.reason + ")")); }
  if (c.ci) td.append(" ", el("span", { class: "ci" }, "[" + fmt(c.ci[0], c.decimals) + ", " + fmt(c.ci[1], c.decimals) + "]"));
  if (c.answered !== null && c.total !== null) td.append(" ", el("span", { class: "cov" }, "(" + c.answered + "/" + c.total + ")"));
  if (c.incomplete && c.value !== null) td.append(el("span", { class: "warn" }, "*"));
  return td;
}

function groupRow(t, level, tail) {
  if (!(level || []).length) return null;
  const spanned = level.reduce((n, g) => n + g[1], 0);
  return el("tr", { class: "groups" }, el("th", { colspan: t.key_columns.length }),
    level.map(([name, span]) => el("th", { colspan: span, class: name ? "group" : null }, name)),
    t.columns.length - spanned + tail > 0 ? el("th", { colspan: t.columns.length - spanned + tail }) : null);
}

function tableNode(t) {
  // one row per run (coverage and failures as columns), or the runs as columns (UmniBench's paper
  // tables: coverage and failures are rows of their own, a group's name shown on its first row)
  const tail = t.run_columns ? 0 : 2;
  const head = el("tr", {}, t.key_columns.map(k => el("th", { class: "key" }, k)), t.columns.map(c => el("th", {}, c)),
    t.run_columns ? null : [el("th", {}, "coverage"), el("th", {}, "failures")]);
  const rows = t.rows.map((r, i) => {
    const keys = r.keys.map((k, j) => el("td", { class: "key" }, t.run_columns && j === 0 && i > 0 && t.rows[i - 1].keys[0] === k ? "" : k));
    if (t.run_columns) return el("tr", {}, keys, r.cells.map(cellNode));
    const cov = Object.assign({ coverage_only: true }, r.coverage);
    return el("tr", {}, keys, r.cells.map(cellNode), cellNode(cov), el("td", { class: r.failures ? "bad" : null }, String(r.failures)));
  });
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: t.key_columns.length + t.columns.length + tail }, "no runs")));
  return el("div", { class: "lb-block", "data-protocol": t.protocol },
    el("h3", {}, t.title), el("table", { class: "lb" }, groupRow(t, t.supergroups, tail), groupRow(t, t.groups, tail), head, rows),
    t.note ? el("p", { class: "note" }, t.note) : null,
    (t.how_made || []).map(line => el("p", { class: "note how-made" }, line)));
}

async function renderTables(protocol) {
  const app = document.getElementById("app");
  if (!state.tables) {
    app.replaceChildren(el("p", { class: "muted" }, "Loading the leaderboards…"));
    state.tables = await getJSON("api/tables.json");
  }
  if (!location.hash.slice(1).startsWith("tables") && location.hash !== "") return;  // the user moved on meanwhile
  app.replaceChildren();
  const tables = state.tables.filter(t => !protocol || t.protocol === protocol);
  const protocols = [...new Set(state.tables.map(t => t.protocol))];
  app.append(el("p", { class: "filters" }, "Protocol: ",
    el("a", { href: "#tables" }, "all"), protocols.map(p => [" · ", el("a", { href: "#tables/" + p }, p)])));
  for (const p of protocols.filter(p => !protocol || p === protocol)) {
    app.append(el("section", { class: "protocol-block", id: "protocol-" + p }, tables.filter(t => t.protocol === p).map(tableNode)));
  }
  app.append(el("p", { class: "note" }, "Every score shows (answered/total); * marks a score computed on incomplete coverage; [low, high] is a 95 % bootstrap interval over cases; – marks a metric that does not apply."));
}

// ------------------------------------------------------------------------------------ cases
// The server filters, searches and sorts; the page asks for one page at a time.
let listSeq = 0;

function caseHash(run, id) { return "#case/" + encodeURIComponent(run) + "/" + encodeURIComponent(id); }

function queryString() {
  const f = state.filters, p = new URLSearchParams();
  const statuses = [f.wrong ? "wrong" : "", f.failed ? "failed" : ""].filter(Boolean);
  if (statuses.length) p.set("status", statuses.join(","));
  if (f.category) p.set("category", f.category);
  if (f.run) p.set("run", f.run);
  if (f.failure) p.set("failure", f.failure);
  if (f.sort) p.set("sort", f.sort);
  if (f.q.trim()) p.set("q", f.q.trim());
  if (f.max !== "") p.set("max", f.max);
  p.set("offset", String(state.page * PAGE));
  p.set("limit", String(PAGE));
  return p.toString();
}

function scoreText(c) { return c.out_of ? (Number.isInteger(c.score) ? c.score : c.score.toFixed(2)) + "/" + c.out_of : ""; }

async function renderCaseList() {
  const list = document.getElementById("case-list");
  if (!list) return;
  const seq = ++listSeq;
  const got = await getJSON("api/cases?" + queryString());
  if (seq !== listSeq) return;  // a later query is on its way
  const pages = Math.max(1, Math.ceil(got.total / PAGE));
  if (state.page > pages - 1) { state.page = pages - 1; return renderCaseList(); }
  const runs = state.runsByKey;
  list.replaceChildren(...got.cases.map(c => {
    const run = runs[c.run];
    const cls = c.status === "failed" ? "bad" : c.status === "wrong" ? "warn" : "ok";
    const selected = state.selected && state.selected[0] === c.run && state.selected[1] === c.case_id;
    return el("li", { class: selected ? "selected" : null, "data-case": c.case_id, "data-run": c.run, "data-protocol": run.protocol, "data-score": c.out_of ? String(c.score / c.out_of) : null,
      onclick: () => { location.hash = caseHash(c.run, c.case_id); } },
      el("span", {}, el("b", {}, c.case_id), " ", el("span", { class: "muted" }, c.category)),
      el("span", { class: "muted run-label", title: run.dir || run.label }, run.key),
      el("span", { class: "score", title: "the protocol's own per-case score" }, scoreText(c)),
      c.failures.length ? el("span", { class: "kinds bad", title: "failure kinds" }, c.failures.join(", ")) : null,
      el("span", { class: "badge " + cls }, c.status));
  }));
  document.getElementById("count").textContent = got.total + " of " + state.index.total + " cases";
  document.getElementById("page").textContent = "page " + (state.page + 1) + " / " + pages;
  list.dataset.query = queryString();
}

function syncRunSelect() {
  const select = document.getElementById("f-run");
  if (select) select.value = state.filters.run;
}

function renderCases() {
  const app = document.getElementById("app");
  if (document.getElementById("case-list")) return renderCaseList();
  const f = state.filters;
  const onChange = () => { state.page = 0; return renderCaseList(); };
  let timer = null;
  const check = (key, label) => el("label", {}, el("input", { type: "checkbox", id: "f-" + key, checked: f[key], onchange: e => { f[key] = e.target.checked; onChange(); } }), " " + label);
  const select = (id, key, first, options) => el("select", { id: id, onchange: e => { f[key] = e.target.value; onChange(); } }, el("option", { value: "" }, first), options);
  const filters = el("div", { class: "filters" },
    el("input", { type: "search", id: "search", placeholder: "search every prompt, reply, judge reasoning, failure…", value: f.q,
      oninput: e => { f.q = e.target.value; clearTimeout(timer); timer = setTimeout(onChange, 150); } }),
    check("wrong", "wrong"), check("failed", "failed"),
    select("f-failure", "failure", "any failure kind", state.index.failure_kinds.map(k => el("option", { value: k }, k))),
    select("f-category", "category", "all domains/categories", state.index.categories.map(c => el("option", { value: c }, c))),
    select("f-run", "run", "all runs/models", state.index.runs.map(r => el("option", { value: r.key }, r.protocol + " · " + r.key + " · " + r.label))),
    select("f-sort", "sort", "sort: as run", [el("option", { value: "-score" }, "score, highest first"), el("option", { value: "score" }, "score, lowest first")]),
    el("label", {}, " score ≤ ", el("input", { type: "number", id: "f-max", min: 0, max: 1, step: 0.05, value: f.max, style: "width:5em",
      oninput: e => { f.max = e.target.value; onChange(); } })));
  const pager = el("div", { class: "pager" },
    el("button", { id: "prev", onclick: () => { state.page = Math.max(0, state.page - 1); renderCaseList(); } }, "‹ prev"),
    el("span", { id: "page" }), el("button", { id: "next", onclick: () => { state.page += 1; renderCaseList(); } }, "next ›"),
    el("span", { id: "count", class: "muted" }));
  app.replaceChildren(filters, el("div", { class: "layout" }, el("div", {}, pager, el("ul", { class: "case-list", id: "case-list" })), el("div", { class: "detail", id: "detail" }, el("p", { class: "muted" }, "Choose a case."))));
  syncRunSelect();
  return renderCaseList();
}

// ------------------------------------------------------------------------------------ runs
function renderRuns() {
  const app = document.getElementById("app");
  const byFolder = {};
  for (const r of state.index.runs) (byFolder[r.folder || ""] = byFolder[r.folder || ""] || []).push(r);
  const when = t => t ? new Date(typeof t === "number" ? t * 1000 : t).toISOString().slice(0, 16).replace("T", " ") : "";
  app.replaceChildren(el("h2", {}, "Runs"), ...Object.entries(byFolder).map(([folder, runs]) => el("section", { class: "run-group" },
    el("h3", {}, folder || "(no folder)", runs.length > 1 ? el("span", { class: "muted" }, " · " + runs.length + " runs") : null),
    el("table", { class: "lb" },
      el("tr", {}, ["run (directory)", "protocol", "models", "options", "cases", "coverage", "failed", "overall", "written"].map(h => el("th", {}, h))),
      runs.map(r => el("tr", { "data-run": r.key },
        el("td", { class: "key" }, el("a", { href: "#cases", onclick: () => { state.filters.run = r.key; state.page = 0; syncRunSelect(); } }, r.key)),
        el("td", {}, r.protocol), el("td", {}, r.label),
        el("td", {}, Object.entries(r.options || {}).map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : v)).join(", ")),
        el("td", {}, String(r.cases)), el("td", {}, r.coverage[0] + "/" + r.coverage[1]),
        el("td", { class: r.failed_nodes ? "bad" : null }, String(r.failed_nodes)), el("td", {}, fmt(r.overall)),
        el("td", {}, when(r.finished || r.modified))))),
    // how each run's numbers were made: models, revisions, settings, templates, deviations (summary.json's provenance)
    el("div", { class: "provenance" }, el("h4", {}, "How the numbers were made"),
      runs.map(r => el("details", { "data-run": r.key }, el("summary", {}, r.key + " · " + r.label),
        el("ul", {}, (r.how_made || []).map(line => el("li", {}, line)))))))));
}

function panelNode(p) {
  const cls = p.verdict === true ? "ok" : p.verdict === false ? "bad" : "";
  return el("div", { class: "panel" }, el("h4", { class: cls }, p.title), p.image ? thumb(p.image, p.title) : null,
    el("table", {}, p.rows.map(([k, v]) => el("tr", {}, el("td", {}, el("b", {}, k)), el("td", {}, v)))));
}

function partNodes(parts) {
  return (parts || []).map(p => {
    if (p.image) return el("div", {}, p.ref ? el("span", { class: "muted" }, "[" + p.ref + "] ") : null, thumb(p.image, p.ref || "image"));
    if (p.file) return el("div", { class: "muted" }, "[case image " + p.file + "]");
    if (p.ref && p.text === undefined) return el("div", { class: "muted" }, "[output of " + p.ref + ": not available]");
    return el("pre", {}, (p.ref ? "[" + p.ref + "] " : "") + p.text);
  });
}

function backendText(b) {
  if (!b) return "";
  const params = Object.entries(b.params || {}).map(([k, v]) => k + "=" + v).join("&");
  return b.provider + "/" + b.name + (params ? "?" + params : "") + (b.revision ? " (rev " + b.revision + ")" : "");
}

function factsNode(e, c) {
  const f = (c.node_facts || {})[e.node] || {};
  const verdict = (c.verdicts || {})[e.node];
  const bits = [];
  if (verdict === true) bits.push(el("span", { class: "ok verdict" }, "right"));
  if (verdict === false) bits.push(el("span", { class: "bad verdict" }, "wrong"));
  if (f.cached) bits.push(el("span", { class: "muted" }, "cached"));
  if (typeof f.seconds === "number") bits.push(el("span", { class: "muted" }, f.seconds.toFixed(2) + " s"));
  if (f.calls !== undefined && f.calls !== null) bits.push(el("span", { class: "muted" }, f.calls + " call" + (f.calls === 1 ? "" : "s")));
  if (f.retries) bits.push(el("span", { class: "warn" }, f.retries + " retr" + (f.retries === 1 ? "y" : "ies")));
  const used = usageText(f.usage);
  if (used) bits.push(el("span", { class: "muted usage" }, used));
  if (f.cost !== undefined) bits.push(el("span", { class: "muted cost" }, f.cost === null ? "cost unknown" : "$" + costText(f.cost)));
  // the run's binding in full; the node's own event names the backend that answered (provider/name),
  // which differs from the binding only when an earlier invocation bound another (a re-judged run)
  const bound = e.role ? (c.backends || {})[e.role] : null;
  const backend = f.backend && (!bound || bound.provider + "/" + bound.name !== f.backend) ? f.backend : backendText(bound);
  if (backend) bits.push(el("span", { class: "muted backend" }, backend));
  return bits.flatMap(b => [" · ", b]);
}

// A node's usage as its event carries it: a count left out is 0, null is a count the server did not give.
function usageText(u) {
  if (!u) return "";
  const count = v => v === null ? "?" : String(v ?? 0);
  const parts = [];
  if ("input_tokens" in u || "output_tokens" in u) parts.push("tokens " + count(u.input_tokens) + " in / " + count(u.output_tokens) + " out");
  if (u.images_in) parts.push(u.images_in + " image" + (u.images_in === 1 ? "" : "s") + " in");
  if (u.images_out) parts.push(u.images_out + " image" + (u.images_out === 1 ? "" : "s") + " out");
  return parts.join(", ");
}

function costText(x) { return x >= 0.01 ? x.toFixed(2) : x.toPrecision(2); }

function transcriptNode(entries, c) {
  if (!entries) return el("p", { class: "muted" }, "This run's records carry no transcript (made by an older umni); node statuses are listed below.");
  const out = [];
  let group = null;
  for (const e of entries) {
    const head = e.node.includes("/") ? e.node.split("/")[0] : "";
    if (head !== group) { group = head; if (head) out.push(el("div", { class: "round" }, head)); }
    const cls = e.status === "done" ? "ok" : e.status === "skipped" ? "muted" : "bad";
    const r = e.reply || {};
    out.push(el("details", { class: "node", "data-node": e.node, open: e.kind === "judge" || e.status === "failed" ? true : null },
      el("summary", {}, el("b", {}, e.node), " · " + e.kind + (e.role ? " (" + e.role + ")" : "") + " · ", el("span", { class: cls }, e.status), factsNode(e, c)),
      e.prompt ? [el("div", { class: "muted" }, "prompt"), partNodes(e.prompt)] : null,
      e.images ? [el("div", { class: "muted" }, "images"), partNodes(e.images)] : null,
      e.inputs ? el("div", { class: "muted" }, "inputs: " + e.inputs.join(", ")) : null,
      e.options ? el("ol", { type: "A" }, e.options.map(o => el("li", {}, o))) : null,
      e.reply ? [el("div", { class: "muted" }, e.kind === "judge" ? "judge reply (reasoning)" : "reply"),
        r.image ? thumb(r.image, e.node) : null, r.option !== undefined ? el("div", {}, "chose: " + r.option) : null,
        r.text ? el("pre", {}, r.text) : null, r.value !== undefined ? el("pre", {}, "value: " + r.value) : null,
        r.parse_attempts > 1 ? el("div", { class: "warn" }, "parsed on attempt " + r.parse_attempts) : null] : null,
      e.failure ? failureNode(Object.assign({ node: e.node }, e.failure)) : null));
  }
  return el("div", { class: "transcript" }, out);
}

function failureNode(f) {
  return el("div", { class: "failure" }, el("b", {}, f.node + ": " + f.kind), " (attempts " + f.attempts + ")",
    el("pre", {}, f.message), f.raw ? [el("div", { class: "muted" }, "raw reply"), el("pre", { class: "raw" }, f.raw)] : null);
}

async function renderCase(runKey, caseId) {
  if (state.filters.run && state.filters.run !== runKey) { state.filters.run = runKey; state.page = 0; }  // the list follows the opened case
  if (!document.getElementById("detail")) renderCases();
  syncRunSelect();
  state.selected = [runKey, caseId];
  renderCaseList();
  const detail = document.getElementById("detail");
  detail.replaceChildren(el("p", { class: "muted" }, "Loading " + caseId + "…"));
  const c = await getJSON("api/case?run=" + encodeURIComponent(runKey) + "&id=" + encodeURIComponent(caseId));
  const compare = c.runs.length > 1 ? el("a", { href: "#compare/" + c.protocol + "/" + encodeURIComponent(caseId), id: "compare-link" }, "compare " + c.runs.length + " runs on this case") : null;
  detail.replaceChildren(el("div", { class: "case-detail", "data-case": c.case_id },
    el("h2", { id: "case-title" }, c.case_id), el("p", {}, el("span", { class: "muted" }, c.protocol + " · " + c.category + " · "), c.label + " (" + c.run + ")", " ",
      c.out_of ? el("b", { id: "case-score" }, "score " + scoreText(c)) : null, " ", compare),
    el("div", { class: "panels" }, c.panels.map(panelNode)),
    c.failures.length || c.blocked.length ? el("section", { id: "failures" }, el("h3", {}, "Failures"), c.failures.map(failureNode),
      c.blocked.length ? el("p", { class: "muted" }, "blocked by a failed input: " + c.blocked.join(", ")) : null) : null,
    el("h3", {}, "Transcript"), transcriptNode(c.transcript, c),
    el("details", {}, el("summary", {}, "record"), el("pre", {}, JSON.stringify(c.record, null, 1)))));
}

async function renderCompare(protocol, caseId) {
  const app = document.getElementById("app");
  app.replaceChildren(el("h2", {}, "Compare · " + protocol + " · " + caseId), el("p", {}, el("a", { href: "#cases" }, "‹ back to cases")));
  const grid = el("div", { class: "compare", id: "compare" });
  app.append(grid);
  const keys = state.index.runs.filter(r => r.protocol === protocol).map(r => r.key);
  const found = await Promise.all(keys.map(k => fetch("api/case?run=" + encodeURIComponent(k) + "&id=" + encodeURIComponent(caseId)).then(r => r.ok ? r.json() : null)));
  const details = found.filter(Boolean);
  for (const c of details) {
    grid.append(el("div", { class: "compare-run" }, el("h3", {}, c.label), c.panels.map(panelNode), c.failures.map(failureNode)));
  }
}

// ------------------------------------------------------------------------------------ routing
function route() {
  const [view, ...rest] = (location.hash.slice(1) || "tables").split("/").map(decodeURIComponent);
  document.getElementById("tab-tables").className = view === "tables" ? "active" : "";
  document.getElementById("tab-cases").className = view === "cases" || view === "case" ? "active" : "";
  document.getElementById("tab-runs").className = view === "runs" ? "active" : "";
  if (view === "cases") { state.selected = null; renderCases(); }
  else if (view === "case") renderCase(rest[0], rest.slice(1).join("/"));
  else if (view === "compare") renderCompare(rest[0], rest.slice(1).join("/"));
  else if (view === "runs") renderRuns();
  else renderTables(rest[0] || "");
}

async function start() {
  state.index = await getJSON("api/index.json");
  state.runsByKey = Object.fromEntries(state.index.runs.map(r => [r.key, r]));
  const n = state.index.runs.length;
  const left = (state.index.skipped || []).length;
  document.getElementById("runs-summary").textContent = n + " run" + (n === 1 ? "" : "s") + " · " + state.index.total + " cases" +
    (left ? " · " + left + " run(s) still being written, left out: " + state.index.skipped.join(", ") : "");
  const unreadable = state.index.store_errors || [];
  if (unreadable.length) {  // said once, above every view: the images these runs lack are not just missing
    document.querySelector("header").after(el("div", { id: "store-errors", class: "store-errors" },
      unreadable.map(e => el("p", {}, "Images of " + e.runs.join(", ") + " cannot be shown: " + e.blobs + " — " + e.error))));
  }
  document.getElementById("overlay").addEventListener("click", () => { document.getElementById("overlay").hidden = true; });
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.ready = "1";
}

start().catch(err => { document.getElementById("app").replaceChildren(el("p", { class: "bad" }, "Could not load: " + err.message)); });
