import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';
import { MAPPING_NAME_PATTERN } from './mapping-urns.js';

export const DatasetParams = Type.Object({ dataSetId: Uuid });

const urn = (description: string) => Type.String({ minLength: 1, maxLength: 1000, description });

/** A mapping document is free-form; `name` (optional) names it on create. */
export const MappingCreateInput = Type.Object({
  name: Type.Optional(Type.String({ pattern: MAPPING_NAME_PATTERN, maxLength: 255, description: 'names the mapping (unique within the dataset); generated when absent' })),
}, { additionalProperties: true, title: 'MappingDocument', description: 'a free-form mapping document, stored as sent' });
export type MappingCreateInput = Static<typeof MappingCreateInput>;

export const MappingVersionInput = Type.Object({
  logicalUrn: urn('the logical URN of the mapping to version: urn:platform:mapping:{dataSetId}:{name}'),
}, { additionalProperties: true, title: 'MappingVersionDocument', description: 'a free-form mapping document carrying logicalUrn, stored as sent' });
export type MappingVersionInput = Static<typeof MappingVersionInput>;

export const MappingPins = Type.Object({
  logicalUrn: Type.String(),
  versionedUrn: Type.String(),
  version: Type.String({ description: 'the version number, as a string' }),
}, { title: 'MappingPins', description: 'the URN pins of a mapping version' });
export type MappingPins = Static<typeof MappingPins>;

export const MappingList = Type.Object({
  mappings: Type.Array(Type.Object({
    logicalUrn: Type.String(),
    latestVersionedUrn: Type.String(),
    versionedUrns: Type.Array(Type.String(), { description: 'oldest first' }),
  })),
}, { title: 'MappingList' });
export type MappingList = Static<typeof MappingList>;

/** Without urn the list (MappingList); with one, that mapping's document. */
export const MappingFetchAnswer = Type.Object({}, {
  additionalProperties: true, title: 'MappingFetchAnswer',
  description: 'without urn: {"mappings": [{logicalUrn, latestVersionedUrn, versionedUrns}]}; with a logical urn: the latest version\'s document; with a versioned urn: that version\'s document',
});

export const MappingFetchQuery = Type.Object({ urn: Type.Optional(urn('a logical or versioned mapping URN of this dataset')) });
export const MappingDeleteQuery = Type.Object({ urn: urn('a logical URN (every version) or a versioned URN (that version)') });
