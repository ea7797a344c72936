// The tether inspector: sessions, a session's timeline, live events, and answers to approvals and questions.
// Plain DOM, no build step, no third-party code. Every text from the server goes through textContent (never HTML).
// The token comes from the URL fragment (never sent to a server) or the form, and lives in sessionStorage only.
"use strict";

const KEY = "tether.token";
const $ = (id) => document.getElementById(id);
let token = null;
let selected = null;
let lastEventId = null;
let refreshTimer = null;
// Each loader applies only its latest answer: events can start loads whose answers arrive out of order.
const latest = { asks: 0, timeline: 0, sessions: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function takeToken() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY);
}

async function api(method, path, body) {
  const init = { method, headers: { authorization: `Bearer ${token}` } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) {
    logout("The token was refused.");
    throw new Error("unauthorized");
  }
  if (!response.ok) throw new Error(typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail));
  return data;
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

// -- sessions --------------------------------------------------------------------------------------------------------

async function loadSessions() {
  const mine = ++latest.sessions;
  const { sessions } = await api("GET", "/api/sessions");
  if (mine !== latest.sessions) return;
  const list = $("sessions");
  list.replaceChildren(
    ...sessions.map((s) =>
      el("li", { class: s.id === selected ? "selected" : "", "data-id": s.id, title: s.id, onclick: () => select(s.id) },
        `${s.busy ? "● " : ""}${s.title || "(untitled)"}`)
    )
  );
}

async function select(id) {
  selected = id;
  $("prompt-form").hidden = false;
  await Promise.all([loadSessions(), loadTimeline()]);
}

function ms(start, end) {
  return start && end ? `${end - start} ms` : "";
}

function rules(record) {
  const lines = [];
  const asked = record.event === "permission.asked";
  if (record.event === "permission.replied") {
    lines.push(`replied ${record.reply}${record.message ? `: ${record.message}` : ""}`);
    return lines;
  }
  for (const v of (record.decision && record.decision.verdicts) || []) {
    lines.push(`${asked ? "asked" : record.decision.effect} ${record.action} ${v.resource} by rule ` +
      `${v.rule.action} "${v.rule.resource}" -> ${v.rule.effect} (${v.source})`);
  }
  return lines;
}

function toolItem(part) {
  const item = el("li", { class: `tool ${part.state}`, "data-call": part.call_id },
    el("strong", {}, part.tool), " ", el("span", { class: "meta" }, `${part.state} ${ms(part.started, part.ended)} ${part.call_id}`));
  item.append(el("pre", { class: "input" }, JSON.stringify(part.input, null, 2)));
  for (const record of part.permissions || []) {
    for (const line of rules(record)) item.append(el("div", { class: "decision" }, line));
  }
  if (part.error) item.append(el("div", { class: "error" }, part.error));
  const text = (part.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  if (text) item.append(el("pre", { class: "output" }, text));
  for (const path of part.output_paths || []) item.append(el("div", { class: "meta" }, `full output: ${path}`));
  return item;
}

function partItem(part, role) {
  switch (part.type) {
    case "text":
      return part.text ? el("li", { class: role }, part.text) : null;
    case "reasoning":
      return el("li", { class: "meta" }, el("details", {}, el("summary", {}, "reasoning"), part.text || ""));
    case "tool":
      return toolItem(part);
    case "step-start":
      return el("li", { class: "step" }, `step ${part.step}${part.final ? " (final)" : ""}`);
    case "step-finish": {
      const u = part.usage || {};
      return el("li", { class: "step" }, `step finished: ${part.reason}` +
        (u.input_tokens !== undefined ? ` · ${u.input_tokens} in / ${u.output_tokens} out tokens` : ""));
    }
    default:
      return el("li", { class: "meta" }, part.type);
  }
}

async function loadTimeline() {
  if (!selected) return;
  const id = selected;
  const mine = ++latest.timeline;
  const [info, { messages }] = await Promise.all([api("GET", `/api/sessions/${id}`), api("GET", `/api/sessions/${id}/messages`)]);
  if (id !== selected || mine !== latest.timeline) return;
  $("session-head").replaceChildren(el("h2", {}, info.title || "(untitled)"),
    el("div", { class: "meta" }, `${info.id} · agent ${info.agent} · ${info.directory}${info.busy ? " · running" : ""}`));
  const items = [];
  for (const message of messages) {
    const role = message.info.role;
    if (message.info.error) items.push(el("li", { class: "error" }, `${message.info.error.kind || "error"}: ${message.info.error.message || ""}`));
    for (const part of message.parts) {
      const item = partItem(part, role);
      if (item) items.push(item);
    }
  }
  $("timeline").replaceChildren(...items);
}

function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => loadTimeline().catch((e) => say(e.message, true)), 100);
}

// -- asks ------------------------------------------------------------------------------------------------------------

function permissionAsk(request) {
  const feedback = el("input", { type: "text", placeholder: "feedback with reject (optional)", "aria-label": "feedback" });
  // "Always" names what it saves (`request.save`, as the terminal prompt does) and is confirmed in a dialog that
  // repeats it: one click saves a project-wide approval, so a misclick must not. The server takes only the exact
  // replies once, always and reject.
  const saves = (request.save || []).map((p) => `${request.action} "${p}"`).join(", ");
  const always = saves ? `Always: saves ${saves}` : "Always (nothing to save: acts as once)";
  const reply = (kind) => async () => {
    if (kind === "always" && saves && !window.confirm(`Save the approval ${saves} for this project? ` +
        "From now on it allows every request it matches without asking.")) {
      say("nothing saved");
      return;
    }
    const body = { reply: kind };
    if (kind === "reject" && feedback.value) body.message = feedback.value;
    try {
      await api("POST", `/api/permissions/${request.id}/reply`, body);
      say(`replied ${kind}`);
    } catch (e) {
      say(e.message, true);
    }
    await loadAsks();
  };
  return el("div", { class: "ask permission", "data-request": request.id },
    el("strong", {}, `${request.action}`), " ", el("code", {}, request.resources.join(", ")),
    el("div", { class: "meta" }, `session ${request.session_id}`),
    el("div", {},
      el("button", { type: "button", onclick: reply("once") }, "Allow once"), " ",
      el("button", { type: "button", class: "always", onclick: reply("always") }, always), " ",
      el("button", { type: "button", onclick: reply("reject") }, "Reject"), " ", feedback));
}

function questionAsk(pending) {
  const inputs = pending.questions.map((q, i) => {
    const box = el("fieldset", {}, el("legend", {}, q.header ? `${q.header}: ${q.question}` : q.question));
    for (const option of q.options) {
      box.append(el("label", {}, el("input", { type: q.multiple ? "checkbox" : "radio", name: `${pending.id}-${i}`, value: option.label }),
        ` ${option.label}`, option.description ? el("span", { class: "meta" }, ` ${option.description}`) : null), " ");
    }
    const own = el("input", { type: "text", placeholder: "or your own answer", "aria-label": "own answer" });
    box.append(own);
    return { box, own };
  });
  const submit = async () => {
    const answers = inputs.map(({ box, own }) => {
      const chosen = [...box.querySelectorAll("input:checked")].map((i) => i.value);
      return own.value ? [...chosen, own.value] : chosen;
    });
    try {
      await api("POST", `/api/questions/${pending.id}/reply`, { answers });
      say("answered");
    } catch (e) {
      say(e.message, true);
    }
    await loadAsks();
  };
  const dismiss = async () => {
    await api("POST", `/api/questions/${pending.id}/reject`).catch((e) => say(e.message, true));
    await loadAsks();
  };
  return el("div", { class: "ask question", "data-request": pending.id }, ...inputs.map((i) => i.box),
    el("button", { type: "button", onclick: submit }, "Answer"), " ", el("button", { type: "button", onclick: dismiss }, "Dismiss"));
}

async function loadAsks() {
  const mine = ++latest.asks;
  const [{ requests }, { questions }] = await Promise.all([api("GET", "/api/permissions"), api("GET", "/api/questions")]);
  if (mine !== latest.asks) return;
  $("asks").replaceChildren(...requests.map(permissionAsk), ...questions.map(questionAsk));
}

// -- live events (fetch, so the token goes in a header: EventSource cannot send one) ---------------------------------

function onEvent(type, data) {
  if (type.startsWith("permission_") || type.startsWith("question_")) {
    loadAsks().catch((e) => say(e.message, true));
    if (data.session === selected) refreshSoon();
  } else if (type === "session_updated") {
    loadSessions().catch(() => {});
  } else if (type === "status") {
    if (data.session === selected) say(`session ${data.status}`);
    if (data.status === "idle") loadAsks().catch(() => {}); // a cancelled turn's asks are withdrawn silently
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
  await Promise.all([loadSessions(), loadAsks()]);
  listen();
}

document.addEventListener("DOMContentLoaded", () => {
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
});
