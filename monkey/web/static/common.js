// Shared by the pages. Every piece of text from a session (the model's, a tool's) goes into the
// page as a text node: never as HTML.
"use strict";
const monkey = (() => {
  const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
  // control characters (terminal escapes among them) shown as their visible symbols
  function visible(text) {
    return String(text === undefined || text === null ? "" : text).replace(CONTROL, (c) =>
      c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)));
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = visible(value);
      else if (key === "hidden") node.hidden = Boolean(value);
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(visible(child)) : child);
    }
    return node;
  }
  function when(ts) {  // UTC, to the second
    return new Date(ts * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }
  const STATES = { waiting: "waiting for a person", running: "running", idle: "idle", ended: "ended" };
  function state(name) { return el("span", { class: "state " + name, text: STATES[name] || name }); }
  function diff(text) {
    const pre = el("pre", { class: "diff" });
    for (const line of String(text).split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
      pre.append(el("span", cls ? { class: cls, text: line + "\n" } : { text: line + "\n" }));
    }
    return pre;
  }
  return { visible, el, when, state, diff };
})();
