import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The SDK's examples import it by its package name, as a frontend does.
  resolve: {
    alias: {
      '@backup-service/client/msw': fileURLToPath(new URL('./sdk/src/msw/index.ts', import.meta.url)),
      '@backup-service/client': fileURLToPath(new URL('./sdk/src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**', 'generated/**', 'sdk/dist/**', 'checks/dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
