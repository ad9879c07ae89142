// irqscope dashboard: the topology and device editors, live results, hover highlighting and
// the copy buttons. Plain JavaScript, no libraries, no network beyond this server.
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  };

  // ---- cpulists (the kernel's a-b,c form) ----
  function cpulist(cpus) {
    const s = [...cpus].sort((a, b) => a - b);
    const out = [];
    for (let i = 0; i < s.length; ) {
      let j = i;
      while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
      out.push(i === j ? `${s[i]}` : `${s[i]}-${s[j]}`);
      i = j + 1;
    }
    return out.join(",");
  }
  function parseList(text) {
    const set = new Set();
    for (const part of (text || "").split(",").map((p) => p.trim()).filter(Boolean)) {
      const [a, b] = part.split("-").map(Number);
      if (Number.isInteger(a)) for (let c = a; c <= (Number.isInteger(b) ? b : a) && c - a < 8192; c++) set.add(c);
    }
    return set;
  }

  // ---- the editor model → a TopologySpec ----
  function buildTopology(ed) {
    const nodes = ed.nodes;
    const totalCores = nodes.reduce((n, x) => n + x.cores, 0);
    const nodeLists = [], smt = [], clusters = [], absent = new Set(), offline = new Set();
    let next = 0, coreBase = 0;
    for (const node of nodes) {
      const cpus = [];
      const cores = [];
      for (let k = 0; k < node.cores; k++) {
        const threads = [];
        for (let t = 0; t < node.threads; t++) {
          const cpu = ed.smt_numbering === "offset" ? coreBase + k + t * totalCores : next++;
          threads.push(cpu);
          cpus.push(cpu);
        }
        cores.push(threads);
        if (threads.length > 1) smt.push(cpulist(threads));
      }
      coreBase += node.cores;
      if (node.cluster > 0) {
        for (let k = 0; k < cores.length; k += node.cluster) clusters.push(cpulist(cores.slice(k, k + node.cluster).flat()));
      }
      nodeLists.push(cpulist(cpus));
      const mine = new Set(cpus);
      for (const c of parseList(node.absent)) if (mine.has(c)) absent.add(c);
      for (const c of parseList(node.offline)) if (mine.has(c)) offline.add(c);
    }
    const all = nodeLists.flatMap((l) => [...parseList(l)]);
    const present = all.filter((c) => !absent.has(c));
    const online = present.filter((c) => !offline.has(c));
    const spec = { name: ed.name, nodes: nodeLists, distances: ed.distances };
    if (smt.length) spec.smt = smt;
    if (clusters.length) spec.clusters = clusters;
    if (absent.size) spec.present = cpulist(present);
    if (offline.size) spec.online = cpulist(online);
    return spec;
  }

  // ---- page state ----
  const inputs = $("#inputs");
  let state = null;
  if (inputs) state = JSON.parse(inputs.dataset.state);
  let view = { metric: "", node: "" };
  let timer = null, inflight = null;

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(update, 250);
  }

  async function update() {
    const result = $("#result");
    if (inflight) inflight.abort();
    inflight = new AbortController();
    const qs = new URLSearchParams();
    if (view.metric) qs.set("metric", view.metric);
    if (view.node !== "") qs.set("node", view.node);
    result.classList.add("busy");
    try {
      const resp = await fetch("/fragment?" + qs, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(state.spec),
        signal: inflight.signal,
      });
      const body = await resp.text();
      if (!resp.ok) {
        showError(body);
        return;
      }
      result.innerHTML = body;
      const link = resp.headers.get("x-permalink");
      if (link) {
        history.replaceState(null, "", "/s/" + link + (qs.toString() ? "?" + qs : ""));
        const cs = $("#compare-s");
        if (cs) cs.value = link;
      }
      wireResult();
    } catch (e) {
      if (e.name !== "AbortError") showError(String(e));
    } finally {
      result.classList.remove("busy");
    }
  }

  function showError(text) {
    let box = $("#input-error");
    if (!box) {
      box = el("p", { id: "input-error", class: "error" });
      inputs.prepend(box);
    }
    box.textContent = text.trim();
    box.hidden = !text;
  }

  function clearError() {
    const box = $("#input-error");
    if (box) box.hidden = true;
  }

  function changed() {
    clearError();
    schedule();
  }

  // Topology edited: from now on the scenario carries it inline.
  function topologyChanged() {
    const ed = state.editor;
    if (!ed.name.startsWith("custom")) ed.name = "custom (from " + ed.name + ")";
    state.spec.topology = buildTopology(ed);
    renderTopology();
    changed();
  }

  const num = (value, min, max, onset, attrs) =>
    el("input", Object.assign({ type: "number", min, max, value, onchange: (e) => onset(Math.max(min, Math.min(max, parseInt(e.target.value, 10) || 0))) }, attrs || {}));
  const txt = (value, onset, attrs) => el("input", Object.assign({ type: "text", value, onchange: (e) => onset(e.target.value.trim()) }, attrs || {}));

  function renderTopology() {
    const ed = state.editor;
    const box = $("#topo-editor");
    box.replaceChildren();
    box.append(el("div", { class: "row" },
      el("span", { text: ed.name, id: "topo-name" }),
      el("label", {}, "SMT numbering ",
        (() => {
          const s = el("select", { id: "smt-numbering", onchange: (e) => { ed.smt_numbering = e.target.value; topologyChanged(); } },
            el("option", { value: "adjacent", text: "adjacent (2k, 2k+1)" }), el("option", { value: "offset", text: "offset (k, k+N)" }));
          s.value = ed.smt_numbering;
          return s;
        })())));
    const table = el("table", { id: "nodes" }, el("tr", {}, ...["node", "cores", "SMT", "cores/cluster", "offline", "not present", ""].map((h) => el("th", { text: h }))));
    ed.nodes.forEach((n, i) => {
      table.append(el("tr", { class: "node-row" },
        el("td", { text: String(i) }),
        el("td", {}, num(n.cores, 0, 4096, (v) => { n.cores = v; topologyChanged(); }, { class: "cores" })),
        el("td", {}, el("label", {}, (() => {
          const c = el("input", { type: "checkbox", class: "smt", onchange: (e) => { n.threads = e.target.checked ? 2 : 1; topologyChanged(); } });
          c.checked = n.threads > 1;
          return c;
        })(), "on")),
        el("td", {}, num(n.cluster, 0, 4096, (v) => { n.cluster = v; topologyChanged(); }, { class: "cluster" })),
        el("td", {}, txt(n.offline, (v) => { n.offline = v; topologyChanged(); }, { class: "offline", placeholder: "cpulist" })),
        el("td", {}, txt(n.absent, (v) => { n.absent = v; topologyChanged(); }, { class: "absent", placeholder: "cpulist" })),
        el("td", {}, el("button", { type: "button", class: "del-node", text: "×", title: "remove node", onclick: () => {
          if (ed.nodes.length <= 1) return;
          ed.nodes.splice(i, 1);
          ed.distances.splice(i, 1);
          ed.distances.forEach((row) => row.splice(i, 1));
          topologyChanged();
        } }))));
    });
    box.append(table);
    box.append(el("button", { type: "button", id: "add-node", text: "add node", onclick: () => {
      const last = ed.nodes[ed.nodes.length - 1] || { cores: 4, threads: 2, cluster: 0 };
      ed.nodes.push({ cores: last.cores, threads: last.threads, cluster: last.cluster, offline: "", absent: "" });
      ed.distances.forEach((row) => row.push(20));
      ed.distances.push(ed.nodes.map((_, j) => (j === ed.nodes.length - 1 ? 10 : 20)));
      topologyChanged();
    } }));
    const dist = el("table", { class: "dist", id: "distances" }, el("tr", {}, el("th", { text: "distance" }), ...ed.nodes.map((_, j) => el("th", { text: String(j) }))));
    ed.distances.forEach((row, a) => {
      dist.append(el("tr", {}, el("th", { text: String(a) }), ...row.map((d, b) => el("td", {}, num(d, 10, 254, (v) => { row[b] = v; topologyChanged(); })))));
    });
    box.append(el("details", {}, el("summary", { text: "distance matrix" }), dist));
  }

  function renderDevices() {
    const box = $("#dev-editor");
    box.replaceChildren();
    const devs = state.spec.devices;
    const table = el("table", { id: "devices" }, el("tr", {}, ...["name", "count", "queues", "pre", "post", "sets", "managed", "blk-mq", ""].map((h) => el("th", { text: h }))));
    devs.forEach((d, i) => {
      const set = (k, v) => { if (v === "" || v === null) delete d[k]; else d[k] = v; changed(); };
      table.append(el("tr", { class: "dev-row" },
        el("td", {}, txt(d.name || "", (v) => set("name", v), { class: "name" })),
        el("td", {}, num(d.count ?? 1, 1, 256, (v) => set("count", v), { class: "count" })),
        el("td", {}, num(d.queues, 0, 2048, (v) => set("queues", v), { class: "queues" })),
        el("td", {}, num(d.pre ?? 0, 0, 2048, (v) => set("pre", v), { class: "pre" })),
        el("td", {}, num(d.post ?? 0, 0, 2048, (v) => set("post", v), { class: "post" })),
        el("td", {}, txt((d.sets || []).join("+"), (v) => set("sets", v ? v.split("+").map((x) => parseInt(x, 10)) : ""), { class: "sets", placeholder: "4+2" })),
        el("td", {}, (() => {
          const c = el("input", { type: "checkbox", class: "managed", onchange: (e) => set("managed", e.target.checked ? "" : false) });
          c.checked = d.managed !== false;
          return c;
        })()),
        el("td", {}, (() => {
          const s = el("select", { class: "blkmq", onchange: (e) => set("blk_mq", e.target.value) },
            el("option", { value: "", text: "-" }), el("option", { value: "irq", text: "irq" }), el("option", { value: "cpumap", text: "cpumap" }));
          s.value = d.blk_mq || "";
          return s;
        })()),
        el("td", {}, el("button", { type: "button", class: "del-dev", text: "×", onclick: () => { devs.splice(i, 1); renderDevices(); changed(); } }))));
    });
    box.append(table, el("button", { type: "button", id: "add-dev", text: "add device", onclick: () => { devs.push({ queues: 8 }); renderDevices(); changed(); } }));
  }

  function renderKernel() {
    const box = $("#kernel-editor");
    box.replaceChildren();
    const sel = (key, names, id) => {
      const s = el("select", { id, onchange: (e) => { state.spec[key] = e.target.value; changed(); } }, ...names.map((n) => el("option", { value: n, text: n })));
      s.value = state.spec[key];
      return s;
    };
    box.append(
      el("label", {}, "variant ", sel("variant", state.variants, "variant")),
      el("label", {}, "heapsort ", sel("sort", state.sorts, "sort")),
      el("label", {}, "effective CPU ", sel("effective", state.effectives, "effective")),
      el("label", {}, "counter ", num(state.spec.spread_counter || 0, 0, 4294967295, (v) => { state.spec.spread_counter = v; changed(); }, { id: "counter" })));
  }

  function renderPresets() {
    const s = $("#preset");
    s.replaceChildren(el("option", { value: "blank", text: "blank machine" }), ...state.presets.map((p) => el("option", { value: p, text: p })));
    s.value = typeof state.spec.topology === "string" ? state.spec.topology : "blank";
    $("#load-preset").addEventListener("click", () => {
      location.href = "/?preset=" + encodeURIComponent(s.value);
    });
  }

  // ---- results: view switches, hover highlighting, copy buttons ----
  function wireResult() {
    const metric = $("#metric"), zoom = $("#zoom");
    if (metric && state) metric.onchange = () => { view.metric = metric.value; update(); };
    if (zoom && state) zoom.onchange = () => { view.node = zoom.value; update(); };
  }

  function highlight(cpus, on) {
    if (!cpus) return;
    const set = parseList(cpus);
    document.querySelectorAll("[data-cpu]").forEach((e) => {
      if (set.has(Number(e.dataset.cpu))) e.classList.toggle("hl", on);
    });
  }
  document.addEventListener("mouseover", (e) => {
    const t = e.target.closest && e.target.closest("[data-cpus],[data-cpu]");
    if (t) highlight(t.dataset.cpus || t.dataset.cpu, true);
  });
  document.addEventListener("mouseout", (e) => {
    const t = e.target.closest && e.target.closest("[data-cpus],[data-cpu]");
    if (t) highlight(t.dataset.cpus || t.dataset.cpu, false);
  });

  // One tooltip for every [data-tip]: large pictures carry a data-tip per element instead of
  // a <title>, which keeps the page small.
  let tipBox = null;
  document.addEventListener("mouseover", (e) => {
    const t = e.target.closest && e.target.closest("[data-tip]");
    if (!t) {
      if (tipBox) tipBox.hidden = true;
      return;
    }
    if (!tipBox) {
      tipBox = el("div", { class: "tip", id: "tip" });
      document.body.append(tipBox);
    }
    tipBox.textContent = t.dataset.tip;
    tipBox.hidden = false;
  });
  document.addEventListener("mousemove", (e) => {
    if (!tipBox || tipBox.hidden) return;
    tipBox.style.left = e.pageX + 12 + "px";
    tipBox.style.top = e.pageY + 12 + "px";
  });

  async function copy(text, button) {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "copied";
    } catch (_) {
      // The clipboard needs a secure context or permission: show the text, selected, instead.
      let box = button.nextElementSibling;
      if (!box || !box.classList.contains("copy-fallback")) {
        box = el("textarea", { class: "copy-fallback", rows: "1", readonly: "" });
        button.after(box);
      }
      box.value = text;
      box.select();
    }
    button.dataset.copied = text;
  }
  document.addEventListener("click", async (e) => {
    const link = $("#permalink");
    if (!link) return;
    if (e.target.classList.contains("copy-link")) copy(link.href, e.target);
    if (e.target.classList.contains("copy-text")) {
      const resp = await fetch(link.getAttribute("href") + "/text");
      copy(await resp.text(), e.target);
    }
  });
  document.querySelectorAll("select.autosubmit").forEach((s) => s.addEventListener("change", () => s.form.submit()));

  if (state) {
    const qs = new URLSearchParams(location.search);
    view.metric = qs.get("metric") || "";
    view.node = qs.get("node") || "";
    renderPresets();
    renderTopology();
    renderDevices();
    renderKernel();
    wireResult();
  }
})();
