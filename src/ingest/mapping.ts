import { Buffer } from 'node:buffer';
import jsonata from 'jsonata';
import { directEvaluator, type DirectEvaluator } from './direct-expressions.js';

/**
 * A mapping document (the CIVITAS/CORE shape, `{"fields": {"<target path>": "<expression>"},
 * "filter"?: "<expression>"}`) compiled with JSONata. Stage and release call it to refuse a
 * document that could never run; the pipeline runtime calls it again when a pipeline starts and
 * evaluates the compiled expressions per record. Any other member of the document is ignored.
 * This module reads nothing but the document: it must stay free of `modules/*`.
 */

/**
 * The longest expression compiled, in UTF-8 bytes. A mapping expression is a member access or a
 * small computation; the bound keeps compiling (a recursive descent parser) short and its stack
 * shallow, whatever a client stored.
 */
export const MAX_EXPRESSION_BYTES = 4096;

/**
 * The deepest nesting of brackets `(`, `[`, `{` in an expression. JSONata's parser recurses per
 * level and exhausts the stack near 2,000 of them (within the byte bound), at a depth that varies
 * with the caller's own stack: a fixed bound answers the same on every call.
 */
export const MAX_EXPRESSION_NESTING = 64;

/**
 * An expression compiled by JSONata, and where it is a member path or a literal, its direct
 * evaluator too (`direct-expressions.ts`), which the mapper tries first.
 */
export interface CompiledExpression {
  jsonata: jsonata.Expression;
  direct: DirectEvaluator | null;
  /** The direct evaluator answers one plain JSON value for every record (no copy needed). */
  literal: boolean;
}

/** A target path split into its segments: `$.Datastream.@iot.id` → `Datastream`, `@iot.id`. */
export interface CompiledField {
  /** The target path as the document gives it. */
  path: string;
  segments: string[];
  expression: CompiledExpression;
}

export interface CompiledMapping {
  fields: CompiledField[];
  /** Null when the document has no filter: every record passes. */
  filter: CompiledExpression | null;
}

/**
 * One reason the document cannot run. `message` starts with where the fault is (`fields.result`,
 * `filter`, `fields`) and gives the expression's position when it did not compile:
 * `fields.result: expected an expression at position 9`.
 */
export interface MappingFault { at: string; message: string }

export type MappingCompilation = { ok: true; mapping: CompiledMapping } | { ok: false; faults: MappingFault[] };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every fault of the document at once (a client fixes them in one round), else the compiled mapping. */
export function compileMapping(document: unknown): MappingCompilation {
  const faults: MappingFault[] = [];
  const fault = (at: string, problem: string) => faults.push({ at, message: `${at}: ${problem}` });
  const fields: CompiledField[] = [];
  let filter: CompiledExpression | null = null;

  const rawFields = isObject(document) ? document.fields : undefined;
  if (!isObject(rawFields)) {
    fault('fields', 'must be an object of target paths and expressions');
  } else {
    for (const [path, source] of Object.entries(rawFields)) {
      const at = `fields.${path}`;
      const segments = targetSegments(path);
      if (segments === null) fault(at, 'is not a target path (dotted names, optionally after "$.")');
      const compiled = compileExpression(source);
      if (typeof compiled === 'string') fault(at, compiled);
      else if (segments !== null) fields.push({ path, segments, expression: compiled });
    }
  }

  // A null filter is the same as none: JSON clients often send every member, empty ones as null.
  const rawFilter = isObject(document) ? document.filter : undefined;
  if (rawFilter !== undefined && rawFilter !== null) {
    const compiled = compileExpression(rawFilter);
    if (typeof compiled === 'string') fault('filter', compiled);
    else filter = compiled;
  }

  return faults.length > 0 ? { ok: false, faults } : { ok: true, mapping: { fields, filter } };
}

/**
 * `$.a.b`, `a.b` → [a, b]. `@iot.id` is one segment (the SensorThings name holds a dot), so a
 * segment starting with `@` takes the rest of the path. Null for an empty path or segment.
 */
export function targetSegments(path: string): string[] | null {
  const rest = path.startsWith('$.') ? path.slice(2) : path;
  const segments: string[] = [];
  let remaining = rest;
  while (remaining.length > 0) {
    if (remaining.startsWith('@')) { segments.push(remaining); remaining = ''; break; }
    const dot = remaining.indexOf('.');
    const segment = dot < 0 ? remaining : remaining.slice(0, dot);
    if (segment.length === 0) return null;
    segments.push(segment);
    if (dot < 0) { remaining = ''; break; }
    remaining = remaining.slice(dot + 1);
    if (remaining.length === 0) return null; // a trailing dot
  }
  return segments.length > 0 ? segments : null;
}

/** The compiled expression, or why it cannot be one (a message without the location prefix). */
function compileExpression(source: unknown): CompiledExpression | string {
  if (typeof source !== 'string') return 'must be a string holding a JSONata expression';
  const bytes = Buffer.byteLength(source, 'utf8');
  if (bytes > MAX_EXPRESSION_BYTES) return `is ${bytes} bytes long; an expression may have at most ${MAX_EXPRESSION_BYTES}`;
  const nesting = bracketNesting(source);
  if (nesting.depth > MAX_EXPRESSION_NESTING) {
    return `nests brackets more than ${MAX_EXPRESSION_NESTING} deep at position ${nesting.position}; an expression may nest at most ${MAX_EXPRESSION_NESTING}`;
  }
  let expression: jsonata.Expression;
  try {
    expression = jsonata(source);
  } catch (error) {
    return compileProblem(error);
  }
  const direct = directEvaluator(expression.ast());
  return { jsonata: expression, direct: direct?.evaluate ?? null, literal: direct?.literal ?? false };
}

/**
 * How deep the brackets of an expression nest, outside string literals, backquoted names and
 * comments; with the position (1-based, as JSONata counts) where the bound was first passed.
 */
function bracketNesting(source: string): { depth: number; position: number } {
  let depth = 0;
  let deepest = 0;
  let position = 0;
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (char === '"' || char === "'" || char === '`') {
      // Skip the literal; a backslash escapes the next character in strings.
      for (i++; i < source.length && source[i] !== char; i++) if (source[i] === '\\' && char !== '`') i++;
    } else if (char === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end < 0 ? source.length : end + 1;
    } else if (char === '(' || char === '[' || char === '{') {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (depth === MAX_EXPRESSION_NESTING + 1) position = i + 1;
      }
    } else if (char === ')' || char === ']' || char === '}') {
      depth = Math.max(0, depth - 1);
    }
  }
  return { depth: deepest, position };
}

function compileProblem(error: unknown): string {
  // Left for what the bracket count does not see (thousands of prefix operators in a row).
  if (error instanceof RangeError) return 'is nested too deeply to compile';
  const { code, position, message } = (error ?? {}) as Partial<jsonata.JsonataError>;
  // S0207 is JSONata's "Unexpected end of expression": an operator or an empty string waits for an operand.
  const text = code === 'S0207'
    ? 'expected an expression'
    : typeof message === 'string' && message.length > 0 ? message.charAt(0).toLowerCase() + message.slice(1) : 'does not compile';
  const where = typeof position === 'number' ? ` at position ${position}` : '';
  return code ? `${text}${where} (JSONata ${code})` : `${text}${where}`;
}
