import { afterAll, expect } from 'vitest';
import { undeclaredErrors } from '../src/http/route-errors.js';

// Across the whole suite: no route that declares its `errors` answered a code it did not declare.
// The error handler records such answers in test runs (src/http/route-errors.ts, checkDeclared);
// the record is per test file (each file runs in its own module graph), so this checks each file.
afterAll(() => {
  expect(
    undeclaredErrors.map((e) => `${e.method} ${e.url}: ${e.code}`),
    'error codes answered but not declared on the route (add them to its `errors`)',
  ).toEqual([]);
});
