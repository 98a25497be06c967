/**
 * A start refused for a reason the operator must fix (the database unreachable, a schema newer than
 * this program, a missing privilege): the program exits 1 with this one line, no stack.
 */
export class StartRefusedError extends Error {}
