/**
 * How many writes this process has completed on a database: a number that moves after any
 * statement that may have changed data is done (outside a transaction) or after the commit of a
 * transaction that ran one. Whoever caches what it read (the caller cache) notes the number when it
 * reads and reads again once the number moved, so that this process's own changes are seen by its
 * very next request; other processes' changes arrive by polling.
 *
 * "May have changed data" is judged on the statement's text and errs towards yes: anything but a
 * plain read (`select`, `with`, `show`, `explain` without a writing keyword) counts. A wrong yes
 * costs one extra read; a wrong no could serve a revoked right, so the keyword list is wide.
 */
export class LocalWrites {
  #completed = 0;

  /** Moves after every completed write; compare two readings, never interpret the number. */
  get completed(): number { return this.#completed; }

  /** A tracker for one connection, which knows whether that connection is inside a transaction. */
  connectionTracker(): (text: string) => void {
    let inTransaction = false;
    let wrote = false;
    return (text) => {
      if (BEGINS.test(text)) {
        inTransaction = true;
        wrote = false;
      } else if (ENDS.test(text)) {
        if (wrote) this.#completed += 1;
        inTransaction = false;
        wrote = false;
      } else if (mayWrite(text)) {
        if (inTransaction) wrote = true;
        else this.#completed += 1;
      }
    };
  }
}

/** Transaction control as our code sends it (Kysely's `begin`/`commit`/`rollback`, `start transaction …`). */
export const BEGINS = /^\s*(begin|start\s+transaction)\b/i;
export const ENDS = /^\s*(commit|rollback|end|abort)\b/i;
const READS = /^\s*(select|with|show|explain|values|table)\b/i;
// Writing statements (also inside a CTE), and functions that change state when selected.
const WRITING_WORD = /\b(insert|update|delete|merge|truncate|copy|call|do|create|alter|drop|grant|revoke|refresh|nextval|setval|set_config|pg_notify|lo_\w+|reindex|vacuum|cluster|lock)\b/i;

// A row lock (`for update skip locked`, as the job queue polls) changes nothing by itself; an
// update in the same text still has its own keyword.
const ROW_LOCK = /\bfor\s+(?:no\s+key\s+)?(?:update|share|key\s+share)\b/gi;

/** Whether a statement's text may have changed data (see LocalWrites). */
export const mayWrite = (text: string): boolean => !READS.test(text) || WRITING_WORD.test(text.replace(ROW_LOCK, ''));

/**
 * The process's count, which every database opened by openDatabase reports to (a write to one
 * database makes readers of another read again: a wasted read, never a stale one).
 */
export const processWrites = new LocalWrites();
