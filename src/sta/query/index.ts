/**
 * The public face of the SensorThings query language: parse a request's path and query options,
 * then compile its `$filter` and `$orderby` through the store's `PropertyResolver`.
 */
export type * from './ast.js';
export { StaQueryError } from './errors.js';
export { parseResourcePath } from './parse-path.js';
export { parseQueryOptions } from './parse-options.js';
export { DEFAULT_QUERY_LIMITS, type QueryLimits } from './limits.js';
export { parseFilter, parseOrderBy } from './parse-expression.js';
export { compileFilter, compileOrderBy, type CompileOptions } from './compile.js';
