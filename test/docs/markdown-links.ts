import fs from 'node:fs';
import path from 'node:path';

/**
 * A small reader of the Markdown this repository writes, for the link check
 * (test/docs/links.test.ts): the headings of a file with the anchors GitHub gives them, and the
 * links of a file outside code. No Markdown parser is a dependency here; this handles what
 * CommonMark and GitHub do with the constructs our files use: ATX and setext headings, fenced code
 * blocks (``` and ~~~, ignored), code spans (ignored), inline links and images whose text or
 * destination spans lines, `<destination>` and titles, and reference definitions.
 */

export interface Heading { level: number; text: string; anchor: string }
export interface Link { destination: string; line: number }
export interface Problem { file: string; line: number; destination: string; reason: string }

/** An opening fence: up to three spaces, then three or more backticks or tildes. */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/**
 * The file's lines with every fenced code block (fences included) blanked, so that line numbers stay.
 * A fence is closed by a fence of the same character at least as long, with nothing after it; an
 * unclosed fence runs to the end of the file, as in CommonMark.
 */
export function withoutFencedCode(text: string): string[] {
  const lines = text.split('\n');
  let open: string | null = null;
  return lines.map((line) => {
    const match = FENCE.exec(line);
    if (open === null) {
      if (match && !(match[1]!.startsWith('`') && match[2]!.includes('`'))) {
        open = match[1]!;
        return '';
      }
      return line;
    }
    if (match && match[1]![0] === open[0] && match[1]!.length >= open.length && match[2]!.trim() === '') open = null;
    return '';
  });
}

/** Code spans replaced by spaces of the same length (a span may cross a line break). */
export function withoutCodeSpans(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text[i] === '\\' && i + 1 < text.length) {
      out += text.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (text[i] !== '`') {
      out += text[i];
      i += 1;
      continue;
    }
    let run = 1;
    while (text[i + run] === '`') run += 1;
    const ticks = '`'.repeat(run);
    // The closing run: the same number of backticks, not part of a longer run.
    let close = -1;
    for (let from = i + run; ; ) {
      const at = text.indexOf(ticks, from);
      if (at < 0) break;
      let end = at + run;
      if (text[end] !== '`') {
        close = at;
        break;
      }
      while (text[end] === '`') end += 1;
      from = end;
    }
    if (close < 0) {
      out += ticks; // no closing run: literal backticks
      i += run;
      continue;
    }
    out += text.slice(i, close + run).replace(/[^\n]/g, ' ');
    i = close + run;
  }
  return out;
}

/**
 * GitHub's anchor for a heading (as github-slugger makes it from the rendered text): lower case,
 * every character that is not a letter, mark, decimal or letter number, connector punctuation
 * (`_`), `-` or a space dropped (punctuation, symbols, emoji, `²` and `½` alike), each space a `-`. `seen` counts the anchors met so far in the file: a repeated one gets
 * `-1`, `-2`, … as GitHub numbers them.
 */
export function githubAnchor(headingText: string, seen: Map<string, number>): string {
  const base = renderedText(headingText).toLowerCase().replace(/[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc} -]/gu, '').replace(/ /g, '-');
  let anchor = base;
  while (seen.has(anchor)) {
    const count = seen.get(base)! + 1;
    seen.set(base, count);
    anchor = `${base}-${count}`;
  }
  seen.set(anchor, 0);
  return anchor;
}

/** What a heading's inline Markdown renders as text: code spans keep their content; links their text; emphasis and tags go. */
function renderedText(source: string): string {
  const parts = source.split(/(`+)([\s\S]*?)\1/);
  // split with two groups: [text, ticks, code, text, ticks, code, …]
  let out = '';
  for (let i = 0; i < parts.length; i += 3) {
    out += parts[i]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/\\([!-/:-@[-`{-~])/g, '$1')
      .replace(/\*+/g, '')
      .replace(/(^|[^\p{L}\p{N}])_+(?=\S)|(?<=\S)_+(?=$|[^\p{L}\p{N}])/gu, '$1');
    if (i + 2 < parts.length) out += parts[i + 2]!.replace(/^ (.*) $/, '$1');
  }
  return out.trim();
}

/** The headings of a Markdown text, in order, with their GitHub anchors. */
export function headingsOf(text: string): Heading[] {
  const lines = withoutFencedCode(text);
  const seen = new Map<string, number>();
  const headings: Heading[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const atx = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) {
      const content = (atx[2] ?? '').replace(/^#+$/, '');
      headings.push({ level: atx[1]!.length, text: content, anchor: githubAnchor(content, seen) });
      continue;
    }
    // A setext heading: a paragraph line underlined with = (level 1) or - (level 2).
    const next = lines[i + 1];
    if (next !== undefined && /^ {0,3}(=+|-+)[ \t]*$/.test(next) && isParagraphLine(line) && (i === 0 || lines[i - 1]!.trim() === '')) {
      const text2 = line.trim();
      headings.push({ level: next.trim().startsWith('=') ? 1 : 2, text: text2, anchor: githubAnchor(text2, seen) });
      i += 1;
    }
  }
  return headings;
}

function isParagraphLine(line: string): boolean {
  if (line.trim() === '') return false;
  if (/^ {4,}/.test(line)) return false; // indented code
  return !/^ {0,3}([-*+] |\d+[.)] |>|\||#|<)/.test(line);
}

/** Every link destination of a Markdown text outside code: inline links and images, and reference definitions. */
export function linksOf(text: string): Link[] {
  const prose = withoutCodeSpans(withoutFencedCode(text).join('\n'));
  const lineAt = (offset: number) => prose.slice(0, offset).split('\n').length;
  const links: Link[] = [];

  for (const match of prose.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)/gm)) {
    links.push({ destination: match[1]!.replace(/^<(.*)>$/, '$1'), line: lineAt(match.index!) });
  }

  for (let i = 0; i < prose.length; i++) {
    if (prose[i] === '\\') {
      i += 1;
      continue;
    }
    if (prose[i] !== '[') continue;
    const close = matchingBracket(prose, i);
    if (close < 0 || prose[close + 1] !== '(') continue;
    const parsed = destinationAt(prose, close + 2);
    if (!parsed) continue;
    links.push({ destination: parsed.destination, line: lineAt(i) });
    // Link text may hold an image link; go on inside it rather than after the whole link.
  }
  return links;
}

/** The index of the `]` closing the `[` at `open` (brackets nest; escaped ones do not count), or -1. */
function matchingBracket(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i += 1;
    } else if (c === '[') {
      depth += 1;
    } else if (c === ']') {
      depth -= 1;
      if (depth === 0) return i;
    } else if (c === '\n' && text[i + 1] === '\n') {
      return -1; // a link's text does not run across a blank line
    }
  }
  return -1;
}

/** The destination of an inline link whose `(` is just before `start`: `<…>`, or up to whitespace or the balancing `)`. */
function destinationAt(text: string, start: number): { destination: string } | null {
  let i = start;
  while (text[i] === ' ' || text[i] === '\t' || text[i] === '\n') i += 1;
  if (text[i] === '<') {
    const end = text.indexOf('>', i);
    if (end < 0 || text.slice(i, end).includes('\n')) return null;
    return { destination: text.slice(i + 1, end) };
  }
  let depth = 0;
  let destination = '';
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      destination += text[i + 1];
      i += 1;
      continue;
    }
    if (/\s/.test(c)) break;
    if (c === '(') depth += 1;
    if (c === ')') {
      if (depth === 0) break;
      depth -= 1;
    }
    destination += c;
  }
  // After the destination: an optional title, then the closing parenthesis.
  const rest = text.slice(i);
  if (!/^\s*(?:(?:"[^"]*"|'[^']*'|\([^)]*\))\s*)?\)/.test(rest)) return null;
  return { destination };
}

/** A destination with a scheme (https:, mailto:) or protocol-relative: not a file of this repository. */
const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

/**
 * Checks every relative link of `file` (absolute path, inside `root`): its target must exist and,
 * when it names an anchor, the target must be a Markdown file with a heading of that anchor (or, for
 * another file, a GitHub line anchor such as `#L12` or `#L12-L20`). External links are not followed.
 */
export function checkLinks(file: string, root: string): Problem[] {
  const problems: Problem[] = [];
  const relative = path.relative(root, file);
  const anchorsCache = new Map<string, Set<string>>();
  const anchorsOf = (target: string) => {
    let anchors = anchorsCache.get(target);
    if (!anchors) {
      anchors = new Set(headingsOf(fs.readFileSync(target, 'utf8')).map((heading) => heading.anchor));
      anchorsCache.set(target, anchors);
    }
    return anchors;
  };
  for (const { destination, line } of linksOf(fs.readFileSync(file, 'utf8'))) {
    if (EXTERNAL.test(destination)) continue;
    const problem = (reason: string) => problems.push({ file: relative, line, destination, reason });
    const hash = destination.indexOf('#');
    const pathPart = hash < 0 ? destination : destination.slice(0, hash);
    const anchor = hash < 0 ? null : destination.slice(hash + 1);
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathPart.split('?')[0]!);
    } catch {
      problem('malformed percent-encoding');
      continue;
    }
    // GitHub reads a leading / as the repository's root.
    const target = decoded === '' ? file : decoded.startsWith('/') ? path.join(root, decoded) : path.resolve(path.dirname(file), decoded);
    if (path.relative(root, target).startsWith('..')) {
      problem('points outside the repository');
      continue;
    }
    if (!fs.existsSync(target)) {
      problem(`no such file: ${path.relative(root, target)}`);
      continue;
    }
    if (anchor === null) continue;
    if (/\.md$/i.test(target) && fs.statSync(target).isFile()) {
      let wanted: string;
      try {
        wanted = decodeURIComponent(anchor);
      } catch {
        problem('malformed percent-encoding in the anchor');
        continue;
      }
      if (!anchorsOf(target).has(wanted)) problem(`no heading with the anchor #${wanted} in ${path.relative(root, target)}`);
    } else if (!/^L\d+(-L\d+)?$/.test(anchor)) {
      problem(`an anchor into ${path.relative(root, target)}, which is not a Markdown file`);
    }
  }
  return problems;
}

/** The Markdown files under `dir` (recursively), sorted; none when it does not exist. */
export function markdownFilesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFilesUnder(full));
    else if (entry.isFile() && entry.name.toLowerCase().endsWith('.md')) found.push(full);
  }
  return found.sort();
}
