// vigil status page: history graphs, drawn by the page as SVG. The last
// hour of every process comes from /v1/history once, then grows by the
// newest points the page's stream sends ("samples"); six hours are fetched
// again at most once a minute while shown. Sparklines in the table (a
// job's are the sums of its processes), and five charts per process when
// its "graphs" are opened: CPU, memory (with its limit), descriptors,
// restarts and probe latency, with the time it was down shaded.
"use strict";

(function () {
  const V = window.vigil = window.vigil || {};
  const rangeEl = document.getElementById("range");
  if (!rangeEl) return;
  const NS = "http://www.w3.org/2000/svg";
  const spans = { "15m": 900, "1h": 3600, "6h": 21600 };
  const columns = ["up", "cpu_cores", "rss_bytes", "open_fds", "restarts", "liveness_ms", "readiness_ms"];
  let span = "1h";
  let fine = new Map(); // "JOB/PROC" → the last hour, fine points
  let coarse = null, coarseAt = 0; // the same over six hours, and when it was fetched

  async function load(s) {
    const res = await fetch(V.url("/v1/history?span=" + s), { credentials: "same-origin" });
    if (!res.ok) throw new Error("history: HTTP " + res.status);
    const reply = await res.json();
    return new Map(reply.series.map((x) => [x.job + "/" + x.process, x]));
  }

  // samples appends the newest points, keeping an hour.
  function samples(reply) {
    const keep = new Map();
    for (const s of reply.series) {
      const key = s.job + "/" + s.process;
      let cur = fine.get(key);
      if (!cur) cur = { job: s.job, process: s.process, t: [], ...Object.fromEntries(columns.map((c) => [c, []])) };
      cur.step_seconds = s.step_seconds;
      for (let i = 0; i < s.t.length; i++) {
        if (cur.t.length && s.t[i] <= cur.t[cur.t.length - 1]) continue;
        cur.t.push(s.t[i]);
        for (const c of columns) cur[c].push(s[c][i]);
      }
      const from = cur.t.length ? cur.t[cur.t.length - 1] - spans["1h"] : 0;
      const cut = cur.t.findIndex((t) => t > from);
      if (cut > 0) {
        cur.t.splice(0, cut);
        for (const c of columns) cur[c].splice(0, cut);
      }
      keep.set(key, cur);
    }
    fine = keep;
    if (span === "6h" && Date.now() - coarseAt > 60000) reload();
    else draw();
  }

  // reload fetches the span shown; a failure is said beside the range's
  // buttons (the graphs then grow from the stream's points only).
  const errorEl = document.createElement("span");
  errorEl.className = "error";
  errorEl.hidden = true;
  rangeEl.appendChild(errorEl);
  async function reload() {
    try {
      if (span === "6h") {
        coarse = await load("6h");
        coarseAt = Date.now();
      } else {
        fine = merge(await load("1h"), fine);
      }
      errorEl.hidden = true;
      rangeEl.dataset.loaded = span;
    } catch (e) {
      errorEl.textContent = "the history could not be read (" + e.message + "): the graphs show only what came since this page was opened";
      errorEl.hidden = false;
    }
    draw();
  }

  // merge keeps the points the stream sent while the history was fetched.
  function merge(loaded, streamed) {
    for (const [key, s] of streamed) {
      const cur = loaded.get(key);
      if (!cur) {
        loaded.set(key, s);
        continue;
      }
      const last = cur.t.length ? cur.t[cur.t.length - 1] : -Infinity;
      s.t.forEach((t, i) => {
        if (t <= last) return;
        cur.t.push(t);
        for (const c of columns) cur[c].push(s[c][i]);
      });
    }
    return loaded;
  }

  rangeEl.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-span]");
    if (!b) return;
    span = b.dataset.span;
    for (const o of rangeEl.querySelectorAll("button")) o.setAttribute("aria-pressed", String(o === b));
    if (span === "6h" && Date.now() - coarseAt > 60000) reload();
    else draw();
  });

  // series is what a key draws over span sp: a process's own, or for a
  // job (a key without "/") the sums of its processes at each time.
  function series(key, sp) {
    const src = sp === "6h" && coarse ? coarse : fine;
    let s = src.get(key);
    if (!key.includes("/")) s = sum([...src.entries()].filter(([k]) => k.startsWith(key + "/")).map(([, v]) => v));
    if (!s || !s.t.length) return null;
    const step = s.step_seconds || 10, end = s.t[s.t.length - 1];
    const i = s.t.findIndex((t) => t > end - spans[sp]);
    const cut = (a) => a.slice(i < 0 ? a.length : i);
    const out = { t: cut(s.t), end, step };
    for (const c of columns) out[c] = cut(s[c]);
    // A history shorter than the span (a daemon that just started) is
    // drawn across the whole width, and the axis says how far it goes.
    out.from = Math.max(end - spans[sp], out.t[0] - step);
    return out;
  }

  function sum(list) {
    if (!list.length) return null;
    const at = new Map();
    for (const s of list) {
      s.t.forEach((t, i) => {
        let p = at.get(t);
        if (!p) at.set(t, p = { n: 0, up: 0, cpu_cores: null, rss_bytes: null, open_fds: null, restarts: 0, liveness_ms: null, readiness_ms: null });
        p.n++;
        p.up += s.up[i];
        p.restarts += s.restarts[i];
        for (const c of ["cpu_cores", "rss_bytes", "open_fds"]) if (s[c][i] !== null) p[c] = (p[c] || 0) + s[c][i];
        for (const c of ["liveness_ms", "readiness_ms"]) if (s[c][i] !== null) p[c] = Math.max(p[c] || 0, s[c][i]);
      });
    }
    const ts = [...at.keys()].sort((a, b) => a - b);
    const out = { t: ts, step_seconds: list[0].step_seconds };
    for (const c of columns) out[c] = ts.map((t) => (c === "up" ? at.get(t).up / at.get(t).n : at.get(t)[c]));
    return out;
  }

  const fmt = {
    cpu_cores: (v) => (100 * v).toFixed(v < 0.1 ? 1 : 0) + "% of a core",
    rss_bytes: (v) => {
      const u = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      for (; v >= 1024 && i < u.length - 1; i++) v /= 1024;
      return (i ? v.toFixed(1) : v.toFixed(0)) + " " + u[i];
    },
    open_fds: (v) => v.toFixed(0) + " descriptors",
    restarts: (v) => v.toFixed(0) + " restarts",
    liveness_ms: (v) => v.toFixed(1) + " ms",
    readiness_ms: (v) => v.toFixed(1) + " ms",
  };

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  // path is an SVG path of values over time within w × h (top margin 1),
  // broken where a value is missing.
  function path(s, values, top, w, h) {
    let d = "", pen = false;
    values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      const x = (w * (s.t[i] - s.from)) / (s.end - s.from);
      const y = h - 1.5 - ((h - 3) * v) / (top || 1);
      d += (pen ? "L" : "M") + x.toFixed(2) + " " + y.toFixed(2);
      pen = true;
    });
    return d;
  }

  // ago shows a span of seconds as the axis says it: 40 s, 12 min, 1 h 30 min.
  function ago(sec) {
    if (sec < 120) return Math.round(sec) + " s";
    if (sec < 3600) return Math.round(sec / 60) + " min";
    const h = Math.floor(sec / 3600), m = Math.round((sec % 3600) / 60);
    return h + " h" + (m ? " " + m + " min" : "");
  }

  function maxOf(values) {
    return values.reduce((m, v) => (v === null ? m : Math.max(m, v)), 0);
  }

  function increments(r) {
    return r.map((v, i) => (i === 0 ? 0 : Math.max(0, v - r[i - 1])));
  }

  // downBands shades the points where the process was not up.
  function downBands(svg, s, w, h) {
    const pw = (w * s.step) / (s.end - s.from);
    s.up.forEach((u, i) => {
      if (u >= 1) return;
      const x = (w * (s.t[i] - s.from)) / (s.end - s.from) - pw;
      el("rect", { class: "down", x: Math.max(0, x).toFixed(2), y: 0, width: pw.toFixed(2), height: h, "fill-opacity": (1 - u).toFixed(2) }, svg);
    });
  }

  // drawSpark draws the last hour as a line over a shaded area, scaled so
  // that a steady figure sits at four fifths of the height (not on the
  // edge, where it read as empty), and a figure of zero just above the
  // bottom.
  function drawSpark(svg) {
    const s = series(svg.dataset.key, "1h");
    const metric = svg.dataset.metric === "cpu" ? "cpu_cores" : "rss_bytes";
    for (const c of [...svg.children]) if (c.tagName !== "title") c.remove();
    svg.classList.toggle("nodata", !s);
    if (!s) return;
    const values = s[metric], top = maxOf(values);
    downBands(svg, s, 100, 24);
    const line = path(s, values, top * 1.25, 100, 24);
    const area = line.split("M").filter(Boolean).map((seg) => {
      const pts = seg.split("L");
      const x0 = pts[0].split(" ")[0], x1 = pts[pts.length - 1].split(" ")[0];
      return "M" + x0 + " 24L" + seg + "L" + x1 + " 24Z";
    }).join("");
    if (area) el("path", { d: area, class: "area" }, svg);
    el("path", { d: line, class: "line", "vector-effect": "non-scaling-stroke" }, svg);
    const last = values.filter((v) => v !== null).pop();
    const title = svg.querySelector("title");
    const label = svg.getAttribute("aria-label");
    if (title) title.textContent = label + ": " + (last === undefined ? "no figure" : "now " + fmt[metric](last) + ", at most " + fmt[metric](top));
  }

  // chart draws one figure of a process's charts.
  function chart(box, s, label, lines, opts) {
    const fig = document.createElement("figure");
    fig.className = "chart";
    const cap = document.createElement("figcaption");
    const values = lines.flatMap((l) => l.values);
    let top = maxOf(values);
    const last = lines.map((l) => l.values.filter((v) => v !== null).pop());
    cap.textContent = label + ": " + (last.every((v) => v === undefined) ? opts.none || "no figure" : lines.map((l, i) =>
      (lines.length > 1 ? l.name + " " : "") + (last[i] === undefined ? "—" : l.fmt(last[i]))).join(", ")) +
      (top > 0 ? " · at most " + lines[0].fmt(top) : "") + (opts.note ? " · " + opts.note : "");
    if (opts.limit && opts.limit <= top * 1.5) top = Math.max(top, opts.limit);
    const svg = el("svg", { viewBox: "0 0 300 80", preserveAspectRatio: "none", role: "img", "aria-label": cap.textContent });
    downBands(svg, s, 300, 80);
    if (opts.limit && opts.limit <= top) {
      const y = (80 - 1 - (78 * opts.limit) / (top * 1.1)).toFixed(2);
      el("line", { class: "limit", x1: 0, x2: 300, y1: y, y2: y, "vector-effect": "non-scaling-stroke" }, svg);
    }
    lines.forEach((l, i) => {
      if (opts.bars) {
        const bw = Math.max(1, (300 * s.step) / (s.end - s.from));
        l.values.forEach((v, j) => {
          if (!v) return;
          const x = (300 * (s.t[j] - s.from)) / (s.end - s.from) - bw;
          const bh = (78 * v) / (top || 1);
          el("rect", { class: "bar", x: x.toFixed(2), y: (79 - bh).toFixed(2), width: bw.toFixed(2), height: bh.toFixed(2) }, svg);
        });
        return;
      }
      el("path", { d: path(s, l.values, top * 1.1, 300, 80), class: "line l" + i, "vector-effect": "non-scaling-stroke" }, svg);
    });
    const axis = document.createElement("div");
    axis.className = "axis";
    axis.innerHTML = "<span></span><span>now</span>";
    axis.firstChild.textContent = "−" + ago(s.end - s.from);
    fig.append(cap, svg, axis);
    box.appendChild(fig);
  }

  function drawCharts(box) {
    const key = box.dataset.key;
    const s = series(key, span);
    box.replaceChildren();
    if (!s) {
      box.textContent = "No history yet.";
      return;
    }
    const row = document.querySelector(`tr.proc[data-job="${CSS.escape(key.split("/")[0])}"][data-process="${CSS.escape(key.split("/")[1])}"]`);
    const limit = row && row.dataset.limit ? Number(row.dataset.limit) : 0;
    chart(box, s, "CPU", [{ values: s.cpu_cores, fmt: fmt.cpu_cores }], {});
    chart(box, s, "memory", [{ values: s.rss_bytes, fmt: fmt.rss_bytes }], { limit, note: limit ? "limit " + fmt.rss_bytes(limit) : "" });
    chart(box, s, "open descriptors", [{ values: s.open_fds, fmt: fmt.open_fds }], {});
    const inc = increments(s.restarts);
    chart(box, s, "restarts", [{ values: inc, fmt: fmt.restarts }], { bars: true, note: inc.reduce((a, b) => a + b, 0) + " in the span" });
    chart(box, s, "probe latency", [{ name: "liveness", values: s.liveness_ms, fmt: fmt.liveness_ms },
      { name: "readiness", values: s.readiness_ms, fmt: fmt.readiness_ms }], { none: "no liveness or readiness probe" });
  }

  function draw() {
    for (const svg of document.querySelectorAll("svg.spark")) drawSpark(svg);
    for (const box of document.querySelectorAll("details.graphs[open] .charts")) drawCharts(box);
  }

  V.graphs = { samples, draw };
  reload();
})();
