import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Uuid } from '../../http/schemas.js';
import { SortParameter, sharedListParameters } from '../../http/page.js';

/** A personal access token as lists show it: never the secret. */
export const PersonalAccessToken = Type.Object({
  id: Uuid,
  name: Type.String(),
  createdAt: DateTime,
  expiresAt: DateTime,
  lastUsedAt: Type.Union([DateTime, Type.Null()], { description: 'last use on the data API, to the minute (written at most once a minute); null: never used' }),
  datasetIds: Type.Union([Type.Array(Uuid), Type.Null()], { description: 'the datasets the token is narrowed to; null: every dataset its user may reach' }),
}, { title: 'PersonalAccessToken' });
export type PersonalAccessToken = Static<typeof PersonalAccessToken>;

/** The answer to a creation: the token with its secret, which no other answer ever shows again. */
export const CreatedPersonalAccessToken = Type.Object({
  ...PersonalAccessToken.properties,
  token: Type.String({ pattern: '^pat_[A-Za-z0-9_-]{43}$', description: 'the secret (`pat_` + 43 base64url characters): shown in this answer only, keep it' }),
}, { title: 'CreatedPersonalAccessToken' });
export type CreatedPersonalAccessToken = Static<typeof CreatedPersonalAccessToken>;

export const PersonalAccessTokenInput = Type.Object({
  name: NonEmpty({ maxLength: 100 }),
  expiresAt: Type.Optional(Type.Union([DateTime, Type.Null()], { description: 'in the future, at most one year ahead; default (absent or null): 90 days from now' })),
  datasetIds: Type.Optional(Type.Union([Type.Array(Uuid, { minItems: 1, maxItems: 100, uniqueItems: true }), Type.Null()], {
    description: 'narrows the token to these existing datasets (an unknown id: 400); absent or null: not narrowed',
  })),
}, { additionalProperties: false, title: 'PersonalAccessTokenInput' });
export type PersonalAccessTokenInput = Static<typeof PersonalAccessTokenInput>;

const { page, size } = sharedListParameters;
export const PersonalAccessTokenListQuery = Type.Object({ page, size, sort: SortParameter('createdAt,DESC') });
export type PersonalAccessTokenListQuery = Static<typeof PersonalAccessTokenListQuery>;

export const UserTokensParams = Type.Object({ userId: Uuid });
export const UserTokenParams = Type.Object({ userId: Uuid, id: Uuid });
