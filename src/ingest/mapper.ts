import { FALLBACK } from './direct-expressions.js';
import type { CompiledField, CompiledMapping } from './mapping.js';
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

/**
 * Synchronous while every expression answers directly (a member path, a literal); the first one
 * that needs JSONata continues the record asynchronously. So a mapping of plain paths costs no
 * promise per record.
 */
export function mapRecord(mapping: CompiledMapping, record: SourceRecord, bindings: Bindings): MappingResult | Promise<MappingResult> {
  if (record.value === undefined) return { kind: 'rejected', reason: record.unreadable ?? 'the payload is not JSON', field: null };
  if (mapping.filter) {
    const keep = mapping.filter.direct ? mapping.filter.direct(record.value) : FALLBACK;
    if (keep === FALLBACK) return mapWithJsonata(mapping, record, bindings, true, 0, {});
    if (!keep) return SKIPPED;
  }
  const value: Record<string, unknown> = {};
  const { fields } = mapping;
  for (let i = 0; i < fields.length; i++) {
    const { expression } = fields[i]!;
    const result = expression.direct ? expression.direct(record.value) : FALLBACK;
    if (result === FALLBACK) return mapWithJsonata(mapping, record, bindings, false, i, value);
    const problem = place(value, fields[i]!, result, expression.literal);
    if (problem) return problem;
  }
  return { kind: 'mapped', record: { value, receivedAt: record.receivedAt } };
}

const SKIPPED: MappingResult = Object.freeze({ kind: 'skipped' });

/** The rest of a record from field `from` on (and its filter first, when `filterPending`), JSONata where direct evaluation fell back. */
async function mapWithJsonata(
  mapping: CompiledMapping, record: SourceRecord, bindings: Bindings, filterPending: boolean, from: number, value: Record<string, unknown>,
): Promise<MappingResult> {
  const variables: Record<string, unknown> = { receivedAt: record.receivedAt.toISOString(), dataSource: bindings.dataSource };
  if (record.topic !== undefined) variables['topic'] = record.topic;
  if (filterPending && mapping.filter) {
    let keep: unknown;
    try {
      keep = await mapping.filter.jsonata.evaluate(record.value, variables);
    } catch (error) {
      return { kind: 'rejected', reason: `filter: ${evaluationProblem(error)}`, field: null };
    }
    if (!keep) return SKIPPED;
  }
  const { fields } = mapping;
  for (let i = from; i < fields.length; i++) {
    const { expression, path } = fields[i]!;
    let result = expression.direct ? expression.direct(record.value) : FALLBACK;
    const alreadyPlain = result !== FALLBACK && expression.literal;
    if (result === FALLBACK) {
      try {
        result = await expression.jsonata.evaluate(record.value, variables);
      } catch (error) {
        return { kind: 'rejected', reason: `${path}: ${evaluationProblem(error)}`, field: path };
      }
    }
    const problem = place(value, fields[i]!, result, alreadyPlain);
    if (problem) return problem;
  }
  return { kind: 'mapped', record: { value, receivedAt: record.receivedAt } };
}

/** Puts a field's result at its target path (nothing for undefined); the rejection when it clashes with another field's. */
function place(value: Record<string, unknown>, { path, segments }: CompiledField, result: unknown, alreadyPlain: boolean): MappingResult | null {
  if (result === undefined) return null;
  const clash = put(value, segments, alreadyPlain ? result : plain(result));
  return clash ? { kind: 'rejected', reason: `${path}: ${clash}`, field: path } : null;
}

/**
 * Sets `segments` in `target`, making objects on the way; answers a problem when a path crosses a
 * value set by another field. A literal's object on the way (frozen, shared by every record) is
 * copied before a member is added to it.
 */
function put(target: Record<string, unknown>, segments: readonly string[], value: unknown): string | null {
  let node = target;
  const last = segments.length - 1;
  for (let i = 0; i < last; i++) {
    const segment = segments[i]!;
    let next = node[segment];
    if (next === undefined) next = node[segment] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) return `another field already set ${segment} to a value that is not an object`;
    else if (Object.isFrozen(next)) next = node[segment] = { ...next };
    node = next as Record<string, unknown>;
  }
  node[segments[last]!] = value;
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
