import type { Backend, ObjectInfo, ObjectWriter } from '../storage/backend.ts';

/**
 * A real backend whose next listing of `prefix` (or ranged read, see beforeRangedLoad) first runs
 * `meanwhile` (another writer's work, to completion): so a test puts that work at the exact step
 * an operation lists or reads what it needs.
 */
export class GatedBackend implements Backend {
  readonly location: string;
  private readonly inner: Backend;
  private gate: { prefix: string; meanwhile: () => Promise<void> } | null = null;
  private loadGate: { prefix: string; meanwhile: () => Promise<void> } | null = null;

  constructor(inner: Backend) {
    this.inner = inner;
    this.location = inner.location;
  }

  /** Before the next listing of `prefix`, runs `meanwhile`. */
  before(prefix: string, meanwhile: () => Promise<void>): void {
    this.gate = { prefix, meanwhile };
  }

  save(name: string, parts: readonly Uint8Array[], options?: { ifAbsent?: boolean }): Promise<boolean> {
    return this.inner.save(name, parts, options);
  }
  create(): ObjectWriter {
    return this.inner.create();
  }
  /** Before the next ranged read of an object under `prefix` (a blob or a run of blobs of a pack), runs `meanwhile`. */
  beforeRangedLoad(prefix: string, meanwhile: () => Promise<void>): void {
    this.loadGate = { prefix, meanwhile };
  }

  async load(name: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const gate = this.loadGate;
    if (gate && range && name.startsWith(gate.prefix)) {
      this.loadGate = null;
      await gate.meanwhile();
    }
    return this.inner.load(name, range);
  }
  stat(name: string): Promise<ObjectInfo> {
    return this.inner.stat(name);
  }
  remove(name: string): Promise<void> {
    return this.inner.remove(name);
  }
  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const gate = this.gate;
    if (gate && gate.prefix === prefix) {
      this.gate = null;
      await gate.meanwhile();
    }
    yield* this.inner.list(prefix);
  }
}
