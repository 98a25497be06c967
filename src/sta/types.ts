import type { Database } from '../db/client.js';
import type { Download } from '../util/download.js';

/**
 * One request to a dataset's SensorThings service, as the gateway hands it over: authorized
 * already, with the route's public base and the dataset's storage schema. The STA server never
 * sees tokens, tenants or the management modules.
 */
export interface StaRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Below the base, without the `v1.1` alias: `''` (service root), `/Things(1)/Datastreams`, `/$batch`. Percent-decoded. */
  path: string;
  /** The raw query string without `?` (still percent-encoded), `''` when none. */
  query: string;
  /** The parsed JSON body, `undefined` when none. */
  body: unknown;
  /** `return=minimal` asked for (Prefer header). */
  preferMinimal: boolean;
  /** The public base of this route: `{DATA_API_URL}/v1/datasets/{id}/{slug}`; every link starts with it. */
  baseUrl: string;
  /** The dataset's storage schema (`ds_…`), provisioned by `provisionStaStorage`. */
  schema: string;
  /**
   * What the caller may do on this dataset's payload. The gateway has already authorized the
   * request itself by its method; `$batch` carries several requests and authorizes each on its own
   * with these (a write without `write` answers 403 in its own response, the others still run).
   */
  rights: { read: boolean; write: boolean };
  /**
   * The caller sends the answer on as it is (the gateway): a collection read without `$expand` may
   * then answer its body as JSON text (a string, with `content-type: application/json`), written
   * row by row instead of as objects. Everyone else (`$batch`, MQTT, tests) gets objects.
   */
  answerAsText?: boolean;
}

/** The answer: a status, headers (e.g. Location) and a JSON body, or none (204). Errors are thrown as AppError. */
export interface StaResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** What the gateway needs of the SensorThings server; `app.ts` wires the real one. */
export interface StaServer {
  handle(request: StaRequest): Promise<StaResponse>;
  /** Creates the entity tables in a dataset's schema; idempotent (a RELEASE saga step). */
  provision(trx: Database, schema: string): Promise<void>;
  /**
   * A bulk download (`/download/observations.csv`, `/download/things.geojson`) of the API in
   * `schema`, its file named from `fileStem`; NOT_FOUND for any other path. Authorized already.
   */
  download(schema: string, path: string, fileStem: string): Download;
}
