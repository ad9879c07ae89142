// Sortable sweep tables (one per machine): click a column head to sort by it (numbers
// descending first, text ascending first); click again to reverse. Ties keep the server's
// order.
(function () {
  "use strict";
  document.querySelectorAll("table.sweep-table").forEach((table) => {
    const body = table.tBodies[0];
    Array.from(body.rows).forEach((r, i) => { r.dataset.order = String(i); });
    table.querySelectorAll("th[data-sort]").forEach((th) => {
      th.querySelector("button").addEventListener("click", () => {
        const key = th.dataset.sort;
        const numeric = th.dataset.type === "num";
        const current = th.getAttribute("aria-sort");
        const descending = current ? current === "ascending" : numeric;
        table.querySelectorAll("th[aria-sort]").forEach((h) => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          let c;
          if (numeric) {
            c = Number(a.dataset[key]) - Number(b.dataset[key]);
          } else {
            c = a.dataset[key] < b.dataset[key] ? -1 : a.dataset[key] > b.dataset[key] ? 1 : 0;
          }
          if (descending) c = -c;
          return c !== 0 ? c : Number(a.dataset.order) - Number(b.dataset.order);
        });
        rows.forEach((r) => body.appendChild(r));
        table.dataset.sorted = key + (descending ? ":desc" : ":asc");
      });
    });
  });
})();

// The forms: sent as the server reads them. A browser's own form encoding writes a space as
// `+`, but in `mixes` a `+` is literal (`sets=4+2`), so build the query with
// encodeURIComponent (space → %20, + → %2B) and leave out empty fields. The baseline menu
// keeps the sweep's own query and changes only `base`.
(function () {
  "use strict";
  const form = document.getElementById("sweep-form");
  if (form) {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const parts = [];
      for (const input of form.querySelectorAll("input[name]")) {
        const v = input.value.trim();
        if (v) parts.push(input.name + "=" + encodeURIComponent(v));
      }
      location.href = (form.getAttribute("action") || location.pathname) + (parts.length ? "?" + parts.join("&") : "");
    });
  }
  const base = document.getElementById("base");
  if (base) {
    base.addEventListener("change", () => {
      const parts = location.search.replace(/^\?/, "").split("&").filter((p) => p && !p.startsWith("base="));
      parts.push("base=" + encodeURIComponent(base.value));
      location.href = location.pathname + "?" + parts.join("&");
    });
  }
})();
