import { MemoryRateLimitStore } from './store.ts';
import { rateLimitStoreSuite } from './suite.ts';

rateLimitStoreSuite('memory', async () => ({ store: new MemoryRateLimitStore(), cleanup: async () => {} }));
