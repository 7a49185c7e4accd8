// vigil log view: the last lines of a process's stdout and stderr, then
// every line written to either as it comes (the server follows the files
// through rotation), each with the time vigil read it, newest at the
// bottom and in view. Pause holds new lines (up to a bound) without
// moving the view; the page keeps at most maxLines lines. Search shows
// only the lines that hold its text (case ignored), new ones included.
"use strict";

(function () {
  const body = document.body;
  const linesEl = document.getElementById("lines");
  const logEl = document.getElementById("log");
  const liveEl = document.getElementById("live");
  const stateEl = document.getElementById("logstate");
  const pauseEl = document.getElementById("pause");
  const searchEl = document.getElementById("search");
  let query = "";

  // matches says whether a line holds the search's text.
  function matches(div) {
    return !query || div.querySelector(".x").textContent.toLowerCase().includes(query);
  }
  function mark(nodes) {
    for (const n of nodes) if (n.classList.contains("ln")) n.classList.toggle("miss", !matches(n));
  }
  const maxLines = 5000;
  let paused = false, held = [], dropped = 0, shown = 0;
  let es = null, retry = null, backoff = 5000;

  const path = "/logs/" + encodeURIComponent(body.dataset.job) + "/" + encodeURIComponent(body.dataset.process) +
    "/stream?n=" + encodeURIComponent(body.dataset.lines);

  function clock(ms) {
    const d = new Date(ms);
    const p = (n, w) => String(n).padStart(w || 2, "0");
    return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
  }

  function line(stream, at, text) {
    const div = document.createElement("div");
    div.className = "ln " + stream;
    const t = document.createElement("span"), s = document.createElement("span"), x = document.createElement("span");
    t.className = "t";
    s.className = "s";
    x.className = "x";
    if (at) {
      t.textContent = clock(at);
      t.title = new Date(at).toISOString() + " (when vigil read it)";
    }
    s.textContent = stream;
    x.textContent = text;
    div.append(t, s, x);
    return div;
  }

  function note(text, cls) {
    const div = document.createElement("div");
    div.className = "head" + (cls ? " " + cls : "");
    div.textContent = text;
    return div;
  }

  // atBottom: the view shows the newest lines (the log scrolls in reverse:
  // its bottom is scrollTop 0).
  function atBottom() {
    return Math.abs(logEl.scrollTop) < 4;
  }

  function append(nodes) {
    const follow = atBottom();
    mark(nodes);
    linesEl.append(...nodes);
    let n = linesEl.querySelectorAll(".ln").length;
    for (let first = linesEl.firstElementChild; n > maxLines && first; first = linesEl.firstElementChild) {
      if (first.classList.contains("ln")) n--;
      first.remove();
    }
    if (follow) logEl.scrollTop = 0;
  }

  function status() {
    let text = paused ? "paused: " + held.length + " new line" + (held.length === 1 ? "" : "s") + " held" +
      (dropped ? ", " + dropped + " dropped (over " + maxLines + ")" : "") : shown + " lines followed";
    if (query) {
      const all = linesEl.querySelectorAll(".ln").length, miss = linesEl.querySelectorAll(".ln.miss").length;
      text += "; " + (all - miss) + " of " + all + " lines hold \u201c" + searchEl.value + "\u201d";
    }
    stateEl.textContent = text;
  }

  function onTail(ev) {
    const tail = JSON.parse(ev.data);
    const nodes = [];
    for (const s of tail.streams) {
      const tag = s.name === "stderr" ? "err" : "out";
      nodes.push(note(s.name + ": " + (s.lines && s.lines.length ? "the last " + s.lines.length + " lines of " : "nothing yet in ") + s.path));
      if (s.error) nodes.push(note(s.error, "problem error"));
      for (const l of s.lines || []) nodes.push(line(tag, 0, l));
    }
    nodes.push(note("following both files since " + clock(Date.now()) + ": the times are when vigil read each line", "mark"));
    mark(nodes);
    linesEl.replaceChildren(...nodes);
    logEl.scrollTop = 0;
    held = [];
    dropped = 0;
    shown = 0;
    status();
  }

  function onLines(ev) {
    const batch = JSON.parse(ev.data).map(([s, at, text]) => line(s, at, text));
    shown += batch.length;
    if (paused) {
      held.push(...batch);
      if (held.length > maxLines) {
        dropped += held.length - maxLines;
        held.splice(0, held.length - maxLines);
      }
    } else {
      append(batch);
    }
    status();
  }

  pauseEl.addEventListener("click", () => {
    paused = !paused;
    pauseEl.textContent = paused ? "resume" : "pause";
    pauseEl.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      if (dropped) held.unshift(note(dropped + " lines were dropped while paused", "problem"));
      append(held);
      logEl.scrollTop = 0;
      held = [];
      dropped = 0;
    }
    status();
  });
  searchEl.addEventListener("input", () => {
    query = searchEl.value.trim().toLowerCase();
    mark(linesEl.children);
    logEl.scrollTop = 0;
    status();
  });
  for (const [id, cls] of [["show-out", "hide-out"], ["show-err", "hide-err"], ["show-times", "hide-times"]]) {
    const box = document.getElementById(id);
    box.addEventListener("change", () => logEl.classList.toggle(cls, !box.checked));
  }

  function live(state, title) {
    liveEl.textContent = { on: "following", off: "reconnecting…", wait: "waiting for a free live view…" }[state];
    liveEl.className = "live " + state;
    liveEl.title = title || "following the files";
  }

  function connect() {
    if (!window.EventSource) return;
    es = new EventSource(new URL(path, location.origin).toString());
    es.addEventListener("tail", onTail);
    es.addEventListener("lines", onLines);
    es.addEventListener("skipped", (ev) => append([note(JSON.parse(ev.data) + " lines skipped: the view could not keep up with the process", "problem")]));
    es.addEventListener("failed", (ev) => append([note("no longer followed: " + JSON.parse(ev.data), "problem error")]));
    es.addEventListener("open", () => { backoff = 5000; live("on"); });
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) {
        live("off");
        return;
      }
      live("wait", "the server holds as many live views as it allows: close other tabs; trying again");
      retry = setTimeout(connect, backoff);
      backoff = Math.min(2 * backoff, 60000);
    });
  }
  document.getElementById("logbar").hidden = false;
  connect();
})();
