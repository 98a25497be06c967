/** pg-copy-streams ships no types: the part of it copy-out.ts uses. */
declare module 'pg-copy-streams' {
  import type { Readable } from 'node:stream';
  import type { Submittable } from 'pg';
  /** A `COPY … TO STDOUT` statement as a query to submit: its rows' bytes as they arrive. */
  export function to(text: string): Readable & Submittable;
}
