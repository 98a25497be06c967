import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { AppError, type FieldError } from '../errors.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

function newAjv(coerceTypes: boolean | 'array') {
  // removeAdditional stays off: an unknown body field is the caller's mistake and is reported, not dropped.
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'example' });
  // Ids are stored lower-case; a caller's upper-case UUID must find the same object and compare
  // equal to it in memory (membership sets, replace-by-difference), so it is lower-cased on the way in.
  ajv.addKeyword({
    keyword: 'x-lowercase',
    modifying: true,
    schemaType: 'boolean',
    validate: (enabled: boolean, data: unknown, _schema?: unknown, context?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
      if (enabled && typeof data === 'string' && context) context.parentData[context.parentDataProperty] = data.toLowerCase();
      return true;
    },
  });
  return ajv;
}

// Bodies are JSON and keep their types ("5" is not 5); query strings and path parameters are text
// and are coerced, a lone value becoming a one-element array where a list is expected.
const bodyAjv = newAjv(false);
const textAjv = newAjv('array');

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);
  const part = httpPart ?? 'body';
  return (data: unknown) => {
    const unstorable = unstorableText(data);
    if (unstorable) {
      const field = unstorable.path || part;
      return { error: new AppError('VALIDATION_FAILED', `${field}: ${unstorable.message}`, { fieldErrors: [{ field, message: unstorable.message }] }) };
    }
    return validate(data) ? { value: data } : { error: toAppError(validate.errors ?? [], part, data) };
  };
};

/**
 * Text the database cannot hold, found before it gets there. PostgreSQL text cannot hold U+0000,
 * and a lone surrogate (a JSON escape like "\ud800") is not Unicode at all: the driver would
 * silently store it as U+FFFD. Both are refused naming the field. An explicit stack, not
 * recursion: a hostile body may nest arrays thousands deep. Returns null when all text is fine.
 */
function unstorableText(data: unknown): { path: string; message: string } | null {
  const pending: Array<[unknown, string]> = [[data, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (typeof value === 'string') {
      const message = textProblem(value);
      if (message) return { path, message };
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => pending.push([item, `${path}[${index}]`]));
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const itemPath = path ? `${path}.${key}` : key;
        const message = textProblem(key);
        if (message) return { path: itemPath, message };
        pending.push([item, itemPath]);
      }
    }
  }
  return null;
}

// `isWellFormed` is Node 20's (ES2024); the compiler's ES2022 library does not declare it yet.
const isWellFormed = (text: string) => (text as string & { isWellFormed(): boolean }).isWellFormed();

function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain the NUL character';
  if (!isWellFormed(text)) return 'must be well-formed Unicode (no lone surrogate)';
  return null;
}

function toAppError(errors: ErrorObject[], httpPart: string, data: unknown): AppError {
  const branchTypes = anyOfBranchTypes(errors);
  const fieldErrors = errors
    // anyOf/oneOf add a summary error on top of the branch errors; the branches say more.
    .filter((error) => error.keyword !== 'anyOf' && error.keyword !== 'oneOf' && error.keyword !== 'if')
    .filter((error) => branchTypes.get(anyOfOfBranchType(error) ?? '') !== null)
    .map((error) => fieldErrorOf(error, httpPart, data, branchTypes.get(anyOfOfBranchType(error) ?? '')));
  const unique = [...new Map(fieldErrors.map((e) => [`${e.field}|${e.message}`, e])).values()];
  const first = unique[0] ?? { field: httpPart, message: 'is invalid' };
  const detail = unique.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new AppError('VALIDATION_FAILED', detail || `${first.field}: ${first.message}`, { fieldErrors: unique.length ? unique : [first] });
}

/** The schema path of the anyOf whose branch's own `type` this error is; undefined for any other error. */
const anyOfOfBranchType = (error: ErrorObject) =>
  error.keyword === 'type' ? /^(.*\/anyOf)\/\d+\/type$/.exec(error.schemaPath)?.[1] : undefined;

/**
 * Each branch of an anyOf reports its own type error, which read together contradict each other
 * ("must be string", "must be null"). Per anyOf: the types of all its branches, to be named in one
 * message; or null when a branch of the value's type failed on something else (a uuid format, a
 * length), whose error alone is then the one that matters.
 */
function anyOfBranchTypes(errors: ErrorObject[]): Map<string, string[] | null> {
  const types = new Map<string, string[] | null>();
  for (const error of errors) {
    const anyOf = anyOfOfBranchType(error);
    if (anyOf) types.set(anyOf, [...(types.get(anyOf) ?? []), ...String(error.params['type']).split(',')]);
  }
  for (const error of errors) {
    for (const anyOf of types.keys()) {
      if (error.schemaPath.startsWith(`${anyOf}/`) && anyOfOfBranchType(error) !== anyOf) types.set(anyOf, null);
    }
  }
  return types;
}

/**
 * The message of a type error. An explicit null where null is not allowed says so, rather than
 * naming the type expected; a field that takes several types (null among them) names them all
 * in one message.
 */
function typeMessage(error: ErrorObject, data: unknown, branchTypes: string[] | undefined): string {
  const types = [...new Set(branchTypes ?? String(error.params['type']).split(','))];
  if (valueAt(data, error.instancePath) === null && !types.includes('null')) return 'must not be null';
  if (types.length === 1) return error.message ?? `must be ${types[0]}`;
  return `must be ${types.map(withArticle).join(' or ')}`;
}

const withArticle = (type: string) => (type === 'null' ? 'null' : /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** The value a JSON pointer (ajv's instancePath) names; undefined when there is none. */
function valueAt(data: unknown, pointer: string): unknown {
  let value = data;
  for (const segment of pointer.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return value;
}

function fieldErrorOf(error: ErrorObject, httpPart: string, data: unknown, branchTypes: string[] | null | undefined): FieldError {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'additionalProperties') {
    path.push(String(error.params['additionalProperty']));
    message = 'is not a known field';
  } else if (error.keyword === 'required') {
    path.push(String(error.params['missingProperty']));
    message = 'is required';
  } else if (error.keyword === 'type') {
    message = typeMessage(error, data, branchTypes ?? undefined);
  } else if (error.keyword === 'format') {
    message = `must be a valid ${error.params['format']}`;
  } else if (error.keyword === 'enum') {
    const allowed = error.params['allowedValues'] as unknown[];
    message = valueAt(data, error.instancePath) === null && !allowed.includes(null)
      ? 'must not be null'
      : `must be one of ${allowed.map(String).join(', ')}`;
  } else if (error.keyword === 'const') {
    message = `must be ${JSON.stringify(error.params['allowedValue'])}`;
  }
  // A query or path parameter is named as the client wrote it (`id`, `sort`), not by its index in the coerced array.
  const field = httpPart !== 'body' ? (path[0] ?? '') : path.reduce((acc, segment) => (/^\d+$/.test(segment) ? `${acc}[${segment}]` : acc ? `${acc}.${segment}` : segment), '');
  return { field: field || httpPart, message };
}
