import { createTokenVerifier } from '../src/http/token-verifier.js';

export interface TokenCheckResult {
  firstVerifyMs: number;
  cachedNs: number;
  awaitedNs: number;
  iterations: number;
}

/**
 * A repeated token, as every request of one client presents it: verified once (JWKS fetch and
 * signature), then checked `iterations` times through the cache, synchronously (`verifyCached`)
 * and through the `verify` the authentication hook awaits.
 */
export async function benchTokenCheck(issuer: string, clientId: string, token: string, iterations = 100_000): Promise<TokenCheckResult> {
  const verifier = createTokenVerifier({ issuer, clientId });
  let startedAt = process.hrtime.bigint();
  await verifier.verify(token);
  const firstVerifyMs = Number(process.hrtime.bigint() - startedAt) / 1e6;

  let misses = 0;
  for (let i = 0; i < 10_000; i++) if (!verifier.verifyCached(token)) misses++; // warm-up
  startedAt = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) if (!verifier.verifyCached(token)) misses++;
  const cachedNs = Number(process.hrtime.bigint() - startedAt) / iterations;

  startedAt = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) await verifier.verify(token);
  const awaitedNs = Number(process.hrtime.bigint() - startedAt) / iterations;

  if (misses > 0) throw new Error(`token cache missed ${misses} times`);
  return { firstVerifyMs, cachedNs, awaitedNs, iterations };
}
