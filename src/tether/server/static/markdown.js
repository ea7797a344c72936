// A small markdown renderer for model text: blocks (headings, paragraphs, fenced code, lists, quotes, tables, rules)
// and inlines (code, emphasis, strikethrough, links, bare URLs). Safe by construction: the text is never parsed as
// HTML; every piece goes into a text node, and the only attribute taken from the text is a link's href, kept only
// when the URL parser says it is http, https or mailto (javascript:, data:, relative and protocol-less links are
// shown as text). Images are never loaded: they become links. Raw HTML in the text is shown as typed.
import { el } from "./dom.js";

const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

// The URL a link may point to, or null: absolute http(s)/mailto only, as the browser would parse it.
export function safeUrl(raw) {
  let url;
  try {
    url = new URL(raw.trim());
  } catch {
    return null;
  }
  return LINK_PROTOCOLS.has(url.protocol) ? url.href : null;
}

function link(text, raw) {
  const href = safeUrl(raw);
  if (href === null) return el("span", { class: "md-link-refused", title: "not a web link: not followed" }, text);
  return el("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, text);
}

// -- inlines -----------------------------------------------------------------------------------------------------

const PUNCT = /[!-/:-@[-`{-~]/;
const BARE_URL = /^(?:https?:\/\/|mailto:)[^\s<>"'`]+/i;

// The index of the ] closing the [ at `open` (brackets nest; code spans and escapes are skipped), or -1.
function closing(text, open, left = "[", right = "]") {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === left) depth++;
    else if (c === right && --depth === 0) return i;
  }
  return -1;
}

// [text](url "title") at i: {end, label, url} or null.
function linkAt(text, i) {
  const close = closing(text, i);
  if (close < 0 || text[close + 1] !== "(") return null;
  const end = closing(text, close + 1, "(", ")");
  if (end < 0) return null;
  const target = text.slice(close + 2, end).trim();
  const url = target.replace(/\s+(?:"[^"]*"|'[^']*')$/, "").replace(/^<(.*)>$/, "$1");
  return { end: end + 1, label: text.slice(i + 1, close), url };
}

function emphasisAt(text, i) {
  for (const marker of ["**", "__", "~~", "*", "_"]) {
    if (!text.startsWith(marker, i)) continue;
    const after = text[i + marker.length];
    if (after === undefined || /\s/.test(after)) continue;
    if (marker[0] === "_" && i > 0 && /\w/.test(text[i - 1])) continue; // snake_case is not emphasis
    let at = i + marker.length + 1;
    while ((at = text.indexOf(marker, at)) >= 0) {
      const before = text[at - 1];
      const next = text[at + marker.length];
      const intraword = marker[0] === "_" && next !== undefined && /\w/.test(next);
      if (!/\s/.test(before) && before !== "\\" && !intraword && !(marker.length === 1 && next === marker)) {
        const tag = marker === "~~" ? "del" : marker.length === 2 ? "strong" : "em";
        return { end: at + marker.length, tag, inner: text.slice(i + marker.length, at) };
      }
      at += 1;
    }
  }
  return null;
}

export function inline(text) {
  const out = [];
  let plain = "";
  const flush = () => {
    if (plain) out.push(document.createTextNode(plain));
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length && PUNCT.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = text.indexOf(run, i + run.length);
      if (end >= 0) {
        flush();
        let code = text.slice(i + run.length, end);
        if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
        out.push(el("code", {}, code));
        i = end + run.length;
        continue;
      }
      plain += run;
      i += run.length;
      continue;
    }
    if (c === "!" && text[i + 1] === "[") {
      const found = linkAt(text, i + 1);
      if (found) {
        flush();
        out.push(link(`image: ${found.label || found.url}`, found.url));
        i = found.end;
        continue;
      }
    }
    if (c === "[") {
      const found = linkAt(text, i);
      if (found) {
        flush();
        const node = link("", found.url);
        node.append(...inline(found.label));
        out.push(node);
        i = found.end;
        continue;
      }
    }
    if (c === "<") {
      const auto = /^<((?:https?|mailto):[^\s<>]+)>/i.exec(text.slice(i));
      if (auto) {
        flush();
        out.push(link(auto[1], auto[1]));
        i += auto[0].length;
        continue;
      }
    }
    if ((c === "h" || c === "H" || c === "m" || c === "M") && (i === 0 || /[\s(]/.test(text[i - 1]))) {
      const bare = BARE_URL.exec(text.slice(i));
      if (bare) {
        const url = bare[0].replace(/[.,;:!?)\]]+$/, "");
        flush();
        out.push(link(url, url));
        i += url.length;
        continue;
      }
    }
    if (c === "*" || c === "_" || c === "~") {
      const found = emphasisAt(text, i);
      if (found) {
        flush();
        out.push(el(found.tag, {}, ...inline(found.inner)));
        i = found.end;
        continue;
      }
    }
    plain += c;
    i++;
  }
  flush();
  return out;
}

// -- blocks ------------------------------------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$/;

function cells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function startsBlock(line, next) {
  return (
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line) ||
    (line.includes("|") && next !== undefined && TABLE_RULE.test(next) && next.includes("-"))
  );
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const close = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
      const body = [];
      i++;
      while (i < lines.length && !close.test(lines[i])) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (or the end)
      const code = el("code", m[2] ? { class: `language-${m[2]}` } : {}, body.join("\n"));
      out.push(el("pre", { class: "md-code" }, code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      // a message's headings sit below the page's own: # is h3
      out.push(el(`h${Math.min(6, m[1].length + 2)}`, { class: "md-heading" }, ...inline(m[2] || "")));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(el("hr", {}));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ""));
      out.push(el("blockquote", {}, ...blocks(body)));
      continue;
    }
    if ((m = ITEM.exec(line))) {
      const indent = m[1].length;
      const ordered = /\d/.test(m[2]);
      const list = el(ordered ? "ol" : "ul", ordered && parseInt(m[2], 10) !== 1 ? { start: parseInt(m[2], 10) } : {});
      while (i < lines.length) {
        const item = ITEM.exec(lines[i]);
        if (!item || item[1].length !== indent || /\d/.test(item[2]) !== ordered) break;
        const body = [item[3]];
        i++;
        // continuation: indented deeper than the marker (a nested list included), or a lazy paragraph line
        while (i < lines.length && lines[i].trim() && (/^\s/.test(lines[i]) ? lines[i].search(/\S/) > indent : !startsBlock(lines[i], lines[i + 1]))) {
          body.push(lines[i].slice(Math.min(lines[i].search(/\S/), indent + 2)));
          i++;
        }
        const task = /^\[([ xX])\]\s+/.exec(body[0]);
        if (task) body[0] = body[0].slice(task[0].length);
        const content = body.length === 1 ? inline(body[0]) : blocks(body);
        list.append(el("li", task ? { class: "md-task" } : {}, task ? (task[1] === " " ? "☐ " : "☑ ") : null, ...content));
        while (i < lines.length && !lines[i].trim() && ITEM.test(lines[i + 1] || "")) i++; // loose lists
      }
      out.push(list);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = cells(line);
      const table = el("table", { class: "md-table" }, el("thead", {}, el("tr", {}, ...head.map((c) => el("th", {}, ...inline(c))))));
      const body = el("tbody", {});
      i += 2;
      while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
        body.append(el("tr", {}, ...cells(lines[i]).map((c) => el("td", {}, ...inline(c)))));
        i++;
      }
      table.append(body);
      out.push(table);
      continue;
    }
    const paragraph = [line];
    i++;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], lines[i + 1])) paragraph.push(lines[i++]);
    const p = el("p", {});
    paragraph.forEach((text, n) => {
      if (n) p.append(el("br", {}));
      p.append(...inline(text.trim()));
    });
    out.push(p);
  }
  return out;
}

// The rendered text as a <div class="md">.
export function markdown(text) {
  return el("div", { class: "md" }, ...blocks(String(text).replace(/\r\n?/g, "\n").split("\n")));
}
