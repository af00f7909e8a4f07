// Charts drawn from the numbers of /api/stats: plain inline SVG bars, every label a text node
// (nothing fetched, no chart library). monkey.charts.figures(report) is a session's or a scope's
// figures; monkey.charts.bars(title, rows) one chart.
"use strict";
monkey.charts = (() => {
  const { el } = monkey;
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 22;
  const LABEL = 190;
  const BAR = 300;

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = monkey.visible(text);  // a text node, never markup
    return node;
  }

  // rows: [{ label, value (a number), text (what is written), lcls and vcls (classes of the label and of the text) }]
  function bars(title, rows, name) {
    const figure = el("figure", { class: "chart", "data-chart": name || title });
    figure.append(el("figcaption", { text: title }));
    if (!rows.length) {
      figure.append(el("p", { class: "muted", text: "nothing yet" }));
      return figure;
    }
    const most = Math.max(...rows.map((r) => r.value), 0);
    const chart = svg("svg", { viewBox: `0 0 ${LABEL + BAR + 170} ${rows.length * ROW + 4}`, role: "img",
      "aria-label": title, class: "bars" });
    rows.forEach((r, i) => {
      const y = i * ROW + 2;
      const width = most > 0 ? Math.max(r.value > 0 ? 1 : 0, (r.value / most) * BAR) : 0;
      const row = svg("g", { class: "row", "data-label": r.label });
      row.append(svg("text", { x: LABEL - 6, y: y + 15, "text-anchor": "end", class: "label " + (r.lcls || "") }, r.label),
        svg("rect", { x: LABEL, y: y + 3, width: width.toFixed(1), height: ROW - 6, rx: 2, class: r.bar || "bar" }),
        svg("text", { x: LABEL + width + 6, y: y + 15, class: "value " + (r.vcls || "") }, r.text));
      chart.append(row);
    });
    figure.append(chart);
    return figure;
  }

  const num = (n) => Number(n || 0).toLocaleString("en-US");
  const usd = (micros) => "$" + (Number(micros || 0) / 1e6).toFixed(4);
  const ms = (v) => (v === null || v === undefined ? "none" : num(Math.round(v)) + " ms");
  const tokensOf = (f) => f.tokens.input + f.tokens.output;

  function totals(t) {
    return el("dl", { class: "totals" },
      ...[["sessions", num(t.sessions)], ["turns", num(t.turns)], ["model calls", num(t.model_calls)],
        ["tokens in", num(t.tokens.input)], ["tokens out", num(t.tokens.output)], ["cost", usd(t.cost_micros)],
        ["tool calls", num(t.tools.calls)], ["approvals asked", num(t.approvals.asked)]]
        .map(([k, v]) => el("div", { "data-figure": k }, el("dt", { text: k }), el("dd", { text: v }))));
  }

  function waits(t) {
    const rows = [];
    for (const [label, got] of [["model: first token", t.ttft_ms], ["model: whole call", t.call_ms],
      ["tools: run", t.tools.duration_ms], ["people: answer", t.approvals.answer_ms]]) {
      for (const p of ["p50", "p95"]) {
        if (got[p] !== null) rows.push({ label: label + " " + p, value: got[p], text: ms(got[p]), vcls: "ms" });
      }
    }
    return bars("time waiting on the model and on people (p50, p95)", rows, "waits");
  }

  function tools(groups) {
    return bars("tool success", groups.map((g) => {
      const calls = g.tools.calls;
      const rate = calls ? g.tools.ok / calls : 0;
      return { label: g.key, value: rate, text: `${g.tools.ok}/${calls} ok (${Math.round(rate * 100)}%)`,
        bar: rate === 1 ? "bar good" : "bar" };
    }), "tools");
  }

  // day: the report by day (its daily rows); model: by model; tool: by tool
  function figures(day, model, tool) {
    const box = el("div", { class: "figures" }, totals(day.totals));
    box.append(bars("tokens per day", day.daily.map((d) => ({ label: d.day, value: d.tokens, text: num(d.tokens),
      lcls: "day" })), "tokens-per-day"));
    box.append(bars("cost per day", day.daily.map((d) => ({ label: d.day, value: d.cost_micros,
      text: usd(d.cost_micros), lcls: "day" })), "cost-per-day"));
    if (model) {
      box.append(bars("tokens per model", model.groups.map((g) => ({ label: g.key || "?", value: tokensOf(g),
        text: num(tokensOf(g)) })), "tokens-per-model"));
      box.append(bars("cost per model", model.groups.map((g) => ({ label: g.key || "?", value: g.cost_micros,
        text: usd(g.cost_micros) })), "cost-per-model"));
    }
    if (tool) box.append(tools(tool.groups));
    box.append(waits(day.totals));
    return box;
  }

  async function report(query) {
    const answer = await fetch("/api/stats?" + new URLSearchParams(query), { credentials: "same-origin" });
    const body = await answer.json();
    if (!answer.ok) throw new Error(body.error || "HTTP " + answer.status);
    return body;
  }

  // The figures of a scope ({ session, workspace, since }), in the element given.
  async function show(into, scope) {
    const [day, model, tool] = await Promise.all([report({ ...scope, by: "day" }), report({ ...scope, by: "model" }),
      report({ ...scope, by: "tool" })]);
    into.replaceChildren(figures(day, model, tool));
    return { day, model, tool };
  }

  return { bars, figures, show, usd, num };
})();
