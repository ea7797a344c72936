// The ask bar: what is waiting for a person. A permission request shows what it would do (the diff an edit would
// write, computed by the server from the file; the command a bash call would run), the rule that asked, and its
// answers: Allow once, Always (names what it saves and is confirmed in a dialog, so a misclick saves nothing) and
// Reject (with optional feedback the model reads). Keys act on the first request (outlined): o allow once,
// a always (still confirmed), r reject, f the feedback field (Enter there rejects with it); never while typing
// in a field, never with a modifier, never on a held key's repeats. Questions of the question tool are answered here too.
import { $, el } from "./dom.js";
import { renderDiff } from "./diff.js";

const KEYS = { o: "once", a: "always", r: "reject" };

export function createAsks({ api, say, titleOf, open }) {
  const previews = new Map(); // request id -> Promise of its preview (one read per request)
  const nodes = new Map(); // request id -> its element, kept while pending (typed feedback survives a refresh)
  let latest = 0;

  function preview(request) {
    if (!previews.has(request.id)) {
      previews.set(request.id, api("GET", `/api/permissions/${request.id}/preview`).catch((e) => ({ error: e.message })));
    }
    return previews.get(request.id);
  }

  function what(request) {
    const box = el("div", { class: "ask-what" });
    const command = request.metadata && typeof request.metadata.command === "string" ? request.metadata.command : null;
    if (command !== null) {
      box.append(el("pre", { class: "command" }, `$ ${command}`));
      if (request.resources.length > 1 || request.resources[0] !== command) {
        box.append(el("div", { class: "meta" }, "asks for: "), el("ul", { class: "resources" }, ...request.resources.map((r) => el("li", {}, el("code", {}, r)))));
      }
      return box;
    }
    if (request.action !== "edit") return box; // the head names the resources
    const slot = el("div", { class: "ask-preview meta" }, "computing the change…");
    box.append(slot);
    preview(request).then((found) => {
      if (found.patch) slot.replaceChildren(renderDiff(found.patch));
      else if (found.input && typeof found.input.command === "string") {
        slot.replaceChildren(el("pre", { class: "command" }, `$ ${found.input.command}`));
      } else if (found.error) slot.replaceChildren(el("span", { class: "error" }, `no preview: ${found.error}`));
      else {
        const input = found.input || {};
        const strings = ["old_string", "new_string", "content", "patch_text"].filter((k) => typeof input[k] === "string");
        slot.replaceChildren(el("div", { class: "meta" }, `no diff from the file: ${found.reason || "not a file change"}; the call asks for:`),
          ...strings.map((k) => el("div", {}, el("div", { class: "meta" }, k), el("pre", {}, input[k]))));
      }
      slot.classList.remove("meta");
    });
    return box;
  }

  function permissionAsk(request) {
    const feedback = el("input", { type: "text", class: "feedback", placeholder: "feedback with reject (optional; f)", "aria-label": "feedback" });
    const saves = (request.save || []).map((p) => `${request.action} "${p}"`).join(", ");
    const always = saves ? `Always: saves ${saves}` : "Always (nothing to save: acts as once)";
    const buttons = [];
    const reply = (kind) => async () => {
      if (kind === "always" && saves && !window.confirm(`Save the approval ${saves} for this project? ` +
          "From now on it allows every request it matches without asking.")) {
        say("nothing saved");
        return;
      }
      const body = { reply: kind };
      if (kind === "reject" && feedback.value) body.message = feedback.value;
      buttons.forEach((b) => { b.disabled = true; });
      try {
        await api("POST", `/api/permissions/${request.id}/reply`, body);
        say(`replied ${kind}`);
      } catch (e) {
        say(e.message, true);
        buttons.forEach((b) => { b.disabled = false; });
      }
      await load();
    };
    buttons.push(
      el("button", { type: "button", class: "once", "data-reply": "once", "aria-keyshortcuts": "o", onclick: reply("once") }, "Allow once"),
      el("button", { type: "button", class: "always", "data-reply": "always", "aria-keyshortcuts": "a", onclick: reply("always") }, always),
      el("button", { type: "button", class: "reject", "data-reply": "reject", "aria-keyshortcuts": "r", onclick: reply("reject") }, "Reject"));
    feedback.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        reply("reject")();
      } else if (event.key === "Escape") feedback.blur();
    });
    const verdicts = (request.decision && request.decision.verdicts) || [];
    const rules = [...new Set(verdicts.map((v) => `${v.rule.action} "${v.rule.resource}" → ${v.rule.effect} (${v.source})`))];
    const title = titleOf(request.session_id);
    return el("div", { class: "ask permission", "data-request": request.id, "data-action": request.action },
      el("div", { class: "ask-head" },
        el("strong", {}, request.action), " ", el("code", {}, request.resources.join(", ")), " ",
        el("button", { type: "button", class: "link", title: request.session_id, onclick: () => open(request.session_id) },
          `in ${title || request.session_id}`)),
      what(request),
      request.protected ? el("div", { class: "error" }, `a protected path (${request.protected}): only a rule naming it allows it`) : null,
      rules.length ? el("div", { class: "meta" }, `asked by rule ${rules.join(", ")}`) : null,
      el("div", { class: "ask-buttons" }, buttons[0], " ", buttons[1], " ", buttons[2], " ", feedback),
      el("div", { class: "meta keys" }, "keys: o allow once · a always (confirmed) · r reject · f feedback"));
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
      await load();
    };
    const dismiss = async () => {
      await api("POST", `/api/questions/${pending.id}/reject`).catch((e) => say(e.message, true));
      await load();
    };
    return el("div", { class: "ask question", "data-request": pending.id }, ...inputs.map((i) => i.box),
      el("button", { type: "button", onclick: submit }, "Answer"), " ", el("button", { type: "button", onclick: dismiss }, "Dismiss"));
  }

  async function load() {
    const mine = ++latest;
    const [{ requests }, { questions }] = await Promise.all([api("GET", "/api/permissions"), api("GET", "/api/questions")]);
    if (mine !== latest) return;
    const pending = new Set([...requests.map((r) => r.id), ...questions.map((q) => q.id)]);
    for (const id of [...nodes.keys()]) if (!pending.has(id)) nodes.delete(id);
    const build = (id, make) => {
      if (!nodes.has(id)) nodes.set(id, make());
      return nodes.get(id);
    };
    const shown = [...requests.map((r) => build(r.id, () => permissionAsk(r))), ...questions.map((q) => build(q.id, () => questionAsk(q)))];
    shown.forEach((node, n) => node.classList.toggle("active", n === 0 && node.classList.contains("permission")));
    $("asks").replaceChildren(...shown);
    $("asks").hidden = shown.length === 0;
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))) return;
    const active = document.querySelector("#asks .ask.permission.active");
    if (!active) return;
    if (event.key === "f") {
      event.preventDefault();
      active.querySelector("input.feedback").focus();
      return;
    }
    const kind = KEYS[event.key];
    if (!kind) return;
    const button = active.querySelector(`button[data-reply="${kind}"]`);
    if (!button || button.disabled) return;
    event.preventDefault();
    button.click();
  });

  return { load };
}
