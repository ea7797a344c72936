// A session's timeline: turns (the user's text, then one block per step), each step with its model, tokens, cost,
// duration and time, its text (markdown), its calls (times, one line per permission decision, diffs for edits, the
// command and output of bash, long outputs collapsed with the retained full output one click away), and per turn a
// waterfall of the steps and calls on one time axis, where calls that ran at the same time overlap.
import { $, ago, clock, cost, duration, el, iso, subject, tokens } from "./dom.js";
import { renderDiff } from "./diff.js";
import { markdown } from "./markdown.js";

const HEAD_LINES = 6; // a collapsed output shows its first and last lines (a command's verdict is at its end)
const TAIL_LINES = 6;
const EDIT_TOOLS = new Set(["edit", "write", "apply_patch"]);
const SHELL_TOOLS = new Set(["bash"]);

// -- permissions: one line per decision, its resources under it --------------------------------------------------

function rule(v) {
  return v.rule ? `rule ${v.rule.action} "${v.rule.resource}" → ${v.rule.effect}${v.source ? ` (${v.source})` : ""}` : "";
}

// The records of a call's permissions, asked and replied records of one request joined into one decision.
export function decisions(records) {
  const out = [];
  const asked = new Map();
  for (const record of records || []) {
    if (record.event === "permission.replied" && asked.has(record.id)) {
      asked.get(record.id).reply = record;
      continue;
    }
    const decision = { record, reply: null };
    if (record.event === "permission.asked" && record.id) asked.set(record.id, decision);
    out.push(decision);
  }
  return out;
}

function decisionLine({ record, reply }) {
  const verdicts = (record.decision && record.decision.verdicts) || [];
  const rules = new Set(verdicts.map(rule));
  const shared = rules.size === 1 ? [...rules][0] : "";
  let head;
  let kind;
  if (record.event === "permission.replied") {
    head = `replied ${record.reply} ${record.action || ""}`;
    kind = record.reply === "reject" ? "deny" : "allow";
  } else if (record.event === "permission.asked") {
    const answer = reply ? `replied ${reply.reply}${reply.message ? `: ${reply.message}` : ""}` : "waiting for a reply";
    head = `asked ${record.action} · ${answer}`;
    kind = reply ? (reply.reply === "reject" ? "deny" : "allow") : "ask";
  } else {
    const effect = record.decision ? record.decision.effect : "";
    head = `${effect === "deny" ? "denied" : effect === "allow" ? "allowed" : effect} ${record.action}`;
    kind = effect;
  }
  const resources = verdicts.length
    ? verdicts.map((v) => el("li", {}, el("code", {}, v.resource), shared ? null : el("span", { class: "meta" }, ` ${rule(v)}`)))
    : (record.resources || []).map((r) => el("li", {}, el("code", {}, r)));
  return el("div", { class: `decision ${kind}` },
    el("div", { class: "decision-head" }, head, shared ? el("span", { class: "meta" }, ` by ${shared}`) : null),
    resources.length ? el("ul", { class: "resources" }, ...resources) : null);
}

// A <details> whose open/closed state the person chose survives the timeline's re-renders (kept in ctx.ui by key).
function kept(ctx, key, node, open = false) {
  const chosen = ctx.ui.get(key);
  node.open = chosen === undefined ? open : chosen;
  node.addEventListener("toggle", () => ctx.ui.set(key, node.open));
  return node;
}

// -- outputs ------------------------------------------------------------------------------------------------------

function outputName(path) {
  return String(path).split("/").pop();
}

function outputBlock(text, part, ctx) {
  const lines = text.split("\n");
  const ui = ctx.ui.get(part.call_id) || {};
  ctx.ui.set(part.call_id, ui);
  const long = lines.length > HEAD_LINES + TAIL_LINES + 4;
  const hidden = lines.length - HEAD_LINES - TAIL_LINES;
  const collapsed = [...lines.slice(0, HEAD_LINES), `… ${hidden} more lines …`, ...lines.slice(-TAIL_LINES)].join("\n");
  const pre = el("pre", { class: "output" });
  const controls = el("div", { class: "output-controls" });
  const render = () => {
    if (ui.full !== undefined) pre.textContent = ui.full;
    else pre.textContent = long && !ui.expanded ? collapsed : text;
    pre.classList.toggle("collapsed", long && !ui.expanded && ui.full === undefined);
    controls.replaceChildren();
    if (long && ui.full === undefined) {
      controls.append(el("button", { type: "button", class: "link expand", onclick: () => { ui.expanded = !ui.expanded; render(); } },
        ui.expanded ? "Collapse" : `Show all ${lines.length} lines`), " ");
    }
    for (const path of part.output_paths || []) {
      const name = outputName(path);
      const open = async () => {
        try {
          const found = await ctx.output(ctx.sessionId, name);
          ui.full = found.text;
          ui.fullNote = found.total > found.text.length ? `first ${found.shown.toLocaleString("en-US")} of ${found.total.toLocaleString("en-US")} bytes` : "";
        } catch (e) {
          ui.fullNote = e.message;
        }
        render();
      };
      controls.append(el("span", { class: "meta" }, `full output: ${path} `),
        ui.full === undefined
          ? el("button", { type: "button", class: "link full-output", "data-output": name, onclick: open }, "show the full output")
          : el("span", { class: "meta" }, ui.fullNote ? `(shown: ${ui.fullNote})` : "(shown in full)"));
    }
  };
  render();
  return el("div", { class: "output-block" }, pre, controls);
}

// -- calls ---------------------------------------------------------------------------------------------------------

function textOf(part) {
  return (part.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

function callTimes(part) {
  if (!part.started) return "";
  const end = part.ended ? `–${clock(part.ended, true)}` : " (running)";
  return `${clock(part.started, true)}${end}`;
}

export function callItem(part, ctx, parallel) {
  const about = subject(part.tool, part.input) || part.title || "";
  const item = el("li", { class: `tool ${part.state}${parallel ? " parallel" : ""}`, "data-call": part.call_id, id: `call-${part.call_id}` },
    el("div", { class: "call-head" },
      el("strong", { class: "tool-name" }, part.tool), " ",
      el("span", { class: "subject" }, about), " ",
      el("span", { class: "state" }, part.state), " ",
      parallel ? el("span", { class: "badge parallel", title: "ran at the same time as other calls of its step" }, "parallel") : null,
      el("span", { class: "meta times", title: `${iso(part.started)} – ${iso(part.ended)} · ${part.call_id}` },
        [callTimes(part), duration(part.ended && part.started ? part.ended - part.started : null)].filter(Boolean).join(" · "))));
  for (const decision of decisions(part.permissions)) item.append(decisionLine(decision));
  const files = (part.metadata && Array.isArray(part.metadata.files) && part.metadata.files) || [];
  if (SHELL_TOOLS.has(part.tool) && part.input && typeof part.input.command === "string") {
    item.append(el("pre", { class: "command" }, `$ ${part.input.command}`));
  } else if (!(EDIT_TOOLS.has(part.tool) && files.length)) {
    item.append(kept(ctx, `input-${part.call_id}`,
      el("details", { class: "input" }, el("summary", {}, "input"), el("pre", {}, JSON.stringify(part.input, null, 2)))));
  }
  for (const file of files) {
    if (typeof file.patch === "string") item.append(renderDiff(file.patch, file));
  }
  if (part.error) item.append(el("div", { class: "error" }, part.error));
  const text = textOf(part);
  if (text && EDIT_TOOLS.has(part.tool) && files.length) item.append(el("div", { class: "meta" }, text.split("\n")[0]));
  else if (text) item.append(outputBlock(text, part, ctx));
  return item;
}

// -- steps and turns ----------------------------------------------------------------------------------------------

// Calls of one step that overlap another call in time (they ran in parallel), and the most at once.
export function overlaps(calls) {
  const parallel = new Set();
  let most = calls.length ? 1 : 0;
  const timed = calls.filter((c) => c.started);
  for (const a of timed) {
    let together = 1;
    for (const b of timed) {
      if (a === b) continue;
      const aEnd = a.ended || Date.now();
      const bEnd = b.ended || Date.now();
      if (a.started <= bEnd && b.started <= aEnd) {
        parallel.add(a.call_id);
        if (b.started <= a.started && a.started <= bEnd) together++;
      }
    }
    most = Math.max(most, together);
  }
  return { parallel, most };
}

function usageText(usage) {
  if (!usage) return "";
  let text = `${tokens(usage.input)} in / ${tokens(usage.output)} out`;
  if (usage.cache_read) text += ` · ${tokens(usage.cache_read)} cached`;
  if (usage.reasoning) text += ` · ${tokens(usage.reasoning)} reasoning`;
  return text;
}

function stepHead(step, concurrency) {
  const info = step.message.info;
  const took = info.completed ? info.completed - info.created : null;
  const bits = [
    el("strong", {}, `step ${step.index}`),
    el("span", { class: "model", title: "model" }, info.model || ""),
    info.usage ? el("span", { class: "usage", title: "tokens in / out" }, usageText(info.usage)) : null,
    info.usage && info.usage.cost !== undefined ? el("span", { class: "cost", title: "cost" }, cost(info.usage.cost)) : null,
    el("span", { class: "took", title: "duration" }, took === null ? "running" : duration(took)),
    el("time", { datetime: iso(info.created), title: iso(info.created) }, clock(info.created)),
    concurrency > 1 ? el("span", { class: "badge parallel" }, `${concurrency} calls in parallel`) : null,
    info.finish && !["tool-calls", "stop"].includes(info.finish) ? el("span", { class: "finish" }, `finish: ${info.finish}`) : null,
  ];
  const head = el("li", { class: "step", "data-step": step.index, "data-message": info.id });
  bits.filter(Boolean).forEach((bit, n) => head.append(...(n ? [el("span", { class: "sep" }, " · "), bit] : [bit])));
  return head;
}

// The waterfall of one turn: a row per step and per call on one time axis (bars of calls that ran at the same time
// overlap); hovering a bar names it and its times; clicking a call's row scrolls to it.
export function waterfall(steps, ctx) {
  const now = Date.now();
  const starts = [];
  const ends = [];
  for (const step of steps) {
    const info = step.message.info;
    starts.push(info.created);
    ends.push(info.completed || now);
    for (const call of step.calls) if (call.started) ends.push(call.ended || now);
  }
  const t0 = Math.min(...starts);
  const span = Math.max(1, Math.max(...ends) - t0);
  const bar = (start, end, cls, label) => {
    const node = el("div", { class: `bar ${cls}`, title: label, "data-start": start, "data-end": end });
    node.style.left = `${((start - t0) / span) * 100}%`;
    node.style.width = `${Math.max(0.4, ((end - start) / span) * 100)}%`;
    return node;
  };
  const rows = [];
  for (const step of steps) {
    const info = step.message.info;
    const end = info.completed || now;
    rows.push(el("div", { class: "wf-row wf-step" },
      el("div", { class: "wf-label" }, `step ${step.index}`),
      el("div", { class: "wf-track" }, bar(info.created, end, "step", `step ${step.index}: ${duration(end - info.created)}`)),
      el("div", { class: "wf-time" }, duration(end - info.created))));
    const { parallel } = overlaps(step.calls);
    for (const call of step.calls) {
      if (!call.started) continue;
      const callEnd = call.ended || now;
      const label = `${call.tool} ${subject(call.tool, call.input)}`.trim();
      rows.push(el("div", {
        class: `wf-row wf-call ${call.state}${parallel.has(call.call_id) ? " parallel" : ""}`,
        "data-call": call.call_id,
        onclick: () => { const target = $(`call-${call.call_id}`); if (target) target.scrollIntoView({ block: "center" }); },
      },
      el("div", { class: "wf-label", title: label }, label),
      el("div", { class: "wf-track" }, bar(call.started, callEnd, call.state,
        `${label}: ${clock(call.started, true)}–${call.ended ? clock(call.ended, true) : "running"} (${duration(callEnd - call.started)})`)),
      el("div", { class: "wf-time" }, duration(callEnd - call.started))));
    }
  }
  const calls = steps.reduce((n, s) => n + s.calls.length, 0);
  return el("li", { class: "waterfall" },
    kept(ctx, `waterfall-${steps[0].message.info.id}`, el("details", {},
      el("summary", {}, `Timeline: ${plural(steps.length, "step")}, ${plural(calls, "call")}, ${duration(span)}`),
      el("div", { class: "wf" }, ...rows)), true));
}

// Messages -> turns: [{user, steps: [{index, message, calls}]}] (a session may start without a user message).
export function turnsOf(messages) {
  const turns = [];
  let turn = null;
  for (const message of messages) {
    if (message.info.role === "user" || !turn) {
      turn = { user: message.info.role === "user" ? message : null, steps: [] };
      turns.push(turn);
      if (message.info.role === "user") continue;
    }
    const start = message.parts.find((p) => p.type === "step-start");
    turn.steps.push({
      index: start ? start.step : turn.steps.length + 1,
      message,
      calls: message.parts.filter((p) => p.type === "tool"),
    });
  }
  return turns;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function totals(messages) {
  const sum = { steps: 0, calls: 0, input: 0, output: 0, cost: 0, used: false, costed: false, models: new Set() };
  for (const { info, parts } of messages) {
    if (info.role !== "assistant") continue;
    sum.steps++;
    sum.calls += parts.filter((p) => p.type === "tool").length;
    if (info.model) sum.models.add(info.model);
    if (info.usage) {
      sum.used = true;
      sum.input += info.usage.input || 0;
      sum.output += info.usage.output || 0;
      if (info.usage.cost !== undefined && info.usage.cost !== null) {
        sum.cost += info.usage.cost;
        sum.costed = true;
      }
    }
  }
  return sum;
}

export function sessionHead(info, messages) {
  const sum = totals(messages);
  const facts = [
    info.id, `agent ${info.agent}`, info.directory, `updated ${ago(info.updated)}`,
    `${plural(sum.steps, "step")} · ${plural(sum.calls, "call")}`,
    sum.used ? `${tokens(sum.input)} in / ${tokens(sum.output)} out tokens` : null,
    sum.costed ? cost(sum.cost) : null, sum.models.size ? [...sum.models].join(", ") : null,
    info.busy ? "running" : null,
  ].filter(Boolean);
  return [el("h2", {}, info.title || "(untitled)"), el("div", { class: "meta facts" }, facts.join(" · "))];
}

// Every item of the timeline of `messages`; ctx: {sessionId, ui (a Map kept across renders), output(session, name)}.
export function timelineItems(messages, ctx) {
  const items = [];
  for (const turn of turnsOf(messages)) {
    if (turn.user) {
      const text = turn.user.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
      items.push(el("li", { class: "user" },
        el("time", { class: "meta", datetime: iso(turn.user.info.created) }, clock(turn.user.info.created)), " ",
        el("div", { class: "user-text" }, text)));
    }
    if (turn.steps.some((s) => s.calls.length)) items.push(waterfall(turn.steps, ctx));
    for (const step of turn.steps) {
      const { parallel, most } = overlaps(step.calls);
      items.push(stepHead(step, most));
      const info = step.message.info;
      if (info.error) items.push(el("li", { class: "error" }, `${info.error.kind || "error"}: ${info.error.message || ""}`));
      for (const part of step.message.parts) {
        if (part.type === "text" && part.text) items.push(el("li", { class: "assistant" }, markdown(part.text)));
        else if (part.type === "reasoning" && part.text) {
          items.push(el("li", { class: "reasoning" },
            kept(ctx, `reasoning-${part.id}`, el("details", {}, el("summary", {}, "reasoning"), markdown(part.text)))));
        } else if (part.type === "tool") items.push(callItem(part, ctx, parallel.has(part.call_id)));
        else if (part.type === "file") items.push(el("li", { class: "meta" }, "a file part"));
      }
    }
  }
  return items;
}
