"""The body of the cost index page: every profiled API with a drill-down page, in a table whose
columns sort on click.

Written in Python, like the drill-down page body (:mod:`apiprof.sphinx_ext.page_body`): a row
per API, and through a jinja2 template each cost a template call per value, plus compiling the
template in every build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from apiprof.sphinx_ext.i18n import _
from apiprof.sphinx_ext.page_body import fill
from apiprof.sphinx_ext.rows import text

if TYPE_CHECKING:
    from apiprof.sphinx_ext.pages import IndexRow

SORTING = """<script>
(function () {
  var table = document.getElementById("apiprof-index-table");
  table.querySelectorAll("th[data-sort]").forEach(function (th, column) {
    th.querySelector("button").addEventListener("click", function () {
      var numeric = th.dataset.sort === "number";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.key, y = b.cells[column].dataset.key;
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
})();
</script>"""
"""Sorts the table on a click of a column's button, by each cell's ``data-key``."""


def index_html(rows: Sequence[IndexRow], legend: str, problem: str) -> str:
    """The page body; ``problem`` says why the database could not be read (then no legend)."""
    title = _("API costs")
    if problem:
        intro = fill(
            _("No costs are shown: the profile database could not be read (%(problem)s)."),
            problem=problem,
        )
        intro = f'<p class="apiprof-problem">{intro}</p>\n'
    else:
        words = _(
            "Typical cost of each profiled API (median over every scenario, size and machine). "
            "Click a column to sort; click a name for its full profile."
        )
        intro = f"<p>{words}</p>\n{legend}\n"
    sortable = [
        ("text", _("API")),
        ("number", _("time (median)")),
        ("number", _("time p90")),
        ("number", _("allocated")),
        ("number", _("growth")),
        ("number", _("calls measured")),
    ]
    ascending = ' aria-sort="ascending"'  # the names' column: the order rows come in
    head = "".join(
        f'    <th data-sort="{kind}"{ascending if kind == "text" else ""}>'
        f'<button type="button">{label}</button></th>\n'
        for kind, label in sortable
    )
    strip_label = _("time per range of cost")
    body = "".join(_row(r) for r in rows)
    if not rows:
        none = _("No profiled API is shown in these docs.")
        body = f'    <tr><td colspan="7">{none}</td></tr>\n'
    return (
        f'<section class="apiprof-page" id="apiprof-index">\n<h1>{title}</h1>\n{intro}'
        f'<div class="apiprof-scroll" role="region" tabindex="0" aria-label="{title}">\n'
        '<table class="apiprof-table apiprof-table-sortable" id="apiprof-index-table">\n'
        f"  <thead><tr>\n{head}    <th>{strip_label}</th>\n  </tr></thead>\n"
        f"  <tbody>\n{body}  </tbody>\n</table>\n</div>\n{SORTING}\n</section>"
    )


def _row(r: IndexRow) -> str:
    name = text(r.qualname)
    link = ""
    if r.doc_url:
        tip = _("documentation")
        link = f' <a class="apiprof-doclink" href="{text(r.doc_url)}" title="{tip}">¶</a>'
    return (
        "    <tr>\n"
        f'      <td data-key="{name}"><a href="{text(r.url)}"><code>{name}</code></a>{link}</td>\n'
        f'      <td data-key="{r.time_key}">{text(r.time)}</td>\n'
        f'      <td data-key="{r.p90_key}">{text(r.p90)}</td>\n'
        f'      <td data-key="{r.alloc_key}">{text(r.alloc)}</td>\n'
        f'      <td data-key="{r.growth_key}">{text(r.growth)}</td>\n'
        f'      <td data-key="{r.samples}">{r.samples}</td>\n'
        f"      <td>{r.strip_svg}</td>\n"
        "    </tr>\n"
    )
