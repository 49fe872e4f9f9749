// umni view: tables, a filtered and paginated case list, case detail with transcript, comparison.
// All text from runs is put into the page with textContent (never parsed as HTML).
"use strict";

const PAGE = 50;
const state = { index: null, tables: null, page: 0, filters: { wrong: false, failed: false, category: "", run: "", q: "" }, selected: null };

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

function fmt(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") return v.toFixed(2);
  return String(v);
}

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
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
  const td = el("td", { class: c.incomplete ? "incomplete" : null, title: c.incomplete ? "computed on incomplete coverage" : null });
  if (c.answered !== null && c.total !== null && c.value === null && c.ci === null && c.coverage_only) {
    td.append(c.answered + "/" + c.total);
    return td;
  }
  td.append(fmt(c.value));
  if (c.ci) td.append(" ", el("span", { class: "ci" }, "[" + fmt(c.ci[0]) + ", " + fmt(c.ci[1]) + "]"));
  if (c.answered !== null && c.total !== null) td.append(" ", el("span", { class: "cov" }, "(" + c.answered + "/" + c.total + ")"));
  if (c.incomplete && c.value !== null) td.append(el("span", { class: "warn" }, "*"));
  return td;
}

function tableNode(t) {
  const head = el("tr", {}, t.key_columns.map(k => el("th", { class: "key" }, k)), t.columns.map(c => el("th", {}, c)), el("th", {}, "coverage"), el("th", {}, "failures"));
  const rows = t.rows.map(r => {
    const cov = Object.assign({ coverage_only: true }, r.coverage);
    return el("tr", {}, r.keys.map(k => el("td", { class: "key" }, k)), r.cells.map(cellNode), cellNode(cov),
      el("td", { class: r.failures ? "bad" : null }, String(r.failures)));
  });
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: t.key_columns.length + t.columns.length + 2 }, "no runs")));
  return el("div", { class: "lb-block", "data-protocol": t.protocol },
    el("h3", {}, t.title), el("table", { class: "lb" }, head, rows),
    t.note ? el("p", { class: "note" }, t.note) : null);
}

async function renderTables(protocol) {
  const app = document.getElementById("app");
  if (!state.tables) {
    app.replaceChildren(el("p", { class: "muted" }, "Computing the leaderboards (bootstrap intervals)…"));
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
  app.append(el("p", { class: "note" }, "Every score shows (answered/total); * marks a score computed on incomplete coverage; [low, high] is a 95 % bootstrap interval over cases."));
}

// ------------------------------------------------------------------------------------ cases
function filtered() {
  const f = state.filters, q = f.q.trim().toLowerCase();
  return state.index.cases.filter(c => {
    if (f.failed && !f.wrong && c[3] !== "failed") return false;
    if (f.wrong && !f.failed && c[3] !== "wrong") return false;
    if (f.wrong && f.failed && c[3] === "ok") return false;
    if (f.category && c[2] !== f.category) return false;
    if (f.run !== "" && String(c[0]) !== f.run) return false;
    if (q && !(c[1].toLowerCase().includes(q) || c[4].includes(q) || c[2].toLowerCase().includes(q))) return false;
    return true;
  });
}

function renderCaseList() {
  const list = document.getElementById("case-list");
  const all = filtered();
  const pages = Math.max(1, Math.ceil(all.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const shown = all.slice(state.page * PAGE, (state.page + 1) * PAGE);
  list.replaceChildren(...shown.map(c => {
    const run = state.index.runs[c[0]];
    const cls = c[3] === "failed" ? "bad" : c[3] === "wrong" ? "warn" : "ok";
    const selected = state.selected && state.selected[0] === c[0] && state.selected[1] === c[1];
    return el("li", { class: selected ? "selected" : null, "data-case": c[1], "data-run": c[0], "data-protocol": run.protocol, onclick: () => { location.hash = "#case/" + c[0] + "/" + encodeURIComponent(c[1]); } },
      el("span", {}, el("b", {}, c[1]), " ", el("span", { class: "muted" }, c[2])),
      el("span", { class: "muted run-label", title: run.label }, run.label), el("span", { class: "badge " + cls }, c[3]));
  }));
  document.getElementById("count").textContent = all.length + " of " + state.index.cases.length + " cases";
  document.getElementById("page").textContent = "page " + (state.page + 1) + " / " + pages;
}

function renderCases() {
  const app = document.getElementById("app");
  if (document.getElementById("case-list")) { renderCaseList(); return; }
  const cats = [...new Set(state.index.cases.map(c => c[2]).filter(Boolean))].sort();
  const f = state.filters;
  const onChange = () => { state.page = 0; renderCaseList(); };
  const check = (key, label) => el("label", {}, el("input", { type: "checkbox", id: "f-" + key, checked: f[key], onchange: e => { f[key] = e.target.checked; onChange(); } }), " " + label);
  const filters = el("div", { class: "filters" },
    el("input", { type: "search", id: "search", placeholder: "search id, prompt, text…", value: f.q, oninput: e => { f.q = e.target.value; onChange(); } }),
    check("wrong", "wrong"), check("failed", "failed"),
    el("select", { id: "f-category", onchange: e => { f.category = e.target.value; onChange(); } }, el("option", { value: "" }, "all domains/categories"), cats.map(c => el("option", { value: c }, c))),
    el("select", { id: "f-run", onchange: e => { f.run = e.target.value; onChange(); } }, el("option", { value: "" }, "all runs/models"), state.index.runs.map(r => el("option", { value: String(r.id) }, r.protocol + " · " + r.label))));
  const pager = el("div", { class: "pager" },
    el("button", { id: "prev", onclick: () => { state.page = Math.max(0, state.page - 1); renderCaseList(); } }, "‹ prev"),
    el("span", { id: "page" }), el("button", { id: "next", onclick: () => { state.page += 1; renderCaseList(); } }, "next ›"),
    el("span", { id: "count", class: "muted" }));
  app.replaceChildren(filters, el("div", { class: "layout" }, el("div", {}, pager, el("ul", { class: "case-list", id: "case-list" })), el("div", { class: "detail", id: "detail" }, el("p", { class: "muted" }, "Choose a case."))));
  renderCaseList();
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

function transcriptNode(entries) {
  if (!entries) return el("p", { class: "muted" }, "This run's records carry no transcript (made by an older umni); node statuses are listed below.");
  const out = [];
  let group = null;
  for (const e of entries) {
    const head = e.node.includes("/") ? e.node.split("/")[0] : "";
    if (head !== group) { group = head; if (head) out.push(el("div", { class: "round" }, head)); }
    const cls = e.status === "done" ? "ok" : e.status === "skipped" ? "muted" : "bad";
    const r = e.reply || {};
    out.push(el("details", { class: "node", "data-node": e.node, open: e.kind === "judge" || e.status === "failed" ? true : null },
      el("summary", {}, el("b", {}, e.node), " · " + e.kind + (e.role ? " (" + e.role + ")" : "") + " · ", el("span", { class: cls }, e.status)),
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

async function renderCase(runId, caseId) {
  if (!document.getElementById("detail")) renderCases();
  state.selected = [runId, caseId];
  renderCaseList();
  const detail = document.getElementById("detail");
  detail.replaceChildren(el("p", { class: "muted" }, "Loading " + caseId + "…"));
  const c = await getJSON("api/case/" + runId + "/" + encodeURIComponent(caseId));
  const compare = c.runs.length > 1 ? el("a", { href: "#compare/" + c.protocol + "/" + encodeURIComponent(caseId), id: "compare-link" }, "compare " + c.runs.length + " runs on this case") : null;
  detail.replaceChildren(el("div", { class: "case-detail", "data-case": c.case_id },
    el("h2", { id: "case-title" }, c.case_id), el("p", {}, el("span", { class: "muted" }, c.protocol + " · " + c.category + " · "), c.label, " ", compare),
    el("div", { class: "panels" }, c.panels.map(panelNode)),
    c.failures.length || c.blocked.length ? el("section", { id: "failures" }, el("h3", {}, "Failures"), c.failures.map(failureNode),
      c.blocked.length ? el("p", { class: "muted" }, "blocked by a failed input: " + c.blocked.join(", ")) : null) : null,
    el("h3", {}, "Transcript"), transcriptNode(c.transcript),
    el("details", {}, el("summary", {}, "record"), el("pre", {}, JSON.stringify(c.record, null, 1)))));
}

async function renderCompare(protocol, caseId) {
  const app = document.getElementById("app");
  const entries = state.index.cases.filter(c => c[1] === caseId && state.index.runs[c[0]].protocol === protocol);
  app.replaceChildren(el("h2", {}, "Compare · " + protocol + " · " + caseId), el("p", {}, el("a", { href: "#cases" }, "‹ back to cases")));
  const grid = el("div", { class: "compare", id: "compare" });
  app.append(grid);
  const details = await Promise.all(entries.map(e => getJSON("api/case/" + e[0] + "/" + encodeURIComponent(caseId))));
  for (const c of details) {
    grid.append(el("div", { class: "compare-run" }, el("h3", {}, c.label), c.panels.map(panelNode), c.failures.map(failureNode)));
  }
}

// ------------------------------------------------------------------------------------ routing
function route() {
  const hash = decodeURIComponent(location.hash.slice(1) || "tables");
  const [view, ...rest] = hash.split("/");
  document.getElementById("tab-tables").className = view === "tables" ? "active" : "";
  document.getElementById("tab-cases").className = view === "cases" || view === "case" ? "active" : "";
  if (view === "cases") { state.selected = null; renderCases(); }
  else if (view === "case") renderCase(Number(rest[0]), rest.slice(1).join("/"));
  else if (view === "compare") renderCompare(rest[0], rest.slice(1).join("/"));
  else renderTables(rest[0] || "");
}

async function start() {
  state.index = await getJSON("api/index.json");
  const n = state.index.runs.length;
  const left = (state.index.skipped || []).length;
  document.getElementById("runs-summary").textContent = n + " run" + (n === 1 ? "" : "s") + " · " + state.index.cases.length + " cases" +
    (left ? " · " + left + " run(s) still being written, left out: " + state.index.skipped.join(", ") : "");
  document.getElementById("overlay").addEventListener("click", () => { document.getElementById("overlay").hidden = true; });
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.ready = "1";
}

start().catch(err => { document.getElementById("app").replaceChildren(el("p", { class: "bad" }, "Could not load: " + err.message)); });
