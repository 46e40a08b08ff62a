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
