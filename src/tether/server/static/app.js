// The tether inspector: sessions (with search), a session's timeline, live events, and answers to approvals and
// questions. Plain ES modules, no build step, no third-party code. Every text from the server goes into the page
// as text (dom.js el(), markdown.js), never as HTML.
// The token comes from the URL fragment (never sent to a server) or the form, and lives in sessionStorage only.
import { $, ago, el } from "./dom.js";
import { createAsks } from "./asks.js";
import { sessionHead, timelineItems } from "./session.js";

const KEY = "tether.token";
const OUTPUT_SHOWN = 4 << 20; // bytes of a retained output shown in the page (it may be a gigabyte)
let token = null;
let selected = null;
let lastEventId = null;
let refreshTimer = null;
let searchTimer = null;
const titles = new Map(); // session id -> title, for the ask bar
const ui = new Map(); // call id -> what the person expanded, kept across the timeline's re-renders
// Each loader applies only its latest answer: events can start loads whose answers arrive out of order.
const latest = { timeline: 0, sessions: 0 };

function takeToken() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY);
}

async function request(method, path, body, headers = {}) {
  const init = { method, headers: { authorization: `Bearer ${token}`, ...headers } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    logout("The token was refused.");
    throw new Error("unauthorized");
  }
  return response;
}

async function api(method, path, body) {
  const response = await request(method, path, body);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail));
  return data;
}

// A retained output: its first OUTPUT_SHOWN bytes, and its whole size.
async function output(sessionId, name) {
  const response = await request("GET", `/api/sessions/${encodeURIComponent(sessionId)}/outputs/${encodeURIComponent(name)}`,
    undefined, { range: `bytes=0-${OUTPUT_SHOWN - 1}` });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new Error(typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`);
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const range = /\/(\d+)$/.exec(response.headers.get("content-range") || "");
  return { text: new TextDecoder().decode(bytes), shown: bytes.length, total: range ? Number(range[1]) : bytes.length };
}

function logout(message) {
  sessionStorage.removeItem(KEY);
  token = null;
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

function say(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

const asks = createAsks({ api, say, titleOf: (id) => titles.get(id), open: (id) => select(id) });

// -- sessions and search ---------------------------------------------------------------------------------------------

function sessionItem(s) {
  titles.set(s.id, s.title);
  const match = s.match
    ? el("div", { class: `match ${s.match.field}` }, s.match.field === "title" ? "title" : `${s.match.field}: `,
      s.match.field === "title" ? null : el("span", {}, s.match.text))
    : null;
  return el("li", { class: s.id === selected ? "selected" : "", "data-id": s.id, title: s.id, tabindex: 0,
    onclick: () => select(s.id), onkeydown: (e) => { if (e.key === "Enter") select(s.id); } },
  el("div", { class: "title" }, s.busy ? el("span", { class: "busy", title: "running" }, "● ") : null, s.title || "(untitled)"),
  el("div", { class: "meta" }, ago(s.updated)), match);
}

async function loadSessions() {
  const mine = ++latest.sessions;
  const words = $("search").value.trim();
  const path = words ? `/api/sessions?q=${encodeURIComponent(words)}` : "/api/sessions";
  const { sessions } = await api("GET", path);
  if (mine !== latest.sessions) return;
  $("sessions").replaceChildren(...sessions.map(sessionItem));
  $("search-note").textContent = words ? `${sessions.length} session${sessions.length === 1 ? "" : "s"} found` : "";
}

async function select(id) {
  selected = id;
  $("prompt-form").hidden = false;
  await Promise.all([loadSessions(), loadTimeline()]);
}

async function loadTimeline() {
  if (!selected) return;
  const id = selected;
  const mine = ++latest.timeline;
  const [info, { messages }] = await Promise.all([api("GET", `/api/sessions/${id}`), api("GET", `/api/sessions/${id}/messages`)]);
  if (id !== selected || mine !== latest.timeline) return;
  titles.set(info.id, info.title);
  $("session-head").replaceChildren(...sessionHead(info, messages));
  $("timeline").replaceChildren(...timelineItems(messages, { sessionId: id, ui, output }));
}

function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => loadTimeline().catch((e) => say(e.message, true)), 100);
}

// -- live events (fetch, so the token goes in a header: EventSource cannot send one) ---------------------------------

function onEvent(type, data) {
  if (type.startsWith("permission_") || type.startsWith("question_")) {
    asks.load().catch((e) => say(e.message, true));
    if (data.session === selected) refreshSoon();
  } else if (type === "session_updated") {
    loadSessions().catch(() => {});
  } else if (type === "status") {
    if (data.session === selected) say(`session ${data.status}`);
    if (data.status === "idle") asks.load().catch(() => {}); // a cancelled turn's asks are withdrawn silently
    loadSessions().catch(() => {});
    if (data.session === selected) refreshSoon();
  } else if (type === "error") {
    if (data.session === selected) say(`${data.kind}: ${data.message}`, true);
  } else if (type === "part_updated" || type === "message_updated") {
    if (data.session === selected) refreshSoon();
  }
}

async function listen() {
  while (token) {
    try {
      const headers = { authorization: `Bearer ${token}` };
      if (lastEventId !== null) headers["last-event-id"] = String(lastEventId);
      const response = await fetch("/api/events", { headers });
      if (response.status === 401) return logout("The token was refused.");
      if (!response.ok || !response.body) throw new Error(`events: ${response.status}`);
      $("live").textContent = "live";
      $("live").className = "badge";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let type = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) type = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
            else if (line.startsWith("id: ")) lastEventId = Number(line.slice(4));
          }
          if (data) onEvent(type, JSON.parse(data));
        }
      }
    } catch (e) {
      say(`event stream: ${e.message}`, true);
    }
    $("live").textContent = "reconnecting";
    $("live").className = "badge off";
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// -- start -----------------------------------------------------------------------------------------------------------

async function start() {
  $("login").hidden = true;
  $("app").hidden = false;
  const health = await api("GET", "/api/health");
  $("project").textContent = health.project;
  await Promise.all([loadSessions(), asks.load()]);
  listen();
}

function wire() {
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem(KEY, token);
    start().catch((e) => say(e.message, true));
  });
  $("new-session").addEventListener("click", async () => {
    const session = await api("POST", "/api/sessions", {}).catch((e) => say(e.message, true));
    if (session) await select(session.id);
  });
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => loadSessions().catch((e) => say(e.message, true)), 200);
  });
  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLElement && ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName);
    if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      $("search").focus();
    }
  });
  $("prompt-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!selected) return;
    try {
      await api("POST", `/api/sessions/${selected}/prompt`, { text: $("prompt").value });
      $("prompt").value = "";
    } catch (e) {
      say(e.message, true);
    }
  });
  $("cancel").addEventListener("click", () => selected && api("POST", `/api/sessions/${selected}/cancel`).catch((e) => say(e.message, true)));
  token = takeToken();
  if (token) start().catch((e) => say(e.message, true));
  else logout();
}

// modules run after the document is parsed
wire();
