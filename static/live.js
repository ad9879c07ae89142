// irqscope live page: follow the host's SSE stream (heatmap, status, history chart, IRQ table) and sort the
// IRQ table by a column. Plain JavaScript; the markup comes from the server, already escaped.
"use strict";

(function () {
  const live = document.getElementById("live");
  if (!live) return;
  let sortState = null; // [column index, numeric, descending]

  function sortTable() {
    if (!sortState) return;
    const [col, numeric, desc] = sortState;
    const body = document.getElementById("irq-rows");
    const rows = Array.from(body.rows);
    const key = (tr) => {
      const td = tr.cells[col];
      const k = td.dataset.key !== undefined ? td.dataset.key : td.textContent;
      return numeric ? parseFloat(k) || 0 : k;
    };
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      const c = numeric ? x - y : String(x).localeCompare(String(y));
      return desc ? -c : c;
    });
    for (const r of rows) body.appendChild(r);
  }

  document.querySelectorAll("#irq-table th[data-sort]").forEach((th, i) => {
    th.addEventListener("click", () => {
      const numeric = th.dataset.sort === "num";
      const desc = sortState && sortState[0] === i ? !sortState[2] : numeric;
      sortState = [i, numeric, desc];
      sortTable();
    });
  });

  const host = live.dataset.liveHost;
  if (!host || !window.EventSource) return;
  const es = new EventSource("/live/" + encodeURIComponent(host) + "/events");
  es.addEventListener("snapshot", (ev) => {
    const d = JSON.parse(ev.data);
    document.getElementById("live-heatmap").innerHTML = d.heatmap;
    document.getElementById("irq-rows").innerHTML = d.rows;
    document.getElementById("live-status").textContent = d.status;
    document.getElementById("live-history").innerHTML = d.history_svg;
    const text = document.getElementById("live-history-text");
    text.replaceChildren();
    for (const h of d.history_text) {
      const span = document.createElement("span");
      span.className = "hist";
      span.textContent = h;
      text.append(span, " ");
    }
    live.dataset.seq = d.seq;
    sortTable();
  });
  // The browser reconnects by itself after a dropped stream; a refused one (401 when the
  // server wants a viewer token and the cookie is gone, 404 for a host that expired) is closed
  // for good: say so instead of showing stale figures as live.
  es.addEventListener("error", () => {
    if (es.readyState === EventSource.CLOSED) {
      document.getElementById("live-status").textContent =
        "live updates stopped: reload the page (a viewer token may be needed: ?token=TOKEN)";
      live.dataset.stopped = "1";
    }
  });
})();
