// Sorting: a click on a header orders the body's rows by that column, numbers by their value
// (the first number in the cell: "191.8 ± 30.5" sorts as 191.8) when every filled cell has one,
// text otherwise; a second click reverses it.
// (sweep/report/html.py inlines this file.)
(function () {
  function key(cell) {
    var text = cell.textContent.trim();
    var m = text.match(/^[\[(]?\s*([-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)/i);
    return { text: text, number: m ? parseFloat(m[1]) : null };
  }
  function sortBy(table, column, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keys = rows.map(function (r) {
      return r.cells[column] ? key(r.cells[column]) : { text: "", number: null };
    });
    var numeric = keys.every(function (k) { return k.number !== null || k.text === "" || k.text === "-"; });
    var descending = th.getAttribute("aria-sort") === "ascending";
    var order = rows.map(function (r, i) { return i; });
    order.sort(function (a, b) {
      var x = keys[a], y = keys[b], c;
      if (numeric) {
        var xn = x.number === null ? -Infinity : x.number, yn = y.number === null ? -Infinity : y.number;
        c = xn - yn;
      } else {
        c = x.text.localeCompare(y.text, undefined, { numeric: true });
      }
      return (descending ? -c : c) || a - b;
    });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    order.forEach(function (i) { body.appendChild(rows[i]); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, column, th); });
    });
  });
})();
