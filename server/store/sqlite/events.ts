import { EventEmitter } from 'node:events';
import type { JobEvent, JobEvents } from '../store.ts';

/** One emitter per database file: every store of this process on that file hears the same events. */
const emitters = new Map<string, EventEmitter>();

/** Job notifications in one process: the embedded store has one server on its data directory. */
export class LocalJobEvents implements JobEvents {
  private readonly emitter: EventEmitter;

  constructor(file: string) {
    let emitter = emitters.get(file);
    if (!emitter) emitters.set(file, (emitter = new EventEmitter().setMaxListeners(0)));
    this.emitter = emitter;
  }

  publish(event: JobEvent): Promise<void> {
    // Delivered on a later tick, as a notification from the database would be.
    setImmediate(() => this.emitter.emit('event', event));
    return Promise.resolve();
  }

  subscribe(listener: (event: JobEvent | { type: 'resync' }) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }
}
