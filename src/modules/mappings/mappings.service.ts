import { randomBytes } from 'node:crypto';
import type { Caller } from '../../access/caller.js';
import { AppError } from '../../errors.js';
import { uniquely } from '../../db/constraint-errors.js';
import type { Database } from '../../db/client.js';
import { authorizeDatasetPart, type DatasetsContext } from '../datasets/index.js';
import { logicalUrnOf, mappingUrnOf, mappingUrnProblem, parseMappingUrn, versionedUrnOf } from './mapping-urns.js';
import { deleteMappingRows, findMappingContent, findMappingVersion, insertMappingVersion, mappingsOf, versionsOf } from './mappings.repo.js';
import type { MappingCreateInput, MappingList, MappingPins, MappingVersionInput } from './mappings.schemas.js';
import type { MappingReferrer } from './references.js';

/**
 * A dataset's mappings: versioned JSON documents named by URN. A document is stored exactly as the
 * client sent it (its `name` or `logicalUrn` members included): the URNs address it, writes never
 * read inside it (a DRAFT may hold an unfinished document), and a client fetching a version gets
 * back what it wrote. Stage and release compile the version each pipeline names (resolveMapping).
 */

const pinsOf = (datasetId: string, name: string, version: number): MappingPins =>
  ({ logicalUrn: logicalUrnOf(datasetId, name), versionedUrn: versionedUrnOf(datasetId, name, version), version: String(version) });

const unknownMapping = (urn: string) => new AppError('NOT_FOUND', `No mapping of this dataset has the URN ${urn}`);

const duplicate = (name: string) => `A mapping named "${name}" already exists in this dataset; version it with PUT instead`;

/** Without urn: every mapping's URNs. With a logical URN: the latest version's document; with a versioned one: that version's. */
export async function fetchMappings(ctx: DatasetsContext, caller: Caller, datasetId: string, urn: string | undefined): Promise<MappingList | object> {
  await authorizeDatasetPart(ctx, caller, datasetId, 'read');
  if (urn === undefined) {
    const mappings = await mappingsOf(ctx.db, datasetId);
    return {
      mappings: mappings.map(({ name, versions }) => ({
        logicalUrn: logicalUrnOf(datasetId, name),
        latestVersionedUrn: versionedUrnOf(datasetId, name, versions[versions.length - 1]!),
        versionedUrns: versions.map((version) => versionedUrnOf(datasetId, name, version)),
      })),
    };
  }
  const { name, version } = mappingUrnOf(datasetId, urn, 'urn');
  const content = await findMappingContent(ctx.db, datasetId, name, version);
  if (content === undefined) throw unknownMapping(urn);
  return content as object;
}

/** A new mapping, version 1, named by the document's `name` or a generated one. */
export async function createMapping(ctx: DatasetsContext, caller: Caller, datasetId: string, document: MappingCreateInput): Promise<MappingPins> {
  return ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const name = document.name ?? await unusedName(trx, datasetId);
    if ((await versionsOf(trx, datasetId, name)).length > 0) {
      throw new AppError('UNIQUE_CONSTRAINT_VIOLATION', duplicate(name), { fieldErrors: [{ field: 'name', message: 'is already taken' }] });
    }
    await uniquely(() => insertMappingVersion(trx, datasetId, name, 1, document), duplicate(name), 'name');
    return pinsOf(datasetId, name, 1);
  });
}

async function unusedName(db: Database, datasetId: string): Promise<string> {
  for (;;) {
    const name = `mapping-${randomBytes(4).toString('hex')}`;
    if ((await versionsOf(db, datasetId, name)).length === 0) return name;
  }
}

/** The next version (n + 1) of the mapping the document's logicalUrn names. */
export async function versionMapping(ctx: DatasetsContext, caller: Caller, datasetId: string, document: MappingVersionInput): Promise<MappingPins> {
  return ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const { name, version } = mappingUrnOf(datasetId, document.logicalUrn, 'logicalUrn');
    if (version !== null) throw new AppError('VALIDATION_FAILED', 'logicalUrn: is a versioned URN; give the logical URN (without the version)', {
      fieldErrors: [{ field: 'logicalUrn', message: 'is a versioned URN; give the logical URN (without the version)' }],
    });
    const versions = await versionsOf(trx, datasetId, name);
    if (versions.length === 0) throw unknownMapping(document.logicalUrn);
    const next = versions[versions.length - 1]! + 1;
    // The dataset row is locked (authorizeDatasetPart): two versions cannot take the same number.
    await insertMappingVersion(trx, datasetId, name, next, document);
    return pinsOf(datasetId, name, next);
  });
}

/**
 * A logical URN removes every version, a versioned one that version. Refused (409) while a
 * referrer (a pipeline) refers to what would go: the logical URN or one of the removed versions
 * (removing the last version removes the mapping, so its logical URN counts then too).
 */
export async function deleteMapping(
  ctx: DatasetsContext, referrers: readonly MappingReferrer[], caller: Caller, datasetId: string, urn: string,
): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const { name, version } = mappingUrnOf(datasetId, urn, 'urn');
    const versions = await versionsOf(trx, datasetId, name);
    if (versions.length === 0 || (version !== null && !versions.includes(version))) throw unknownMapping(urn);
    const removed = version === null ? versions : [version];
    const referenced = [
      ...removed.map((v) => versionedUrnOf(datasetId, name, v)),
      ...(removed.length === versions.length ? [logicalUrnOf(datasetId, name)] : []),
    ];
    for (const referrer of referrers) {
      const refusal = await referrer.refusal(trx, datasetId, referenced);
      if (refusal) throw refusal;
    }
    await deleteMappingRows(trx, datasetId, name, version);
  });
}

/**
 * The document a mapping URN names in this dataset (a logical URN: its latest version), with the
 * version it resolved to; undefined when it names none. Stage and release compile it.
 */
export async function resolveMapping(db: Database, datasetId: string, urn: string): Promise<{ name: string; version: number; document: unknown } | undefined> {
  if (mappingUrnProblem(datasetId, urn)) return undefined;
  const parsed = parseMappingUrn(urn)!;
  const found = await findMappingVersion(db, parsed.datasetId, parsed.name, parsed.version);
  return found && { name: parsed.name, version: found.version, document: found.content };
}
