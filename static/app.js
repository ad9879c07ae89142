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
  // The editor works on the machine in explicit form (ed.base). A node is kept exactly (its
  // CPU ids, SMT sets, clusters) until the user changes its shape (cores, SMT, cores per
  // cluster); then only that node is regenerated as a regular shape, reusing its CPU ids first.
  const ids = (text) => [...parseList(text)].sort((a, b) => a - b);
  const sortedLists = (sets) => sets.map((s) => cpulist(s)).sort();

  // A regular node over `cpus` (ascending ids): SMT siblings adjacent or offset within the node,
  // clusters of `cluster` consecutive cores.
  function genNode(n, cpus, numbering) {
    const T = Math.max(1, n.threads), C = n.cores;
    const cores = [];
    for (let k = 0; k < C; k++) {
      const threads = [];
      for (let t = 0; t < T; t++) threads.push(cpus[numbering === "offset" ? k + t * C : k * T + t]);
      cores.push(threads);
    }
    const smt = cores.filter((c) => c.length > 1);
    const clusters = [];
    if (n.cluster > 0) for (let k = 0; k < C; k += n.cluster) clusters.push(cores.slice(k, k + n.cluster).flat());
    return { cpus: cores.flat(), smt, clusters };
  }

  // The page writes runs of lists that step alike once: "0-1*4096+2" is 0-1, 2-3, …,
  // 8190-8191 (render::view::scenario::shifted_runs). Back to one list per set.
  function expandRuns(lists) {
    const out = [];
    for (const l of lists || []) {
      const m = /^([^*]*)\*([0-9]+)\+([0-9]+)$/.exec(l);
      if (!m) { out.push(l); continue; }
      const first = ids(m[1]), count = Number(m[2]), step = Number(m[3]);
      for (let k = 0; k < count; k++) out.push(cpulist(first.map((c) => c + k * step)));
    }
    return out;
  }

  // Per node: its CPUs, SMT sets and clusters in `base`, and why its shape fields do not
  // reproduce it (empty when they do).
  // The machine's architecture and interrupt controller, from the machine as loaded.
  const chipsOf = (arch) => (state.irqchips || []).filter((c) => c.arch === arch);
  function readFacts(ed) {
    ed.arch = ed.base.arch || "x86_64";
    const chips = chipsOf(ed.arch);
    ed.irqchip = ed.base.irqchip || (chips[0] && chips[0].name) || "apic";
  }

  function readBase(ed) {
    const base = ed.base;
    const smtSets = (base.smt || []).map(ids);
    const clusterSets = (base.clusters || []).map(ids);
    ed.nodes.forEach((n) => {
      const mine = ids(n.cpus);
      const has = new Set(mine);
      n.orig = mine;
      n.orig_package = n.package;
      const smt = smtSets.filter((s) => has.has(s[0]));
      const clusters = clusterSets.filter((s) => s.some((c) => has.has(c)));
      const why = [];
      const threadCounts = new Set(mine.map((c) => (smt.find((s) => s.includes(c)) || [c]).length));
      if (threadCounts.size > 1) why.push("cores with " + [...threadCounts].sort().join(" and ") + " threads");
      if (clusters.some((s) => s.some((c) => !has.has(c)))) why.push("clusters span nodes");
      const sizes = new Set(clusters.map((s) => s.length));
      if (sizes.size > 1) why.push("clusters of " + [...sizes].sort((a, b) => a - b).join(", ") + " CPUs");
      if (!why.length) {
        const g = genNode(n, mine, ed.smt_numbering);
        const same = g.cpus.length === mine.length && g.cpus.every((c) => c !== undefined) &&
          sortedLists(g.smt).join(" ") === sortedLists(smt).join(" ") &&
          sortedLists(g.clusters).join(" ") === sortedLists(clusters).join(" ");
        if (!same) why.push("CPU ids or clusters not in a regular order");
      }
      n.irregular = why.join("; ");
    });
  }

  function buildTopology(ed) {
    const base = ed.base;
    // Package of each CPU in the base machine (default: one per node with CPUs).
    const pkg0 = new Map();
    if ((base.packages || []).length) base.packages.forEach((l, i) => parseList(l).forEach((c) => pkg0.set(c, i)));
    else (base.nodes || []).filter((l) => l !== "").forEach((l, i) => parseList(l).forEach((c) => pkg0.set(c, i)));
    // Kept nodes first: their CPUs are taken; regenerated nodes reuse their own old ids, then
    // fresh ids above every id the machine had.
    let next = 0;
    ed.nodes.forEach((n) => (n.orig || []).forEach((c) => { next = Math.max(next, c + 1); }));
    const nodeCpus = ed.nodes.map((n) => {
      if (!n.regen) return n.orig;
      const need = n.cores * Math.max(1, n.threads);
      const cpus = n.orig.slice(0, need);
      while (cpus.length < need) cpus.push(next++);
      return cpus;
    });
    const kept = new Set();
    ed.nodes.forEach((n, i) => { if (!n.regen) nodeCpus[i].forEach((c) => kept.add(c)); });
    let smt = [], clusters = [];
    for (const l of base.smt || []) { const s = ids(l); if (kept.has(s[0])) smt.push(s); }
    for (const l of base.clusters || []) { const s = ids(l).filter((c) => kept.has(c)); if (s.length) clusters.push(s); }
    const pkg = new Map();
    ed.nodes.forEach((n, i) => {
      if (n.regen) {
        const g = genNode(n, nodeCpus[i], ed.smt_numbering);
        smt = smt.concat(g.smt);
        clusters = clusters.concat(g.clusters);
      }
      for (const c of nodeCpus[i]) {
        const edited = n.package !== null && n.package !== n.orig_package;
        pkg.set(c, edited || n.regen || !pkg0.has(c) ? (n.package ?? n.orig_package ?? pkg0.get(n.orig[0]) ?? 0) : pkg0.get(c));
      }
    });
    const absent = new Set(), offline = new Set();
    ed.nodes.forEach((n, i) => {
      const mine = new Set(nodeCpus[i]);
      for (const c of parseList(n.absent)) if (mine.has(c)) absent.add(c);
      for (const c of parseList(n.offline)) if (mine.has(c)) offline.add(c);
    });
    // CPU 0 must exist: when it went with a removed node, number the CPUs from 0 in order.
    const all = nodeCpus.flat().sort((a, b) => a - b);
    let map = (c) => c;
    if (all.length && all[0] !== 0) {
      const rank = new Map(all.map((c, i) => [c, i]));
      map = (c) => rank.get(c);
    }
    const list = (cpus) => cpulist(cpus.map(map));
    const nodeLists = nodeCpus.map(list);
    const byPkg = new Map();
    for (const [c, p] of pkg) byPkg.set(p, (byPkg.get(p) || []).concat([c]));
    const pkgLists = [...byPkg.keys()].sort((a, b) => a - b).map((p) => list(byPkg.get(p)));
    const spec = { name: ed.name, nodes: nodeLists, distances: ed.distances };
    if (ed.legacy_pic !== undefined ? ed.legacy_pic : base.legacy_pic) spec.legacy_pic = true;
    if (smt.length) spec.smt = smt.map(list);
    if (clusters.length) spec.clusters = clusters.map(list);
    if (pkgLists.join(" ") !== nodeLists.filter((l) => l !== "").join(" ")) spec.packages = pkgLists;
    const present = all.filter((c) => !absent.has(c));
    if (absent.size) spec.present = list(present);
    if (offline.size) spec.online = list(present.filter((c) => !offline.has(c)));
    // Facts of the machine: written when they are not the x86 defaults (as a file omits them).
    if (ed.arch && ed.arch !== "x86_64") spec.arch = ed.arch;
    const chips = chipsOf(ed.arch || "x86_64");
    if (ed.irqchip && chips.length && ed.irqchip !== chips[0].name) spec.irqchip = ed.irqchip;
    return spec;
  }

  // ---- page state ----
  const inputs = $("#inputs");
  let state = null;
  const stateScript = document.getElementById("state");
  if (inputs && stateScript) state = JSON.parse(stateScript.textContent);
  let view = { metric: "", node: "" };
  let timer = null, inflight = null;
  // Counts the edits of the inputs: a result computed for an earlier edit than the last one is
  // never shown as current.
  let edits = 0;
  const FIX_FIELD = "out of date: fix the marked field; the result below is for the last valid input";

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
    const sent = edits;
    try {
      const resp = await fetch("/fragment?" + qs, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(state.spec),
        signal: inflight.signal,
      });
      const body = await resp.text();
      // Inputs edited since this was asked: their own recompute follows (or waits for a
      // marked field to be fixed); this answer is for inputs no longer shown.
      if (sent !== edits) return;
      if (!resp.ok) {
        showServerError(plainMessage(body));
        markStale("out of date: these inputs cannot be simulated (see the message in the editor); the result below is for the last valid input");
        return;
      }
      $("#result-body").innerHTML = body;
      // A field marked invalid since the request left is not in this result: it stays out of
      // date until the field is fixed.
      if (invalidCount()) markStale(FIX_FIELD);
      else clearStale();
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

  // A server message in plain words: the JSON decoder's wording is the editor's fault, not the
  // user's, so it is said as what went wrong with which field.
  function plainMessage(body) {
    const t = body.trim();
    const m = /^bad JSON: (.*?)(?: at line [0-9]+ column [0-9]+)?$/.exec(t);
    if (!m) return t;
    return "the editor could not send this scenario (" + m[1].replace(/`/g, "") + "); check the fields marked above";
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
    document.querySelectorAll(".server-error").forEach((e) => e.remove());
  }

  // The part of the editor a server message concerns, from the field it names first
  // ("irqaffinity: …", "device 1 ("q"): the name is used twice", "topology: nodes[1]: …",
  // "512000 vectors in all; …"): an input, or a table for what concerns all of it. `null` for
  // a message that names no field.
  function fieldOfMessage(text) {
    let m = /^(irqaffinity|isolcpus|nohz_full|vectors_held)\b/.exec(text);
    if (m) return $("#boot-" + m[1].replace("_", "-"));
    m = /^device ([0-9]+) \(.*?\): (.*)$/s.exec(text);
    if (m) {
      const row = document.querySelectorAll("#devices tr.dev-row")[Number(m[1])];
      if (!row) return $("#devices");
      const says = m[2];
      const cls = /\bname\b/.test(says) ? "name"
        : /\bsets?\b/.test(says) ? "sets"
        : /^node /.test(says) ? "node"
        : /blk-mq queue/.test(says) ? "blkmq-queues"
        : /blk-mq map/.test(says) ? "blkmq"
        : /^pre \+ post/.test(says) ? "pre"
        : /MANA|managed/.test(says) ? "driver"
        : "queues";
      return row.querySelector("." + cls) || row.querySelector("input");
    }
    if (/^[0-9]+ (devices|vectors in all)\b/.test(text)) return $("#devices");
    if (/^topology: /.test(text)) return $("#nodes");
    if (/^(c:|variant|sort|effective|proposal|kernel)\b/.test(text)) return $("#variant");
    return null;
  }

  // A message from the server beside the field it concerns (at the top of the column only
  // when it names none); gone at the next edit.
  function showServerError(text) {
    clearError();
    const field = fieldOfMessage(text.trim());
    if (!field) {
      showError(text);
      return;
    }
    const box = el(field.tagName === "TABLE" ? "p" : "span", { class: "field-error server-error", role: "alert", text: text.trim() });
    // After the field's own message, when it has one.
    const next = field.nextElementSibling;
    (next && next.classList.contains("field-error") ? next : field).after(box);
  }

  // The result no longer matches the inputs: marked until a recompute replaces it. The mark
  // has its own line at the top of the result box, reserved whether it shows or not, so
  // marking never moves the result.
  function markStale(why) {
    const result = $("#result"), mark = $("#stale-mark");
    if (!result || !mark) return;
    result.classList.add("stale");
    mark.textContent = why;
    mark.title = why;
    mark.classList.add("shown");
  }
  function clearStale() {
    const result = $("#result"), mark = $("#stale-mark");
    if (result) result.classList.remove("stale");
    if (mark) {
      mark.classList.remove("shown");
      mark.textContent = "";
    }
  }

  // Fields marked invalid that are still on the page.
  function invalidCount() {
    for (const input of [...invalid]) if (!input.isConnected) invalid.delete(input);
    return invalid.size;
  }

  function changed() {
    edits++;
    clearError();
    if (invalidCount()) {
      markStale(FIX_FIELD);
      return;
    }
    markStale("out of date: recomputing…");
    schedule();
  }

  // Topology edited: from now on the scenario carries it inline, named after where it came from.
  // `redraw` false: the inputs stay as they are (keeps focus while tabbing through them).
  function topologyChanged(redraw) {
    const ed = state.editor;
    if (!ed.name.startsWith("custom")) ed.name = "custom (from " + (ed.preset || ed.name) + ")";
    state.spec.topology = buildTopology(ed);
    if (redraw === false) $("#topo-name").textContent = ed.name;
    else renderTopology();
    renderPresetChoice();
    changed();
  }
  // A new controller brings the effective-CPU model it implies (still changeable below).
  function chipChanged(ed) {
    const chip = (state.irqchips || []).find((c) => c.name === ed.irqchip);
    if (chip && state.effectives.includes(chip.effective)) state.spec.effective = chip.effective;
    renderKernel();
    topologyChanged();
  }
  // A node's shape changed: that node is regenerated from its shape.
  function reshape(n) {
    n.regen = true;
    topologyChanged();
  }

  // ---- validation beside the field: a bad value is named in plain words next to its input and
  // is not applied (never clamped or dropped); the result stays marked out of date meanwhile.
  const invalid = new Set();
  function fieldMessage(input, msg) {
    input.classList.toggle("invalid", !!msg);
    input.setAttribute("aria-invalid", msg ? "true" : "false");
    let m = input.nextElementSibling;
    if (!m || !m.classList.contains("field-error")) {
      m = el("span", { class: "field-error", role: "alert" });
      input.after(m);
    }
    m.textContent = msg || "";
    m.hidden = !msg;
    if (msg) invalid.add(input); else invalid.delete(input);
    if (msg) markStale(FIX_FIELD);
  }
  const fieldName = (attrs) => ((attrs && (attrs["data-what"] || attrs.class)) || "this value").replace(/-/g, " ");
  // A whole number in min..max, or a message saying why not.
  function readInt(input, text, min, max, what) {
    if (input.validity && input.validity.badInput) return [null, what + ": that is not a number; want a whole number from " + min + " to " + max];
    if (!/^-?[0-9]+$/.test(text)) return [null, what + ": \"" + text + "\" is not a whole number; want " + min + " to " + max];
    const v = parseInt(text, 10);
    if (v < min || v > max) return [null, what + ": " + v + " is out of range; want " + min + " to " + max];
    return [v, ""];
  }
  const num = (value, min, max, onset, attrs) =>
    el("input", Object.assign({ type: "number", min, max, value, onchange: (e) => {
      const [v, msg] = readInt(e.target, e.target.value.trim(), min, max, fieldName(attrs));
      fieldMessage(e.target, msg);
      if (!msg) onset(v, e.target);
    } }, attrs || {}));
  // A number that may be left empty (an unset optional field).
  const optnum = (value, min, max, onset, attrs) =>
    el("input", Object.assign({ type: "number", min, max, value: value ?? "", placeholder: "-", onchange: (e) => {
      const t = e.target.value.trim();
      if (t === "" && !(e.target.validity && e.target.validity.badInput)) { fieldMessage(e.target, ""); onset(""); return; }
      const [v, msg] = readInt(e.target, t, min, max, fieldName(attrs));
      fieldMessage(e.target, msg);
      if (!msg) onset(v, e.target);
    } }, attrs || {}));
  // Free text; `check(text)` returns a message when the text is not acceptable.
  const txt = (value, onset, attrs, check) => el("input", Object.assign({ type: "text", value, onchange: (e) => {
    const t = e.target.value.trim();
    const msg = check ? check(t) : "";
    fieldMessage(e.target, msg);
    if (!msg) onset(t, e.target);
  } }, attrs || {}));
  // A kernel cpulist (`0-3,8,10-15:2/4`), empty allowed; `within` (ascending ids) when given.
  const CPULIST = /^[0-9]+(-[0-9]+(:[0-9]+\/[0-9]+)?)?(,[0-9]+(-[0-9]+(:[0-9]+\/[0-9]+)?)?)*$/;
  function cpulistCheck(what, within) {
    return (t) => {
      if (t === "") return "";
      const compact = t.replace(/\s+/g, "");
      if (!CPULIST.test(compact)) return what + ": \"" + t + "\" is not a CPU list; write it as 0-3,8,10-11";
      if (within && within.length) {
        const mine = new Set(within);
        const out = [...parseList(compact)].filter((c) => !mine.has(c));
        if (out.length) return what + ": CPU " + out[0] + " is not in this node (its CPUs are " + cpulist(within) + ")";
      }
      return "";
    };
  }
  const check = (on, onset, attrs) => {
    const c = el("input", Object.assign({ type: "checkbox", onchange: (e) => onset(e.target.checked) }, attrs || {}));
    c.checked = on;
    return c;
  };
  const choose = (value, options, onset, attrs) => {
    const s = el("select", Object.assign({ onchange: (e) => onset(e.target.value) }, attrs || {}), ...options.map(([v, t]) => el("option", { value: v, text: t })));
    s.value = value;
    return s;
  };

  // A regular node's shape: "64 cores × 2 threads, clusters of 8 cores".
  const plural = (k, one) => k + " " + one + (k === 1 ? "" : "s");
  function shapeText(n) {
    return plural(n.cores, "core") + " × " + plural(Math.max(1, n.threads), "thread") + (n.cluster ? ", clusters of " + plural(n.cluster, "core") : "");
  }

  function nodeStatus(n) {
    if (n.regen) return ["regen", "regenerated: " + shapeText(n)];
    if (n.irregular) return ["irregular", "irregular (" + n.irregular + "): kept exactly; changing cores, SMT or cores/cluster regenerates this node"];
    return ["exact", "kept exactly"];
  }

  function renderTopology() {
    const ed = state.editor;
    const box = $("#topo-editor");
    box.replaceChildren();
    box.append(el("div", { class: "row" },
      el("span", { text: ed.name, id: "topo-name" }),
      el("label", { title: "changing the numbering regenerates every node" }, "SMT numbering ",
        choose(ed.smt_numbering, [["adjacent", "adjacent (2k, 2k+1)"], ["offset", "offset (k, k+N)"]], (v) => {
          ed.smt_numbering = v;
          ed.nodes.forEach((n) => { n.regen = true; });
          topologyChanged();
        }, { id: "smt-numbering" })),
      el("label", { title: "decides the sibling and cluster masks the kernel gives CPUs that are not online" }, "arch ",
        choose(ed.arch, [["x86_64", "x86_64"], ["arm64", "arm64"]], (v) => {
          ed.arch = v;
          ed.irqchip = chipsOf(v)[0].name;
          chipChanged(ed);
        }, { id: "arch" })),
      el("label", { title: "the interrupt controller decides which CPU of a mask an interrupt fires on" }, "interrupt controller ",
        choose(ed.irqchip, chipsOf(ed.arch).map((c) => [c.name, c.name + ": " + c.describe]), (v) => {
          ed.irqchip = v;
          chipChanged(ed);
        }, { id: "irqchip" }))));
    box.append(el("p", { class: "note", id: "topo-note", text: "Offline and not-present CPUs, packages and distances are edited on the machine as it is. Changing a node's cores, SMT or cores/cluster regenerates that node as a regular shape (reusing its CPU ids); the other nodes stay exactly as they are." }));
    const built = state.spec.topology && state.spec.topology.nodes;
    // A node's CPU list: as the edited machine builds it, else as loaded.
    const nodeCpus = (i) => (built && built[i] !== undefined ? built[i] : ed.nodes[i].cpus);
    const nodeHeads = ["node", "CPUs", "cores", "SMT", "cores/cluster", "package", "offline", "not present", "", ""];
    const table = el("table", { id: "nodes" }, el("tr", {}, ...nodeHeads.map((h) => el("th", { text: h }))));
    const nodeRow = (n, i) => {
      const [cls, status] = nodeStatus(n);
      return (el("tr", { class: "node-row " + cls, "data-status": cls },
        el("td", { text: String(i) }),
        el("td", { class: "cpus", text: nodeCpus(i) || "-" }),
        el("td", {}, num(n.cores, 0, 4096, (v, input) => {
          if (v === 0 && (n.orig || []).includes(0)) {
            fieldMessage(input, "cores: node " + i + " holds CPU 0, which every machine needs; give it at least one core");
            return;
          }
          n.cores = v; reshape(n);
        }, { class: "cores" })),
        el("td", {}, el("label", {}, check(n.threads > 1, (on) => { n.threads = on ? 2 : 1; reshape(n); }, { class: "smt" }), "on")),
        el("td", {}, num(n.cluster, 0, 4096, (v) => { n.cluster = v; reshape(n); }, { class: "cluster" })),
        el("td", {}, n.package === null
          ? el("span", { class: "package mixed", text: "mixed", title: "this node's CPUs are in several packages; kept as they are" })
          : num(n.package, 0, 1023, (v) => { n.package = v; topologyChanged(false); }, { class: "package" })),
        el("td", {}, txt(n.offline, (v) => { n.offline = v; topologyChanged(false); }, { class: "offline", placeholder: "cpulist" }, cpulistCheck("offline", n.regen ? null : n.orig))),
        el("td", {}, txt(n.absent, (v) => { n.absent = v; topologyChanged(false); }, { class: "absent", placeholder: "cpulist" }, cpulistCheck("not present", n.regen ? null : n.orig))),
        el("td", { class: "status", text: status }),
        el("td", {}, el("button", { type: "button", class: "del-node", text: "×", title: "remove node", onclick: () => {
          if (ed.nodes.length <= 1) { showError("a machine needs at least one node"); return; }
          if ((n.orig || []).includes(0)) {
            showError("node " + i + " holds CPU 0, which every machine needs: it cannot be removed (change its cores instead)");
            return;
          }
          ed.nodes.splice(i, 1);
          ed.distances.splice(i, 1);
          ed.distances.forEach((row) => row.splice(i, 1));
          topologyChanged();
        } }))));
    };
    // Runs of identical nodes (same shape, status and edits) fold into one row
    // ("64 nodes × 128 CPUs") with an expand button, on machines of more than FOLD_NODES_MIN
    // nodes; a run shorter than GROUP_MIN is listed.
    const GROUP_MIN = 4, FOLD_NODES_MIN = 8;
    // A folded row's CPU list is cut after GROUP_CPUS_CHARS characters, at a comma (the whole
    // list is its title): the group-size cell beside it gives the count.
    const GROUP_CPUS_CHARS = 24;
    const shortList = (text) => {
      if (text.length <= GROUP_CPUS_CHARS) return text;
      const cut = text.lastIndexOf(",", GROUP_CPUS_CHARS);
      return cut > 0 ? text.slice(0, cut) + ",…" : text;
    };
    if (!ed.expanded) ed.expanded = new Set();
    const nodeSize = (n) => (n.regen ? n.cores * Math.max(1, n.threads) : (n.orig || []).length);
    const nodeKey = (n) => JSON.stringify([n.cores, n.threads, n.cluster, n.offline, n.absent, !!n.regen, n.irregular, n.package === null, nodeSize(n)]);
    for (let i = 0; i < ed.nodes.length;) {
      let j = i + 1;
      while (j < ed.nodes.length && nodeKey(ed.nodes[j]) === nodeKey(ed.nodes[i])) j++;
      const start = i, count = j - i, n = ed.nodes[i];
      if (count >= GROUP_MIN && ed.nodes.length > FOLD_NODES_MIN) {
        const open = ed.expanded.has(start);
        const [cls, status] = nodeStatus(n);
        const members = [];
        for (let k = start; k < j; k++) members.push(...parseList(nodeCpus(k) || ""));
        const cpus = cpulist(members);
        // The button leads the row: the group's CPU list can be long, and a button after it
        // would sit past the visible part of the table.
        table.append(el("tr", { class: "node-group " + cls, "data-first": String(start), "data-count": String(count) },
          el("td", {}, start + "-" + (j - 1) + " ", el("button", { type: "button", class: "expand-group", text: open ? "collapse" : "expand", onclick: () => {
            if (open) ed.expanded.delete(start); else ed.expanded.add(start);
            renderTopology();
          } })),
          el("td", { class: "cpus", text: shortList(cpus) || "-", title: cpus }),
          el("td", { colspan: "6", class: "group-size", text: count + " nodes × " + nodeSize(n) + " CPUs (" + shapeText(n) + ")" }),
          el("td", { class: "status", text: status }),
          el("td", {})));
        if (open) for (let k = start; k < j; k++) table.append(nodeRow(ed.nodes[k], k));
      } else {
        for (let k = start; k < j; k++) table.append(nodeRow(ed.nodes[k], k));
      }
      i = j;
    }
    labelCells(table, "tr.node-row", nodeHeads);
    box.append(table);
    box.append(el("button", { type: "button", id: "add-node", text: "add node", onclick: () => {
      const last = ed.nodes[ed.nodes.length - 1] || { cores: 4, threads: 2, cluster: 0 };
      const pkg = Math.max(-1, ...ed.nodes.map((n) => n.package ?? n.orig_package ?? 0)) + 1;
      ed.nodes.push({ cores: last.cores, threads: last.threads, cluster: last.cluster, offline: "", absent: "", cpus: "", orig: [], package: pkg, orig_package: null, irregular: "", regen: true });
      ed.distances.forEach((row) => row.push(20));
      ed.distances.push(ed.nodes.map((_, j) => (j === ed.nodes.length - 1 ? 10 : 20)));
      topologyChanged();
    } }));
    const dist = el("table", { class: "dist", id: "distances" }, el("tr", {}, el("th", { text: "distance" }), ...ed.nodes.map((_, j) => el("th", { text: String(j) }))));
    ed.distances.forEach((row, a) => {
      dist.append(el("tr", {}, el("th", { text: String(a) }), ...row.map((d, b) => el("td", {}, num(d, 10, 254, (v) => { row[b] = v; topologyChanged(false); }, { "data-what": "distance " + a + "→" + b })))));
    });
    box.append(el("details", {}, el("summary", { text: "distance matrix" }), dist));
  }

  function renderDevices() {
    const box = $("#dev-editor");
    box.replaceChildren();
    const devs = state.spec.devices;
    const heads = ["name", "count", "queues", "pre", "post", "sets", "managed", "node", "blk-mq", "blk-mq queues", "driver", "patched", "MSI-X", ""];
    const table = el("table", { id: "devices" }, el("tr", {}, ...heads.map((h) => el("th", { text: h }))));
    devs.forEach((d, i) => {
      const set = (k, v) => { if (v === "" || v === null) delete d[k]; else d[k] = v; changed(); };
      const mana = d.driver === "mana";
      table.append(el("tr", { class: "dev-row" + (mana ? " mana" : "") },
        el("td", {}, txt(d.name || "", (v) => set("name", v), { class: "name" })),
        el("td", {}, num(d.count ?? 1, 1, 256, (v) => set("count", v), { class: "count" })),
        el("td", {}, num(d.queues, 0, 2048, (v) => set("queues", v), { class: "queues" })),
        el("td", {}, num(d.pre ?? 0, 0, 2048, (v) => set("pre", v), { class: "pre" })),
        el("td", {}, num(d.post ?? 0, 0, 2048, (v) => set("post", v), { class: "post" })),
        el("td", {}, txt((d.sets || []).join("+"), (v) => set("sets", v ? v.split("+").map((x) => parseInt(x, 10)) : ""), { class: "sets", placeholder: "4+2" },
          (t) => (t === "" || /^[0-9]+(\+[0-9]+)*$/.test(t.replace(/\s+/g, "")) ? "" : "sets: \"" + t + "\" is not vector counts joined by +, e.g. 4+2"))),
        el("td", {}, mana
          ? el("span", { class: "managed", text: "no", title: "MANA IRQs are not managed" })
          : check(d.managed !== false, (on) => set("managed", on ? "" : false), { class: "managed" })),
        el("td", {}, optnum(d.node, 0, 1023, (v) => set("node", v), { class: "node" })),
        el("td", {}, choose(d.blk_mq || "", [["", "-"], ["irq", "irq"], ["cpumap", "cpumap"]], (v) => set("blk_mq", v), { class: "blkmq" })),
        el("td", {}, optnum(d.blk_mq_queues, 0, 2048, (v) => set("blk_mq_queues", v), { class: "blkmq-queues" })),
        el("td", {}, choose(d.driver || "", [["", "generic"], ["mana", "MANA"]], (v) => {
          if (v === "mana") {
            d.driver = "mana";
            delete d.managed;
          } else {
            delete d.driver;
            delete d.patched;
            delete d.msix;
          }
          renderDevices();
          changed();
        }, { class: "driver" })),
        el("td", {}, check(!!d.patched, (on) => set("patched", on ? true : ""), Object.assign({ class: "patched", title: "MANA: the driver after the low-vCPU affinity patch" }, mana ? {} : { disabled: "" }))),
        el("td", {}, choose(d.msix || "dynamic", [["dynamic", "dynamic"], ["static", "static"]], (v) => set("msix", v === "dynamic" ? "" : v), Object.assign({ class: "msix" }, mana ? {} : { disabled: "" }))),
        el("td", {}, el("button", { type: "button", class: "del-dev", text: "×", onclick: () => { devs.splice(i, 1); renderDevices(); changed(); } }))));
    });
    labelCells(table, "tr.dev-row", heads);
    box.append(table, el("button", { type: "button", id: "add-dev", text: "add device", onclick: () => { devs.push({ queues: 8 }); renderDevices(); changed(); } }));
  }

  // Each cell of the rows matching `rows` names its column (`data-label`): where the column is
  // too narrow for the table, its rows wrap as lines of labelled fields (style.css) instead
  // of being cut at the column's edge.
  function labelCells(table, rows, heads) {
    table.querySelectorAll(rows).forEach((tr) => {
      [...tr.cells].forEach((td, i) => { if (heads[i]) td.dataset.label = heads[i]; });
    });
  }

  function renderKernel() {
    const box = $("#kernel-editor");
    box.replaceChildren();
    const sel = (key, names, id) => {
      const s = el("select", { id, onchange: (e) => { state.spec[key] = e.target.value; changed(); } }, ...names.map((n) => el("option", { value: n, text: n })));
      s.value = state.spec[key];
      return s;
    };
    // The kernel release picks variant, heapsort, the irq_create_affinity_masks era, the
    // blk-mq mapper and the vectors per CPU (with the machine's legacy PIC) together; the
    // selects after it still override.
    const releases = state.releases || [];
    const pickRelease = (name) => {
      const r = releases.find((x) => x.name === name) || releases[0];
      if (!r) return;
      if (name) state.spec.kernel = name;
      else delete state.spec.kernel;
      Object.assign(state.spec, { variant: r.variant, sort: r.sort, affinity: r.affinity, mapper: r.mapper });
      state.spec.vectors_per_cpu = r.vectors[state.editor.legacy_pic ? 1 : 0];
    };
    if (state.editor.legacy_pic === undefined) state.editor.legacy_pic = !!state.editor.base.legacy_pic;
    box.append(
      el("label", { title: "the kernel release the answer is for: picks the models beside it together" }, "kernel ",
        choose(state.spec.kernel || "", [["", "newest (" + (releases[0] ? releases[0].name : "") + ")"]].concat(releases.map((r) => [r.name, r.name])), (v) => {
          pickRelease(v);
          renderKernel();
          changed();
        }, { id: "kernel" })),
      el("label", { title: "the machine has a legacy 8259 PIC: x86 kernels take its cascade vector from every CPU" }, "legacy PIC ",
        check(state.editor.legacy_pic, (on) => {
          state.editor.legacy_pic = on;
          state.editor.base.legacy_pic = on;
          pickRelease(state.spec.kernel || "");
          topologyChanged();
        }, { id: "legacy-pic" })),
      el("label", {}, "variant ", sel("variant", state.variants, "variant")),
      el("label", {}, "heapsort ", sel("sort", state.sorts, "sort")),
      el("label", {}, "effective CPU ", sel("effective", state.effectives, "effective")),
      el("label", {}, "counter ", num(state.spec.spread_counter || 0, 0, 4294967295, (v) => { state.spec.spread_counter = v; changed(); }, { id: "counter" })),
      el("label", { title: "a proposal forms the managed masks instead of the kernel variant" }, "proposal ",
        choose(state.spec.proposal || "", [["", "none (the kernel)"]].concat((state.proposals || []).map((p) => [p, p])), (v) => {
          if (v) state.spec.proposal = v;
          else delete state.spec.proposal;
          changed();
        }, { id: "proposal" })));
    // Boot parameters and held vectors: optional scenario fields, left out of the spec (and so
    // of the permalink) when empty.
    const boot = $("#boot-editor");
    if (!boot) return;
    boot.replaceChildren();
    const text = (key, label, placeholder, title) => el("label", { title }, label + " ",
      el("input", {
        type: "text", id: "boot-" + key.replace("_", "-"), value: state.spec[key] || "", placeholder, size: "14",
        onchange: (e) => {
          const v = e.target.value.trim();
          if (v) state.spec[key] = v;
          else delete state.spec[key];
          changed();
        },
      }));
    boot.append(
      text("irqaffinity", "irqaffinity=", "all CPUs", "default affinity of non-managed interrupts (a cpulist; CPU 0 is always added)"),
      text("isolcpus", "isolcpus=", "managed_irq,2-5", "isolcpus=[FLAGS,]LIST; managed_irq keeps managed interrupts on housekeeping CPUs"),
      text("nohz_full", "nohz_full=", "none", "nohz_full=LIST (checked as the kernel does; moves no interrupt)"),
      text("vectors_held", "vectors held", "0:16,1-3:2", "vectors other interrupts hold before the first device: CPUS:N,..."));
  }

  // The machine choice: a preset, the blank machine, or the edited machine (named after the
  // preset it came from).
  function renderPresetChoice() {
    const s = $("#preset");
    const inline = typeof state.spec.topology !== "string";
    const ed = state.editor;
    const label = ed.name.startsWith("custom") ? ed.name : "custom: " + ed.name;
    s.replaceChildren(
      ...(inline ? [el("option", { value: "custom", id: "custom-choice", text: label })] : []),
      el("option", { value: "blank", text: "blank machine" }),
      ...state.presets.map((p) => el("option", { value: p, text: p })));
    s.value = inline ? "custom" : state.spec.topology;
  }

  function renderPresets() {
    renderPresetChoice();
    const s = $("#preset");
    $("#load-preset").addEventListener("click", () => {
      if (s.value !== "custom") location.href = "/?preset=" + encodeURIComponent(s.value);
    });
  }

  // ---- results: view switches, hover highlighting, copy buttons ----
  // Every figure gets a "download SVG" link: the figure's own markup with the figure styles
  // (static/figures.css, the rules the page applies) in a <style> of its own, so the file
  // looks the same opened alone. The file is a data URL (the page's CSP allows no blob URLs);
  // its <style> is never part of this page, which the CSP (style-src 'self') would refuse.
  // Figures are drawn at their size and only shrink to fit (CSS): nothing to set here.
  const SVG_NS = "http://www.w3.org/2000/svg";
  let figureCss = null;
  const figureCssReady = fetch("/static/figures.css")
    .then((r) => (r.ok ? r.text() : ""))
    .then((t) => { figureCss = t; })
    .catch(() => { figureCss = ""; });

  function standaloneSvg(svg) {
    const copy = svg.cloneNode(true);
    copy.removeAttribute("data-download");
    copy.querySelectorAll(".hl").forEach((e) => e.classList.remove("hl"));
    // The file has no script: each cell's hover text becomes its <title>.
    copy.querySelectorAll(CELLS).forEach((r) => {
      const text = tipOf(r);
      if (!text || r.querySelector("title")) return;
      const title = document.createElementNS(SVG_NS, "title");
      title.textContent = text;
      r.append(title);
    });
    const style = document.createElementNS(SVG_NS, "style");
    style.textContent = figureCss || "";
    copy.insertBefore(style, copy.firstChild);
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }

  function addDownloads(root) {
    figureCssReady.then(() => {
      (root || document).querySelectorAll("main svg").forEach((svg, k) => {
        if (svg.parentElement.closest("svg") || svg.dataset.download) return;
        svg.dataset.download = "1";
        const name = (svg.getAttribute("aria-label") || svg.id || document.title.split(" · ")[0] || "figure")
          .toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60) || "figure";
        const href = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(standaloneSvg(svg));
        svg.after(el("a", { class: "svg-download", href, download: "irqscope-" + name + "-" + (k + 1) + ".svg", text: "download SVG" }));
      });
    });
  }

  function wireResult() {
    addDownloads($("#result-body"));
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

  // One tooltip for every [data-tip], and for every heatmap cell: a cell carries its CPU and
  // value, its figure the unit ("CPU 5: 2 irqs"), instead of a <title> each, which keeps the
  // page small.
  const CELLS = "svg[data-unit] rect.cpu, svg[data-unit] g.row > rect";
  function tipOf(t) {
    if (t.dataset.tip) return t.dataset.tip;
    const svg = t.closest("svg[data-unit]");
    if (!svg || !t.matches(CELLS) || t.dataset.cpu === undefined) return null;
    const who = "CPU " + t.dataset.cpu + ": ";
    return t.classList.contains("off") ? who + "offline or not present" : who + t.dataset.v + " " + svg.dataset.unit;
  }
  let tipBox = null;
  document.addEventListener("mouseover", (e) => {
    const t = e.target.closest && e.target.closest("[data-tip]," + CELLS);
    const text = t && tipOf(t);
    if (!text) {
      if (tipBox) tipBox.hidden = true;
      return;
    }
    if (!tipBox) {
      tipBox = el("div", { class: "tip", id: "tip" });
      document.body.append(tipBox);
    }
    tipBox.textContent = text;
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
  if (!state) addDownloads(document);
  document.querySelectorAll("select.autosubmit").forEach((s) => s.addEventListener("change", () => s.form.submit()));

  // A folded editor (a permalink page) gives the result the whole width until it is opened.
  const inputsBox = $("#inputs-box"), layout = $("#layout");
  if (inputsBox && layout) inputsBox.addEventListener("toggle", () => layout.classList.toggle("folded", !inputsBox.open));

  if (state) {
    const qs = new URLSearchParams(location.search);
    view.metric = qs.get("metric") || "";
    view.node = qs.get("node") || "";
    state.editor.base.smt = expandRuns(state.editor.base.smt);
    state.editor.base.clusters = expandRuns(state.editor.base.clusters);
    readBase(state.editor);
    readFacts(state.editor);
    renderPresets();
    renderTopology();
    renderDevices();
    renderKernel();
    wireResult();
  }
})();
