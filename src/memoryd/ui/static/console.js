// memoryd console: the few things that need script. Loaded from 'self' (CSP: no inline script).
(function () {
  "use strict";

  function selectAll(root) {
    root.querySelectorAll("input.select-all").forEach(function (box) {
      box.addEventListener("change", function () {
        var form = box.closest("form");
        form.querySelectorAll('input[type="checkbox"][name="' + box.dataset.target + '"]').forEach(function (c) {
          c.checked = box.checked;
        });
      });
    });
  }

  function entityPath(id) {
    return encodeURIComponent(id).replace(/%3A/g, ":").replace(/%2F/g, "/");
  }

  function graph(root) {
    var el = root.querySelector ? root.querySelector("#graph") : null;
    if (!el || el.dataset.ready || typeof cytoscape !== "function") { return; }
    el.dataset.ready = "1";
    fetch(el.dataset.src, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("graph: HTTP " + r.status); } return r.json(); })
      .then(function (data) {
        var elements = data.nodes.map(function (n) {
          return { data: { id: n.id, label: n.label, kind: n.kind, group: n.group, weight: n.count } };
        }).concat(data.edges.map(function (e, i) {
          return { data: { id: "e" + i, source: e.source, target: e.target } };
        }));
        var cy = cytoscape({
          container: el,
          elements: elements,
          layout: { name: "cose", animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 70 },
          style: [
            { selector: "node", style: { "label": "data(label)", "font-size": 12, "min-zoomed-font-size": 9, "color": "#1d2430",
              "text-wrap": "ellipsis", "text-max-width": 140, "text-valign": "bottom", "text-margin-y": 3 } },
            { selector: 'node[kind = "entity"]', style: { "background-color": "#2f5bd3", "shape": "round-rectangle",
              "width": "mapData(weight, 1, 50, 18, 44)", "height": "mapData(weight, 1, 50, 18, 44)",
              "font-size": 14, "font-weight": 600 } },
            { selector: 'node[kind = "memory"]', style: { "background-color": "#9aa6bd", "width": 10, "height": 10,
              "font-size": 11, "text-max-width": 120 } },
            { selector: "edge", style: { "width": 1, "line-color": "#c3cad6", "curve-style": "haystack" } }
          ]
        });
        cy.on("tap", "node", function (evt) {
          var n = evt.target.data();
          window.location.href = el.dataset.base + (n.kind === "entity" ? "/entities/" + entityPath(n.id) : "/memories/" + encodeURIComponent(n.id));
        });
        el.dataset.nodes = String(data.nodes.length);
      })
      .catch(function (err) { el.textContent = String(err); });
  }

  function init(root) { selectAll(root); graph(root); document.documentElement.dataset.console = "ready"; }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (evt) { init(evt.target); });
}());
