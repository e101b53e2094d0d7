// delayq console: plain DOM, no framework, no build step. Every value from
// the API is put into the page with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "delayq-console-token";
// auth: an API read answered 401, so this delayd wants the console token
// for every call (DELAYQ_CONSOLE_TOKEN set): the token box shows.
const state = { write: false, auth: false, timer: null, retry: null };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
const svgEl = (tag, attrs) => {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
};

async function api(path, body) {
  const opts = { headers: {} };
  const token = $("token").value;
  if (token || body !== undefined) opts.headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch("api/" + path, opts);
  if (res.status === 401 && !state.auth) {
    state.auth = true;
    $("token-box").hidden = false;
  }
  let data = null;
  try { data = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) throw new Error((data && data.error) || res.status + " " + res.statusText);
  return data;
}

function banner(msg) {
  $("banner").hidden = !msg;
  $("banner").textContent = msg || "";
}

const fmtInt = (n) => Math.round(n).toLocaleString("en-US");
function fmtRate(r) {
  if (r === undefined || r === null) return "–";
  if (r === 0) return "0/s";
  return (r >= 100 ? fmtInt(r) : r >= 1 ? r.toFixed(1) : r.toFixed(2)) + "/s";
}
function fmtSeconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}
function fmtTime(ms) {
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "").replace(/Z$/, "");
}

// ---- overview -------------------------------------------------------------

async function loadOverview() {
  let o;
  try {
    o = await api("overview");
  } catch (e) {
    banner("overview: " + e.message);
    return;
  }
  banner(o.ready ? "" : "delayd is starting: its backends are not ready yet");
  setMode(o.write);
  for (const k of ["accepted", "delivered", "failed", "cancelled"]) {
    $("total-" + k).textContent = fmtInt(o.totals[k] || 0);
    $("rate-" + k).textContent = o.rates ? fmtRate(o.rates[k]) : "–";
  }
  $("lateness-p50").textContent = fmtSeconds(o.lateness_p50);
  $("lateness-p99").textContent = fmtSeconds(o.lateness_p99);
  $("lateness-since").textContent = o.lateness_p50 === null ? "nothing delivered yet"
    : o.lateness_since === "window" ? "last " + Math.round(o.window) + " s" : "since start";
  const lags = Object.values(o.ingest_lag || {});
  $("ingest-lag").textContent = lags.length ? fmtInt(Math.max(...lags)) : "–";

  const deps = $("deps");
  deps.replaceChildren();
  for (const d of o.dependencies) {
    const li = el("li", { "data-dep": d.name, "data-up": String(d.up) },
      el("span", { class: "dot " + (d.up ? "up" : "down") }), d.name + " ",
      el("span", { class: "lat" }, d.up ? d.latency_ms.toFixed(1) + " ms" : "down"));
    if (d.error) li.append(el("span", { class: "err" }, d.error));
    deps.append(li);
  }
  if (!o.dependencies.length) deps.append(el("li", {}, "not probed yet"));

  const reasons = $("reasons");
  reasons.replaceChildren();
  const rs = Object.entries(o.failed_by_reason || {}).sort((a, b) => b[1] - a[1]);
  for (const [r, n] of rs) reasons.append(el("tr", {}, el("th", {}, r || "(none)"), el("td", { "data-reason": r }, fmtInt(n))));
  if (!rs.length) reasons.append(el("tr", {}, el("td", {}, "no failures recorded")));
  $("overview-foot").textContent = "Rates over the last " + (o.window ? Math.round(o.window) + " s" : "– (first sample)") +
    "; refreshed " + fmtTime(o.now) + " UTC. Prometheus alerts: deploy/prometheus/rules.";
}

async function loadBacklog() {
  let b;
  try {
    b = await api("backlog");
  } catch (e) {
    $("chart-minutes").textContent = "backlog: " + e.message;
    return;
  }
  $("backlog-total").textContent = fmtInt(b.total);
  $("backlog-overdue").textContent = fmtInt(b.overdue);
  $("backlog-later").textContent = fmtInt(b.later);
  $("backlog-segments").textContent = fmtInt(b.segments);
  const sum = (xs) => xs.reduce((a, x) => a + x.pending, 0);
  $("backlog-hour-sum").textContent = fmtInt(sum(b.minutes)) + " due within the hour" + (b.overdue ? " (" + fmtInt(b.overdue) + " overdue, in the first bar)" : "");
  $("backlog-days-sum").textContent = fmtInt(sum(b.days)) + " due within 30 days";
  barChart($("chart-minutes"), b.minutes, (ms) => fmtTime(ms).slice(11, 16), 10, b.overdue);
  barChart($("chart-days"), b.days, (ms) => fmtTime(ms).slice(5, 10), 3, b.overdue);
}

// barChart draws buckets as bars, a label every `every` buckets; the first
// bar is drawn as overdue when it holds overdue tasks.
function barChart(box, buckets, label, every, overdue) {
  const W = 1000, H = 190, top = 14, bottom = 22, left = 4;
  const max = Math.max(1, ...buckets.map((b) => b.pending));
  const bw = (W - left) / buckets.length;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img" });
  svg.append(svgEl("line", { x1: 0, x2: W, y1: H - bottom, y2: H - bottom, class: "axis" }));
  buckets.forEach((b, i) => {
    const h = ((H - top - bottom) * b.pending) / max;
    const x = left + i * bw;
    const r = svgEl("rect", {
      x: x + 1, y: H - bottom - h, width: Math.max(1, bw - 2), height: h,
      class: "bar" + (i === 0 && overdue ? " over" : ""), "data-start": b.start, "data-pending": b.pending,
    });
    const t = svgEl("title");
    t.textContent = fmtTime(b.start) + " UTC: " + fmtInt(b.pending) + " pending";
    r.append(t);
    svg.append(r);
    if (b.pending > 0) {
      const v = svgEl("text", { x: x + bw / 2, y: H - bottom - h - 3, "text-anchor": "middle", class: "val" });
      v.textContent = fmtInt(b.pending);
      svg.append(v);
    }
    if (i % every === 0) {
      const l = svgEl("text", { x: x + 1, y: H - 6 });
      l.textContent = label(b.start);
      svg.append(l);
    }
  });
  box.replaceChildren(svg);
}

// ---- task -----------------------------------------------------------------

async function loadTask(id, at) {
  $("task-id").value = id;
  $("task-at").value = at;
  if (!id) return;
  let t;
  try {
    // Without a due time the id row gives the current one.
    t = await api("task?" + new URLSearchParams(at ? { id, at } : { id }));
  } catch (e) {
    banner("task: " + e.message);
    $("task-result").hidden = true;
    return;
  }
  banner("");
  if (!at) $("task-at").value = t.exec_at ? new Date(t.exec_at).toISOString() : "";
  $("task-result").hidden = false;
  $("task-title").textContent = t.id;
  const badge = $("task-state");
  badge.textContent = t.state;
  badge.className = "badge " + t.state.split(" ")[0];
  const rows = [
    ["state", t.state],
    ["due", t.exec_at ? fmtTime(t.exec_at) + " UTC (" + t.exec_at + ")" : "–"],
    ["internal id", t.id64],
    ["stored", t.stored ? "yes" : "no"],
    ["pending", t.pending ? "yes" : "no"],
    ["cancelled", t.cancelled ? "yes" : "no"],
  ];
  if (t.zset) rows.push(["index", (t.indexed ? "in " : "not in ") + t.zset]);
  if (t.topic) rows.push(["topic", t.topic]);
  if (t.key) rows.push(["key", bytes(t.key)]);
  if (t.headers && t.headers.length) rows.push(["headers", t.headers.map((h) => h.key + "=" + h.value).join("  ")]);
  if (t.value) rows.push(["payload", bytes(t.value, true)]);
  const table = $("task-table");
  table.replaceChildren();
  for (const [k, v] of rows) table.append(el("tr", {}, el("th", {}, k), el("td", { "data-field": k }, v)));
  $("task-actions").hidden = !state.write;
  $("task-cancel").disabled = !t.pending || t.cancelled;
  $("task-cancel").dataset.replaced = t.replaced && !at ? "yes" : "";
  $("task-cancel-result").textContent = "";
}

// bytes renders a Bytes value: text, or base64 for binary.
function bytes(b, block) {
  if (b.null) return "(none)";
  const note = b.len + " bytes" + (b.truncated ? ", cut" : "") + (b.base64 ? ", binary, base64" : "");
  const body = b.base64 !== undefined && b.base64 !== "" ? b.base64 : b.text || "";
  if (!block) return el("span", {}, el("code", {}, body), " (" + note + ")");
  return el("div", {}, el("pre", {}, body), el("small", {}, note));
}

async function cancelTask() {
  const id = $("task-id").value, at = $("task-at").value;
  // A replace's row is reached only by a cancel by id alone, which also
  // blocks the id (the server decides; this only warns).
  const byID = $("task-cancel").dataset.replaced === "yes";
  const ask = "Cancel task " + id + " due " + at + "?" + (byID
    ? " It is a replaced task: it is cancelled by id alone, which also blocks the id for --max-delay + --retention (37 days by default)." : "");
  if (!confirm(ask)) return;
  $("task-cancel").disabled = true;
  try {
    const r = await api("task/cancel", { id, at });
    const sent = r.by_id ? "cancel by id alone sent (" + r.rule + ")" : "cancel sent";
    $("task-cancel-result").textContent = sent + "; refreshing…";
    $("task-cancel-result").className = "ok";
    // By id alone the id row gives the state: reload without the due time.
    setTimeout(() => loadTask(id, r.by_id ? "" : at).then(() => {
      $("task-cancel-result").textContent = sent;
      $("task-cancel-result").className = "ok";
    }), 1500);
  } catch (e) {
    $("task-cancel-result").textContent = e.message;
    $("task-cancel-result").className = "bad";
    $("task-cancel").disabled = false;
  }
}

// ---- tasks ----------------------------------------------------------------

const TASK_FILTERS = ["topic", "key", "from", "to", "state", "limit"];

// loadTasks lists a page of stored tasks; q holds the filters and the
// cursor, as the URL fragment does.
async function loadTasks(q) {
  // The form shows what is loaded: a filter not in q is empty, and the
  // page size is the server's default (100) unless q names one.
  for (const f of TASK_FILTERS) $("tasks-" + f).value = q.has(f) ? q.get(f) : f === "limit" ? "100" : "";
  const body = $("tasks-table").tBodies[0];
  $("tasks-next").disabled = true;
  $("tasks-first").disabled = !q.get("cursor");
  let res;
  try {
    res = await api("tasks?" + q);
  } catch (e) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 7 }, "tasks: " + e.message)));
    $("tasks-count").textContent = "";
    return;
  }
  body.replaceChildren();
  for (const t of res.tasks) {
    const link = el("a", { href: "#/task?" + new URLSearchParams({ id: t.id, at: t.at }) }, t.id);
    const key = t.key !== undefined ? t.key : t.key_base64 !== undefined ? "base64 " + t.key_base64 : "(none)";
    const hs = Object.entries(t.headers || {}).map(([k, v]) => k + "=" + v).join("  ");
    body.append(el("tr", { "data-id": t.id },
      el("td", {}, fmtTime(t.at_ms)),
      el("td", {}, el("span", { class: "badge " + t.state.split("-")[0] }, t.state)),
      el("td", {}, t.topic || "(cancel only)"),
      el("td", { class: "clip" }, link),
      el("td", { class: "clip" }, el("code", {}, key)),
      el("td", { class: "clip", title: hs }, hs),
      el("td", {}, t.value_bytes + " B")));
  }
  if (!res.tasks.length) body.append(el("tr", {}, el("td", { colspan: 7 }, res.next ? "no match among the rows read: next page goes on" : "no task matches")));
  $("tasks-count").textContent = res.tasks.length + " on this page (" + fmtInt(res.examined) + " rows read)" + (res.next ? ", more" : "");
  $("tasks-count").dataset.count = res.tasks.length;
  $("tasks-next").disabled = !res.next;
  $("tasks-next").dataset.cursor = res.next || "";
}

// tasksQuery reads the filters of the form, without empty ones.
function tasksQuery() {
  const q = new URLSearchParams();
  for (const f of TASK_FILTERS) if ($("tasks-" + f).value.trim()) q.set(f, $("tasks-" + f).value.trim());
  return q;
}

// ---- failed ---------------------------------------------------------------

async function loadFailed(reason) {
  $("failed-reason").value = reason;
  const body = $("failed-table").tBodies[0];
  let res;
  try {
    res = await api("failed?" + new URLSearchParams({ reason }));
  } catch (e) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 8 }, "delay-failed: " + e.message)));
    return;
  }
  const msgs = res.messages;
  $("failed-count").textContent = msgs.length + (msgs.length >= res.limit ? "+ (newest " + res.limit + ")" : "") + " messages";
  $("failed-count").dataset.count = msgs.length;
  body.replaceChildren();
  for (const m of msgs) {
    const box = el("input", { type: "checkbox", "data-partition": m.partition, "data-offset": m.offset });
    box.addEventListener("change", updateReplay);
    if (m.dropped) { box.disabled = true; box.title = "its contents were dropped to fit delay-failed: not replayable"; }
    const val = m.value.null ? "(none)" : m.value.base64 ? "base64 " + m.value.base64 : m.value.text || "";
    body.append(el("tr", { "data-offset": m.partition + "@" + m.offset },
      el("td", {}, box),
      el("td", {}, fmtTime(m.time)),
      el("td", { class: "reason" }, m.reason || "(no delay-error)"),
      el("td", {}, m.topic || ""),
      el("td", {}, m.source || ""),
      el("td", { class: "clip" }, el("code", {}, m.key.null ? "(none)" : m.key.text || m.key.base64)),
      el("td", { class: "clip", title: val }, el("code", {}, val)),
      el("td", { title: "partition " + m.partition + ", offset " + m.offset + " in delay-failed" }, m.partition + "@" + m.offset)));
  }
  if (!msgs.length) body.append(el("tr", {}, el("td", { colspan: 8 }, reason ? "no message matches" : "delay-failed is empty")));
  $("failed-all").checked = false;
  $("failed-actions").hidden = !state.write;
  updateReplay();
}

function selected() {
  return [...document.querySelectorAll("#failed-table tbody input:checked")].map((b) => ({
    partition: Number(b.dataset.partition), offset: Number(b.dataset.offset),
  }));
}
function updateReplay() {
  const n = selected().length;
  $("failed-replay").disabled = n === 0;
  $("failed-replay").textContent = "Replay " + (n ? n + " selected" : "selected") + " to delay-input";
}

async function replay() {
  const msgs = selected();
  if (!msgs.length || !confirm("Replay " + msgs.length + " message(s) to delay-input?")) return;
  try {
    const r = await api("failed/replay", { messages: msgs });
    $("failed-replay-result").textContent = r.replayed + " replayed";
    $("failed-replay-result").className = "ok";
  } catch (e) {
    $("failed-replay-result").textContent = e.message;
    $("failed-replay-result").className = "bad";
  }
}

// ---- routing --------------------------------------------------------------

function setMode(write) {
  state.write = write;
  $("mode").textContent = write ? "write" : "read-only";
  $("mode").className = "mode" + (write ? " write" : "");
  $("mode").title = write ? "actions need the console token" : "start delayd with --console-write to act";
  $("token-box").hidden = !write && !state.auth;
}

function route() {
  clearInterval(state.timer);
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const q = new URLSearchParams(query || "");
  const page = { "/task": "task", "/tasks": "tasks", "/failed": "failed", "/topics": "topics" }[path] || "overview";
  for (const p of ["overview", "tasks", "task", "failed", "topics"]) $("page-" + p).hidden = p !== page;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === page);
  banner("");
  if (page === "overview") {
    const tick = () => { loadOverview(); loadBacklog(); };
    tick();
    state.timer = setInterval(tick, 2000);
  } else if (page === "topics") {
    loadTopics(); // topics.js
    state.timer = setInterval(loadTopics, 2000);
  } else if (page === "task") {
    loadTask(q.get("id") || "", q.get("at") || "");
  } else if (page === "tasks") {
    loadTasks(q);
  } else {
    loadFailed(q.get("reason") || "");
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("token").addEventListener("input", () => {
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    // Reads need the token too: load the page again once typing pauses.
    clearTimeout(state.retry);
    if (state.auth) state.retry = setTimeout(() => api("overview").then((o) => setMode(o.write)).catch(() => {}).finally(route), 300);
  });
  $("task-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/task?" + new URLSearchParams({ id: $("task-id").value, at: $("task-at").value });
  });
  $("task-cancel").addEventListener("click", cancelTask);
  $("tasks-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/tasks?" + tasksQuery();
  });
  $("tasks-next").addEventListener("click", () => {
    const q = tasksQuery();
    q.set("cursor", $("tasks-next").dataset.cursor);
    location.hash = "#/tasks?" + q;
  });
  $("tasks-first").addEventListener("click", () => { location.hash = "#/tasks?" + tasksQuery(); });
  $("failed-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/failed?" + new URLSearchParams({ reason: $("failed-reason").value });
  });
  $("failed-all").addEventListener("change", () => {
    for (const b of document.querySelectorAll("#failed-table tbody input:not(:disabled)")) b.checked = $("failed-all").checked;
    updateReplay();
  });
  $("failed-replay").addEventListener("click", replay);
  window.addEventListener("hashchange", route);
  api("overview").then((o) => setMode(o.write)).catch(() => {}).finally(route);
});
