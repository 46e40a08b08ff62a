import { afterAll } from 'vitest';
import { stopShapeServices } from './shape.ts';

// The distributed API run: the services a test file started go with it.
afterAll(() => stopShapeServices());
