// Unified diffs as tables: one row per line with its old and new line numbers, removed lines red, added green.
// The patch text is what the edit tools put in their metadata (metadata.files[].patch) or what the preview route
// computes for a pending request; every line goes in as text.
import { el } from "./dom.js";

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;

// [{file, lines: [{kind, old, new, text}]}] of a unified patch (several files when it has several ---/+++ pairs).
export function parsePatch(patch) {
  const files = [];
  let current = null;
  let oldNo = 0;
  let newNo = 0;
  const lines = String(patch).replace(/\r\n?/g, "\n").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("--- ") && (lines[i + 1] || "").startsWith("+++ ")) {
      const name = lines[i + 1].slice(4).replace(/^b\//, "");
      current = { file: name === "/dev/null" ? line.slice(4).replace(/^a\//, "") : name, lines: [] };
      files.push(current);
      i++;
      continue;
    }
    if (!current) {
      current = { file: "", lines: [] };
      files.push(current);
    }
    const hunk = HUNK.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      current.lines.push({ kind: "hunk", old: "", new: "", text: line });
    } else if (line.startsWith("+")) {
      current.lines.push({ kind: "add", old: "", new: newNo++, text: line.slice(1) });
    } else if (line.startsWith("-")) {
      current.lines.push({ kind: "del", old: oldNo++, new: "", text: line.slice(1) });
    } else if (line.startsWith(" ") || line === "") {
      current.lines.push({ kind: "ctx", old: oldNo++, new: newNo++, text: line.slice(1) });
    } else {
      // "\ No newline at end of file", "... (diff truncated: N more lines)"
      current.lines.push({ kind: "note", old: "", new: "", text: line });
    }
  }
  return files;
}

const SIGN = { add: "+", del: "-", ctx: " ", hunk: "", note: "" };

function table(lines) {
  return el("table", { class: "diff" },
    el("tbody", {}, ...lines.map((l) =>
      el("tr", { class: l.kind },
        el("td", { class: "ln old" }, String(l.old)),
        el("td", { class: "ln new" }, String(l.new)),
        el("td", { class: "sign" }, SIGN[l.kind]),
        el("td", { class: "code" }, l.text)))));
}

// One diff per file: a header (name, status, +adds −dels) and the table. `info` is a metadata.files[] record when
// the patch comes from one (its counts cover the whole change even when the patch was cut).
export function renderDiff(patch, info = {}) {
  const files = parsePatch(patch);
  return el("div", { class: "diffs" }, ...files.map((file, n) => {
    const adds = info.additions ?? file.lines.filter((l) => l.kind === "add").length;
    const dels = info.deletions ?? file.lines.filter((l) => l.kind === "del").length;
    const name = (files.length === 1 && info.file) || file.file;
    return el("div", { class: "diff-file", "data-file": name },
      el("div", { class: "diff-head" },
        el("span", { class: "diff-name" }, name),
        info.status && n === 0 ? el("span", { class: `diff-status ${info.status}` }, info.status) : null,
        el("span", { class: "adds" }, `+${adds}`), el("span", { class: "dels" }, `−${dels}`),
        info.diffTruncated ? el("span", { class: "meta" }, "(diff cut to fit the call's metadata)") : null),
      table(file.lines));
  }));
}
