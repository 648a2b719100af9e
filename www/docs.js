// docs.js — draws the API reference (docs.html) from this server's openapi.json.
//
// Why it exists: the reference must follow the document exactly and need no
// third-party renderer or CDN. It lists every operation (method, path,
// summary, description, parameters, responses) grouped by tag, then the
// schemas. Text from the document is set as text (never parsed as HTML);
// `backticks` in descriptions become <code>.
"use strict";

(function () {
  var METHODS = ["get", "put", "post", "patch", "delete", "options", "head"];

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  // "a `b` c" → text, <code>b</code>, text
  function prose(tag, text, attrs) {
    var node = el(tag, attrs);
    String(text || "").split("`").forEach(function (part, i) {
      node.appendChild(i % 2 ? el("code", { text: part }) : document.createTextNode(part));
    });
    return node;
  }

  function resolve(doc, node) {
    var seen = 0;
    while (node && node.$ref && seen++ < 16) {
      var target = doc;
      node.$ref.replace(/^#\//, "").split("/").forEach(function (part) {
        target = target ? target[part.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
      });
      node = target;
    }
    return node || {};
  }

  function refName(node) {
    return node && node.$ref ? node.$ref.split("/").pop() : null;
  }

  function typeText(doc, schema) {
    if (!schema) return "";
    var name = refName(schema);
    if (name) return name;
    if (schema.type === "array") return "array of " + typeText(doc, schema.items);
    var t = Array.isArray(schema.type) ? schema.type.join(" | ") : (schema.type || "any");
    if (schema.format) t += " (" + schema.format + ")";
    if (schema.enum) t += ": " + schema.enum.join(", ");
    return t;
  }

  function anchor(op, method, path) {
    return "op-" + (op.operationId || (method + path).replace(/[^A-Za-z0-9]+/g, "-"));
  }

  function parametersTable(doc, params) {
    var rows = params.map(function (p) {
      p = resolve(doc, p);
      var s = p.schema || {};
      var limits = [];
      if (s.minimum !== undefined) limits.push("min " + s.minimum);
      if (s.maximum !== undefined) limits.push("max " + s.maximum);
      if (s.default !== undefined) limits.push("default " + s.default);
      return el("tr", { "class": "param", "data-name": p.name }, [
        el("td", {}, [el("code", { text: p.name })]),
        el("td", { text: p.in + (p.required ? ", required" : "") }),
        el("td", { text: typeText(doc, s) + (limits.length ? " (" + limits.join(", ") + ")" : "") }),
        prose("td", p.description)
      ]);
    });
    return el("table", {}, [
      el("thead", {}, [el("tr", {}, [el("th", { text: "Parameter" }), el("th", { text: "In" }),
        el("th", { text: "Type" }), el("th", { text: "Description" })])]),
      el("tbody", {}, rows)
    ]);
  }

  function responsesList(doc, responses) {
    return el("ul", { "class": "responses" }, Object.keys(responses).map(function (status) {
      var r = resolve(doc, responses[status]);
      var types = Object.keys(r.content || {}).map(function (media) {
        var schema = r.content[media].schema;
        return media + (schema ? " → " + typeText(doc, schema) : "");
      });
      return el("li", { "data-status": status }, [
        el("span", { "class": "status-code status-" + status.charAt(0), text: status }), " ",
        prose("span", r.description || ""),
        types.length ? el("span", { "class": "media", text: " — " + types.join("; ") }) : ""
      ]);
    }));
  }

  function operation(doc, path, method, op) {
    var params = op.parameters || [];
    var section = el("section", { "class": "op card", id: anchor(op, method, path),
                                  "data-path": path, "data-method": method.toUpperCase() }, [
      el("h3", {}, [el("span", { "class": "method method-" + method, text: method.toUpperCase() }),
                    " ", el("code", { "class": "path", text: path })]),
      prose("p", op.summary, { "class": "summary" })
    ]);
    if (op.description) section.appendChild(prose("p", op.description, { "class": "description" }));
    var required = params.some(function (p) { return resolve(doc, p).required; });
    if (method === "get" && path.indexOf("{") < 0 && !required)
      section.appendChild(el("p", {}, [el("a", { href: path.replace(/^\//, ""), "class": "try" },
                                          ["Try it: GET " + path])]));
    if (params.length) section.appendChild(parametersTable(doc, params));
    section.appendChild(el("h4", { text: "Responses" }));
    section.appendChild(responsesList(doc, op.responses || {}));
    return section;
  }

  function schemas(doc) {
    var all = (doc.components && doc.components.schemas) || {};
    var box = el("section", { "class": "card", id: "schema-list" }, [el("h2", { text: "Schemas" })]);
    Object.keys(all).forEach(function (name) {
      var s = all[name];
      var item = el("div", { "class": "schema", id: "schema-" + name }, [el("h3", { text: name })]);
      if (s.description) item.appendChild(prose("p", s.description));
      var props = s.properties || {};
      var required = s.required || [];
      var names = Object.keys(props);
      if (names.length) {
        item.appendChild(el("table", {}, [el("tbody", {}, names.map(function (p) {
          return el("tr", {}, [
            el("td", {}, [el("code", { text: p })]),
            el("td", { text: typeText(doc, props[p]) + (required.indexOf(p) >= 0 ? ", required" : "") }),
            prose("td", props[p].description)
          ]);
        }))]));
      }
      box.appendChild(item);
    });
    return box;
  }

  function draw(doc) {
    var ops = document.getElementById("operations");
    var toc = document.getElementById("toc");
    if (doc.info && doc.info.description)
      document.getElementById("api-description").replaceWith(
        prose("p", doc.info.description, { "class": "tagline", id: "api-description" }));
    var byTag = {};
    var order = (doc.tags || []).map(function (t) { return t.name; });
    Object.keys(doc.paths || {}).forEach(function (path) {
      METHODS.forEach(function (method) {
        var op = doc.paths[path][method];
        if (!op) return;
        var tag = (op.tags && op.tags[0]) || "other";
        if (order.indexOf(tag) < 0) order.push(tag);
        (byTag[tag] = byTag[tag] || []).push([path, method, op]);
      });
    });
    toc.appendChild(el("h2", { text: "Operations" }));
    order.forEach(function (tag) {
      if (!byTag[tag]) return;
      var info = (doc.tags || []).filter(function (t) { return t.name === tag; })[0] || {};
      var group = el("section", { "class": "tag", id: "tag-" + tag }, [el("h2", { text: tag })]);
      if (info.description) group.appendChild(prose("p", info.description));
      var list = el("ul", {});
      byTag[tag].forEach(function (entry) {
        var id = anchor(entry[2], entry[1], entry[0]);
        list.appendChild(el("li", {}, [el("a", { href: "#" + id }, [
          el("span", { "class": "method method-" + entry[1], text: entry[1].toUpperCase() }), " ",
          el("code", { text: entry[0] })]), " — " + (entry[2].summary || "")]));
        group.appendChild(operation(doc, entry[0], entry[1], entry[2]));
      });
      toc.appendChild(el("h3", { text: tag }));
      toc.appendChild(list);
      ops.appendChild(group);
    });
    document.getElementById("schemas").appendChild(schemas(doc));
    toc.hidden = false;
    document.getElementById("loading").remove();
    document.body.setAttribute("data-rendered", "true");
  }

  fetch("openapi.json", { headers: { Accept: "application/json" } })
    .then(function (r) {
      if (!r.ok) throw new Error("openapi.json answered " + r.status);
      return r.json();
    })
    .then(draw)
    .catch(function (e) {
      var loading = document.getElementById("loading");
      loading.textContent = "Could not draw the reference: " + e.message + ". ";
      loading.appendChild(el("a", { href: "openapi.json", text: "Read openapi.json" }));
      loading.className = "card error";
    });
})();
