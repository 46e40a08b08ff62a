import { describe, expect, it } from 'vitest';
import { inline, renderMarkdown } from './markdown.ts';

describe('markdown subset', () => {
  it('renders headings with ids, paragraphs, lists and fenced code', () => {
    const { html, headings } = renderMarkdown(
      [
        '# Getting started',
        '',
        'Two APIs,',
        'one page.',
        '',
        '- first `a<b>`',
        '  continued',
        '- second',
        '',
        '1. one',
        '2. two',
        '',
        '```sh',
        'curl -s "http://x/?a=1&b=2" <in',
        '```',
      ].join('\n'),
    );
    expect(headings).toEqual([{ level: 1, id: 'getting-started', text: 'Getting started' }]);
    expect(html).toBe(
      [
        '<h1 id="getting-started">Getting started</h1>',
        '<p>Two APIs, one page.</p>',
        '<ul><li>first <code>a&lt;b&gt;</code> continued</li><li>second</li></ul>',
        '<ol><li>one</li><li>two</li></ol>',
        '<pre><code class="language-sh">curl -s &quot;http://x/?a=1&amp;b=2&quot; &lt;in</code></pre>',
      ].join('\n'),
    );
  });

  it('renders pipe tables with inline markup in cells', () => {
    const { html } = renderMarkdown('| a | b |\n|---|---|\n| `x` | **y** |\n| 1 | [l](p.html) |');
    expect(html).toBe(
      '<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody>' +
        '<tr><td><code>x</code></td><td><strong>y</strong></td></tr>' +
        '<tr><td>1</td><td><a href="p.html">l</a></td></tr></tbody></table>',
    );
  });

  it('leaves markup inside code spans alone and escapes text', () => {
    expect(inline('`**no**` and *yes* & <tag>')).toBe('<code>**no**</code> and <em>yes</em> &amp; &lt;tag&gt;');
  });
});
