import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { requirePackages } from '../testing/services/packages.ts';
import { defineMetrics } from './definitions.ts';

const DOCS = join(import.meta.dirname, '..', '..', 'docs', 'operations');
const RULES = join(DOCS, 'prometheus-alerts.yml');
const RULE_TESTS = join(DOCS, 'prometheus-alerts.test.yml');
const DASHBOARD = join(DOCS, 'grafana-dashboard.json');

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { encoding: 'utf8', cwd: DOCS });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Every series name the service exports: ours and prom-client's defaults, histograms with their suffixes. */
function exportedNames(): Set<string> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  defineMetrics(registry);
  const names = new Set<string>(['up']);
  for (const metric of registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

/** Metric names a PromQL expression reads: identifiers left once strings, selectors, ranges, groupings and calls are taken out. */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/\b([a-zA-Z_][a-zA-Z0-9_]*)\b(?!\s*\()/g)].map((m) => m[1]!).filter((n) => !/^(and|or|unless|bool)$/.test(n));
}

describe('the shipped alerts and dashboard', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alerts-'));
  const rules = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  const alerts = rules.groups.flatMap((g) => g.rules);
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
  const panelExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  beforeAll(() => requirePackages(['prometheus']));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('promtool check rules accepts the alert rules', () => {
    const run = promtool('check', 'rules', RULES);
    expect(run.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(run.status).toBe(0);
  });

  it('promtool test rules passes the unit tests, and every alert has a test where it fires', () => {
    const run = promtool('test', 'rules', RULE_TESTS);
    expect(run.output).toContain('SUCCESS');
    expect(run.status).toBe(0);
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
    const firing = new Set(tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect([...firing].sort()).toEqual(alerts.map((a) => a.alert).sort());
  });

  it('reads only metrics the service exports', () => {
    const names = exportedNames();
    for (const { alert, expr } of alerts) for (const m of metricsIn(expr)) expect(names.has(m), `${alert}: ${m}`).toBe(true);
    for (const { panel, expr } of panelExprs) for (const m of metricsIn(expr)) expect(names.has(m), `${panel}: ${m}`).toBe(true);
    expect(panelExprs.length).toBeGreaterThan(20);
  });

  it('has dashboard queries that are valid PromQL (checked by promtool as recording rules)', () => {
    const recording = {
      groups: [
        {
          name: 'dashboard',
          rules: panelExprs.map(({ expr }, i) => ({
            record: `dashboard:panel_${i}`,
            expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$__range', '6h').replaceAll('$instance', '.*'),
          })),
        },
      ],
    };
    const file = join(dir, 'dashboard-rules.yml');
    writeFileSync(file, stringify(recording));
    const run = promtool('check', 'rules', file);
    expect(run.output).toContain(`SUCCESS: ${panelExprs.length} rules found`);
  });
});
