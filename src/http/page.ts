import { Type, type TSchema } from 'typebox';
import { validationFailed } from '../errors.js';
import { DateTime } from './schemas.js';
import type { ListRequest, SortSpec } from '../db/list-query.js';

export const UUID_PATTERN = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
/** One or more UUIDs, comma-separated (the query-string form of an id list). */
export const UuidList = Type.String({ pattern: `^${UUID_PATTERN}(,${UUID_PATTERN})*$`, description: 'comma-separated UUIDs' });
const MAX_PAGE_SIZE = 1000;

/** `sort=property[,asc|desc]`, repeatable. */
export const SortParameter = (defaultSort: string) => Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z]+(,(asc|desc|ASC|DESC|Asc|Desc))?$' }), {
  description: `property,(asc|desc); repeatable; default ${defaultSort}`,
}));

/** The filters every list takes: ids and creation/modification ranges (bounds inclusive). */
export const sharedFilterParameters = {
  id: Type.Optional(Type.Array(UuidList, { description: 'one or more ids, comma-separated' })),
  createdAtFrom: Type.Optional(DateTime),
  createdAtTo: Type.Optional(DateTime),
  modifiedAtFrom: Type.Optional(DateTime),
  modifiedAtTo: Type.Optional(DateTime),
};

/** The query parameters every paginated list takes (the specification's shared list parameters). */
export const sharedListParameters = {
  // Spring's int: keeps page * size a safe offset.
  page: Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0, description: 'zero-based page index' }),
  size: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 20, description: 'page size' }),
  sort: SortParameter('createdAt,DESC'),
  ...sharedFilterParameters,
};

/** Parses `sort=prop,dir` values against the properties a list can sort by (unknown: 400). */
export function parseSort(values: readonly string[] | undefined, sortable: readonly string[], fallback: SortSpec = { property: 'createdAt', direction: 'desc' }): SortSpec[] {
  if (!values || values.length === 0) return [fallback];
  return values.map((value) => {
    const [property = '', direction = 'asc'] = value.split(',');
    if (!sortable.includes(property)) {
      throw validationFailed('sort', `unknown property "${property}"; sortable: ${sortable.join(', ')}`);
    }
    return { property, direction: direction.toLowerCase() === 'desc' ? 'desc' : 'asc' };
  });
}

const SortState = Type.Object({ empty: Type.Boolean(), sorted: Type.Boolean(), unsorted: Type.Boolean() });

/** The Spring-style Page envelope of the specification, field for field. */
export function PageOf<T extends TSchema>(item: T, name: string) {
  return Type.Object({
    content: Type.Array(item),
    empty: Type.Boolean(),
    first: Type.Boolean(),
    last: Type.Boolean(),
    number: Type.Integer(),
    numberOfElements: Type.Integer(),
    size: Type.Integer(),
    totalElements: Type.Integer(),
    totalPages: Type.Integer(),
    sort: SortState,
    pageable: Type.Object({
      offset: Type.Integer(),
      pageNumber: Type.Integer(),
      pageSize: Type.Integer(),
      paged: Type.Boolean(),
      unpaged: Type.Boolean(),
      sort: SortState,
    }),
  }, { title: `PageOf${name}` });
}

export function pageOf<T>(content: T[], totalElements: number, request: ListRequest) {
  const totalPages = Math.ceil(totalElements / request.size);
  const sort = { empty: false, sorted: true, unsorted: false };
  return {
    content,
    empty: content.length === 0,
    first: request.page === 0,
    last: request.page >= totalPages - 1,
    number: request.page,
    numberOfElements: content.length,
    size: request.size,
    totalElements,
    totalPages,
    sort,
    pageable: { offset: request.page * request.size, pageNumber: request.page, pageSize: request.size, paged: true, unpaged: false, sort },
  };
}
