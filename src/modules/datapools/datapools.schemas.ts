import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';
import { ScopedAssignmentInput } from '../assignments/index.js';

export const Datapool = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  contactPerson: Type.Union([Ref, Type.Null()], { description: 'the contact user ("firstName lastName"), or null' }),
  datasets: Type.Array(Uuid, { description: 'ids of the datasets in this datapool' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Datapool' });
export type Datapool = Static<typeof Datapool>;

const fields = {
  name: NonEmpty({ minLength: 3, maxLength: 255 }),
  description: NonEmpty({ maxLength: 4000 }),
  contactPersonId: Type.String({ ...Uuid, description: 'id of an existing user; null clears it' }),
  assignments: Type.Array(ScopedAssignmentInput, {
    uniqueItems: true,
    maxItems: 1000,
    description: "every assignment on this datapool; when present, the datapool's assignments become exactly these",
  }),
};

/** Create and PUT: an explicit null for an optional field means "not given". */
export const DatapoolInput = Type.Object({
  name: fields.name,
  description: fields.description,
  contactPersonId: Type.Optional(Nullable(fields.contactPersonId)),
  assignments: Type.Optional(Nullable(fields.assignments)),
}, { additionalProperties: false, title: 'DatapoolInput' });
export type DatapoolInput = Static<typeof DatapoolInput>;

/** PATCH: only the given fields change; null clears the contact person (the others cannot be empty). */
export const DatapoolPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(fields.description),
  contactPersonId: Type.Optional(Nullable(fields.contactPersonId)),
  assignments: Type.Optional(fields.assignments),
}, { additionalProperties: false, title: 'DatapoolPatch' });
export type DatapoolPatch = Static<typeof DatapoolPatch>;

export const DatapoolListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  contactPersonId: Type.Optional(Uuid),
});
export type DatapoolListQuery = Static<typeof DatapoolListQuery>;
