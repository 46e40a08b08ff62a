/**
 * Compiles the client's TypeScript sources to browser ES modules for the frontend example:
 * types are stripped, `.ts` imports become `.js`, and `openapi-fetch` stays a bare specifier
 * that the page's import map points at a local copy. No bundler: the files map one to one.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import ts from 'typescript';

export async function compileForBrowser(root: string, sources: readonly string[], outDir: string): Promise<string[]> {
  const written: string[] = [];
  for (const source of sources) {
    const text = await readFile(join(root, source), 'utf8');
    const { outputText, diagnostics } = ts.transpileModule(text, {
      fileName: source,
      reportDiagnostics: true,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
        rewriteRelativeImportExtensions: true,
      },
    });
    if (diagnostics && diagnostics.length > 0) {
      const messages = diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      throw new Error(`${source}: ${messages.join('; ')}`);
    }
    const target = join(outDir, source.replace(/\.ts$/, '.js'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, outputText);
    written.push(target);
  }
  return written;
}

/** The project files `entry` imports, directly or not, by relative path (bare imports stay the page's import map's). */
export async function importClosure(root: string, entry: string): Promise<string[]> {
  const seen = new Set<string>();
  const visit = async (file: string): Promise<void> => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = await readFile(join(root, file), 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
      if (/^(?:import|export)\s+type\s/.test(match[0])) continue;
      await visit(join(dirname(file), match[1]!));
    }
  };
  await visit(entry);
  return [...seen];
}
