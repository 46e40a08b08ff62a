/**
 * The small Markdown subset the docs pages are written in: ATX headings (with ids), paragraphs,
 * fenced code, flat bullet and numbered lists, pipe tables, and inline code, bold, emphasis and
 * links. Enough for hand-written pages; anything else renders as a paragraph of text.
 */

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Inline markup; code spans are cut out first so nothing inside them is interpreted. */
export function inline(text: string): string {
  const parts = text.split(/(`[^`]+`)/);
  return parts
    .map((part) => {
      if (/^`[^`]+`$/.test(part)) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return escapeHtml(part)
        .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_m, label: string, href: string) => `<a href="${href}">${label}</a>`)
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>');
    })
    .join('');
}

function tableRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

export interface Heading {
  level: number;
  id: string;
  text: string;
}

export function renderMarkdown(source: string): { html: string; headings: Heading[] } {
  const lines = source.replace(/\r\n/g, '\n').split('\n');
  const out: string[] = [];
  const headings: Heading[] = [];
  let i = 0;
  const isBlockStart = (line: string): boolean =>
    /^(#{1,6} |```|[-*] |\d+\. |\|)/.test(line) || line.trim() === '';

  while (i < lines.length) {
    const line = lines[i]!;
    const fence = /^```(\S*)/.exec(line);
    const heading = /^(#{1,6}) (.*)$/.exec(line);
    if (line.trim() === '') {
      i += 1;
    } else if (fence) {
      const body: string[] = [];
      for (i += 1; i < lines.length && !lines[i]!.startsWith('```'); i += 1) body.push(lines[i]!);
      i += 1;
      const lang = fence[1] ? ` class="language-${escapeHtml(fence[1])}"` : '';
      out.push(`<pre><code${lang}>${escapeHtml(body.join('\n'))}</code></pre>`);
    } else if (heading) {
      const level = heading[1]!.length;
      const text = heading[2]!.trim();
      const id = slug(text);
      headings.push({ level, id, text });
      out.push(`<h${level} id="${id}">${inline(text)}</h${level}>`);
      i += 1;
    } else if (/^[-*] |^\d+\. /.test(line)) {
      const ordered = /^\d+\. /.test(line);
      const items: string[] = [];
      while (i < lines.length && (ordered ? /^\d+\. /.test(lines[i]!) : /^[-*] /.test(lines[i]!))) {
        let item = lines[i]!.replace(/^([-*]|\d+\.) /, '');
        // Indented continuation lines belong to the item.
        for (i += 1; i < lines.length && /^ {2,}\S/.test(lines[i]!); i += 1) item += ' ' + lines[i]!.trim();
        items.push(`<li>${inline(item)}</li>`);
      }
      out.push(ordered ? `<ol>${items.join('')}</ol>` : `<ul>${items.join('')}</ul>`);
    } else if (line.startsWith('|') && /^\|?\s*:?-{3,}/.test(lines[i + 1] ?? '')) {
      const head = tableRow(line);
      const rows: string[][] = [];
      for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i += 1) rows.push(tableRow(lines[i]!));
      const th = head.map((cell) => `<th>${inline(cell)}</th>`).join('');
      const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${inline(cell)}</td>`).join('')}</tr>`).join('');
      out.push(`<table><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`);
    } else {
      const paragraph: string[] = [];
      while (i < lines.length && (paragraph.length === 0 || !isBlockStart(lines[i]!))) {
        paragraph.push(lines[i]!.trim());
        i += 1;
      }
      out.push(`<p>${inline(paragraph.join(' '))}</p>`);
    }
  }
  return { html: out.join('\n'), headings };
}
