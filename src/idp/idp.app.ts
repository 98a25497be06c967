import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { getRealmKey, knownOrRoomFor } from './realm-keys.js';
import { issueToken, OAuthError, SUPPORTED_GRANT_TYPES, type TokenRequest } from './token-grants.js';

export interface IdpOptions {
  /** Public base URL; issuers are built from it, never from the request's Host header. */
  idpUrl: string;
  /** The one password (and client secret) every development user and client shares. */
  password: string;
  tokenTtlSeconds: number;
  /**
   * Browser origins allowed to call it (CORS): the management API's, whose Swagger UI (/docs) logs
   * in with the password flow from another port. None: no CORS headers at all.
   */
  corsOrigins?: readonly string[];
  loggerInstance?: FastifyBaseLogger;
}

interface RealmParams {
  realm: string;
}

const REALM_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The development identity provider as a Fastify instance; the caller decides whether to listen. */
export async function buildIdpApp(opts: IdpOptions): Promise<FastifyInstance> {
  const app = Fastify(opts.loggerInstance ? { loggerInstance: opts.loggerInstance } : { logger: false });
  const realmUrl = (realm: string) => `${opts.idpUrl}/realms/${realm}`;

  // The token endpoint speaks form bodies only, as Keycloak's does; without the default
  // JSON parser a JSON body is refused instead of being half-understood.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, new URLSearchParams(body as string));
  });

  if (opts.corsOrigins && opts.corsOrigins.length > 0) {
    // What Swagger UI's token request sends: a form body, client credentials in Authorization, X-Requested-With.
    await app.register(cors, {
      origin: [...opts.corsOrigins], methods: ['GET', 'POST'], allowedHeaders: ['Authorization', 'Content-Type', 'Accept', 'X-Requested-With'], maxAge: 600,
    });
  }

  // Unknown realm names look like unknown paths, so nothing odd reaches a key or an issuer.
  app.addHook('onRequest', async (request, reply) => {
    const { realm } = (request.params ?? {}) as Partial<RealmParams>;
    if (realm !== undefined && (!REALM_NAME.test(realm) || !knownOrRoomFor(realm))) {
      return reply.code(404).send({ error: 'not_found' });
    }
  });

  app.get<{ Params: RealmParams }>('/realms/:realm/.well-known/openid-configuration', async (request) => {
    const issuer = realmUrl(request.params.realm);
    return {
      issuer,
      token_endpoint: `${issuer}/protocol/openid-connect/token`,
      jwks_uri: `${issuer}/protocol/openid-connect/certs`,
      grant_types_supported: SUPPORTED_GRANT_TYPES,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      scopes_supported: ['openid', 'email', 'profile'],
      claims_supported: [
        'iss', 'sub', 'aud', 'azp', 'exp', 'iat', 'jti', 'typ', 'scope',
        'email', 'email_verified', 'preferred_username', 'given_name', 'family_name',
      ],
    };
  });

  app.get<{ Params: RealmParams }>('/realms/:realm/protocol/openid-connect/certs', async (request) => {
    const { publicJwk } = await getRealmKey(request.params.realm);
    return { keys: [publicJwk] };
  });

  app.post<{ Params: RealmParams; Body: URLSearchParams | undefined }>(
    '/realms/:realm/protocol/openid-connect/token',
    async (request, reply) => {
      const { realm } = request.params;
      const tokenRequest: TokenRequest = {
        form: request.body ?? new URLSearchParams(),
        basicAuth: basicCredentials(request),
      };
      const token = await issueToken(tokenRequest, {
        issuer: realmUrl(realm),
        realm,
        password: opts.password,
        tokenTtlSeconds: opts.tokenTtlSeconds,
      });
      // RFC 6749 §5.1: token responses must not be cached.
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(token);
    },
  );

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send({ error: 'not_found' }));

  // Errors keep the OAuth shape clients of a Keycloak token endpoint parse.
  app.setErrorHandler(async (error, request, reply) => {
    if (error instanceof OAuthError) {
      return reply.code(error.statusCode).send({ error: error.error, error_description: error.description });
    }
    const statusCode = (error as { statusCode?: number }).statusCode ?? 500;
    if (statusCode < 500) {
      return reply.code(statusCode).send({ error: 'invalid_request', error_description: (error as Error).message });
    }
    request.log.error({ err: error }, 'identity provider request failed');
    return reply.code(500).send({ error: 'server_error' });
  });

  return app;
}

/** Client id and secret from `Authorization: Basic`, form-decoded as RFC 6749 §2.3.1 asks. */
function basicCredentials(request: FastifyRequest): TokenRequest['basicAuth'] {
  const match = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const separator = decoded.indexOf(':');
  if (separator < 0) return undefined;
  return {
    clientId: formDecode(decoded.slice(0, separator)),
    clientSecret: formDecode(decoded.slice(separator + 1)),
  };
}

function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replaceAll('+', ' '));
  } catch {
    // Not percent-encoded after all: many clients send the raw value.
    return value;
  }
}
