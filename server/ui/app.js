// memdb's web UI (SPEC §21.5): plain JavaScript, no build step, no
// dependencies. Every view calls memdb-server's REST API with the API key
// kept in sessionStorage. Data reaches the page only as text nodes (no
// HTML is ever parsed from a string), so stored content cannot inject
// markup; tests/suite/ui.rs checks that the HTML sinks are never used.
"use strict";

(() => {
  const KEY = "memdb.key";
  const NS = "memdb.namespace";
  const state = {
    who: null,
    canWrite: false,
    stats: null,
    search: null,
    context: null,
  };

  // ----- DOM helpers ----------------------------------------------------------

  /** An element with attributes (`on*` are listeners) and children
   * (strings become text nodes). */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "value") e.value = v;
      else if (k === "checked") e.checked = Boolean(v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }

  const $ = (id) => document.getElementById(id);

  /** Replaces `node`'s children with `kids` (nested arrays flattened,
   * empty ones dropped), as `el` takes them. */
  function fill(node, ...kids) {
    node.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  }

  function fmtTime(t) {
    if (!t) return "";
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? String(t) : d.toLocaleString();
  }

  function fmtNum(n, digits) {
    if (typeof n !== "number") return n === null || n === undefined ? "–" : String(n);
    return digits === undefined ? n.toLocaleString() : n.toFixed(digits);
  }

  /** The text of a message's content: a string, or parts. */
  function contentText(c) {
    if (typeof c === "string") return c;
    if (Array.isArray(c)) {
      return c
        .map((p) => (p && typeof p.text === "string" ? p.text : JSON.stringify(p)))
        .join("\n");
    }
    return c === null || c === undefined ? "" : JSON.stringify(c);
  }

  function convHref(id) {
    return "#/c/" + encodeURIComponent(id);
  }

  function listHref(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    }
    const s = q.toString();
    return "#/conversations" + (s ? "?" + s : "");
  }

  let toastTimer = 0;
  function toast(message, isError) {
    const t = $("toast");
    t.textContent = message;
    t.classList.toggle("error", Boolean(isError));
    t.classList.add("shown");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => t.classList.remove("shown"), 4000);
  }

  function errorBox(e) {
    return el("p", { class: "error", role: "alert" }, e instanceof Error ? e.message : String(e));
  }

  function kv(pairs) {
    return el(
      "dl",
      { class: "kv" },
      pairs.map(([k, v]) => [el("dt", null, k), el("dd", null, v)]),
    );
  }

  // ----- API ------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + (sessionStorage.getItem(KEY) || "") };
    const ns = sessionStorage.getItem(NS);
    if (ns) headers["X-Memdb-Namespace"] = ns;
    const init = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const r = await fetch(path, init);
    const text = await r.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = text;
    }
    if (!r.ok) {
      const msg = (data && typeof data === "object" && data.error) || r.status + " " + r.statusText;
      if (r.status === 401 && path !== "/api/v1/whoami") logout(String(msg));
      throw new ApiError(r.status, String(msg));
    }
    return data;
  }

  /** A tool of the `/mcp/tools/*` shim: its envelope's `data`. */
  async function tool(name, args) {
    const env = await api("POST", "/mcp/tools/" + name, args || {});
    return env && typeof env === "object" && "data" in env ? env.data : env;
  }

  async function loadStats() {
    const env = await api("GET", "/api/v1/stats");
    state.stats = env && env.data ? env.data : null;
    return state.stats;
  }

  // ----- Dialogs --------------------------------------------------------------

  /** A modal confirmation; resolves to the field values on OK, `null` on
   * Cancel or Escape. `fields`: [{name, label, value}]. */
  function confirmDialog({ title, text, ok, danger, fields }) {
    return new Promise((resolve) => {
      const opener = document.activeElement;
      const inputs = (fields || []).map((f) =>
        el("input", { id: "dlg-" + f.name, name: f.name, type: "text", value: f.value || "", required: f.required }),
      );
      const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
      const okBtn = el("button", { type: "submit", class: danger ? "danger" : "primary" }, ok);
      const form = el(
        "form",
        { class: "stack" },
        el("h2", { id: "dlg-title" }, title),
        text ? el("p", null, text) : null,
        (fields || []).map((f, i) => [el("label", { for: "dlg-" + f.name }, f.label), inputs[i]]),
        el("div", { class: "row end" }, cancel, okBtn),
      );
      const dlg = el("dialog", { "aria-labelledby": "dlg-title", class: "dialog" }, form);
      let settled = false;
      const done = (value) => {
        if (settled) return;
        settled = true;
        if (dlg.open) dlg.close();
        dlg.remove();
        if (opener && document.contains(opener)) opener.focus();
        resolve(value);
      };
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        const values = {};
        for (const i of inputs) values[i.name] = i.value;
        done(values);
      });
      cancel.addEventListener("click", () => done(null));
      // Escape fires `cancel` on a modal dialog.
      dlg.addEventListener("cancel", (ev) => {
        ev.preventDefault();
        done(null);
      });
      document.body.append(dlg);
      dlg.showModal();
      (inputs[0] || (danger ? cancel : okBtn)).focus();
    });
  }

  // ----- Login ----------------------------------------------------------------

  function showLogin(message) {
    $("nav").hidden = true;
    $("who").hidden = true;
    $("view").replaceChildren();
    $("login-view").hidden = false;
    const err = $("login-error");
    err.hidden = !message;
    err.textContent = message || "";
    $("login-key").value = "";
    $("login-key").focus();
  }

  function logout(message) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(NS);
    state.who = null;
    state.canWrite = false;
    state.stats = null;
    state.search = null;
    state.context = null;
    showLogin(message);
  }

  async function login(key, namespace) {
    sessionStorage.setItem(KEY, key);
    if (namespace) sessionStorage.setItem(NS, namespace);
    else sessionStorage.removeItem(NS);
    try {
      state.who = await api("GET", "/api/v1/whoami");
    } catch (e) {
      sessionStorage.removeItem(KEY);
      sessionStorage.removeItem(NS);
      throw e;
    }
    state.canWrite = state.who.access === "write";
    document.body.classList.toggle("read-only", !state.canWrite);
    $("login-view").hidden = true;
    $("nav").hidden = false;
    $("who").hidden = false;
    $("who-ns").textContent = "namespace " + state.who.namespace;
    $("who-access").textContent = state.canWrite ? "read-write" : "read-only";
    $("who-access").classList.toggle("ro", !state.canWrite);
  }

  // ----- Router ---------------------------------------------------------------

  function parseHash() {
    const raw = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
    const [path, query] = raw.split("?", 2);
    const parts = path.split("/").map((p) => {
      try {
        return decodeURIComponent(p);
      } catch (_) {
        return p;
      }
    });
    return { name: parts[0] || "conversations", arg: parts[1], params: new URLSearchParams(query || "") };
  }

  const views = {
    conversations: viewConversations,
    c: viewConversation,
    search: viewSearch,
    context: viewContext,
    stats: viewStats,
    kb: viewKb,
    memorg: viewMemorg,
  };

  async function route() {
    if (!state.who) return;
    const { name, arg, params } = parseHash();
    const view = views[name] || viewConversations;
    const current = name === "c" ? "conversations" : name;
    for (const a of document.querySelectorAll("#nav a")) {
      if (a.dataset.view === current) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    const root = $("view");
    root.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    try {
      await view(root, arg, params);
    } catch (e) {
      if (!state.who) return;
      root.replaceChildren(el("h1", { tabindex: "-1" }, "Error"), errorBox(e));
    }
    const h = root.querySelector("h1");
    if (h) h.focus({ preventScroll: false });
  }

  // ----- Conversations --------------------------------------------------------

  function facetList(title, counts, key, params) {
    const entries = Object.entries(counts || {});
    const current = params.get(key) || "";
    return el(
      "nav",
      { class: "facet", "aria-label": title },
      el("h2", null, title),
      entries.length === 0
        ? el("p", { class: "muted" }, "None yet.")
        : el(
            "ul",
            null,
            el(
              "li",
              null,
              el("a", { href: listHref({ ...Object.fromEntries(params), [key]: "", page: "" }), "aria-current": current === "" ? "true" : null }, "All"),
            ),
            entries.map(([name, n]) =>
              el(
                "li",
                null,
                el(
                  "a",
                  {
                    href: listHref({ ...Object.fromEntries(params), [key]: name, page: "" }),
                    "aria-current": current === name ? "true" : null,
                    ["data-" + key]: name,
                  },
                  el("span", { class: "name" }, name),
                  el("span", { class: "count" }, fmtNum(n)),
                ),
              ),
            ),
          ),
    );
  }

  function badges(c) {
    return [
      c.pinned ? el("span", { class: "badge pin" }, "pinned") : null,
      c.archived ? el("span", { class: "badge arch" }, "archived") : null,
    ];
  }

  async function viewConversations(root, _arg, params) {
    const page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
    const pageSize = 20;
    const q = new URLSearchParams({ page: String(page), page_size: String(pageSize) });
    for (const k of ["folder", "label", "pinned", "archived"]) {
      if (params.get(k)) q.set(k, params.get(k));
    }
    const [list, stats] = await Promise.all([api("GET", "/api/v1/conversations?" + q), loadStats()]);
    const status = params.get("archived") || "";
    const filters = el(
      "form",
      { class: "filters", "aria-label": "Filters" },
      el("label", { for: "f-archived" }, "Status"),
      el(
        "select",
        {
          id: "f-archived",
          onchange: (ev) => {
            location.hash = listHref({ ...Object.fromEntries(params), archived: ev.target.value, page: "" });
          },
        },
        el("option", { value: "", selected: status === "" }, "any"),
        el("option", { value: "false", selected: status === "false" }, "active"),
        el("option", { value: "true", selected: status === "true" }, "archived"),
      ),
      el(
        "label",
        { class: "check" },
        el("input", {
          type: "checkbox",
          id: "f-pinned",
          checked: params.get("pinned") === "true",
          onchange: (ev) => {
            location.hash = listHref({ ...Object.fromEntries(params), pinned: ev.target.checked ? "true" : "", page: "" });
          },
        }),
        " pinned only",
      ),
    );
    const scope = [params.get("folder") && "folder " + params.get("folder"), params.get("label") && "label " + params.get("label")]
      .filter(Boolean)
      .join(", ");
    const rows = list.results.map((c) =>
      el(
        "li",
        { class: "conv" },
        el("a", { href: convHref(c.id), class: "title" }, c.label || "(no label)"),
        el(
          "div",
          { class: "meta" },
          el("span", { class: "folder" }, c.folder),
          el("span", null, c.message_count + " messages"),
          el("time", { datetime: c.updated_at }, fmtTime(c.updated_at)),
          badges(c),
        ),
      ),
    );
    const pager = el(
      "div",
      { class: "pager" },
      el(
        "button",
        {
          type: "button",
          disabled: !list.has_prev,
          onclick: () => (location.hash = listHref({ ...Object.fromEntries(params), page: page - 1 })),
        },
        "← Previous",
      ),
      el("span", { class: "muted" }, `Page ${list.page} of ${Math.max(1, list.total_pages)} · ${fmtNum(list.total)} conversations`),
      el(
        "button",
        {
          type: "button",
          disabled: !list.has_next,
          onclick: () => (location.hash = listHref({ ...Object.fromEntries(params), page: page + 1 })),
        },
        "Next →",
      ),
    );
    root.replaceChildren(
      el(
        "div",
        { class: "layout" },
        el(
          "aside",
          { class: "side" },
          facetList("Folders", stats && stats.by_folder, "folder", params),
          facetList("Labels", stats && stats.by_label, "label", params),
        ),
        el(
          "section",
          { class: "content", "aria-labelledby": "conv-title" },
          el("h1", { id: "conv-title", tabindex: "-1" }, "Conversations", scope ? el("span", { class: "scope" }, " · " + scope) : null),
          filters,
          rows.length ? el("ul", { class: "convs", id: "conv-list" }, rows) : el("p", { class: "muted", id: "conv-list" }, "No conversations here."),
          pager,
        ),
      ),
    );
  }

  function explainLine(x) {
    if (!x) return null;
    const parts = [];
    const add = (k, v, d) => {
      if (v !== null && v !== undefined) parts.push([k, fmtNum(v, d)]);
    };
    add("keyword rank", x.keyword_rank);
    add("BM25", x.keyword_score, 3);
    add("semantic rank", x.semantic_rank);
    add("cosine", x.similarity, 3);
    add("fused", x.fused, 4);
    add("period boost", x.period_boost, 3);
    add("neighbour of rank", x.neighbour_of);
    return el("dl", { class: "explain" }, parts.map(([k, v]) => el("div", null, el("dt", null, k), el("dd", null, v))));
  }

  function messageItem(m) {
    return el(
      "li",
      { class: "msg role-" + String(m.role).replace(/[^a-z]/gi, "") },
      el("div", { class: "meta" }, el("strong", null, m.role), el("time", { datetime: m.timestamp }, fmtTime(m.timestamp))),
      el("div", { class: "text" }, contentText(m.content)),
    );
  }

  async function act(what, fn, done) {
    try {
      await fn();
      toast(what);
      if (done) await done();
    } catch (e) {
      toast(e.message, true);
    }
  }

  async function viewConversation(root, id) {
    const c = await api("GET", "/api/v1/conversations/" + encodeURIComponent(id || ""));
    const path = "/api/v1/conversations/" + encodeURIComponent(c.id);
    const reload = () => route();
    const actions = state.canWrite
      ? el(
          "div",
          { class: "actions", role: "group", "aria-label": "Actions" },
          c.pinned
            ? null
            : el(
                "button",
                {
                  type: "button",
                  id: "act-pin",
                  onclick: async () => {
                    if (await confirmDialog({ title: "Pin this conversation?", text: "Pinning sets its importance to 10: it is always considered for context.", ok: "Pin" }))
                      await act("Pinned.", () => api("PUT", path + "/pin"), reload);
                  },
                },
                "Pin",
              ),
          c.archived
            ? null
            : el(
                "button",
                {
                  type: "button",
                  id: "act-archive",
                  onclick: async () => {
                    if (await confirmDialog({ title: "Archive this conversation?", text: "Archived conversations stay searchable but are marked inactive.", ok: "Archive" }))
                      await act("Archived.", () => api("PUT", path + "/archive"), reload);
                  },
                },
                "Archive",
              ),
          el(
            "button",
            {
              type: "button",
              id: "act-label",
              onclick: async () => {
                const v = await confirmDialog({
                  title: "Label and folder",
                  ok: "Save",
                  fields: [
                    { name: "label", label: "Label", value: c.label, required: true },
                    { name: "folder", label: "Folder", value: c.folder },
                  ],
                });
                if (v) await act("Saved.", () => api("PUT", path + "/label", { label: v.label, folder: v.folder || null }), reload);
              },
            },
            "Label…",
          ),
          el(
            "button",
            {
              type: "button",
              id: "act-delete",
              class: "danger",
              onclick: async () => {
                if (await confirmDialog({ title: "Delete this conversation?", text: `“${c.label}” and its ${c.message_count} messages are deleted for good.`, ok: "Delete", danger: true }))
                  await act("Deleted.", () => api("DELETE", path), async () => {
                    location.hash = "#/conversations";
                  });
              },
            },
            "Delete…",
          ),
        )
      : null;
    root.replaceChildren(
      el(
        "article",
        { class: "conversation" },
        el("p", null, el("a", { href: "#/conversations" }, "← All conversations")),
        el("h1", { tabindex: "-1", id: "c-title" }, c.label || "(no label)", " ", badges(c)),
        kv([
          ["Folder", el("a", { href: listHref({ folder: c.folder }) }, c.folder)],
          ["Status", c.status],
          ["Importance", String(c.importance_score)],
          ["Messages", String(c.message_count)],
          ["Words", fmtNum(c.word_count)],
          ["Created", fmtTime(c.created_at)],
          ["Updated", fmtTime(c.updated_at)],
          ["Id", el("code", null, c.id)],
        ]),
        actions,
        el("h2", null, "Messages"),
        el("ol", { class: "messages" }, (c.messages || []).map(messageItem)),
      ),
    );
  }

  // ----- Search ---------------------------------------------------------------

  function renderSearchResults(out) {
    if (!out) return [];
    if (out.error) return [errorBox(out.error)];
    const r = out.result;
    return [
      el("p", { class: "summary" }, `${r.total} result${r.total === 1 ? "" : "s"} · mode ${r.mode}`),
      r.notes && r.notes.length ? el("ul", { class: "notes" }, r.notes.map((n) => el("li", null, n))) : null,
      el(
        "ol",
        { class: "results", id: "search-results" },
        r.results.map((h) =>
          el(
            "li",
            { class: "hit" },
            el(
              "div",
              { class: "meta" },
              el("a", { href: convHref(h.conversation_id), class: "title" }, h.label || "(no label)"),
              el("span", { class: "folder" }, h.folder),
              el("span", null, h.role),
              el("time", { datetime: h.timestamp }, fmtTime(h.timestamp)),
              el("span", { class: "score", title: "score, higher is better" }, "score " + fmtNum(h.score, 4)),
            ),
            el("div", { class: "text" }, h.content),
            explainLine(h.explain),
          ),
        ),
      ),
    ];
  }

  async function viewSearch(root) {
    const last = state.search || { query: "", mode: "hybrid", explain: true, limit: 10 };
    const results = el("div", { class: "results-box", "aria-live": "polite" }, renderSearchResults(state.search));
    const modes = ["keyword", "semantic", "hybrid"];
    const form = el(
      "form",
      { class: "stack", id: "search-form", role: "search" },
      el("label", { for: "s-query" }, "Query"),
      el(
        "div",
        { class: "row" },
        el("input", { id: "s-query", name: "query", type: "search", required: true, value: last.query, autocomplete: "off" }),
        el("button", { type: "submit", class: "primary" }, "Search"),
      ),
      el(
        "fieldset",
        { class: "row wrap" },
        el("legend", null, "Mode"),
        modes.map((m) =>
          el("label", { class: "check" }, el("input", { type: "radio", name: "mode", value: m, checked: last.mode === m }), " " + m),
        ),
      ),
      el(
        "div",
        { class: "row wrap" },
        el("label", { class: "check" }, el("input", { type: "checkbox", name: "explain", id: "s-explain", checked: last.explain }), " explain scores"),
        el("label", { for: "s-limit" }, "Results"),
        el("input", { id: "s-limit", name: "limit", type: "number", min: "1", max: "100", value: String(last.limit), class: "narrow" }),
      ),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const fd = new FormData(form);
      const req = {
        query: String(fd.get("query") || ""),
        mode: String(fd.get("mode") || "hybrid"),
        explain: fd.get("explain") === "on",
        limit: Math.min(100, Math.max(1, parseInt(String(fd.get("limit")), 10) || 10)),
      };
      results.replaceChildren(el("p", { class: "muted" }, "Searching…"));
      try {
        const r = await api("POST", "/api/v1/query", req);
        state.search = { ...req, result: r };
      } catch (e) {
        state.search = { ...req, error: e.message };
      }
      fill(results, renderSearchResults(state.search));
    });
    root.replaceChildren(
      el("section", { class: "content" }, el("h1", { tabindex: "-1" }, "Search"), form, results),
    );
  }

  // ----- Context preview ------------------------------------------------------

  function splitList(s) {
    return String(s || "")
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean);
  }

  function renderContext(out) {
    if (!out) return [];
    if (out.error) return [errorBox(out.error)];
    const r = out.result;
    const pct = r.context_budget ? Math.round((100 * r.token_count) / r.context_budget) : 0;
    return [
      el(
        "p",
        { class: "summary", id: "ctx-summary" },
        `${fmtNum(r.token_count)} of ${fmtNum(r.context_budget)} tokens (target ${fmtNum(r.target_tokens)}) · ${r.messages.length} messages from ${r.conversation_ids.length} conversations`,
      ),
      el("meter", { min: "0", max: String(r.context_budget), value: String(r.token_count), "aria-label": "tokens used" }, pct + "%"),
      r.notes && r.notes.length ? el("ul", { class: "notes" }, r.notes.map((n) => el("li", null, n))) : null,
      r.recall
        ? el(
            "p",
            { class: "muted" },
            `Recall: ${r.recall.semantic} semantic, ${r.recall.pinned} pinned, ${r.recall.recent_label} recent with a preferred label, ${r.recall.distinct} distinct`,
          )
        : null,
      el(
        "ol",
        { class: "results", id: "ctx-messages" },
        r.messages.map((m) =>
          el(
            "li",
            { class: "hit" },
            el(
              "div",
              { class: "meta citation" },
              el("a", { href: convHref(m.citation.conversation_id), class: "title" }, m.citation.label || "(no label)"),
              el("span", { class: "folder" }, m.citation.folder),
              el("time", { datetime: m.citation.timestamp }, fmtTime(m.citation.timestamp)),
              el("span", null, m.role),
              el("span", { class: "score" }, m.tokens + " tokens · rank " + fmtNum(m.ranking && m.ranking.score, 2)),
            ),
            el("div", { class: "text" }, contentText(m.content)),
            m.sources && m.sources.length ? el("p", { class: "muted small" }, "found by " + m.sources.join(", ")) : null,
          ),
        ),
      ),
    ];
  }

  async function viewContext(root) {
    const last = state.context || { query: "", budget: 4000, counter: "estimate", labels: "", excluded: "" };
    const results = el("div", { class: "results-box", "aria-live": "polite" }, renderContext(state.context));
    const out = el("output", { id: "c-budget-out", for: "c-budget" }, String(last.budget));
    const slider = el("input", { id: "c-budget", name: "budget", type: "range", min: "100", max: "16000", step: "100", value: String(last.budget) });
    const form = el(
      "form",
      { class: "stack", id: "context-form" },
      el("label", { for: "c-query" }, "Query"),
      el(
        "div",
        { class: "row" },
        el("input", { id: "c-query", name: "query", type: "search", required: true, value: last.query, autocomplete: "off" }),
        el("button", { type: "submit", class: "primary" }, "Preview"),
      ),
      el("label", { for: "c-budget" }, "Token budget: ", out),
      slider,
      el(
        "div",
        { class: "grid2" },
        el("div", { class: "stack" }, el("label", { for: "c-labels" }, "Preferred labels (comma separated)"), el("input", { id: "c-labels", name: "labels", type: "text", value: last.labels })),
        el("div", { class: "stack" }, el("label", { for: "c-excluded" }, "Excluded folders (comma separated)"), el("input", { id: "c-excluded", name: "excluded", type: "text", value: last.excluded })),
      ),
      el(
        "div",
        { class: "row wrap" },
        el("label", { for: "c-counter" }, "Token counter"),
        el(
          "select",
          { id: "c-counter", name: "counter" },
          el("option", { value: "estimate", selected: last.counter === "estimate" }, "estimate"),
          el("option", { value: "cl100k_base", selected: last.counter === "cl100k_base" }, "cl100k_base (exact)"),
        ),
      ),
    );
    const run = async () => {
      const fd = new FormData(form);
      const req = {
        query: String(fd.get("query") || ""),
        budget: parseInt(String(fd.get("budget")), 10) || 4000,
        counter: String(fd.get("counter") || "estimate"),
        labels: String(fd.get("labels") || ""),
        excluded: String(fd.get("excluded") || ""),
      };
      if (!req.query) return;
      results.replaceChildren(el("p", { class: "muted" }, "Assembling…"));
      try {
        const r = await api("POST", "/api/v1/context/assemble", {
          query: req.query,
          context_budget: req.budget,
          token_counter: req.counter,
          preferred_labels: splitList(req.labels),
          excluded_folders: splitList(req.excluded),
        });
        state.context = { ...req, result: r };
      } catch (e) {
        state.context = { ...req, error: e.message };
      }
      fill(results, renderContext(state.context));
    };
    slider.addEventListener("input", () => (out.value = slider.value));
    // Moving the slider re-assembles once it is let go (or on each arrow key).
    slider.addEventListener("change", () => {
      if (form.elements.query.value) run();
    });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      run();
    });
    root.replaceChildren(
      el(
        "section",
        { class: "content" },
        el("h1", { tabindex: "-1" }, "Context preview"),
        el("p", { class: "muted" }, "What an agent asking this would be given, within the budget, with a citation per message."),
        form,
        results,
      ),
    );
  }

  // ----- Stats ----------------------------------------------------------------

  function countTable(caption, counts, key) {
    const entries = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
    return el(
      "table",
      { class: "counts" },
      el("caption", null, caption),
      el("thead", null, el("tr", null, el("th", { scope: "col" }, key), el("th", { scope: "col", class: "num" }, "conversations"))),
      el(
        "tbody",
        null,
        entries.map(([name, n]) =>
          el("tr", null, el("td", null, el("a", { href: listHref({ [key]: name }) }, name)), el("td", { class: "num" }, fmtNum(n))),
        ),
      ),
    );
  }

  async function viewStats(root) {
    const s = await loadStats();
    const card = (label, value) => el("div", { class: "card" }, el("span", { class: "big" }, value), el("span", { class: "muted" }, label));
    root.replaceChildren(
      el(
        "section",
        { class: "content" },
        el("h1", { tabindex: "-1" }, "Stats"),
        el(
          "div",
          { class: "cards", id: "stats-cards" },
          card("conversations", fmtNum(s.total_conversations)),
          card("messages", fmtNum(s.total_messages)),
          card("words", fmtNum(s.total_words)),
          card("active", fmtNum(s.active)),
          card("archived", fmtNum(s.archived)),
          card("pinned", fmtNum(s.pinned)),
          card("average importance", fmtNum(s.average_importance, 2)),
        ),
        el("div", { class: "grid2" }, countTable("By folder", s.by_folder, "folder"), countTable("By label", s.by_label, "label")),
      ),
    );
  }

  // ----- Knowledge bases (KuraDB) ---------------------------------------------

  function renderGroups(title, groups) {
    if (groups === undefined || groups === null) return null;
    return el(
      "section",
      { class: "kb-branch" },
      el("h2", null, title),
      groups.length === 0
        ? el("p", { class: "muted" }, "No matches.")
        : groups.map((g) =>
            el(
              "div",
              { class: "hit" },
              el("div", { class: "meta" }, el("code", null, g.source)),
              el(
                "ol",
                { class: "chunks" },
                g.matches.map((m) => el("li", null, el("span", { class: "muted" }, "chunk " + m.chunk + ": "), el("span", { class: "text" }, m.content))),
              ),
            ),
          ),
    );
  }

  async function viewKb(root) {
    const list = await api("GET", "/api/list");
    const bases = list.registered || [];
    const results = el("div", { class: "results-box", "aria-live": "polite" });
    const body = [
      el("h1", { tabindex: "-1" }, "Knowledge bases"),
      bases.length === 0
        ? el("p", { class: "muted" }, "No knowledge base is registered (see `memdb kb add`).")
        : el(
            "ul",
            { class: "plain" },
            bases.map((b) => el("li", null, el("strong", null, b.db), el("span", { class: "muted" }, " · registered " + fmtTime(b.createAt)))),
          ),
    ];
    if (bases.length) {
      const form = el(
        "form",
        { class: "stack", id: "kb-form", role: "search" },
        el(
          "div",
          { class: "row wrap" },
          el("label", { for: "kb-db" }, "Base"),
          el("select", { id: "kb-db", name: "db" }, bases.map((b) => el("option", { value: b.db }, b.db))),
          el("label", { for: "kb-target" }, "Search"),
          el(
            "select",
            { id: "kb-target", name: "target" },
            el("option", { value: "" }, "keyword and semantic"),
            el("option", { value: "keyword" }, "keyword"),
            el("option", { value: "semantic" }, "semantic"),
          ),
        ),
        el("label", { for: "kb-q" }, "Query"),
        el(
          "div",
          { class: "row" },
          el("input", { id: "kb-q", name: "q", type: "search", required: true, autocomplete: "off" }),
          el("button", { type: "submit", class: "primary" }, "Search"),
        ),
      );
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        const q = new URLSearchParams({ db: String(fd.get("db")), q: String(fd.get("q")), limit: "10" });
        if (fd.get("target")) q.set("target", String(fd.get("target")));
        results.replaceChildren(el("p", { class: "muted" }, "Searching…"));
        try {
          const r = await api("GET", "/api/search?" + q);
          fill(results, renderGroups("Keyword", r.keyword), renderGroups("Semantic", r.semantic));
        } catch (e) {
          results.replaceChildren(errorBox(e));
        }
      });
      body.push(form, results);
    }
    root.replaceChildren(el("section", { class: "content" }, body));
  }

  // ----- Memorg ---------------------------------------------------------------

  function renderSession(h) {
    const s = h.session || {};
    return [
      el("h2", null, "Session"),
      kv([
        ["Id", el("code", null, String(s.session_id))],
        ["User", String(s.user_id || "")],
        ["Created", fmtTime(s.created_at)],
      ]),
      (h.conversations || []).map((c) =>
        el(
          "section",
          { class: "memorg-conv" },
          el("h3", null, c.title || "(untitled conversation)"),
          c.summary ? el("p", { class: "muted" }, c.summary) : null,
          (c.topics || []).map((t) =>
            el(
              "div",
              { class: "topic" },
              el("h4", null, t.title || "(untitled topic)"),
              el(
                "ol",
                { class: "messages" },
                (t.exchanges || []).map((e) => [
                  messageItem({ role: "user", content: e.user_message, timestamp: e.created_at }),
                  messageItem({ role: "system", content: e.system_message, timestamp: e.created_at }),
                ]),
              ),
            ),
          ),
        ),
      ),
    ];
  }

  async function viewMemorg(root) {
    const u = await tool("get_memory_usage", {});
    const results = el("div", { class: "results-box", "aria-live": "polite" });
    const form = el(
      "form",
      { class: "stack", id: "session-form" },
      el("label", { for: "m-session" }, "Session id"),
      el(
        "div",
        { class: "row" },
        el("input", { id: "m-session", name: "session_id", type: "text", required: true, autocomplete: "off", spellcheck: "false" }),
        el("button", { type: "submit", class: "primary" }, "Open"),
      ),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      results.replaceChildren(el("p", { class: "muted" }, "Loading…"));
      try {
        const h = await tool("get_session", { session_id: form.elements.session_id.value.trim() });
        fill(results, renderSession(h));
      } catch (e) {
        results.replaceChildren(errorBox(e));
      }
    });
    const counts = u.counts && typeof u.counts === "object" ? Object.entries(u.counts) : [];
    root.replaceChildren(
      el(
        "section",
        { class: "content" },
        el("h1", { tabindex: "-1" }, "Memorg"),
        el("h2", null, "Memory usage"),
        kv([
          ["Estimated tokens", fmtNum(u.total_tokens)],
          ["Records", fmtNum(u.active_items)],
          ["Vectors", fmtNum(u.vector_count)],
          ["Vector index bytes", fmtNum(u.index_size)],
          ...counts.map(([k, v]) => [k, typeof v === "number" ? fmtNum(v) : JSON.stringify(v)]),
        ]),
        el("h2", null, "Open a session"),
        form,
        results,
      ),
    );
  }

  // ----- Start ----------------------------------------------------------------

  function start() {
    $("login-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const key = $("login-key").value.trim();
      const ns = $("login-ns").value.trim();
      if (!key) return;
      try {
        await login(key, ns);
      } catch (e) {
        showLogin(e.status === 401 ? "That key is not valid for this server." : e.message);
        return;
      }
      if (!location.hash.startsWith("#/")) location.hash = "#/conversations";
      else route();
    });
    $("logout").addEventListener("click", () => logout("Logged out."));
    window.addEventListener("hashchange", route);
    const key = sessionStorage.getItem(KEY);
    if (!key) {
      showLogin();
      return;
    }
    login(key, sessionStorage.getItem(NS) || "").then(route, (e) => showLogin(e.message));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
