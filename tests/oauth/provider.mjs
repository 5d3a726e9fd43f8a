// A real OAuth 2.1 / OpenID Connect authorization server for scripts/oauth-interop:
// oidc-provider (a certified OpenID Provider) on loopback, with two clients that
// get tokens by the client_credentials grant, each with its own `groups` claim,
// and resource indicators (RFC 8707) so a token for RESOURCE is a JWT (ES256)
// whose audience is RESOURCE.
//
//   node provider.mjs PORT RESOURCE
//
// Prints `ready ISSUER` on stdout once it listens.

import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

// The clients, their secrets and the groups their tokens say they are in.
const groups = {
  'helpdesk-widget': ['support'],
  'ops-console': ['ops', 'staff'],
};

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'es-1', alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: Object.keys(groups).map((id) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    id_token_signed_response_alg: 'ES256',
  })),
  jwks: { keys: [signing] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) throw new Provider.errors.InvalidTarget();
        return {
          scope: 'tools toolgate:lookup toolgate:update',
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  extraTokenClaims: (_ctx, token) => ({ groups: groups[token.clientId] ?? [] }),
});
provider.on('server_error', (_ctx, error) => console.error(error));

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
