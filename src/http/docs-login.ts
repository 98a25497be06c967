import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { Config } from '../config.js';

type OpenApi = NonNullable<FastifyDynamicSwaggerOptions['openapi']>;
type SecurityScheme = NonNullable<NonNullable<OpenApi['components']>['securitySchemes']>[string];

/**
 * How Swagger UI (/docs) obtains a token, beside pasting one (`bearerAuth`): the OpenAPI document's
 * `login` security scheme. While the development identity provider runs and issues the accepted
 * tokens (OIDC_ISSUER is one of its realms), it is OAuth2's password flow against that realm's token
 * endpoint: an email and the development password, client `OIDC_CLIENT_ID`. Otherwise it is
 * OpenID Connect discovery at OIDC_ISSUER (a Keycloak realm offers the authorization code flow,
 * which Swagger UI runs with PKCE).
 */
export function docsSecurity(config: Config): { securitySchemes: Record<string, SecurityScheme>; security: NonNullable<OpenApi['security']> } {
  const issuer = config.oidc.issuer;
  const login: SecurityScheme = devIdpIssues(config)
    ? {
        type: 'oauth2',
        description: `Log in at the development identity provider: any email as username, the password DEV_IDP_PASSWORD (default "dev"), client_id ${config.oidc.clientId}, no client secret.`,
        flows: { password: { tokenUrl: `${issuer}/protocol/openid-connect/token`, scopes: {} } },
      }
    : {
        type: 'openIdConnect',
        description: `Log in at the identity provider ${issuer} (client_id ${config.oidc.clientId}).`,
        openIdConnectUrl: `${issuer}/.well-known/openid-configuration`,
      };
  return {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      login,
    },
    // Either scheme will do (alternatives, not both).
    security: [{ bearerAuth: [] }, { login: [] }],
  };
}

/** Swagger UI's OAuth settings: the client it logs in as; PKCE for an authorization code flow. */
export const docsOAuth = (config: Config) => ({ clientId: config.oidc.clientId, usePkceWithAuthorizationCodeGrant: true });

const devIdpIssues = (config: Config) => config.idp.enabled && config.oidc.issuer.startsWith(`${config.idp.url}/realms/`);

/** The origins that may call the development identity provider from a browser: /docs's own. */
export const docsOrigins = (config: Config): string[] => [new URL(config.api.baseUrl).origin];
