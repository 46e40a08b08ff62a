import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** The API test files: run once per deployment shape (server/testing/shape.ts), the same files both times. */
const API_TESTS = [
  'server/app.test.ts',
  'server/operations.test.ts',
  'server/auth/auth.http.test.ts',
  'server/backup-api/backup-api.test.ts',
  'server/http/rate-limits.http.test.ts',
  'server/http/https-policy.http.test.ts',
  'server/http/request-edges.http.test.ts',
  'server/tools-api/tools-api.test.ts',
  'server/backup-api/lifecycle-api.test.ts',
];

export default defineConfig({
  // The SDK's examples import it by its package name, as a frontend does.
  resolve: {
    alias: {
      '@backup-service/client/msw': fileURLToPath(new URL('./sdk/src/msw/index.ts', import.meta.url)),
      '@backup-service/client': fileURLToPath(new URL('./sdk/src/index.ts', import.meta.url)),
    },
  },
  test: {
    exclude: ['node_modules/**', 'data/**', 'generated/**', 'sdk/dist/**', 'checks/dist/**', '.bench/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once even on two cores (vitest's default there is one): most test time is spent
    // waiting on servers, child processes and fsync, not computing.
    maxWorkers: 2,
    // Servers the tests spawn open no metrics port unless the test gives one (many run at once; 9464 is one port).
    env: { METRICS_PORT: '0' },
    projects: [
      { extends: true, test: { name: 'embedded', include: ['**/*.test.ts'] } },
      {
        extends: true,
        test: { name: 'distributed', include: API_TESTS, env: { METRICS_PORT: '0', BACKUP_TEST_SHAPE: 'distributed' }, setupFiles: ['server/testing/shape-setup.ts'] },
      },
    ],
  },
});
