// weir's status page: polls /status/group, keeps every instance's samples
// for the window, and draws the group, the topology, the charts, the
// stores and the events. No dependencies; everything is drawn as SVG.
"use strict";

const WINDOW_MS = 15 * 60 * 1000;
const REFRESH_MS = 2000;
const COLORS = ["#2f6fd6", "#1e9e6a", "#b7791f", "#c53030", "#6b46c1", "#2c7a7b", "#d53f8c", "#4a5568"];

const state = { samples: {}, since: 0, graphDrawn: false };

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  return Math.round(s / 3600) + " h";
}

function fmt(v) {
  if (!isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (a >= 1e3) return (v / 1e3).toFixed(1) + "k";
  if (a >= 10 || Number.isInteger(v)) return v.toFixed(0);
  if (a >= 0.01) return v.toFixed(2);
  return v.toExponential(1);
}

async function refresh() {
  try {
    const r = await fetch("/status/group?since=" + state.since, { cache: "no-store" });
    if (!r.ok) throw new Error(r.status + " " + (await r.text()));
    render(await r.json());
  } catch (e) {
    const el = document.getElementById("group-error");
    el.hidden = false;
    el.textContent = "cannot read the status: " + e.message;
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

function render(g) {
  const cut = g.time - WINDOW_MS;
  let newest = state.since;
  for (const m of g.members) {
    if (!m.report) continue;
    const list = state.samples[m.addr] || (state.samples[m.addr] = []);
    for (const s of m.report.samples) {
      if (!list.length || s.t > list[list.length - 1].t) list.push(s);
    }
    while (list.length && list[0].t < cut) list.shift();
    if (m.self && list.length) newest = list[list.length - 1].t;
  }
  // Every instance is asked for samples after the newest of this one's;
  // the others' clocks may differ a little: the window keeps what fits.
  state.since = newest;
  const errEl = document.getElementById("group-error");
  errEl.hidden = !g.error;
  errEl.textContent = g.error ? "reading the group: " + g.error + " (showing the members last read)" : "";
  renderHeader(g);
  renderMembers(g);
  if (!state.graphDrawn) {
    document.getElementById("topology").innerHTML = drawGraph(g.graph);
    state.graphDrawn = true;
  }
  renderCharts(g);
  renderStores(g);
  renderEvents(g);
}

function selfReport(g) {
  const m = g.members.find((m) => m.self && m.report);
  return m ? m.report : (g.members.find((m) => m.report) || {}).report;
}

function renderHeader(g) {
  const r = selfReport(g);
  if (!r) return;
  const i = r.info;
  document.getElementById("app").textContent = i.application;
  document.title = "weir · " + i.application;
  const parts = [
    ["state", '<span class="state ' + esc(i.state) + '">' + esc(i.state) + "</span>" + (i.reason ? " " + esc(i.reason) : "")],
    ["mode", esc(i.mode)],
    ["guarantee", esc(i.guarantee)],
    ["client", esc(i.client)],
    ["up", ago(g.time - i.started)],
    ["version", esc(i.version)],
    ["instances", String(g.members.length)],
    ["this instance", esc(g.self)],
  ];
  let html = parts.map(([k, v]) => "<span>" + k + " <b>" + v + "</b></span>").join("");
  if (i.error) html += '<span class="error">last error: ' + esc(i.error) + "</span>";
  document.getElementById("summary").innerHTML = html;
}

// rate is the per-second rate of a counter over the last two samples.
function rate(list, key) {
  if (!list || list.length < 2) return NaN;
  const a = list[list.length - 2], b = list[list.length - 1];
  return Math.max(0, b[key] - a[key]) / ((b.t - a.t) / 1000);
}

function parts(assigned) {
  const out = [];
  for (const topic of Object.keys(assigned || {}).sort()) {
    for (const p of assigned[topic].slice().sort((a, b) => a - b)) out.push(topic + "/" + p);
  }
  return out;
}

function renderMembers(g) {
  const rows = [];
  for (const m of g.members) {
    const r = m.report;
    const list = state.samples[m.addr];
    const st = r ? r.info.state : "unreachable";
    const last = list && list.length ? list[list.length - 1] : null;
    const standbys = last && last.standbyLag ? Object.keys(last.standbyLag).sort().map((k) => k + " (" + fmt(last.standbyLag[k]) + ")") : [];
    rows.push('<tr data-instance="' + esc(m.addr) + '" data-state="' + esc(st) + '">' +
      "<td>" + esc(m.addr || m.id) + (m.self ? " (this)" : "") + "</td>" +
      '<td><span class="state ' + esc(st) + '">' + esc(st) + "</span>" + (m.unreachable ? " " + esc(m.unreachable) : "") + "</td>" +
      "<td>" + (r ? ago(g.time - r.info.started) : "–") + "</td>" +
      '<td class="active">' + parts(m.assigned).map((p) => '<span class="part" data-partition="' + esc(p) + '">' + esc(p) + "</span>").join("") + "</td>" +
      "<td>" + (r ? r.info.restoringTasks : "–") + "</td>" +
      "<td>" + standbys.map((s) => '<span class="part">' + esc(s) + "</span>").join("") + "</td>" +
      "<td>" + fmt(rate(list, "in")) + "</td><td>" + fmt(rate(list, "out")) + "</td></tr>");
  }
  for (const gone of g.gone || []) {
    rows.push('<tr data-instance="' + esc(gone.addr) + '" data-state="gone"><td>' + esc(gone.addr) +
      '</td><td><span class="state gone">gone</span> left the group ' + ago(g.time - gone.lastSeen) + ' ago</td><td colspan="6"></td></tr>');
  }
  document.querySelector("#members tbody").innerHTML = rows.join("");
}

// drawGraph lays each sub-topology out in columns by depth from its
// sources, and draws the nodes with their topics and stores.
function drawGraph(graph) {
  const W = 230, H = 44, GX = 60, GY = 18;
  let html = "";
  for (const sub of graph.subtopologies || []) {
    const byName = {};
    sub.nodes.forEach((n) => (byName[n.name] = n));
    const depth = {};
    const visit = (n, d) => {
      if (depth[n.name] !== undefined && depth[n.name] >= d) return;
      depth[n.name] = d;
      for (const c of n.next || []) if (byName[c]) visit(byName[c], d + 1);
    };
    sub.nodes.filter((n) => n.kind === "source").forEach((n) => visit(n, 0));
    sub.nodes.forEach((n) => { if (depth[n.name] === undefined) visit(n, 0); });
    const cols = [];
    sub.nodes.forEach((n) => (cols[depth[n.name]] = cols[depth[n.name]] || []).push(n));
    const pos = {};
    cols.forEach((col, x) => col.forEach((n, y) => (pos[n.name] = { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
    const width = 20 + cols.length * (W + GX) - GX;
    const height = 20 + Math.max(...cols.map((c) => c.length)) * (H + GY) - GY;
    let svg = '<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + height + '" viewBox="0 0 ' + width + " " + height + '">' +
      '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#9aa5b4"/></marker></defs>';
    for (const n of sub.nodes) {
      for (const c of n.next || []) {
        if (!pos[c]) continue;
        const a = pos[n.name], b = pos[c];
        const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
        svg += '<path class="edge" d="M' + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + x2 + "," + y2 + '"/>';
      }
    }
    for (const n of sub.nodes) {
      const p = pos[n.name];
      let meta = "", cls = "meta";
      if (n.kind === "source") meta = "topics: " + (n.topics || []).join(", ");
      if (n.kind === "sink") meta = (n.external ? "external: " : "topic: ") + n.topic;
      if (n.kind === "processor" && n.stores && n.stores.length) { meta = "stores: " + n.stores.join(", "); cls = "store"; }
      const name = n.name.length > 32 ? n.name.slice(0, 31) + "…" : n.name;
      meta = meta.length > 36 ? meta.slice(0, 35) + "…" : meta;
      svg += '<g class="node ' + esc(n.kind) + '" data-node="' + esc(n.name) + '"><title>' + esc(n.kind + " " + n.name + (meta ? "\n" + meta : "")) + "</title>" +
        '<rect x="' + p.x + '" y="' + p.y + '" width="' + W + '" height="' + H + '"/>' +
        '<text x="' + (p.x + 8) + '" y="' + (p.y + 18) + '">' + esc(name) + "</text>" +
        '<text class="' + cls + '" x="' + (p.x + 8) + '" y="' + (p.y + 34) + '">' + esc(meta) + "</text></g>";
    }
    svg += "</svg>";
    html += '<div class="sub"><h3>Sub-topology ' + sub.id + (sub.global ? " (global table)" : "") + "</h3>" + svg + "</div>";
  }
  return html;
}

// lineChart draws lines of [t, v] points over the window ending at now.
function lineChart(id, title, lines, now, unit) {
  const W = 600, H = 150, L = 46, B = 18;
  let max = 0, count = 0;
  for (const l of lines) for (const [, v] of l.points) { if (isFinite(v)) { max = Math.max(max, v); count++; } }
  max = max > 0 ? max * 1.1 : 1;
  const x = (t) => L + ((t - (now - WINDOW_MS)) / WINDOW_MS) * (W - L - 4);
  const y = (v) => H - B - (v / max) * (H - B - 8);
  let svg = '<svg viewBox="0 0 ' + W + " " + H + '" preserveAspectRatio="none">';
  for (const f of [0, 0.5, 1]) {
    const v = (max / 1.1) * f;
    svg += '<line x1="' + L + '" x2="' + W + '" y1="' + y(v) + '" y2="' + y(v) + '" stroke="#e6e9ee"/>' +
      '<text x="' + (L - 4) + '" y="' + (y(v) + 4) + '" font-size="10" text-anchor="end" fill="#6b7686">' + fmt(v) + "</text>";
  }
  svg += '<text x="' + L + '" y="' + (H - 4) + '" font-size="10" fill="#6b7686">−15 min</text><text x="' + (W - 4) + '" y="' + (H - 4) + '" font-size="10" text-anchor="end" fill="#6b7686">now</text>';
  lines.forEach((l, i) => {
    const pts = l.points.filter(([, v]) => isFinite(v)).map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1));
    if (pts.length) svg += '<polyline fill="none" stroke-width="1.6" stroke="' + COLORS[i % COLORS.length] + '" points="' + pts.join(" ") + '"/>';
  });
  svg += "</svg>";
  const legend = lines.map((l, i) => '<span><i style="background:' + COLORS[i % COLORS.length] + '"></i>' + esc(l.name) + "</span>").join("");
  return '<div class="chart" id="' + id + '" data-points="' + count + '"><h3>' + esc(title) + (unit ? " (" + unit + ")" : "") + "</h3>" + svg + '<div class="legend">' + legend + "</div></div>";
}

// deltas turns a counter into per-second rates between samples (a counter
// that went down — a new run, a task gone — starts again from zero).
function deltas(list, read, perSecond) {
  const out = [];
  for (let i = 1; i < list.length; i++) {
    const a = list[i - 1], b = list[i];
    const d = read(b) - read(a);
    const dt = (b.t - a.t) / 1000;
    out.push([b.t, Math.max(0, d < 0 ? read(b) : d) / (perSecond && dt > 0 ? dt : 1)]);
  }
  return out;
}

function sum(o) { let s = 0; for (const k in o || {}) s += o[k]; return s; }

function renderCharts(g) {
  const now = g.time;
  const addrs = Object.keys(state.samples).filter((a) => g.members.some((m) => m.addr === a)).sort();
  const per = (name, read, perSecond) => addrs.map((a) => ({ name: name ? a + " " + name : a, points: deltas(state.samples[a], read, perSecond) }));
  const charts = [];
  charts.push(lineChart("chart-in", "Input rate", per("", (s) => s.in, true), now, "records/s"));
  charts.push(lineChart("chart-out", "Output rate", per("", (s) => s.out, true), now, "records/s"));
  // Lag: every partition's latest value from whichever instance reports it.
  const lag = {};
  for (const a of addrs) for (const s of state.samples[a]) for (const k in s.lag || {}) (lag[k] = lag[k] || []).push([s.t, s.lag[k]]);
  charts.push(lineChart("chart-lag", "Lag per partition", Object.keys(lag).sort().map((k) => ({ name: k, points: lag[k].sort((p, q) => p[0] - q[0]) })), now, "records"));
  // Phases: the mean duration of each phase between two samples, over the group.
  const phases = new Set();
  for (const a of addrs) for (const s of state.samples[a]) for (const k in s.phases || {}) phases.add(k);
  const phaseLines = [...phases].sort().map((ph) => {
    const pts = [];
    for (const a of addrs) {
      const list = state.samples[a];
      for (let i = 1; i < list.length; i++) {
        const p = (list[i].phases || {})[ph], q = (list[i - 1].phases || {})[ph];
        if (!p || !q || p[1] <= q[1]) continue;
        pts.push([list[i].t, ((p[0] - q[0]) / (p[1] - q[1])) * 1000]);
      }
    }
    return { name: ph, points: pts.sort((x, y) => x[0] - y[0]) };
  }).filter((l) => l.points.length);
  charts.push(lineChart("chart-phases", "Epoch or batch phases, mean duration", phaseLines, now, "ms"));
  const total = (read) => {
    const m = {};
    for (const a of addrs) for (const [t, v] of deltas(state.samples[a], read, false)) m[t] = (m[t] || 0) + v;
    return Object.keys(m).map(Number).sort((x, y) => x - y).map((t) => [t, m[t]]);
  };
  charts.push(lineChart("chart-commits", "Commits, aborts and rewinds per interval", [
    { name: "commits", points: total((s) => s.commits) },
    { name: "failed commits", points: total((s) => s.failed) },
    { name: "aborts", points: total((s) => s.aborts) },
    { name: "rewinds", points: total((s) => s.rewinds) },
  ], now, ""));
  charts.push(lineChart("chart-bad", "Records dead-lettered, skipped and dropped late per interval", [
    { name: "dead-lettered", points: total((s) => s.deadLettered) },
    { name: "skipped", points: total((s) => s.skipped) },
    { name: "dropped late", points: total((s) => s.late) },
  ], now, ""));
  const standby = {};
  for (const a of addrs) for (const s of state.samples[a]) for (const k in s.standbyLag || {}) (standby[a + " " + k] = standby[a + " " + k] || []).push([s.t, s.standbyLag[k]]);
  if (Object.keys(standby).length) charts.push(lineChart("chart-standby", "Standby changelog lag", Object.keys(standby).sort().map((k) => ({ name: k, points: standby[k] })), now, "records"));
  document.getElementById("charts").innerHTML = charts.join("");
}

// storeTopics maps each store to the source topics of its sub-topology:
// the partitions of those a member is assigned are its active copies.
function storeTopics(graph) {
  const out = {};
  for (const sub of graph.subtopologies || []) {
    const topics = sub.nodes.filter((n) => n.kind === "source").flatMap((n) => n.topics || []);
    for (const n of sub.nodes) for (const s of n.stores || []) out[s] = sub.global ? null : topics;
  }
  return out;
}

// role says whether a member runs a store partition (active), or holds a
// copy of it (a standby, or rows left from an earlier assignment).
function role(m, topicsOf, store, partition) {
  // A companion store (the timestamps of a count, a window's stream
  // time) is named after the store it serves.
  const base = store in topicsOf ? store :
    Object.keys(topicsOf).filter((k) => store.startsWith(k + "-")).sort((a, b) => b.length - a.length)[0];
  const topics = topicsOf[base];
  if (topics === null) return "global";
  for (const topic in m.assigned || {}) {
    // Assigned topics carry the application id prefix of internal topics.
    if ((topics || []).some((t) => topic === t || topic.endsWith("-" + t)) && m.assigned[topic].includes(partition)) return "active";
  }
  return "copy";
}

function renderStores(g) {
  const rows = [];
  const disk = [];
  const topicsOf = storeTopics(g.graph);
  for (const m of g.members) {
    if (!m.report) continue;
    for (const s of m.report.stores || []) {
      rows.push("<tr><td>" + esc(m.addr) + "</td><td>" + esc(s.store) + "</td><td>" + s.partition + "</td><td>" +
        role(m, topicsOf, s.store, s.partition) + "</td><td>" + fmt(s.rows) + "</td></tr>");
    }
    if (m.report.diskBytes) disk.push(esc(m.addr) + ": " + fmt(m.report.diskBytes) + "B");
  }
  document.querySelector("#stores tbody").innerHTML = rows.join("") || '<tr><td colspan="5" class="note">no persistent stores on the instances (counted every 30 s)</td></tr>';
  document.getElementById("disk").textContent = disk.length ? "State database on disk — " + disk.join(", ") : "";
}

function renderEvents(g) {
  const all = [];
  for (const m of g.members) if (m.report) for (const e of m.report.events || []) all.push(Object.assign({ addr: m.addr }, e));
  all.sort((a, b) => b.t - a.t);
  document.getElementById("events").innerHTML = all.slice(0, 40).map((e) =>
    '<li class="ev-' + esc(e.kind) + (e.kind === "state" ? " ev-" + esc(e.text.split(":")[0]) : "") + '"><time>' + new Date(e.t).toISOString().slice(11, 19) + "</time>" + esc(e.addr) + ": " + esc(e.text) + "</li>").join("") ||
    '<li class="note">none yet</li>';
}

refresh();
