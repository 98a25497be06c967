import type { CompiledMapping } from './mapping.js';
import type { MappedRecord, SourceRecord } from './types.js';

/**
 * Turns one received record into the target object its mapping describes: the filter first (a
 * record it rejects is skipped, not refused), then each field's expression, its result put at
 * the field's target path. An expression that fails (a type error, a function on the wrong
 * argument) rejects the record naming the field; one that yields nothing leaves the path unset.
 */

export type MappingResult =
  | { kind: 'mapped'; record: MappedRecord }
  | { kind: 'skipped' }
  | { kind: 'rejected'; reason: string; field: string | null };

export interface Bindings {
  dataSource: { id: string; name: string };
}

export async function mapRecord(mapping: CompiledMapping, record: SourceRecord, bindings: Bindings): Promise<MappingResult> {
  if (record.value === undefined) return { kind: 'rejected', reason: record.unreadable ?? 'the payload is not JSON', field: null };
  const variables: Record<string, unknown> = { receivedAt: record.receivedAt.toISOString(), dataSource: bindings.dataSource };
  if (record.topic !== undefined) variables['topic'] = record.topic;
  if (mapping.filter) {
    let keep: unknown;
    try {
      keep = await mapping.filter.evaluate(record.value, variables);
    } catch (error) {
      return { kind: 'rejected', reason: `filter: ${evaluationProblem(error)}`, field: null };
    }
    if (!keep) return { kind: 'skipped' };
  }
  const value: Record<string, unknown> = {};
  for (const field of mapping.fields) {
    let result: unknown;
    try {
      result = await field.expression.evaluate(record.value, variables);
    } catch (error) {
      return { kind: 'rejected', reason: `${field.path}: ${evaluationProblem(error)}`, field: field.path };
    }
    if (result === undefined) continue;
    const clash = put(value, field.segments, plain(result));
    if (clash) return { kind: 'rejected', reason: `${field.path}: ${clash}`, field: field.path };
  }
  return { kind: 'mapped', record: { value, receivedAt: record.receivedAt } };
}

/** Sets `segments` in `target`, making objects on the way; answers a problem when a path crosses a value set by another field. */
function put(target: Record<string, unknown>, segments: readonly string[], value: unknown): string | null {
  let node = target;
  for (const segment of segments.slice(0, -1)) {
    const next = node[segment];
    if (next === undefined) node = node[segment] = {};
    else if (typeof next === 'object' && next !== null && !Array.isArray(next)) node = next as Record<string, unknown>;
    else return `another field already set ${segment} to a value that is not an object`;
  }
  node[segments[segments.length - 1]!] = value;
  return null;
}

/**
 * JSONata answers sequences as arrays carrying a `sequence` flag, and functions as objects: a
 * JSON round trip leaves the plain value a writer expects (a function becomes nothing).
 */
function plain(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  return JSON.parse(JSON.stringify(value)) as unknown;
}

function evaluationProblem(error: unknown): string {
  if (error instanceof RangeError) return 'the expression recursed too deeply';
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  const text = typeof message === 'string' && message.length > 0 ? message : 'the expression failed';
  return code ? `${text} (JSONata ${code})` : text;
}
