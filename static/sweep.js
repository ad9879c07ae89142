// Sortable sweep table: click a column head to sort by it (numbers descending first, text
// ascending first); click again to reverse. Ties keep the server's order.
(function () {
  "use strict";
  const table = document.getElementById("sweep-table");
  if (!table) return;
  const body = table.tBodies[0];
  const original = Array.from(body.rows);
  original.forEach((r, i) => { r.dataset.order = String(i); });
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
})();

// The form: sent as the server reads it. A browser's own form encoding writes a space as `+`,
// but in `mixes` a `+` is literal (`sets=4+2`), so build the query with encodeURIComponent
// (space → %20, + → %2B) and leave out empty fields.
(function () {
  "use strict";
  const form = document.getElementById("sweep-form");
  if (!form) return;
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const parts = [];
    for (const input of form.querySelectorAll("input[name]")) {
      const v = input.value.trim();
      if (v) parts.push(input.name + "=" + encodeURIComponent(v));
    }
    location.href = (form.getAttribute("action") || location.pathname) + (parts.length ? "?" + parts.join("&") : "");
  });
})();
