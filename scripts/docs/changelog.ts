/**
 * The changelog page: for each API, the diff between each pair of consecutive versions in
 * openapi/released/ (the last release `<api>.openapi.json`, earlier ones `<api>@<version>…`),
 * and from the last release to the current documents when they are newer, newest first, as the
 * breaking-change check rates it.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffDocuments } from '../api-diff.ts';
import { markdownReport } from '../diff/report.ts';
import { apis, bundleApi } from '../gen/apis.ts';

interface Version {
  version: string;
  file: string;
  current: boolean;
}

const compare = (a: string, b: string): number => {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
};

async function versionOf(file: string): Promise<string> {
  return (JSON.parse(await readFile(file, 'utf8')) as { info: { version: string } }).info.version;
}

export async function changelogMarkdown(root: string): Promise<string> {
  const released = join(root, 'openapi/released');
  const dir = await mkdtemp(join(tmpdir(), 'changelog-'));
  const out = ['# Changelog', '', 'What changed in each version of the two APIs, from the breaking-change check (`redocly diff`, diff-recommended rules): breaking changes first (only ever with a new major version; the error catalogue may gain codes in a minor one), then additions, then compatible changes such as descriptions and examples.', ''];
  try {
    for (const api of apis) {
      const files = (await readdir(released)).filter((f) => f === `${api.name}.openapi.json` || (f.startsWith(`${api.name}@`) && f.endsWith('.openapi.json')));
      const versions: Version[] = await Promise.all(files.map(async (f) => ({ version: await versionOf(join(released, f)), file: join(released, f), current: false })));
      const current = join(dir, `${api.name}.openapi.json`);
      const doc = await bundleApi(root, api);
      await writeFile(current, JSON.stringify(doc));
      if (!versions.some((v) => v.version === doc.info.version)) versions.push({ version: doc.info.version, file: current, current: true });
      versions.sort((a, b) => compare(a.version, b.version));
      out.push(`## ${doc.info.title}`, '');
      for (let i = versions.length - 1; i > 0; i--) {
        const [from, to] = [versions[i - 1]!, versions[i]!];
        const result = await diffDocuments(from.file, to.file);
        out.push(markdownReport({ ...result, title: `${to.version}${to.current ? ' (this version of the documents)' : ''}` }, { collapse: false, heading: '###' }));
      }
      out.push(`### ${versions[0]!.version}`, '', 'The first released version.', '');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out.join('\n');
}
