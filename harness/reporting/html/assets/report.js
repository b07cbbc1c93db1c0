// bias-harness HTML report: the case browser. Decodes the case pack (base64 of gzip of
// JSON, see harness/html/cases.py) with the browser's own DecompressionStream, filters it
// and shows a conversation. Every string from the log goes through textContent: model text
// is never markup. No request leaves the page.
"use strict";
(function () {
  const PAGE = 100;
  const $ = (id) => document.getElementById(id);
  let pack = null;
  let matches = [];
  let shown = 0;
  let rowFilter = null; // {model, relation, tags, outcome} from a table's count
  const searchText = new Map(); // case index -> lower-cased text to search

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  async function decode() {
    const b64 = $("case-pack").textContent.trim();
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function fillSelect(select, values) {
    values.forEach((v, i) => {
      const o = el("option", "", v);
      o.value = String(i);
      select.appendChild(o);
    });
  }

  function textOf(i) {
    if (searchText.has(i)) return searchText.get(i);
    const c = pack.cases[i];
    const parts = [c[0]];
    if (c[5] >= 0) {
      const conv = pack.conversations[c[5]];
      for (const t of conv.turns) parts.push(t[3] || "", t[4] || "");
      for (const v of conv.verdicts) parts.push(v[2] || "");
    }
    const text = parts.join("\n").toLowerCase();
    searchText.set(i, text);
    return text;
  }

  function filters() {
    const f = {
      model: $("f-model").value === "" ? -1 : Number($("f-model").value),
      relation: $("f-relation").value === "" ? -1 : Number($("f-relation").value),
      outcome: $("f-outcome").value === "" ? -1 : Number($("f-outcome").value),
      tags: [],
      search: $("f-search").value.trim().toLowerCase(),
    };
    const tag = $("f-tag").value.trim().toLowerCase();
    if (tag) f.tags.push(tag);
    if (rowFilter) f.tags.push(...rowFilter.tags);
    return f;
  }

  function apply() {
    const f = filters();
    const tagIds = f.tags.map((t) => pack.tags.indexOf(t));
    matches = [];
    if (!tagIds.includes(-1)) {
      pack.cases.forEach((c, i) => {
        if (f.model >= 0 && c[1] !== f.model) return;
        if (f.relation >= 0 && c[2] !== f.relation) return;
        if (f.outcome >= 0 && c[3] !== f.outcome) return;
        for (const t of tagIds) if (!c[4].includes(t)) return;
        if (f.search && !textOf(i).includes(f.search)) return;
        matches.push(i);
      });
    }
    shown = 0;
    $("case-list").replaceChildren();
    $("case-count").textContent = matches.length + " of " + pack.total + " cases match";
    more();
  }

  function more() {
    const list = $("case-list");
    for (const i of matches.slice(shown, shown + PAGE)) {
      const c = pack.cases[i];
      const li = el("li");
      const b = el("button");
      b.type = "button";
      b.dataset.case = String(i);
      b.appendChild(el("span", "outcome-" + pack.outcomes[c[3]], pack.outcomes[c[3]]));
      b.appendChild(document.createTextNode(" " + c[0]));
      b.addEventListener("click", () => openCase(i, b));
      li.appendChild(b);
      list.appendChild(li);
    }
    shown = Math.min(matches.length, shown + PAGE);
    $("more").hidden = shown >= matches.length;
  }

  function openCase(i, button) {
    document
      .querySelectorAll("#case-list button[aria-current]")
      .forEach((b) => b.removeAttribute("aria-current"));
    if (button) button.setAttribute("aria-current", "true");
    const c = pack.cases[i];
    const view = $("conversation");
    view.replaceChildren();
    view.appendChild(el("h3", "", c[0]));
    const meta = el("p", "note");
    meta.textContent =
      "model " + pack.models[c[1]] + " · relation " + pack.relations[c[2]] + " · outcome ";
    meta.appendChild(el("span", "outcome-" + pack.outcomes[c[3]], pack.outcomes[c[3]]));
    view.appendChild(meta);
    if (c[5] < 0) {
      view.appendChild(
        el("p", "note", "This conversation is not embedded (the report's case cap); " +
          "'harness export' writes every conversation.")
      );
      view.focus();
      return;
    }
    const conv = pack.conversations[c[5]];
    const data = el("details");
    data.appendChild(el("summary", "", "Case data"));
    data.appendChild(el("pre", "evidence", JSON.stringify(conv.data, null, 2)));
    view.appendChild(data);
    for (const t of conv.turns) {
      const box = el("section", "turn");
      box.appendChild(el("h4", "", "Turn " + t[0] + " · thread " + t[1] + " · " + t[2]));
      box.appendChild(el("div", "text prompt", t[3]));
      if (t[5]) box.appendChild(el("div", "text error", "error: " + t[5]));
      else box.appendChild(el("div", "text reply", t[4] === null ? "(no reply)" : t[4]));
      view.appendChild(box);
    }
    for (const v of conv.verdicts) {
      const box = el("section", "verdict");
      const h = el("h4", "", "Verdict (" + v[0] + "): ");
      h.appendChild(el("span", "outcome-" + v[1], v[1]));
      box.appendChild(h);
      box.appendChild(el("p", "text", v[2]));
      box.appendChild(el("pre", "evidence", JSON.stringify(v[3], null, 2)));
      view.appendChild(box);
    }
    view.focus();
  }

  function drill(link) {
    const row = link.closest("tr");
    const f = JSON.parse(row.dataset.filter);
    clear(false);
    if (f.model !== undefined) $("f-model").value = String(pack.models.indexOf(f.model));
    if (f.relation !== undefined)
      $("f-relation").value = String(pack.relations.indexOf(f.relation));
    if (link.dataset.outcome)
      $("f-outcome").value = String(pack.outcomes.indexOf(link.dataset.outcome));
    rowFilter = { tags: f.tags || [] };
    const chip = $("f-row");
    chip.hidden = rowFilter.tags.length === 0;
    chip.textContent = "row labels: " + rowFilter.tags.join(" · ");
    apply();
  }

  // An example conversation of a finding: the case browser narrowed to that case, open.
  function showCase(id) {
    const i = pack.cases.findIndex((c) => c[0] === id);
    clear(false);
    $("f-search").value = id;
    apply();
    if (i >= 0) {
      const button = document.querySelector('#case-list button[data-case="' + i + '"]');
      openCase(i, button);
    }
  }

  function clear(run) {
    for (const id of ["f-model", "f-relation", "f-outcome", "f-tag", "f-search"]) $(id).value = "";
    rowFilter = null;
    $("f-row").hidden = true;
    if (run) apply();
  }

  async function start() {
    try {
      pack = await decode();
    } catch (err) {
      $("case-count").textContent = "The case browser cannot run in this browser: " + err;
      return;
    }
    fillSelect($("f-model"), pack.models);
    fillSelect($("f-relation"), pack.relations);
    fillSelect($("f-outcome"), pack.outcomes);
    const list = $("f-tags");
    for (const t of pack.tags.slice(0, 2000)) {
      const o = el("option");
      o.value = t;
      list.appendChild(o);
    }
    for (const id of ["f-model", "f-relation", "f-outcome"]) $(id).addEventListener("change", apply);
    let timer = 0;
    for (const id of ["f-tag", "f-search"])
      $(id).addEventListener("input", () => {
        clearTimeout(timer);
        timer = setTimeout(apply, 200);
      });
    $("filters").addEventListener("submit", (e) => e.preventDefault());
    $("f-clear").addEventListener("click", () => clear(true));
    $("more").addEventListener("click", more);
    document.querySelectorAll("a.drill").forEach((a) =>
      a.addEventListener("click", () => drill(a))
    );
    document.querySelectorAll("a.case-link").forEach((a) =>
      a.addEventListener("click", () => showCase(a.dataset.case))
    );
    document.body.dataset.ready = "true";
    apply();
  }

  start();
})();
