// STUB: replaced by the sta-query branch.
import type { QueryOptions } from './ast.js';

export function parseQueryOptions(_rawQuery: string): QueryOptions {
  throw new Error('not yet');
}
