import { randomBytes } from 'node:crypto';

/**
 * How soon one replica sees what another did, each replica reached on its own port (no nginx):
 * a write made through replica A is polled for, back to back, through replica B; a right taken
 * away through A is polled for through B until B refuses. Each latency runs from the moment A's
 * answer arrived to the moment B's first answer showing the change arrived, so it includes one
 * poll round trip; `firstPoll` counts the changes B already showed on the first poll after A answered.
 */

export interface Visibility {
  samples: number[];
  /** Changes B showed on its first poll (the latency is then one round trip). */
  firstPoll: number;
  /** Round trip of one poll when nothing changes, median (the floor of every latency). */
  pollMs: number;
}

interface Call { status: number; body: any; at: number }

async function call(method: string, url: string, token: string, body?: unknown): Promise<Call> {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const at = performance.now();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, at };
}

function expect(answer: Call, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status}, expected ${status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
}

/** Polls `url` on B until it answers `until`; any answer but `until` and `meanwhile` fails. Answers [arrival time, polls]. */
async function pollUntil(url: string, token: string, until: number, meanwhile: number, timeoutMs: number): Promise<[number, number]> {
  const deadline = performance.now() + timeoutMs;
  for (let polls = 1; performance.now() < deadline; polls++) {
    const answer = await call('GET', url, token);
    if (answer.status === until) return [answer.at, polls];
    if (answer.status !== meanwhile) throw new Error(`GET ${url} answered ${answer.status} while waiting for ${until}`);
  }
  throw new Error(`GET ${url} did not answer ${until} within ${timeoutMs} ms`);
}

async function pollRoundTrip(url: string, token: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    await call('GET', url, token);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[25]!;
}

/** Replica pairs (A writes, B reads) taken in turn: 0→1, 1→2, …, last→0. */
const pairOf = (i: number, replicaApis: string[]) => [replicaApis[i % replicaApis.length]!, replicaApis[(i + 1) % replicaApis.length]!] as const;

/** (a) A group created through A, read through B by id until B finds it (404 before). */
export async function writeVisibility(replicaApis: string[], adminToken: string, writes: number): Promise<Visibility> {
  const samples: number[] = [];
  let firstPoll = 0;
  const tag = randomBytes(3).toString('hex');
  for (let i = 0; i < writes; i++) {
    const [a, b] = pairOf(i, replicaApis);
    const created = await call('POST', `${a}/v1/groups`, adminToken, { name: `Replicas visibility ${tag} ${i}`, description: 'cross-replica visibility' });
    expect(created, 201, `POST ${a}/v1/groups`);
    const [seenAt, polls] = await pollUntil(`${b}/v1/groups/${created.body.id}`, adminToken, 200, 404, 5_000);
    samples.push(seenAt - created.at);
    if (polls === 1) firstPoll++;
  }
  const pollMs = await pollRoundTrip(`${replicaApis[1 % replicaApis.length]}/v1/groups?size=1`, adminToken);
  return { samples, firstPoll, pollMs };
}

export interface RevocationProbe {
  groupId: string;
  roleId: string;
  poolId: string;
  /** A dataset in the pool: readable (200) while the assignment exists, 404 once it is gone. */
  datasetId: string;
  readerToken: string;
}

/**
 * (b) DATASET_READ on a pool granted through A (POST /v1/assignments), read through B until B
 * serves the dataset (the grant's visibility, measured too), then the assignment deleted through
 * A and the dataset read through B until B answers 404 (the contract's answer for a dataset the
 * caller may not read).
 */
export async function revocationVisibility(replicaApis: string[], adminToken: string, probe: RevocationProbe, revocations: number): Promise<{ grant: Visibility; revoke: Visibility }> {
  const grant: number[] = [];
  const revoke: number[] = [];
  let grantFirst = 0;
  let revokeFirst = 0;
  for (let i = 0; i < revocations; i++) {
    const [a, b] = pairOf(i, replicaApis);
    const dataset = `${b}/v1/datasets/${probe.datasetId}`;
    const created = await call('POST', `${a}/v1/assignments`, adminToken, { groupId: probe.groupId, roleId: probe.roleId, scopeType: 'DATAPOOL', scopeId: probe.poolId });
    expect(created, 201, `POST ${a}/v1/assignments`);
    const [grantedAt, grantPolls] = await pollUntil(dataset, probe.readerToken, 200, 404, 5_000);
    grant.push(grantedAt - created.at);
    if (grantPolls === 1) grantFirst++;
    const deleted = await call('DELETE', `${a}/v1/assignments/${created.body.id}`, adminToken);
    expect(deleted, 204, `DELETE ${a}/v1/assignments/${created.body.id}`);
    const [revokedAt, revokePolls] = await pollUntil(dataset, probe.readerToken, 404, 200, 5_000);
    revoke.push(revokedAt - deleted.at);
    if (revokePolls === 1) revokeFirst++;
  }
  const pollMs = await pollRoundTrip(`${replicaApis[1 % replicaApis.length]}/v1/datasets/${probe.datasetId}`, probe.readerToken);
  return { grant: { samples: grant, firstPoll: grantFirst, pollMs }, revoke: { samples: revoke, firstPoll: revokeFirst, pollMs } };
}
