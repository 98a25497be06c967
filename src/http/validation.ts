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
  return (data: unknown) => {
    const nul = fieldWithNul(data);
    if (nul !== null) return { error: new AppError('VALIDATION_FAILED', `${nul || httpPart}: must not contain the NUL character`, { fieldErrors: [{ field: nul || (httpPart ?? 'body'), message: 'must not contain the NUL character' }] }) };
    return validate(data) ? { value: data } : { error: toAppError(validate.errors ?? [], httpPart ?? 'body') };
  };
};

/**
 * PostgreSQL text cannot hold U+0000, so a string carrying it would fail in the database; it is
 * refused here, naming the field, instead. An explicit stack, not recursion: a hostile body may
 * nest arrays thousands deep. Returns the field path, or null when there is none.
 */
function fieldWithNul(data: unknown): string | null {
  const pending: Array<[unknown, string]> = [[data, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => pending.push([item, `${path}[${index}]`]));
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const itemPath = path ? `${path}.${key}` : key;
        if (key.includes('\u0000')) return itemPath;
        pending.push([item, itemPath]);
      }
    }
  }
  return null;
}

function toAppError(errors: ErrorObject[], httpPart: string): AppError {
  const fieldErrors = errors
    // anyOf/oneOf add a summary error on top of the branch errors; the branches say more.
    .filter((error) => error.keyword !== 'anyOf' && error.keyword !== 'oneOf' && error.keyword !== 'if')
    .map((error) => fieldErrorOf(error, httpPart));
  const unique = [...new Map(fieldErrors.map((e) => [`${e.field}|${e.message}`, e])).values()];
  const first = unique[0] ?? { field: httpPart, message: 'is invalid' };
  const detail = unique.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new AppError('VALIDATION_FAILED', detail || `${first.field}: ${first.message}`, { fieldErrors: unique.length ? unique : [first] });
}

function fieldErrorOf(error: ErrorObject, httpPart: string): FieldError {
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
  } else if (error.keyword === 'format') {
    message = `must be a valid ${error.params['format']}`;
  } else if (error.keyword === 'enum') {
    message = `must be one of ${(error.params['allowedValues'] as unknown[]).join(', ')}`;
  } else if (error.keyword === 'const') {
    message = `must be ${JSON.stringify(error.params['allowedValue'])}`;
  }
  // A query or path parameter is named as the client wrote it (`id`, `sort`), not by its index in the coerced array.
  const field = httpPart !== 'body' ? (path[0] ?? '') : path.reduce((acc, segment) => (/^\d+$/.test(segment) ? `${acc}[${segment}]` : acc ? `${acc}.${segment}` : segment), '');
  return { field: field || httpPart, message };
}
