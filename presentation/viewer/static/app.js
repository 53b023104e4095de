// hopgraph view: the run list, a run's question table, a question's trace, two runs side by
// side. Every text from a trace is written with textContent (never parsed as HTML); the one
// markup taken from the server is the drawing's SVG, which the server escapes and parses here
// as SVG, under a Content-Security-Policy that runs no inline script.
"use strict";

const app = document.getElementById("app");
const where = document.getElementById("where");
const cache = new Map();

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function get(url) {
  if (cache.has(url)) return cache.get(url);
  const res = await fetch(url, { credentials: "same-origin" });
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch {
    throw new Error(`${res.status} ${res.statusText}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(body.detail || res.statusText);
  cache.set(url, body);
  return body;
}

const fmt = {
  n: (x) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en")),
  m: (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(3)),
  s: (x) => (x === null || x === undefined ? "–" : x >= 3600 ? `${Math.floor(x / 3600)} h ${Math.round((x % 3600) / 60)} min`
    : x >= 600 ? `${Math.round(x / 60)} min` : `${Number(x).toFixed(x < 10 ? 2 : 1)} s`),
  usd: (x) => (x === null || x === undefined ? "–" : `$${Number(x).toFixed(x < 0.01 ? 5 : 3)}`),
};

function parseHash() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query || "") };
}

const enc = encodeURIComponent;

// a run is named by its folder's id (its path under the folder `view` was given), never by
// its place in the list: a link names the same run after a restart or a new run folder
function link(...parts) {
  return "#/" + parts.map(enc).join("/");
}

function go(parts, params) {
  const q = params && [...params].length ? `?${params}` : "";
  location.hash = link(...parts) + q;
}

function setParam(params, key, value) {
  const next = new URLSearchParams(params);
  if (value) next.set(key, value); else next.delete(key);
  return next;
}

function done(started, ...nodes) {
  app.replaceChildren(...nodes.flat(3).filter((n) => n !== null && n !== undefined && n !== false));
  app.dataset.state = "ready";
  app.dataset.renderedMs = String(Math.round(performance.now() - started));  // this view's own
  app.dataset.sinceNavigationMs = String(Math.round(performance.now()));  // the page's, first view
}

function verdict(right) {
  if (right === null || right === undefined) return h("span", { class: "unscored" }, "no gold");
  return h("span", { class: right ? "right" : "wrong" }, right ? "✓ right" : "✗ wrong");
}

function marked(text, golds) {
  // ``text`` with every occurrence of a gold answer in a <mark> (built as elements: never HTML)
  const wanted = (golds || []).map((g) => String(g).trim()).filter((g) => g.length > 1);
  if (!wanted.length || !text) return text ?? "";
  const lower = text.toLowerCase(), out = [];
  let at = 0;
  while (at < text.length) {
    let best = -1, len = 0;
    for (const g of wanted) {
      const i = lower.indexOf(g.toLowerCase(), at);
      if (i >= 0 && (best < 0 || i < best || (i === best && g.length > len))) { best = i; len = g.length; }
    }
    if (best < 0) break;
    if (best > at) out.push(text.slice(at, best));
    out.push(h("mark", { class: "gold" }, text.slice(best, best + len)));
    at = best + len;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

function sortable(columns, rows, params, onSort) {
  // columns: [label, key(row) -> value, render(row) -> node|text, numeric]
  const by = params.get("sort"), asc = params.get("asc") === "1";
  const col = columns.find((c) => c[0] === by);
  if (col) {
    rows = [...rows].sort((x, y) => {
      const a = col[1](x), b = col[1](y);
      const cmp = a === b ? 0 : a === null || a === undefined ? 1 : b === null || b === undefined
        ? -1 : a < b ? -1 : 1;
      return asc ? cmp : -cmp;
    });
  }
  const head = h("tr", {}, columns.map((c) => h("th", {
    class: [c[3] ? "num" : "", c[0] === by ? "sorted" : "", c[0] === by && asc ? "asc" : ""]
      .join(" ").trim() || null,
    on: { click: () => onSort(c[0], c[0] === by ? !asc : false) },
  }, c[0])));
  return { head, rows };
}

async function runList(started) {
  where.textContent = "";
  const runs = await get("/api/runs");
  const searches = await get("/api/optimizations");
  const picked = new Set();
  const button = h("button", { id: "compare", disabled: true, on: { click: () => {
    const [a, b] = [...picked];
    go(["compare", a, b], new URLSearchParams());
  } } }, "compare the two picked");
  const metrics = [...new Set(runs.flatMap((r) => Object.keys(r.metrics)))];
  const rows = runs.map((r) => h("tr", { class: "pick", "data-run": r.id },
    h("td", {}, h("input", { type: "checkbox", "aria-label": `pick ${r.name}`, on: {
      click: (ev) => ev.stopPropagation(),
      change: (ev) => {
        if (ev.target.checked) picked.add(r.id); else picked.delete(r.id);
        button.disabled = picked.size !== 2;
      } } })),
    h("td", {}, h("a", { href: link("run", r.id) }, r.name)),
    h("td", {}, r.agent), h("td", {}, r.model),
    h("td", { class: "num" }, r.scored ? `${r.right} / ${r.scored}` : `– / ${r.questions}`),
    metrics.map((k) => h("td", { class: "num" }, fmt.m(r.metrics[k]))),
    h("td", { class: "num" }, fmt.n(r.tokens)), h("td", { class: "num" }, fmt.usd(r.usd)),
    h("td", { class: "num" }, fmt.s(r.seconds)), h("td", {}, r.created.slice(0, 16)),
    h("td", { title: `git ${r.git}` }, h("code", {}, r.code || "–")),
    runs.some((x) => x.error) ? h("td", { class: "wrong" }, r.error || "") : null,
  ));
  rows.forEach((tr) => tr.addEventListener("click", () => go(["run", tr.dataset.run])));
  done(started,
    h("h1", {}, `${runs.length} run${runs.length === 1 ? "" : "s"}`),
    h("p", { class: "legend" }, "Pick two to compare them; open one for its questions."),
    h("table", { id: "runs" },
      h("tr", {}, h("th", {}, ""), h("th", {}, "run"), h("th", {}, "agent"), h("th", {}, "model"),
        h("th", { class: "num" }, "right"), metrics.map((k) => h("th", { class: "num" }, k)),
        h("th", { class: "num" }, "tokens"), h("th", { class: "num" }, "USD"),
        h("th", { class: "num" }, "seconds"), h("th", {}, "date"), h("th", {}, "code"),
        runs.some((r) => r.error) ? h("th", {}, "problem") : null),
      rows),
    h("p", {}, button),
    searches.length ? [h("h2", {}, "Optimize searches"), h("ul", { id: "searches" }, searches.map((x) =>
      h("li", {}, h("a", { href: link("optimization", x.id) }, x.id), h("span", { class: "muted" }, ` ${x.path}`))))] : null);
}

async function optimizationPage(sid, started) {
  // one optimize search: its candidates, their validation scores question by question, which
  // was kept and why, what it cost, and the verdict on the test questions with its two arms
  const o = await get(`/api/optimization?id=${enc(sid)}`);
  where.textContent = `optimize ${sid}`;
  const runLink = (id, text) => id ? h("a", { href: link("run", id) }, text) : h("span", { class: "muted" }, text);
  const scoresOf = (c) => Object.keys(c.scores).length ? c.scores : c.minibatch.scores;
  const qids = [...new Set(o.candidates.flatMap((c) => Object.keys(scoresOf(c))))].sort();
  const mini = (c) => c.minibatch.n ? `${fmt.m(c.minibatch.mean)} vs ${fmt.m(c.minibatch.incumbent_mean)} (${c.minibatch.n})` : "–";
  const why = (c) => c.skipped || (c.stopped ? `stopped after the minibatch: ${c.stopped}` + (c.tie ? `; ${c.tie}` : "") : c.stage !== "validation" ? "under way"
    : c.won ? "beat the incumbent by more than one question's worth" : "did not beat it by more than one question's worth");
  const t = o.test;
  done(started,
    h("h1", {}, `Optimize ${sid}: ${o.agent}, ${o.roles.join(", ")}`),
    h("p", { class: "summary", id: "summary" }, `kept: ${o.incumbent} · rule: ${o.keep || "(not recorded)"} · `
      + (o.race ? `raced by ${o.race} · ` : "")
      + `stopped: ${o.stopped} · ${fmt.n((o.spent || {}).tokens)} tokens · ${fmt.s(o.seconds)}`),
    h("p", {}, runLink(o.bootstrap, "the bootstrap run"), " (the hand-written prompts on the training questions)"),
    h("h2", {}, "Candidates"),
    h("table", { id: "candidates" }, h("tr", {}, ["candidate", "kind", "role", "minibatch", `${o.metric} (validation)`,
      "incumbent", "better / worse", "sign p", "kept", "tokens", "seconds", "why"].map((c) => h("th", {}, c))),
      o.candidates.map((c) => { const full = c.stage === "validation"; return h("tr", { "data-id": c.id, class: c.won ? "kept" : null },
        h("td", {}, runLink(c.run, c.id)), h("td", {}, c.kind), h("td", {}, c.role), h("td", { class: "num" }, mini(c)),
        h("td", { class: "num" }, full ? fmt.m(c.mean) : "–"), h("td", { class: "num" }, full ? fmt.m(c.incumbent_mean) : "–"),
        h("td", { class: "num" }, full ? `${c.better} / ${c.worse}` : "–"), h("td", { class: "num" }, full ? fmt.m(c.p) : "–"),
        h("td", {}, c.won ? h("b", { class: "right" }, "kept") : "no"), h("td", { class: "num" }, fmt.n(c.tokens)),
        h("td", { class: "num" }, fmt.s(c.seconds)), h("td", {}, why(c))); })),
    o.candidates.filter((c) => c.reasoning || Object.keys(c.instructions).length).map((c) => h("details", { class: "call" },
      h("summary", {}, `${c.id}: what the proposer wrote`), c.tip ? [h("b", {}, "tip it was given"), h("pre", {}, c.tip)] : null,
      c.reasoning ? [h("b", {}, "reasoning"), h("pre", {}, c.reasoning)] : null,
      Object.entries(c.instructions).map(([role, text]) => [h("b", {}, role), h("pre", {}, text)]))),
    o.candidates.filter((c) => Object.values(c.demo_lines || {}).some((d) => d.length)).map((c) => h("details", { class: "call demos" },
      h("summary", {}, `${c.id}: the demonstrations it adds`),
      Object.entries(c.demo_lines).map(([role, demos]) => [h("b", {}, `${role} (${demos.length})`),
        h("ol", {}, demos.map((d) => h("li", {},
          Object.entries(d.inputs).map(([k, v]) => h("div", {}, h("span", { class: "muted" }, `${k}: `), String(v))),
          h("div", {}, h("span", { class: "muted" }, "shows: "), h("b", {}, typeof d.output === "string" ? d.output : JSON.stringify(d.output))))))]))),
    h("h2", {}, "Validation scores by question (a candidate stopped after its minibatch: its minibatch)"),
    h("table", { id: "validation" }, h("tr", {}, h("th", {}, "question"), h("th", { class: "num" }, `incumbent (${o.incumbent})`),
      o.candidates.map((c) => h("th", { class: "num" }, c.id))),
      qids.map((q) => h("tr", {}, h("td", {}, h("code", {}, q)), h("td", { class: "num" }, fmt.m((o.incumbent_scores || {})[q])),
        o.candidates.map((c) => h("td", { class: "num" }, fmt.m(scoresOf(c)[q])))))),
    h("h2", {}, "Verdict on the test questions"),
    t ? h("p", { class: "summary", id: "verdict" }, `${o.metric} hand-written ${fmt.m(t.hand_written)} → optimized ${fmt.m(t.optimized)} `
      + `on ${t.n} questions: ${t.better} better, ${t.worse} worse, sign p ${fmt.m(t.sign_p)}`
      + (t.ci ? `, 95 % CI [${t.ci.map((x) => x.toFixed(3)).join(", ")}]` : "") + (t.needed_n ? `, n for 80 % power ${t.needed_n}` : ""))
      : h("p", { class: o.no_verdict ? "summary" : "muted", id: "verdict" }, o.no_verdict || "no verdict yet (optimize --test, or its run still under way)"),
    o.arms[0] && o.arms[1] ? h("p", {}, h("a", { href: link("compare", o.arms[0], o.arms[1]) + `?metric=${enc(o.metric)}` }, "the two arms side by side"),
      " · ", runLink(o.arms[0], "hand-written"), " · ", runLink(o.arms[1], "optimized")) : null);
}

function summaryLine(run) {
  const bits = [run.scored ? `${run.right} right of ${run.scored}` + (run.scored < run.questions
    ? ` scored (${run.questions - run.scored} of ${run.questions} have no gold answer; the metrics are over the scored)` : "")
    : `${run.questions} questions, none scored`,
    `${fmt.n(run.tokens)} tokens`];
  if (run.usd !== null) bits.push(fmt.usd(run.usd));
  bits.push(fmt.s(run.seconds));
  if (run.errors) bits.push(`${run.errors} failed`);
  return h("p", { class: "summary", id: "summary" }, bits.join(" · "));
}

function failures(r) {
  const out = [];
  if (r.error) out.push("error");
  if (r.fallbacks) out.push("fallback");  // the question's page lists each with its reason
  if (r.budget_stops) out.push("budget stop");
  if (r.cache_hits) out.push("cached");
  return out;
}

const TABLE_VIEW = ["status", "stage", "template", "node", "failure", "q", "traces", "sort", "asc"];

function tableView(params) {
  // the run table's filters and sort as a query a question's address carries, so the
  // question page's previous / next and "n of m" come from its own URL
  const keep = new URLSearchParams();
  for (const k of TABLE_VIEW) if (params.get(k)) keep.set(k, params.get(k));
  return [...keep].length ? `?${keep}` : "";
}

function filterRows(rows, params, nodes, found) {
  // the questions the table shows for these filters (the text search too)
  const text = (params.get("q") || "").toLowerCase();
  const status = params.get("status") || "", template = params.get("template") || "";
  const node = params.get("node") || "", failure = params.get("failure") || "";
  const stage = params.get("stage") || "";
  const matches = (r) => !text || (found ? found.has(r.id)
    : [r.id, r.question, r.answer, ...r.gold].some((s) => s.toLowerCase().includes(text)));
  return rows.filter((r) =>
    (!status || (status === "right" ? r.right === true : status === "wrong"
      ? r.right === false : status === "error" ? Boolean(r.error) : true))
    && (!stage || r.stage === stage)
    && (!template || r.templates.includes(template))
    && (!node || ((nodes || {})[r.id] || []).includes(node))
    && (!failure || failures(r).includes(failure)) && matches(r));
}

function runColumns(run, rid, params) {
  const scoreKeys = Object.keys(run.metrics);
  return [
    ["id", (r) => r.id, (r) => h("a", { class: "qlink", href: link("run", rid, "q", r.id) + tableView(params) }, r.id)],
    ["", (r) => r.right, (r) => verdict(r.right)],
    ["question", (r) => r.question, (r) => r.question],
    ["answer", (r) => r.answer, (r) => r.answer],
    ["gold", (r) => r.gold.join(" | "), (r) => r.gold.join(" | ")],
    ...(run.staged ? [["stage", (r) => r.stage, (r) => r.stage]] : []),
    ...scoreKeys.map((k) => [k, (r) => r.scores[k], (r) => fmt.m(r.scores[k]), true]),
    ["calls", (r) => r.calls, (r) => r.calls, true],
    ["tokens", (r) => r.tokens, (r) => fmt.n(r.tokens), true],
    ...(run.usd !== null ? [["USD", (r) => r.usd, (r) => fmt.usd(r.usd), true]] : []),
    ["seconds", (r) => r.seconds, (r) => fmt.s(r.seconds), true],
    ["flags", (r) => failures(r).join(","), (r) => failures(r).map((f) => h("span", {
      class: "tag", title: f === "fallback" ? `${r.fallbacks} role output(s) replaced by a fallback or a rule: open the question for each reason` : null,
    }, f === "fallback" && r.fallbacks > 1 ? `fallback ×${r.fallbacks}` : f))],
  ];
}

async function runPage(rid, params, started) {
  const { run, rows } = await get(`/api/questions?run=${enc(rid)}`);
  run.staged = rows.some((r) => r.stage);
  where.textContent = `${run.name} · ${run.agent} · ${run.model}`;
  let nodes = null;
  if (params.get("node") || params.get("nodes")) nodes = await get(`/api/nodes?run=${enc(rid)}`);
  const text = (params.get("q") || "").toLowerCase();
  const status = params.get("status") || "";
  const inTraces = params.get("traces") === "1";
  const found = inTraces && text ? new Set(await get(`/api/search?run=${enc(rid)}&q=${enc(text)}`)) : null;
  const matches = (r, t) => !t || (found ? found.has(r.id)
    : [r.id, r.question, r.answer, ...r.gold].some((s) => s.toLowerCase().includes(t)));
  const shown = filterRows(rows, setParam(params, "q", inTraces ? params.get("q") : ""), nodes, found);
  const columns = runColumns(run, rid, params);
  const table = sortable(columns, shown, params, (label, asc) =>
    go(["run", rid], setParam(setParam(params, "sort", label), "asc", asc ? "1" : "")));
  const select = (key, label, options) => h("label", {}, `${label} `, h("select", {
    name: key, on: { change: (ev) => go(["run", rid], setParam(params, key, ev.target.value)) },
  }, h("option", { value: "" }, "any"), options.map((o) => h("option", {
    value: o, selected: o === params.get(key) }, o))));
  const templates = [...new Set(rows.flatMap((r) => r.templates))].sort();
  const nodeNames = nodes ? [...new Set(Object.values(nodes).flat())].sort() : [];
  const count = h("span", { class: "legend", id: "count" }, "");
  const tableRows = table.rows.map((r) =>
    h("tr", { class: "pick", "data-id": r.id, on: { click: (ev) => {
      if (ev.target.tagName !== "A") go(["run", rid, "q", r.id]);
    } } }, columns.map((c) => h("td", { class: c[3] ? "num" : null }, c[2](r)))));
  const filterText = (t) => {  // as one types: rows hidden in place, the input keeps its focus
    let n = 0;
    table.rows.forEach((r, i) => { const hide = !matches(r, t); tableRows[i].hidden = hide; n += !hide; });
    count.textContent = `${n} of ${rows.length} questions`;
    const view = tableView(setParam(params, "q", t));  // each question's link keeps the filter
    tableRows.forEach((tr) => { const a = tr.querySelector("a.qlink"); if (a) a.href = link("run", rid, "q", tr.dataset.id) + view; });
  };
  filterText(text);
  const search = h("input", { type: "search", name: "q", id: "search",
    placeholder: inTraces ? "search prompts, replies and evidence (Enter)" : "search questions and answers",
    value: params.get("q") || "", on: {
      input: (ev) => {
        params = setParam(params, "q", ev.target.value);
        history.replaceState(null, "", link("run", rid) + (params.toString() ? `?${params}` : ""));
        if (!inTraces) filterText(ev.target.value.toLowerCase());
      },
      change: (ev) => { if (inTraces) go(["run", rid], setParam(params, "q", ev.target.value)); },
    } });
  const traceBox = h("label", {}, h("input", { type: "checkbox", name: "traces", checked: inTraces, on: {
    change: (ev) => go(["run", rid], setParam(params, "traces", ev.target.checked ? "1" : "")) } }),
    " in traces");
  const nodeFilter = nodes ? select("node", "node", nodeNames) : h("button", { on: { click: async () => {
    await get(`/api/nodes?run=${enc(rid)}`);  // every trace read once: asked for, not by default
    go(["run", rid], setParam(params, "nodes", "1"));
  } } }, "filter by node…");
  done(started,
    h("h1", {}, `Run ${run.name}`),
    summaryLine(run),
    h("p", { class: "metrics" }, Object.entries(run.metrics).map(([k, v]) => h("span", {}, `${k} ${fmt.m(v)}`))),
    run.note ? h("p", { class: "note" }, `Scores need the question file: ${run.note}`) : null,
    (status === "right" || status === "wrong") && !run.scored ? h("p", { class: "note wrong", id: "unscored" },
      `No question of this run is scored, so none can be ${status}: the filter shows none for that reason.`) : null,
    h("div", { class: "filters" }, search, traceBox,
      select("status", "answer", ["right", "wrong", "error"]),
      run.staged ? select("stage", "lost at", [...new Set(rows.map((r) => r.stage).filter(Boolean))]) : null,
      select("template", "template", templates), nodeFilter,
      select("failure", "flag", ["fallback", "budget stop", "error", "cached"]),
      count),
    h("table", { id: "questions" }, table.head, tableRows));
  if (params.get("q") && document.activeElement === document.body) search.focus();
}

function svgNode(markup) {
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  if (doc.querySelector("parsererror")) return h("p", { class: "muted" }, "(drawing unreadable)");
  doc.querySelectorAll("script, foreignObject").forEach((n) => n.remove());
  return document.importNode(doc.documentElement, true);
}

function nodePanel(n) {
  // what one node holds: its whole text, then each of its details, then links to the calls it
  // made and the evidence it retrieved (flattened: a nested list given to replaceChildren is
  // written as "[object HTMLElement],…")
  const links = n.links || { calls: [], evidence: [] };
  const jump = (id, text) => { const a = h("a", { href: `#${id}`, class: "jump" }, text);
    a.addEventListener("click", (ev) => { ev.preventDefault(); const t = document.getElementById(id);
      if (t) { if (t.tagName === "DETAILS") t.open = true; t.scrollIntoView({ block: "center" }); } }); return a; };
  return [h("b", {}, `${n.id} (${n.kind || "step"})`), h("p", { class: "node-text" }, n.label || ""),
    Object.entries(n.detail || {}).flatMap(([k, v]) =>
      [h("b", {}, k), h("pre", {}, typeof v === "string" ? v : JSON.stringify(v, null, 2))]),
    links.calls.length ? [h("b", {}, "its calls"), h("p", { class: "node-links" },
      links.calls.flatMap((i) => [jump(`call-${i}`, `#${i}`), " "]))] : [],
    links.evidence.length ? [h("b", {}, "its evidence"), h("p", { class: "node-links" },
      links.evidence.flatMap((id) => [jump(`ev-${id}`, id), " "]))] : []].flat(2);
}

function graphBlock(q, rid, qid, params) {
  // the drawing (each node's whole text on hover); a click shows what the node holds, and the
  // address keeps it (?node=ID), so a link opens the same panel
  const panel = h("div", { class: "node-panel", id: "node-panel" },
    h("span", { class: "muted" }, "click a node for what it holds"));
  const svg = svgNode(q.svg);
  const byId = new Map(q.graph.nodes.map((n) => [n.id, n]));
  const show = (id) => {
    const n = byId.get(id);
    if (!n) return;
    panel.replaceChildren(...nodePanel(n));
    panel.dataset.node = id;
  };
  svg.querySelectorAll && svg.querySelectorAll("g.node").forEach((g) => g.addEventListener("click", () => {
    show(g.dataset.id);
    history.replaceState(null, "", link("run", rid, "q", qid) + `?${setParam(params, "node", g.dataset.id)}`);
  }));
  if (params.get("node")) show(params.get("node"));
  return h("div", { class: "graph" }, svg, panel);
}

function waterfall(spans, calls) {
  if (!spans.length) return h("p", { class: "muted" }, "no timed steps in this trace");
  const total = Math.max(...spans.map((s) => s.end), 1e-3);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => h("span", { class: "wf-tick",
    style: `left:${100 * f}%` }, `${(f * total).toFixed(total < 10 ? 1 : 0)} s`));
  const axis = h("div", { class: "wf-row wf-axis" }, h("span", { class: "wf-label" }, "seconds"),
    h("div", { class: "wf-track" }, ticks), h("span", { class: "wf-time" }, ""));
  return h("div", { class: "waterfall", id: "waterfall" }, axis, spans.map((s) => {
    const left = (100 * s.start) / total, width = (100 * (s.end - s.start)) / total;
    const label = `${"  ".repeat(s.depth)}${s.label}`;
    const bar = h("div", { class: `wf-bar bar-${s.kind}${s.cached ? " is-cached" : ""}`,
      style: `left:${left}%;width:${width}%`,
      title: s.kind === "mark" ? `${s.label} at ${s.start.toFixed(2)} s`
        : `${s.label}: ${(s.end - s.start).toFixed(3)} s from ${s.start.toFixed(3)} s` });
    // the part of a call spent before the server began it (queued, where the server says
    // what it spent), else before its first token came (queue and prompt reading together)
    const wait = s.queued_s ?? s.first_token_s;
    if (wait !== undefined && s.end > s.start) {
      bar.append(h("div", { class: s.queued_s !== undefined ? "wf-wait is-queued" : "wf-wait",
        style: `width:${Math.min(100, (100 * wait) / (s.end - s.start))}%`,
        title: s.queued_s !== undefined ? `queued ${wait.toFixed(2)} s before the server began it`
          : `${wait.toFixed(2)} s before its first token (queue and prompt reading)` }));
    }
    const row = h("div", { class: "wf-row", "data-kind": s.kind },
      h("span", { class: "wf-label", style: `padding-left:${4 + 12 * s.depth}px`, title: label },
        s.label, s.cached ? h("span", { class: "cached" }, " cached") : null),
      h("div", { class: "wf-track" }, bar),
      h("span", { class: "wf-time" }, s.kind === "mark" ? "" : (s.end - s.start).toFixed(2)));
    if (s.kind === "llm") row.addEventListener("click", () => {
      const target = document.getElementById(`call-${s.call}`);
      if (target) { target.open = true; target.classList.add("target"); target.scrollIntoView(); }
    });
    return row;
  }));
}

function callBlock(c, i, golds) {
  const cost = `${fmt.n(c.prompt_tokens)} + ${fmt.n(c.completion_tokens)} tokens`
    + (c.usd !== null ? ` · ${fmt.usd(c.usd)}` : "") + ` · ${fmt.s(c.seconds)}`;
  return h("details", { class: "call", id: `call-${i}` },
    h("summary", {}, `${i}. ${c.template || c.role} `, c.node ? h("span", { class: "node-name" }, `in ${c.node} `) : null,
      h("span", { class: "muted" }, cost),
      c.cached ? h("span", { class: "cached" }, "cached: not sent") : null,
      c.error ? h("span", { class: "wrong" }, ` error: ${c.error}`) : null),
    c.messages.map((m) => [h("b", {}, m.role), h("pre", { class: "prompt" }, marked(m.text, golds))]),
    h("b", {}, "reply"), h("pre", { class: "reply" }, c.reply === null || c.reply === undefined ? "(no reply)" : marked(c.reply, golds)),
    c.parsed !== null && c.parsed !== undefined
      ? [h("b", {}, "parsed"), h("pre", {}, JSON.stringify(c.parsed, null, 2))] : null,
    c.parse_error ? h("p", { class: "wrong" }, `unreadable: ${c.parse_error}`) : null,
    h("b", {}, "settings"), h("pre", {}, JSON.stringify({ model: c.model, kind: c.kind,
      attempts: c.attempts, ...c.settings }, null, 2)));
}

function evidenceTable(rid, qid, evidence, golds) {
  if (!evidence.length) return h("p", { class: "muted" }, "no evidence in this trace");
  return h("table", { class: "evidence", id: "evidence" },
    h("tr", {}, ["id", "score", "gold", "kept", "cited", "title", "text"].map((c) => h("th", {}, c))),
    evidence.map((e) => h("tr", { class: e.gold ? "gold-evidence" : null, id: `ev-${e.id}` },
      h("td", {}, h("code", {}, e.id)), h("td", { class: "num" }, fmt.m(e.score)),
      h("td", {}, e.gold ? h("b", { class: "right" }, "gold") : ""),
      h("td", {}, e.kept ? "kept" : ""), h("td", {}, e.cited ? h("b", {}, "cited") : ""),
      h("td", {}, e.title + (e.page !== null && e.page !== undefined && !e.title.endsWith(`p.${e.page}`)
        ? ` p.${e.page}` : "")),
      h("td", { class: "text" }, !e.text ? h("span", { class: "muted" }, "(named by id only in the trace)")
        : e.text.length > 400
        ? h("details", {}, h("summary", {}, marked(e.text.slice(0, 400), golds), "…"), marked(e.text, golds))
        : marked(e.text, golds),
        e.source_of_text === "kb" ? h("span", { class: "muted", title: "retrieved, not kept: the trace names it by id; its text is read from the run's knowledge base" }, " (from the KB)") : null,
        e.page_image ? pageFigure(rid, qid, e) : null))));
}

function pageFigure(rid, qid, e) {
  const [w, hgt] = e.page_size;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${hgt}`);
  svg.setAttribute("preserveAspectRatio", "none");
  for (const [x0, y0, x1, y1] of e.regions) {
    const r = document.createElementNS(ns, "rect");
    Object.entries({ x: x0, y: y0, width: x1 - x0, height: y1 - y0 })
      .forEach(([k, v]) => r.setAttribute(k, String(v)));
    svg.append(r);
  }
  const src = `/api/page?run=${enc(rid)}&id=${enc(qid)}&cid=${enc(e.id)}`;
  return h("figure", { class: "page-figure" }, h("img", { src, alt: e.title }), svg,
    h("figcaption", {}, e.regions.length ? "highlighted: what the answer quotes" : "cited; no quoted text found"));
}

function goldLine(gold) {
  if (!gold.length) return null;
  const held = gold.filter((g) => g.held).length;
  return h("p", { class: held === gold.length ? "summary" : "summary wrong", id: "gold-evidence" },
    `gold evidence: ${held} of ${gold.length} held`, held < gold.length
      ? ` (never retrieved: ${gold.filter((g) => !g.held).map((g) => g.id).join(", ")})` : "");
}

function goldAnswerLine(held) {
  // a wrong answer's gold answer along its calls (evals.stages.gold_answer_held): each
  // template that wrote it or only read it
  if (!held) return null;
  const steps = Object.entries(held);
  return h("p", { class: "summary wrong", id: "gold-answer" }, "gold answer: ", steps.length
    ? steps.map(([t, did]) => `${t} ${did === "wrote" ? "wrote it" : "read it only"}`).join(" → ") : "in no prompt or reply");
}

function waitLegend(spans) {
  // a hatch means what its calls' records say: a slot's queue where the server sent its
  // timings, else the whole wait for the first token, prompt reading included
  const queued = spans.some((s) => s.queued_s !== undefined);
  const untimed = spans.some((s) => s.queued_s === undefined && s.first_token_s !== undefined);
  return [queued ? ["waiting for a server slot", "wf-wait-tag is-queued"] : null,
    untimed ? ["until the first token (no server timings: waiting and prompt reading)", "wf-wait-tag"] : null]
    .filter(Boolean);
}

async function questionPage(rid, qid, params, started) {
  const q = await get(`/api/question?run=${enc(rid)}&id=${enc(qid)}`);
  const r = q.row;
  const { run, rows } = await get(`/api/questions?run=${enc(rid)}`);
  where.textContent = `${run.name} · ${qid}`;
  // next and previous in the order of the table this address names (its filters and sort in
  // the query; none: the run's own order), so one URL always gives one position; j / k or the
  // arrow keys step through them
  const view = tableView(params);
  const nodes = params.get("node") ? await get(`/api/nodes?run=${enc(rid)}`) : null;
  const text = params.get("q") || "";
  const found = params.get("traces") === "1" && text
    ? new Set(await get(`/api/search?run=${enc(rid)}&q=${enc(text.toLowerCase())}`)) : null;
  const order = sortable(runColumns(run, rid, params), filterRows(rows, params, nodes, found), params, () => {})
    .rows.map((x) => x.id);
  const at = order.indexOf(qid);
  const [prev, next] = at < 0 ? [null, null] : [order[at - 1], order[at + 1]];
  keys = { prev: prev && link("run", rid, "q", prev) + view, next: next && link("run", rid, "q", next) + view };
  const step = (id, dir, label) => id ? h("a", { id: dir, href: link("run", rid, "q", id) + view, title: id }, label)
    : h("span", { class: "muted" }, label);
  const usd = q.calls.some((c) => c.usd !== null)
    ? ` · ${fmt.usd(q.calls.reduce((s, c) => s + (c.usd || 0), 0))}` : "";
  done(started,
    h("p", { class: "nav" }, h("a", { href: link("run", rid) }, `↑ ${run.name}`), " · ",
      step(prev, "prev", "← previous (k)"), " · ", step(next, "next", "next (j) →"),
      at >= 0 ? h("span", { class: "muted" }, ` · ${at + 1} of ${order.length}`) : null),
    h("h1", {}, r.question || r.id),
    h("p", { class: "summary", id: "summary" }, verdict(r.right),
      ` · ${r.calls} calls · ${fmt.n(r.tokens)} tokens${usd} · ${fmt.s(r.seconds)}`,
      r.cache_hits ? ` · ${r.cache_hits} cached` : ""),
    h("table", { id: "answer" },
      h("tr", {}, h("th", {}, "answer"), h("td", {}, marked(r.answer, r.gold))),
      h("tr", {}, h("th", {}, "gold"), h("td", {}, r.gold.join(" | ") || "–")),
      h("tr", {}, h("th", {}, "scores"), h("td", {}, Object.entries(r.scores).map(([k, v]) => `${k} ${fmt.m(v)}`).join(" · "))),
      r.error ? h("tr", {}, h("th", {}, "error"), h("td", { class: "wrong" }, r.error)) : null),
    q.traced ? null : h("p", { class: "note" }, "this question has no trace"),
    (q.damaged || []).map((d) => h("p", { class: "note wrong" }, `damaged trace: ${d}`)),
    goldLine(q.gold_evidence || []),
    q.stage && q.stage !== "right" ? h("p", { class: "summary wrong", id: "stage" }, `lost at: ${q.stage}`) : null,
    goldAnswerLine(q.gold_answer),
    q.marks && q.marks.length ? [h("h2", {}, `Fallbacks and repairs (${q.marks.length})`),
      h("ul", { id: "marks" }, q.marks.map((m) => h("li", {}, h("span", { class: "muted" }, `${m.t.toFixed(1)} s `),
        m.node ? h("span", { class: "node-name" }, `in ${m.node}: `) : null, m.text)))] : null,
    q.svg ? [h("h2", {}, "Graph"), graphBlock(q, rid, qid, params)] : null,
    h("h2", {}, "Timing"),
    h("p", { class: "legend" }, [["node", "bar-node"], ["LLM call", "bar-llm"], ["cached call", "bar-llm is-cached"],
      ["search", "bar-retrieval"], ...waitLegend(q.spans), ["fallback or repair", "bar-mark"]].map(([name, cls]) => [h("span", { class: `tag ${cls}` }, "\u00a0\u00a0"), ` ${name}  `]),
      "(click a call to open it)"),
    waterfall(q.spans, q.calls),
    h("h2", {}, q.calls.length || !r.calls ? `LLM calls (${q.calls.length})`
      : `LLM calls (${r.calls} made; ${q.traced ? "the trace names none of them" : "this record kept no trace of them"})`), h("div", { id: "calls" }, q.calls.map((c, i) => callBlock(c, i, r.gold))),
    h("h2", {}, "Evidence"), q.evidence_note ? h("p", { class: "muted", id: "evidence-note" }, q.evidence_note) : null,
    evidenceTable(rid, qid, q.evidence, r.gold));
}

async function comparePage(a, b, params, started) {
  // the metric is one both runs have (the URL's where it is one, else f1, else their first),
  // so the selector, the summary and the table always speak of the same metric
  const runs = await get("/api/runs");
  const pair = runs.filter((r) => r.id === a || r.id === b);
  const metrics = Object.keys((pair[0] || {}).metrics || {}).filter((k) => pair.every((r) => k in r.metrics));
  const asked = params.get("metric");
  const metric = metrics.includes(asked) ? asked : metrics.includes("f1") ? "f1" : (metrics[0] || asked || "f1");
  const data = await get(`/api/compare?a=${enc(a)}&b=${enc(b)}&metric=${enc(metric)}`);
  const onlyChanged = params.get("all") !== "1";
  const [la, lb] = [a, b];
  where.textContent = `${la} vs ${lb}`;
  const rows = data.rows.filter((r) => !onlyChanged || r.changed);
  const columns = [
    ["id", (r) => r.id, (r) => h("a", { href: link("compare", a, b, "q", r.id) }, r.id)],
    ["question", (r) => r.question, (r) => r.question],
    ["gold", (r) => r.gold.join(" | "), (r) => r.gold.join(" | ")],
    [`${la} answer`, (r) => r.answers[0], (r) => r.answers[0]],
    [`${lb} answer`, (r) => r.answers[1], (r) => r.answers[1]],
    [`${metric} ${la}`, (r) => r.values[0], (r) => fmt.m(r.values[0]), true],
    [`${metric} ${lb}`, (r) => r.values[1], (r) => fmt.m(r.values[1]), true],
    ["change", (r) => r.delta, (r) => h("span", { class: r.delta > 0 ? "right" : r.delta < 0 ? "wrong" : "" },
      r.delta === null ? "–" : (r.delta > 0 ? "+" : "") + r.delta.toFixed(3)), true],
  ];
  const table = sortable(columns, rows, params, (label, asc) =>
    go(["compare", a, b], setParam(setParam(params, "sort", label), "asc", asc ? "1" : "")));
  done(started,
    h("h1", {}, `${la} → ${lb}`),
    h("p", { class: "summary", id: "summary" },
      `${metric}: ${data.better} better, ${data.worse} worse of ${data.common} common questions`),
    h("div", { class: "filters" },
      h("label", {}, "metric ", h("select", { name: "metric", on: { change: (ev) =>
        go(["compare", a, b], setParam(params, "metric", ev.target.value)) } },
        metrics.map((m) => h("option", { value: m, selected: m === metric }, m)))),
      h("label", {}, h("input", { type: "checkbox", name: "all", checked: !onlyChanged, on: { change: (ev) =>
        go(["compare", a, b], setParam(params, "all", ev.target.checked ? "1" : "")) } }), " every common question"),
      h("span", { class: "legend", id: "count" }, `${rows.length} shown`)),
    h("table", { id: "pairs" }, table.head, table.rows.map((r) =>
      h("tr", { "data-id": r.id }, columns.map((c) => h("td", { class: c[3] ? "num" : null }, c[2](r)))))));
}

function callSide(c, gold) {
  if (!c) return h("p", { class: "muted" }, "(no such call)");
  return h("div", {}, h("b", {}, c.template), c.node ? h("span", { class: "node-name" }, ` in ${c.node}`) : null,
    h("pre", { class: "reply" }, c.reply === null || c.reply === undefined ? "(no reply)" : marked(c.reply, gold)),
    c.then ? h("p", { class: "muted" }, `then: ${c.then}`) : null,
    h("details", {}, h("summary", {}, "its prompt"), h("pre", {}, c.prompt || "")));
}

function firstCall(fc, la, lb, gold) {
  // one method twice: where its two executions parted, and what each reply led to
  if (!fc) return h("p", { class: "summary", id: "first-call" }, "every call's reply is the same in both");
  return [h("h2", { id: "first-call" }, `First differing reply: call ${fc.index}`
    + (fc.prompt_changed ? " (its prompt differs too)" : " (same prompt)")),
    h("div", { class: "two" }, h("div", {}, h("h3", {}, la), callSide(fc.sides[0], gold)),
      h("div", {}, h("h3", {}, lb), callSide(fc.sides[1], gold)))];
}

function heldSideBySide(held, la, lb, gold) {
  // two methods: the evidence each held (gold marked) and the step that wrote each answer
  const list = (x) => h("ul", { class: "held" }, x.evidence.map((e) => h("li", { class: e.gold ? "gold-evidence" : null },
    e.gold ? h("b", { class: "right" }, "gold ") : null, e.title || e.id, e.cited ? " (cited)" : e.kept ? " (kept)" : "")));
  const side = (x, label) => h("div", {}, h("h3", {}, label),
    h("p", {}, `held ${x.evidence.length} passages, ${x.evidence.filter((e) => e.gold).length} of them gold evidence`), list(x),
    h("b", {}, "its last calls"), x.last_calls.length ? x.last_calls.map((c) => callSide(c, gold))
      : h("p", { class: "muted" }, "(no call)"));
  return [h("h2", { id: "held" }, "What each held"), h("div", { class: "two" }, side(held[0], la), side(held[1], lb))];
}

async function compareQuestion(a, b, qid, started) {
  const d = await get(`/api/compare_question?a=${enc(a)}&b=${enc(b)}&id=${enc(qid)}`);
  const [la, lb] = [a, b];
  where.textContent = `${la} vs ${lb} · ${qid}`;
  const cell = (c) => c ? [h("b", {}, c.node), c.templates.length ? h("div", {}, c.templates.join(", ")) : null,
    c.retrieved ? h("div", { class: "muted" }, `${c.retrieved} ids retrieved`) : null,
    c.wrote.length ? h("div", { class: "muted" }, `wrote ${c.wrote.join(", ")}`) : null] : h("span", { class: "muted" }, "—");
  const answer = (x) => x ? [verdict(x.right), " ", marked(x.answer, x.gold)] : "(not answered)";
  const gold = ((d.answers[0] || d.answers[1] || {}).gold) || [];
  done(started,
    h("p", {}, h("a", { href: link("compare", a, b) }, `← ${la} vs ${lb}`)),
    h("h1", {}, (d.answers[0] || d.answers[1] || {}).question || qid),
    d.same_method ? h("p", { class: "summary", id: "divergence" }, d.first === null ? "the executions never diverge"
      : `first divergence at step ${d.first}: ${d.rows[d.first].differs}`) : null,
    h("div", { class: "two" }, h("div", {}, h("h2", {}, la), answer(d.answers[0]), " ",
      h("a", { href: link("run", a, "q", qid) }, "trace"), goldAnswerLine(d.held[0].gold_answer)),
    h("div", {}, h("h2", {}, lb), answer(d.answers[1]), " ",
      h("a", { href: link("run", b, "q", qid) }, "trace"), goldAnswerLine(d.held[1].gold_answer))),
    d.same_method ? firstCall(d.first_call, la, lb, gold) : heldSideBySide(d.held, la, lb, gold),
    h("h2", {}, "Steps aligned"),
    h("table", { id: "steps" }, h("tr", {}, h("th", {}, "step"), h("th", {}, la), h("th", {}, lb), h("th", {}, "differs")),
      d.rows.map((r, i) => h("tr", { class: [i === d.first ? "first-divergence" : "", r.differs ? "differs" : ""].join(" ").trim() || null },
        h("td", { class: "num" }, i === d.first ? `▶ ${i}` : String(i)), h("td", {}, cell(r.a)), h("td", {}, cell(r.b)),
        h("td", {}, r.differs)))));
}

async function render() {
  const started = performance.now();
  app.dataset.state = "loading";
  keys = {};
  const { parts, params } = parseHash();
  try {
    if (parts[0] === "run" && parts[2] === "q") await questionPage(parts[1], parts[3], params, started);
    else if (parts[0] === "run") await runPage(parts[1], params, started);
    else if (parts[0] === "compare" && parts[3] === "q") await compareQuestion(parts[1], parts[2], parts[4], started);
    else if (parts[0] === "compare") await comparePage(parts[1], parts[2], params, started);
    else if (parts[0] === "optimization") await optimizationPage(parts[1], started);
    else await runList(started);
    const at = params.get("at") && document.getElementById(params.get("at"));
    if (at) {  // a link to a part of the page (?at=evidence, ?at=calls), once its images are laid out
      await Promise.all([...app.querySelectorAll("img")].map((img) => img.decode().catch(() => null)));
      at.scrollIntoView();
    }
  } catch (e) {
    done(started, h("p", { class: "note", id: "error" }, `error: ${e.message}`));
    app.dataset.state = "error";
  }
}

let keys = {};  // the page's next and previous addresses, for j / k and the arrow keys

window.addEventListener("keydown", (ev) => {
  if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const to = { j: keys.next, ArrowRight: keys.next, k: keys.prev, ArrowLeft: keys.prev }[ev.key];
  if (to) { ev.preventDefault(); location.hash = to; }
});
window.addEventListener("hashchange", render);
render();
