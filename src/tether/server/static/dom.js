// DOM helpers and formatters shared by the inspector's modules.
// Every text goes into the page as a text node (never as HTML): el() appends strings with createTextNode, and no
// module of the inspector uses an HTML-parsing sink (tests/server/test_inspector_xss.py scans them for it).

export const $ = (id) => document.getElementById(id);

// el("a", {class: "x", href, onclick: fn}, "text", child, ...): attributes by setAttribute, "on*" as listeners.
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}

const pad = (n, width = 2) => String(n).padStart(width, "0");

// 14:02:11 (local time); with ms: 14:02:11.042
export function clock(ms, withMs = false) {
  if (!ms) return "";
  const d = new Date(ms);
  const base = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${base}.${pad(d.getMilliseconds(), 3)}` : base;
}

export function iso(ms) {
  return ms ? new Date(ms).toISOString() : "";
}

// 850 ms, 4.2 s, 3 min 12 s
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function tokens(n) {
  return Number(n || 0).toLocaleString("en-US");
}

export function cost(value) {
  if (value === null || value === undefined) return "";
  if (value === 0) return "$0";
  return value < 1 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

// 3 min ago, 2 h ago, yesterday's date
export function ago(ms, now = Date.now()) {
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(ms).toISOString().slice(0, 10);
}

// What a call is about, in a few words: its path, command, pattern or URL.
export function subject(tool, input) {
  if (!input || typeof input !== "object") return "";
  for (const key of ["command", "path", "pattern", "url", "query", "description", "prompt"]) {
    if (typeof input[key] === "string" && input[key]) return input[key].split("\n")[0];
  }
  if (tool === "apply_patch" && typeof input.patch_text === "string") {
    const files = [...input.patch_text.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1]);
    return files.join(", ");
  }
  return "";
}
