// The site's tables (docs/report.md, "Published site"): a filter box above each table with class "sortable", and
// headers that sort it on click (numbers as numbers). Written once into assets/, shared by the index and device pages.
"use strict";

function zbenchCellValue(row, column) {
  const text = row.cells[column] ? row.cells[column].textContent.trim() : "";
  const number = parseFloat(text);
  return isNaN(number) || !/^[-+]?[0-9.]/.test(text) ? text.toLowerCase() : number;
}

function zbenchSortable(table) {
  const body = table.tBodies[0];
  const filter = document.createElement("input");
  filter.type = "search";
  filter.placeholder = "filter rows";
  filter.className = "filter";
  filter.addEventListener("input", () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(w => w);
    for (const row of body.rows) {
      const text = row.textContent.toLowerCase();
      row.hidden = !words.every(w => text.includes(w));
    }
  });
  table.parentNode.insertBefore(filter, table);
  Array.from(table.tHead.rows[0].cells).forEach((header, column) => {
    header.title = "sort";
    header.style.cursor = "pointer";
    header.addEventListener("click", () => {
      const ascending = header.dataset.order !== "ascending";
      header.dataset.order = ascending ? "ascending" : "descending";
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = zbenchCellValue(a, column), y = zbenchCellValue(b, column);
        const order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
        return ascending ? order : -order;
      });
      for (const row of rows) body.appendChild(row);
    });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(zbenchSortable);
});
