// vigil status page: live updates over one server-sent event stream (the
// status, the timeline's events and the graphs' samples), actions posted
// without leaving the page, and clocks that tick between updates. The
// page works without it (forms post, the page reloads by hand).
"use strict";

(function () {
  const V = window.vigil = window.vigil || {};
  const statusEl = document.getElementById("status");
  const liveEl = document.getElementById("live");
  const messageEl = document.getElementById("message");
  // URLs are built on location.origin: a page opened as http://user:pass@host/
  // must not hand its credentials to fetch (which refuses them).
  const url = V.url = (path) => new URL(path, location.origin).toString();
  let received = Date.now();

  // formatAge shows the two largest units: 3d 4h, 4h 12m, 12m 5s, 5s.
  V.formatAge = function (ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    const parts = [[Math.floor(s / 86400), "d"], [Math.floor(s % 86400 / 3600), "h"], [Math.floor(s % 3600 / 60), "m"], [s % 60, "s"]];
    for (let i = 0; i < 3; i++) {
      if (parts[i][0] > 0) return parts[i][0] + parts[i][1] + " " + parts[i + 1][0] + parts[i + 1][1];
    }
    return s + "s";
  };

  function formatIn(ms) {
    return ms < 10000 ? (ms / 1000).toFixed(1) + " s" : V.formatAge(ms);
  }

  // Every age and countdown is what the server said at render, moved on
  // by the time since: the browser's clock need not agree with the VM's.
  function tick() {
    const since = Date.now() - received;
    for (const el of statusEl.querySelectorAll(".uptime[data-age-ms]")) {
      el.textContent = V.formatAge(Number(el.dataset.ageMs) + since);
    }
    for (const el of statusEl.querySelectorAll(".ago[data-age-ms]")) {
      el.textContent = V.formatAge(Number(el.dataset.ageMs) + since) + " ago";
    }
    for (const el of statusEl.querySelectorAll(".countdown[data-in-ms]")) {
      const left = Number(el.dataset.inMs) - since;
      el.textContent = left > 0 ? formatIn(left) : "now";
    }
    if (V.timeline) V.timeline.tick();
  }
  setInterval(tick, 1000);

  function live(state, title) {
    liveEl.textContent = { on: "live", off: "reconnecting…", idle: "paused (tab hidden)", wait: "live updates wait…" }[state];
    liveEl.className = "live " + state;
    liveEl.title = title || "live updates";
  }

  function show(text, kind) {
    messageEl.hidden = false;
    messageEl.textContent = text;
    messageEl.className = "message" + (kind ? " " + kind : "");
  }

  // On a phone the configuration's problems are folded to their count at
  // first, so that the processes are on the first screen; the reader
  // opens them, and that stays across updates.
  const narrow = window.matchMedia("(max-width: 760px)");
  function fold() {
    const p = statusEl.querySelector("details.problems");
    if (p && narrow.matches) p.open = false;
  }
  fold();

  function onStatus(ev) {
    // Warnings and graphs a reader has opened stay open across updates.
    const open = new Set([...statusEl.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    statusEl.innerHTML = ev.data;
    for (const d of statusEl.querySelectorAll("details[data-key]")) d.open = open.has(d.dataset.key);
    received = Date.now();
    const daemon = statusEl.querySelector(".daemon");
    if (V.timeline) {
      V.timeline.token(daemon ? daemon.dataset.token : "");
      V.timeline.jobs([...statusEl.querySelectorAll("tbody.job")].map((b) => b.dataset.job));
    }
    if (V.graphs) V.graphs.draw();
    live("on");
  }
  statusEl.addEventListener("toggle", () => { if (V.graphs) V.graphs.draw(); }, true);

  // One stream per page, open while the page is seen: a tab hidden for
  // half a minute gives its connection back (the server holds a few live
  // streams at most), and takes one again when shown. A stream the server
  // refused (every slot taken) is tried again, less and less often.
  let es = null, retry = null, idle = null, backoff = 5000;
  function connect() {
    if (es || !window.EventSource || document.readyState === "loading") return;
    clearTimeout(retry);
    es = new EventSource(url("/events"));
    es.addEventListener("status", onStatus);
    es.addEventListener("event", (ev) => { if (V.timeline) V.timeline.add(ev.data); });
    es.addEventListener("samples", (ev) => { if (V.graphs) V.graphs.samples(JSON.parse(ev.data)); });
    es.addEventListener("open", () => { backoff = 5000; live("on"); });
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) {
        live("off"); // EventSource reconnects by itself
        return;
      }
      es = null;
      live("wait", "the server holds as many live views as it allows: close other tabs; trying again");
      retry = setTimeout(connect, backoff);
      backoff = Math.min(2 * backoff, 60000);
    });
  }
  function disconnect() {
    if (es) es.close();
    es = null;
    clearTimeout(retry);
    live("idle");
  }
  document.addEventListener("visibilitychange", () => {
    clearTimeout(idle);
    if (document.hidden) idle = setTimeout(disconnect, 30000);
    else connect();
  });
  // The stream opens once every script of the page has run: its first
  // messages (the recent events) must find the timeline and the graphs in
  // place, or they are lost (on a slow machine the next script was still
  // loading, and the timeline stayed empty).
  document.addEventListener("DOMContentLoaded", () => { if (!document.hidden) connect(); });
  if (!document.hidden) connect();

  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (!form.matches("form.act")) return;
    ev.preventDefault();
    const body = new URLSearchParams(new FormData(form, ev.submitter));
    const what = body.get("action") + " " + body.get("job") + (body.get("process") ? "/" + body.get("process") : "");
    const enabled = [...form.querySelectorAll("button:not([disabled])")];
    for (const b of enabled) b.disabled = true;
    show(what + "…", "busy");
    try {
      const res = await fetch(url("/action"), {
        method: "POST", body, credentials: "same-origin", headers: { "Accept": "application/json" },
      });
      let reply;
      try {
        reply = await res.json();
      } catch (e) {
        reply = { ok: false, message: what + ": HTTP " + res.status };
      }
      show(reply.message, reply.ok ? "" : "fail");
    } catch (e) {
      show(what + ": " + e, "fail");
    } finally {
      for (const b of enabled) b.disabled = false; // a form the update replaced is gone anyway
    }
  });
})();
