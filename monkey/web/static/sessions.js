// The sessions list: every session of the monkey home, sub-agents under their parent, refreshed live.
"use strict";
(() => {
  const { el, when, state } = monkey;
  const list = document.getElementById("sessions");
  const empty = document.getElementById("empty");
  const status = document.getElementById("status");
  const workspace = document.getElementById("workspace");
  const stateFilter = document.getElementById("state");
  const params = new URLSearchParams(location.search);
  workspace.value = params.get("workspace") || "";
  stateFilter.value = params.get("state") || "";
  let sessions = [];

  function item(s, children) {
    const href = "/session?id=" + encodeURIComponent(s.id);
    const li = el("li", { class: "session", "data-id": s.id, "data-state": s.state },
      el("div", { class: "top" },
        el("a", { class: "title", href, text: s.title || "(untitled) " + s.id.slice(0, 8) }),
        state(s.state)),
      el("div", { class: "meta" },
        el("span", { class: "ws", text: s.workspace }),
        el("span", { text: s.backend + (s.model ? " / " + s.model : "") }),
        el("span", { text: s.turns + " turns" }),
        el("span", { class: "tokens", text: s.tokens + " tokens" }),
        el("span", { text: "$" + Number(s.cost_usd).toFixed(4) }),
        el("span", { class: "when", text: when(s.updated) })));
    if (s.pending && s.pending.length) {
      li.append(el("div", { class: "meta" }, el("span", { text: s.pending.length + " approval(s) waiting: " +
        s.pending.map((p) => p.name).join(", ") })));
    }
    const kids = children.get(s.id) || [];
    if (kids.length) {
      const sub = el("ul");
      for (const k of kids) sub.append(item(k, children));
      li.append(sub);
    }
    return li;
  }

  function keep(s) {
    return (!workspace.value || s.workspace === workspace.value) && (!stateFilter.value || s.state === stateFilter.value);
  }

  function render() {
    const known = new Set(sessions.map((s) => s.id));
    const children = new Map();
    for (const s of sessions) {
      if (s.parent && known.has(s.parent)) {
        if (!children.has(s.parent)) children.set(s.parent, []);
        children.get(s.parent).push(s);
      }
    }
    const roots = sessions.filter((s) => !(s.parent && known.has(s.parent)));
    // a root is shown when it or one of its sub-agents matches the filters
    const matches = (s) => keep(s) || (children.get(s.id) || []).some(matches);
    list.replaceChildren(...roots.filter(matches).map((s) => item(s, children)));
    empty.hidden = list.children.length > 0;
    const spaces = [...new Set(sessions.map((s) => s.workspace))].sort();
    const chosen = workspace.value;
    workspace.replaceChildren(el("option", { value: "", text: "all" }),
      ...spaces.map((w) => el("option", { value: w, text: w })));
    workspace.value = chosen;
  }

  async function refresh() {
    try {
      const answer = await fetch("/api/sessions", { credentials: "same-origin" });
      if (!answer.ok) throw new Error("HTTP " + answer.status);
      sessions = (await answer.json()).sessions;
      status.textContent = "live";
      render();
    } catch (err) {
      status.textContent = "cannot reach monkey web (" + err.message + ")";
    }
  }

  for (const select of [workspace, stateFilter]) {
    select.addEventListener("change", () => {
      const q = new URLSearchParams();
      if (workspace.value) q.set("workspace", workspace.value);
      if (stateFilter.value) q.set("state", stateFilter.value);
      history.replaceState(null, "", q.toString() ? "?" + q : "/");
      render();
    });
  }
  refresh();
  setInterval(refresh, 1000);
})();
