import { AppError } from '../errors.js';
import type { Bbox } from './features.repo.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10_000;

/** `limit`, `offset` and `bbox=minx,miny,maxx,maxy` (in the collection's SRID) of an items read. */
export function parseItemsQuery(query: string): { limit: number; offset: number; bbox: Bbox | null } {
  const params = new URLSearchParams(query);
  const limit = integerParam(params, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
  const offset = integerParam(params, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
  const rawBbox = params.get('bbox');
  if (rawBbox === null) return { limit, offset, bbox: null };
  const numbers = rawBbox.split(',').map((part) => (part.trim() === '' ? NaN : Number(part)));
  if (numbers.length !== 4 || !numbers.every(Number.isFinite) || numbers[0]! > numbers[2]! || numbers[1]! > numbers[3]!) {
    throw invalid('bbox', 'must be minx,miny,maxx,maxy with min ≤ max');
  }
  return { limit, offset, bbox: numbers as Bbox };
}

function integerParam(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = params.get(name);
  if (text === null) return fallback;
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw invalid(name, `must be an integer from ${min} to ${max}`);
  return value;
}

const invalid = (field: string, message: string) => new AppError('VALIDATION_FAILED', `${field}: ${message}`, { fieldErrors: [{ field, message }] });
