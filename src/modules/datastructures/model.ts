import { Ajv, type Options } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { validationFailed } from '../../errors.js';

/**
 * A version's `model` is the JSON Schema of the records: draft 2020-12 unless its `$schema` names
 * draft-07 or 2019-09. It must be a JSON object that its meta-schema accepts and whose `$ref`s
 * resolve within it. A fresh validator each time: models are checked on writes only, and a shared
 * one would keep every model (and refuse a second one with the same `$id`).
 */

const DIALECTS: Array<{ pattern: RegExp; create: (options: Options) => Ajv }> = [
  { pattern: /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, create: (options) => new Ajv2020(options) },
  { pattern: /^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, create: (options) => new Ajv2019(options) },
  { pattern: /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, create: (options) => new Ajv(options) },
];

// strict off: a model may carry keywords of its own (titles in other languages, UI hints) and
// formats this service does not know; those are annotations, not errors.
const OPTIONS: Options = { strict: false, allErrors: false, validateFormats: false };

const refused = (message: string) => validationFailed('model', message);

export function checkModel(model: unknown): void {
  if (model === null || typeof model !== 'object' || Array.isArray(model)) throw refused('must be a JSON object (a JSON Schema)');
  const declared = (model as { $schema?: unknown }).$schema;
  if (declared !== undefined && typeof declared !== 'string') throw refused('$schema must be a string');
  const dialect = declared === undefined ? DIALECTS[0]! : DIALECTS.find((d) => d.pattern.test(declared));
  if (!dialect) throw refused(`$schema ${declared} is not supported (draft 2020-12, 2019-09 or draft-07)`);
  const ajv = dialect.create(OPTIONS);
  if (!ajv.validateSchema(model)) {
    const first = ajv.errors?.[0];
    throw refused(`is not a valid JSON Schema: ${first ? `${first.instancePath || '/'} ${first.message}` : 'refused by its meta-schema'}`);
  }
  try {
    ajv.compile(model as object);
  } catch (error) {
    // Unresolvable $ref (Ajv's MissingRefError) and other schemas Ajv cannot compile.
    throw refused(`cannot be compiled: ${(error as Error).message}`);
  }
}
