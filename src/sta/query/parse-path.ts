// STUB: replaced by the sta-query branch.
import type { ResourcePath } from './ast.js';

export function parseResourcePath(_path: string): ResourcePath {
  throw new Error('not yet');
}
