// One session: its transcript, its live event stream (with a type filter), what waits for a
// person, its checkpoints. Events come from /api/sessions/ID/events (Server-Sent Events: each
// id is the event's number; the browser reconnects with Last-Event-ID and gets what it missed).
"use strict";
(() => {
  const { el, when, state, diff } = monkey;
  const id = new URLSearchParams(location.search).get("id") || "";
  const $ = (name) => document.getElementById(name);
  const transcript = $("transcript");
  const eventList = $("event-list");
  const typeFilter = $("type-filter");
  const checkpoints = $("checkpoint-list");
  const status = $("status");
  const seenTypes = new Set();
  const tools = new Map();  // call id -> its block's parts
  let answer = null;  // the answer being streamed: { box, text, thinking }
  let last = 0;

  for (const button of document.querySelectorAll(".tabs button")) {
    button.addEventListener("click", () => {
      for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("on", b === button);
      for (const tab of document.querySelectorAll(".tab")) tab.hidden = tab.id !== button.dataset.tab;
      if (button.dataset.tab === "events") listEvents();
      if (button.dataset.tab === "figures") {
        monkey.charts.show($("figures-box"), { session: id }).catch((err) => {
          $("figures-box").replaceChildren(el("p", { class: "bad", text: "cannot read the figures (" + err.message + ")" }));
        });
      }
    });
  }
  typeFilter.addEventListener("change", () => {
    for (const li of eventList.children) li.hidden = Boolean(typeFilter.value) && li.dataset.type !== typeFilter.value;
  });

  function json(value) { return JSON.stringify(value, null, 2); }

  function answerBox() {
    if (!answer) {
      const thinking = el("pre");
      const fold = el("details", { hidden: true }, el("summary", { text: "thinking" }), thinking);
      const text = el("div", { class: "text" });
      const box = el("div", { class: "msg assistant" }, el("div", { class: "who", text: "monkey" }), fold, text);
      transcript.append(box);
      answer = { box, text, thinking, fold };
    }
    return answer;
  }

  function toolBox(e) {
    const args = el("pre", { class: "args", text: json(e.arguments || {}) });
    const output = el("pre", { class: "output", hidden: true });
    const result = el("span", { class: "result" });
    const box = el("div", { class: "tool", "data-call": e.call_id },
      el("div", { class: "head" }, el("span", { class: "name", text: e.name }), result),
      el("details", {}, el("summary", { text: "arguments" }), args), output);
    transcript.append(box);
    const parts = { box, output, result, streamed: "" };
    tools.set(e.call_id, parts);
    return parts;
  }

  function transcriptOf(e) {
    switch (e.type) {
      case "turn_started":
        answer = null;
        transcript.append(el("div", { class: "msg user" }, el("div", { class: "who", text: "you" }),
          el("div", { class: "text", text: e.prompt })));
        break;
      case "text_delta": answerBox().text.append(monkey.visible(e.text)); break;
      case "thinking_delta": { const a = answerBox(); a.fold.hidden = false; a.thinking.append(monkey.visible(e.text)); break; }
      case "message_completed": {
        if (e.text || e.thinking) {
          const a = answerBox();
          a.text.textContent = monkey.visible(e.text);
          if (e.thinking) { a.fold.hidden = false; a.thinking.textContent = monkey.visible(e.thinking); }
        }
        answer = null;
        break;
      }
      case "tool_call": if (!tools.has(e.call_id)) toolBox(e); break;
      case "tool_output": {
        const t = tools.get(e.call_id) || toolBox({ call_id: e.call_id, name: "?" });
        t.output.hidden = false;
        t.output.append(monkey.visible(e.text));
        break;
      }
      case "approval_resolved": {
        const t = tools.get(e.call_id);
        if (t) t.box.append(el("div", { class: "muted", text: e.decision + " by " + e.by + (e.reason ? ": " + e.reason : "") }));
        break;
      }
      case "tool_result": {
        const t = tools.get(e.call_id) || toolBox({ call_id: e.call_id, name: e.name });
        t.result.replaceChildren(el("span", { class: e.ok ? "good" : "bad", text: e.ok ? "ok" : "failed" }), " ",
          el("span", { class: "took", text: (e.duration_ms / 1000).toFixed(2) + "s" }));
        t.output.hidden = false;
        t.output.textContent = monkey.visible(e.output);
        if (e.diff) t.box.append(diff(e.diff));
        break;
      }
      case "error": transcript.append(el("div", { class: "msg error", text: "error: " + (e.message || json(e)) })); break;
      case "turn_completed":
        answer = null;
        if (e.reason === "cancelled") transcript.append(el("div", { class: "msg note", text: "turn ended: " + e.message }));
        break;
      case "mode_changed":
        transcript.append(el("div", { class: "msg note", text: e.by === "web"
          ? "mode set to " + e.mode + " from the browser" : "mode: " + e.mode }));
        break;
      default: break;
    }
  }

  async function undoFrom(cp, box) {
    const out = box.querySelector(".undo") || box.appendChild(el("div", { class: "undo" }));
    const base = "/api/sessions/" + encodeURIComponent(id) + "/checkpoints/" + encodeURIComponent(cp);
    out.replaceChildren(el("span", { class: "muted", text: "loading the preview..." }));
    const shown = await fetch(base, { credentials: "same-origin" });
    const body = await shown.json();
    if (!shown.ok) { out.replaceChildren(el("div", { class: "bad", text: body.error })); return; }
    const apply = el("button", { type: "button", class: "apply", text: "Undo every change from here on" });
    const said = el("div", { class: "said" });
    apply.addEventListener("click", async () => {
      apply.disabled = true;
      const reply = await fetch(base + "/undo", { method: "POST", credentials: "same-origin" });
      const result = await reply.json();
      if (reply.ok) {
        said.replaceChildren(el("div", { class: "good", text: "undone: " + (result.undone.paths || []).join(", ") }),
          ...(result.undone.left_alone || []).map((l) => el("div", { class: "muted", text: "left as it is: " + l })));
      } else {
        said.replaceChildren(el("div", { class: "bad", text: result.error }),
          ...(result.conflicts || []).map((c) => el("div", {}, el("div", { text: c.reason }), diff(c.diff || ""))));
        apply.disabled = false;
      }
    });
    out.replaceChildren(el("pre", { class: "preview", text: body.preview }), apply, said);
  }

  function checkpointOf(e) {
    if (e.type === "checkpoint_created") {
      const box = el("li", { "data-checkpoint": e.checkpoint_id },
        el("div", {}, el("span", { class: "name", text: e.checkpoint_id.slice(0, 12) }), " ",
          el("span", { class: "muted", text: e.tool + " turn " + e.turn + ": " + (e.paths || []).join(", ") })));
      const preview = el("button", { type: "button", class: "preview-undo", text: "Preview undo" });
      preview.addEventListener("click", () => undoFrom(e.checkpoint_id, box));
      box.append(preview);
      checkpoints.append(box);
    } else if (e.type === "tool_result" && e.diff) {
      const box = checkpoints.lastElementChild;
      if (box) box.append(diff(e.diff));
    }
  }

  function eventOf(seq, e, into) {
    const body = Object.assign({}, e);
    delete body.type;
    const li = el("li", { value: String(seq), "data-type": e.type, "data-seq": String(seq) },
      el("span", { class: "type", text: e.type }), el("span", { text: JSON.stringify(body) }));
    li.hidden = Boolean(typeFilter.value) && e.type !== typeFilter.value;
    into.append(li);
  }

  const answered = new Map();  // call id -> what the answer to it said

  // What the last answer given here came to, kept under the list: an answered question leaves the
  // list at the next refresh, which may come before the answer's reply.
  async function answerCall(p, choice, reason) {
    const said = answered.get(p.call_id);
    const outcome = (text) => {
      said.textContent = "";
      $("approvals-said").textContent = monkey.visible(p.name + ": " + text);
      $("approvals-said").hidden = false;
    };
    said.textContent = "sending...";
    try {
      const reply = await fetch("/api/sessions/" + encodeURIComponent(p.session_id || id) + "/approvals/" +
        encodeURIComponent(p.call_id), { method: "POST", credentials: "same-origin",
        headers: { "content-type": "application/json" }, body: JSON.stringify({ choice, reason }) });
      const body = await reply.json();
      outcome(reply.ok ? "answered here: " + choice
        : body.by === "here" ? "answered first in the session's own window" : body.error);
    } catch (err) {
      outcome("not sent: " + err.message);
    }
  }

  function approvals(pending) {
    $("approvals-box").hidden = !pending.length;
    const shown = new Set([...$("approvals").children].map((li) => li.dataset.call));
    if (pending.length === shown.size && pending.every((p) => shown.has(p.call_id))) return;  // keep what is typed
    $("approvals").replaceChildren(...pending.map((p) => {
      const reason = el("input", { type: "text", placeholder: "why (the model is told)", "aria-label": "reason" });
      const said = answered.get(p.call_id) || el("div", { class: "muted said" });
      answered.set(p.call_id, said);
      const button = (label, choice) => {
        const b = el("button", { type: "button", "data-choice": choice, text: label });
        b.addEventListener("click", () => answerCall(p, choice, choice === "deny" ? reason.value : ""));
        return b;
      };
      return el("li", { "data-call": p.call_id },
        el("div", {}, el("span", { class: "name", text: p.name })),
        el("pre", { text: p.summary || json(p.arguments || {}) }),
        ...(p.warnings || []).map((w) => el("div", { class: "bad", text: w })),
        el("div", { class: "choices" }, button("Allow once", "once"), button("For the session", "session"),
          button("For good", "always")),
        el("div", { class: "choices" }, reason, button("Deny", "deny")), said);
    }));
  }

  // Cancel and mode: a request stored for the session's own process; its outcome is read back.
  async function steer(path, body) {
    const said = $("control-said");
    said.textContent = "sending...";
    try {
      const base = "/api/sessions/" + encodeURIComponent(id);
      const reply = await fetch(base + path, { method: "POST", credentials: "same-origin",
        headers: { "content-type": "application/json" }, body: JSON.stringify(body || {}) });
      let result = await reply.json();
      if (!reply.ok) { said.textContent = monkey.visible(result.error); return; }
      said.textContent = "sent; waiting for the session...";
      for (let i = 0; i < 50 && result.state === "stored"; i++) {
        await new Promise((done) => setTimeout(done, 200));
        result = await (await fetch(base + "/requests/" + encodeURIComponent(result.id),
          { credentials: "same-origin" })).json();
      }
      said.textContent = monkey.visible(result.state === "stored" ? "not taken yet" : result.state + ": " + result.message);
    } catch (err) {
      said.textContent = "not sent: " + err.message;
    }
  }
  $("cancel-turn").addEventListener("click", () => steer("/cancel"));
  $("set-mode").addEventListener("click", () => steer("/mode", { mode: $("mode-choice").value }));

  async function info() {
    try {
      const answer = await fetch("/api/sessions/" + encodeURIComponent(id), { credentials: "same-origin" });
      if (!answer.ok) throw new Error("HTTP " + answer.status);
      const s = await answer.json();
      document.title = "monkey web: " + (s.title || s.id);
      $("title").textContent = monkey.visible(s.title || s.id);
      $("info").replaceChildren(state(s.state), el("span", { class: "ws", text: s.workspace }),
        el("span", { text: s.backend + (s.model ? " / " + s.model : "") }), el("span", { text: s.turns + " turns" }),
        el("span", { class: "tokens", text: s.tokens + " tokens" }), el("span", { text: "$" + Number(s.cost_usd).toFixed(4) }),
        el("span", { class: "when", text: when(s.updated) }),
        ...(s.parent ? [el("a", { href: "/session?id=" + encodeURIComponent(s.parent), text: "parent session" })] : []));
      approvals(s.pending || []);
      $("control").hidden = s.state === "ended";
      $("cancel-turn").disabled = s.state !== "running" && s.state !== "waiting";
    } catch (err) {
      status.textContent = "cannot reach monkey web (" + err.message + ")";
    }
  }

  function live() {  // the stream from the last event drawn on (a reconnect sends Last-Event-ID itself)
    const source = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/events?after=" + last);
    source.onopen = () => { status.textContent = "live"; };
    source.onerror = () => { status.textContent = "reconnecting (from event " + last + ")"; };
    source.onmessage = received;
  }
  // Events are drawn in batches (a replay of thousands at once builds the page in a few layouts, not one each).
  let batch = [];
  // The event list is built when its tab is first shown (a long session's page is ready without it).
  const kept = [];
  let listed = 0;
  function listEvents() {
    if ($("events").hidden) return;
    const rows = document.createDocumentFragment();
    for (; listed < kept.length; listed++) eventOf(kept[listed][0], kept[listed][1], rows);
    eventList.append(rows);
  }
  function draw() {
    const events = batch;
    batch = [];
    for (const [seq, e] of events) {
      kept.push([seq, e]);
      if (!seenTypes.has(e.type)) {
        seenTypes.add(e.type);
        typeFilter.append(el("option", { value: e.type, text: e.type }));
      }
      transcriptOf(e);
      checkpointOf(e);
    }
    listEvents();
    document.body.dataset.last = String(last);
  }
  function received(message) {
    const seq = Number(message.lastEventId);  // the server replays exactly what was missed: no check here
    let e;
    try { e = JSON.parse(message.data); } catch (err) { return; }
    last = seq;
    if (!batch.length) setTimeout(draw, 0);
    batch.push([seq, e]);
  }
  // What is stored already comes in one answer and is drawn at once; then the stream goes on from there.
  fetch("/api/sessions/" + encodeURIComponent(id) + "/events?format=json", { credentials: "same-origin" })
    .then((answer) => (answer.ok ? answer.json() : { last: 0, events: [] }))
    .catch(() => ({ last: 0, events: [] }))
    .then((stored) => {
      batch = stored.events;
      last = stored.last;
      draw();
      live();
    });
  info();
  setInterval(info, 1000);
})();
