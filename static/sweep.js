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
