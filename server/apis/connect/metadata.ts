// RFC 8414 authorization-server metadata, derived from the configured public URL. No
// `service_documentation`: the server does not serve the docs (they live in docs/connect-oauth.md).
import type { components } from '#generated/connect/types.js';

type Metadata = components['schemas']['AuthorizationServerMetadata'];

export function authorizationServerMetadata(publicUrl: string): Metadata {
  return {
    issuer: publicUrl,
    authorization_endpoint: `${publicUrl}/connect/authorize`,
    token_endpoint: `${publicUrl}/api/oauth/token`,
    revocation_endpoint: `${publicUrl}/api/oauth/revoke`,
    scopes_supported: ['documents:write', 'links:write', 'analytics:read', 'webhooks:write'],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    authorization_response_iss_parameter_supported: true,
    introspection_endpoint: `${publicUrl}/api/oauth/introspect`,
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    registration_endpoint: `${publicUrl}/api/oauth/register`,
  };
}
