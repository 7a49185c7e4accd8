// vigil status page: live updates over server-sent events, actions posted
// without leaving the page, and uptimes that tick between updates. The page
// works without it (forms post, the page reloads by hand).
"use strict";

(function () {
  const statusEl = document.getElementById("status");
  const liveEl = document.getElementById("live");
  const messageEl = document.getElementById("message");
  // URLs are built on location.origin: a page opened as http://user:pass@host/
  // must not hand its credentials to fetch (which refuses them).
  const url = (path) => new URL(path, location.origin).toString();
  let received = Date.now();

  function formatAge(ms) {
    let s = Math.max(0, Math.floor(ms / 1000));
    const parts = [[Math.floor(s / 86400), "d"], [Math.floor(s % 86400 / 3600), "h"], [Math.floor(s % 3600 / 60), "m"], [s % 60, "s"]];
    for (let i = 0; i < 3; i++) {
      if (parts[i][0] > 0) return parts[i][0] + parts[i][1] + " " + parts[i + 1][0] + parts[i + 1][1];
    }
    return s + "s";
  }

  function tick() {
    const since = Date.now() - received;
    for (const el of statusEl.querySelectorAll(".uptime[data-age-ms]")) {
      el.textContent = formatAge(Number(el.dataset.ageMs) + since);
    }
  }
  setInterval(tick, 1000);

  function live(on) {
    liveEl.textContent = on ? "live" : "reconnecting…";
    liveEl.className = "live " + (on ? "on" : "off");
  }

  function show(text, kind) {
    messageEl.hidden = false;
    messageEl.textContent = text;
    messageEl.className = "message" + (kind ? " " + kind : "");
  }

  if (window.EventSource) {
    const es = new EventSource(url("/events"));
    es.addEventListener("status", (ev) => {
      // Warnings a reader has opened stay open across updates.
      const open = new Set([...statusEl.querySelectorAll("details[open]")].map((d) => d.dataset.key));
      statusEl.innerHTML = ev.data;
      for (const d of statusEl.querySelectorAll("details[data-key]")) d.open = open.has(d.dataset.key);
      received = Date.now();
      live(true);
    });
    es.addEventListener("open", () => live(true));
    es.addEventListener("error", () => live(false)); // EventSource reconnects by itself
  }

  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (!form.matches("form.act")) return;
    ev.preventDefault();
    const body = new URLSearchParams(new FormData(form, ev.submitter));
    const what = body.get("action") + " " + body.get("job") + (body.get("process") ? "/" + body.get("process") : "");
    for (const b of form.querySelectorAll("button")) b.disabled = true;
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
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  });
})();
