// The matrix page's filters (inlined into matrix.html by matrix_html.rs).
// Without this script the page shows everything; with it, the filter bar
// appears and hides rows, columns and runs (a run follows its row, its
// column and its verdict). The view is kept in the URL
// hash (`#hide=pass,na&off=grpc-js&spec=A46&q=fallback`), so a link
// reproduces it; anchors (`#r3c1`) never hold `=` and are left alone.
(function () {
  "use strict";
  var table = document.getElementById("matrix");
  var form = document.getElementById("filters");
  if (!table || !form) return;
  var all = function (root, sel) {
    return Array.prototype.slice.call(root.querySelectorAll(sel));
  };
  var statusBoxes = all(form, "input[name=s]");
  var clientBoxes = all(form, "input[name=c]");
  var specSelect = form.querySelector("select[name=spec]");
  var search = form.querySelector("input[name=q]");
  var shown = document.getElementById("shown");
  var rows = all(table, "tbody tr.row").map(function (tr) {
    return {
      tr: tr,
      group: tr.getAttribute("data-group"),
      name: (tr.getAttribute("data-name") || "").toLowerCase(),
      cells: all(tr, "td.cell"),
      section: document.getElementById("s" + tr.getAttribute("data-r")),
    };
  });
  var groups = all(table, "tbody tr.grp");
  var heads = all(table, "thead th.cl");
  var runs = all(document, "details.run");
  var clientNames = clientBoxes.map(function (b) { return b.getAttribute("data-name"); });
  // The lists under the table (shared reasons, n/a by missing capability)
  // count the cells the filters show, and hide what no shown cell has.
  var items = all(document, "ol.notes li").map(function (li) {
    return {
      li: li,
      id: li.id,
      total: Number(li.getAttribute("data-count")),
      count: li.querySelector(".count"),
      by: li.querySelector(".by"),
      alone: li.querySelector(".alone"),
    };
  });
  var lists = all(document, "ol.notes").map(function (ol) {
    // The list and its heading (an h2, with a p between them).
    var parts = [ol];
    var el = ol.previousElementSibling;
    while (el && (el.tagName === "P" || el.tagName === "H2")) {
      parts.push(el);
      if (el.tagName === "H2") break;
      el = el.previousElementSibling;
    }
    return { ol: ol, parts: parts };
  });

  function recount(shownCells) {
    var tally = {};
    var add = function (id, c, alone) {
      var t = tally[id] || (tally[id] = { n: 0, alone: 0, per: clientNames.map(function () { return 0; }) });
      t.n += 1;
      t.alone += alone;
      t.per[c] += 1;
    };
    shownCells.forEach(function (x) {
      var a = x.td.querySelector("sup.fn a");
      if (a) add(a.getAttribute("href").slice(1), x.c, 0);
      var lack = x.td.getAttribute("data-lack");
      if (lack) {
        var ks = lack.split(" ");
        ks.forEach(function (k) { add("lack" + k, x.c, ks.length === 1 ? 1 : 0); });
      }
    });
    items.forEach(function (item) {
      var t = tally[item.id];
      var n = t ? t.n : 0;
      item.li.hidden = n === 0;
      if (item.count) {
        item.count.textContent = "\u00d7 " + n + (n === item.total ? "" : " of " + item.total);
      }
      if (item.alone) item.alone.textContent = (t ? t.alone : 0) + " alone";
      if (item.by) {
        item.by.textContent = t ? clientNames.map(function (name, c) {
          return t.per[c] ? name + " " + t.per[c] : "";
        }).filter(Boolean).join(" \u00b7 ") : "";
      }
    });
    lists.forEach(function (list) {
      var empty = all(list.ol, "li").every(function (li) { return li.hidden; });
      list.parts.forEach(function (el) { el.hidden = empty; });
    });
  }

  function current() {
    return {
      hide: statusBoxes.filter(function (b) { return !b.checked; }).map(function (b) { return b.value; }),
      off: clientBoxes.filter(function (b) { return !b.checked; }).map(function (b) { return b.getAttribute("data-name"); }),
      spec: specSelect ? specSelect.value : "",
      q: search ? search.value.trim() : "",
    };
  }

  function toHash(v) {
    var parts = [];
    var list = function (xs) { return xs.map(encodeURIComponent).join(","); };
    if (v.hide.length) parts.push("hide=" + list(v.hide));
    if (v.off.length) parts.push("off=" + list(v.off));
    if (v.spec) parts.push("spec=" + encodeURIComponent(v.spec));
    if (v.q) parts.push("q=" + encodeURIComponent(v.q));
    return parts.join("&");
  }

  function fromHash(hash) {
    var v = { hide: [], off: [], spec: "", q: "" };
    hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq < 0) return;
      var key = part.slice(0, eq);
      var value = part.slice(eq + 1);
      var decode = function (s) {
        try { return decodeURIComponent(s); } catch (e) { return s; }
      };
      if (key === "hide" || key === "off") {
        v[key] = value ? value.split(",").map(decode) : [];
      } else if (key === "spec" || key === "q") {
        v[key] = decode(value);
      }
    });
    return v;
  }

  function set(v) {
    statusBoxes.forEach(function (b) { b.checked = v.hide.indexOf(b.value) < 0; });
    clientBoxes.forEach(function (b) { b.checked = v.off.indexOf(b.getAttribute("data-name")) < 0; });
    if (specSelect) {
      var known = all(specSelect, "option").some(function (o) { return o.value === v.spec; });
      specSelect.value = known ? v.spec : "";
    }
    if (search) search.value = v.q;
  }

  function apply() {
    var v = current();
    var hideStatus = {};
    v.hide.forEach(function (s) { hideStatus[s] = true; });
    var hideClient = clientBoxes.map(function (b) { return !b.checked; });
    var q = v.q.toLowerCase();
    heads.forEach(function (th, i) { th.hidden = !!hideClient[i]; });
    var visibleRows = 0;
    var visibleInGroup = {};
    var shownCells = [];
    rows.forEach(function (row) {
      var anyShown = false;
      var shownHere = [];
      row.cells.forEach(function (td, i) {
        td.hidden = !!hideClient[i];
        var off = !!hideStatus[td.getAttribute("data-s")];
        td.classList.toggle("off", off);
        if (!td.hidden && !off) {
          anyShown = true;
          shownHere.push({ td: td, c: i });
        }
      });
      var visible = anyShown &&
        (!v.spec || row.group === v.spec) &&
        (!q || row.name.indexOf(q) >= 0);
      row.tr.hidden = !visible;
      if (row.section) row.section.hidden = !visible;
      if (visible) {
        visibleRows += 1;
        visibleInGroup[row.group] = (visibleInGroup[row.group] || 0) + 1;
        shownCells = shownCells.concat(shownHere);
      }
    });
    recount(shownCells);
    groups.forEach(function (tr) {
      tr.hidden = !visibleInGroup[tr.getAttribute("data-group")];
    });
    runs.forEach(function (d) {
      d.hidden = !!hideClient[Number(d.getAttribute("data-c"))] ||
        !!hideStatus[d.getAttribute("data-s")];
    });
    if (shown) {
      shown.textContent = visibleRows === rows.length
        ? "Showing all " + rows.length + " scenarios."
        : "Showing " + visibleRows + " of " + rows.length + " scenarios.";
    }
  }

  function remember() {
    var hash = toHash(current());
    var url = location.href.replace(/#.*$/, "") + (hash ? "#" + hash : "");
    try {
      history.replaceState(null, "", url);
    } catch (e) {
      // Some browsers refuse history changes on file:// pages.
      if (hash || location.hash.indexOf("=") >= 0) location.replace("#" + hash);
    }
  }

  // A link to a run (`#r3c1`) opens it, and shows it if the filters hid
  // it (a dimmed cell's badge still leads to its run).
  function openTarget() {
    var id = location.hash.slice(1);
    if (!id || id.indexOf("=") >= 0) return;
    var el = document.getElementById(id);
    if (!el || el.tagName !== "DETAILS") return;
    el.hidden = false;
    if (el.parentElement) el.parentElement.hidden = false;
    el.open = true;
    el.scrollIntoView();
  }

  form.addEventListener("change", function () { apply(); remember(); });
  form.addEventListener("input", function (e) {
    if (e.target === search) { apply(); remember(); }
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  var reset = form.querySelector("button[name=reset]");
  if (reset) {
    reset.addEventListener("click", function () {
      set({ hide: [], off: [], spec: "", q: "" });
      apply();
      remember();
    });
  }
  window.addEventListener("hashchange", function () {
    if (location.hash.indexOf("=") >= 0) {
      set(fromHash(location.hash));
      apply();
    } else {
      openTarget();
    }
  });

  if (location.hash.indexOf("=") >= 0) set(fromHash(location.hash));
  form.hidden = false;
  if (shown) shown.hidden = false;
  apply();
  openTarget();
})();
