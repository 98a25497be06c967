/**
 * A bulk download of a named API's data, as the OWS and SensorThings sides describe it to the
 * gateway, which adds the HTTP (validators, Content-Disposition, 304) and streams the body.
 */
export interface Download {
  /** The file name a browser saves it as (ASCII: letters, digits, `-`, `_`, `.`). */
  fileName: string;
  /** Its media type, with a charset where it is text. */
  mediaType: string;
  body: DownloadBody;
}

/**
 * The bytes: either produced as the client reads them (`chunks`, never the whole file in memory;
 * breaking off the iteration, as a client that goes away does, releases whatever it holds), or made
 * as a whole file first (`file`) and then streamed from disk. Each is called at most once.
 */
export type DownloadBody =
  | { kind: 'chunks'; chunks(): AsyncIterable<Buffer | string> }
  | { kind: 'file'; file(signal: AbortSignal): Promise<DownloadFile> };

/** A download made as a whole file first (a GeoPackage): streamed from disk, then released. */
export interface DownloadFile {
  path: string;
  size: number;
  /** Called once the file has been sent or the transfer broke off. */
  release(): void;
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The line ending of RFC 4180. */
export const CSV_LINE_END = '\r\n';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

/**
 * Ends each CSV record with CRLF where its bytes end records with LF alone (PostgreSQL's COPY
 * does), leaving a line break inside a quoted field as it is. Fed a file's bytes in order, chunk
 * by chunk: whether a chunk starts inside quotes is carried over. A field's quotes always pair
 * up (`""` inside one toggles twice), so counting them tells inside from outside.
 */
export class CsvRecordEnds {
  #quoted = false;

  convert(chunk: Buffer): Buffer {
    const ends: number[] = [];
    let quote = chunk.indexOf(QUOTE);
    for (let lf = chunk.indexOf(LF); lf !== -1; lf = chunk.indexOf(LF, lf + 1)) {
      for (; quote !== -1 && quote < lf; quote = chunk.indexOf(QUOTE, quote + 1)) this.#quoted = !this.#quoted;
      if (!this.#quoted) ends.push(lf);
    }
    for (; quote !== -1; quote = chunk.indexOf(QUOTE, quote + 1)) this.#quoted = !this.#quoted;
    if (ends.length === 0) return chunk;
    const converted = Buffer.allocUnsafe(chunk.length + ends.length);
    let from = 0;
    let to = 0;
    for (const lf of ends) {
      to += chunk.copy(converted, to, from, lf);
      converted[to++] = CR;
      from = lf;
    }
    chunk.copy(converted, to, from);
    return converted;
  }
}
