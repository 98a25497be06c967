/** PostgreSQL's SQLSTATE codes that tests expect of refused writes (PGlite reports the same). */
export const FOREIGN_KEY_VIOLATION = '23503';
export const CHECK_VIOLATION = '23514';
