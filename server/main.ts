// `npm start`: both APIs on one port (PORT, default 8080), data in DATA_DIR (default ./data).
// The compile cache is turned on before the rest of the server is loaded (serve.ts).
import { useCompileCache } from './compile-cache.ts';

useCompileCache();
await import('./serve.ts');
