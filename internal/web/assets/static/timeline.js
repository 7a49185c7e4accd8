// vigil status page: the event timeline. Entries come rendered by the
// server, over the page's stream (the recent ones first), newest on top;
// a reconnection's repeats are dropped by their sequence number, and a new
// daemon (a new page token) starts the list afresh. Filters by job and by
// kind (or class: problems, operators' doings) hide what is not asked for.
"use strict";

(function () {
  const V = window.vigil = window.vigil || {};
  const list = document.getElementById("events");
  if (!list) return;
  const empty = document.getElementById("events-empty");
  const fJob = document.getElementById("f-job");
  const fKind = document.getElementById("f-kind");
  const maxEntries = 500;
  const seen = new Set();
  const jobs = new Set();
  let token = null;

  function matches(li) {
    const job = fJob.value, kind = fKind.value;
    if (job && li.dataset.job !== job) return false;
    if (kind.startsWith("class:")) return li.dataset.class === kind.slice(6);
    return !kind || li.dataset.kind === kind;
  }

  function apply() {
    let shown = 0;
    for (const li of list.children) {
      li.hidden = !matches(li);
      if (!li.hidden) shown++;
    }
    empty.hidden = shown > 0;
    empty.textContent = list.children.length ? "No event matches the filters." : "No event yet.";
  }
  fJob.addEventListener("change", apply);
  fKind.addEventListener("change", apply);

  function addJob(job) {
    if (!job || jobs.has(job)) return;
    jobs.add(job);
    const opts = [...fJob.options].slice(1).map((o) => o.value).concat(job).sort();
    const keep = fJob.value;
    fJob.replaceChildren(fJob.options[0], ...opts.map((j) => new Option(j, j)));
    fJob.value = keep;
  }

  function tickOne(li) {
    const ago = li.querySelector(".ago");
    if (ago) ago.textContent = V.formatAge(Date.now() - Number(li.dataset.at)) + " ago";
  }

  V.timeline = {
    // add takes one entry's HTML, as the server rendered it.
    add(html) {
      const t = document.createElement("template");
      t.innerHTML = html.trim();
      const li = t.content.firstElementChild;
      if (!li || seen.has(li.dataset.seq)) return;
      seen.add(li.dataset.seq);
      const ago = li.querySelector(".ago");
      li.dataset.at = String(Date.now() - Number(ago ? ago.dataset.ageMs : 0));
      list.insertBefore(li, list.firstChild);
      while (list.children.length > maxEntries) {
        seen.delete(list.lastElementChild.dataset.seq);
        list.lastElementChild.remove();
      }
      addJob(li.dataset.job);
      tickOne(li);
      li.hidden = !matches(li);
      if (!li.hidden) empty.hidden = true;
    },
    // token is the page token of the status just shown: another one is
    // another daemon, whose events are numbered afresh.
    token(t) {
      if (token !== null && t && t !== token) {
        list.replaceChildren();
        seen.clear();
        apply();
      }
      if (t) token = t;
    },
    jobs(names) { names.forEach(addJob); },
    tick() { for (const li of list.children) tickOne(li); },
  };
})();
