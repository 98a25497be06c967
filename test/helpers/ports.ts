import net from 'node:net';

/**
 * Ports for processes a test starts itself (a server as a child process, a broker, nginx), which
 * must be told their port before they bind it.
 *
 * A port the kernel hands out for `listen(0)` lies in its ephemeral range, from which it also takes
 * the source port of every outgoing connection: between our probe closing it and the child binding
 * it, one of the hundreds of connections that test files running side by side open could take it,
 * and the child would fail with EADDRINUSE. So these ports come from below that range, which the
 * kernel never picks itself. And since several test files run at once, each test process first
 * claims a block of a hundred of its own by listening on the block's first port for as long as it
 * lives (the kernel releases it when the process ends, however it ends): two files never hand out
 * the same port, however close together they ask.
 */

/** Below Linux's default ephemeral range (32768–60999), above the ports the service uses by default. */
const FIRST_PORT = 20_000;
const BLOCK_SIZE = 100;
const BLOCKS = 120;

interface Block { first: number; next: number }
let current: Block | null = null;

function listenOn(port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** A block whose first port this process now listens on (unref'd: it never keeps the process alive). */
async function claimBlock(): Promise<Block> {
  const start = Math.floor(Math.random() * BLOCKS);
  for (let i = 0; i < BLOCKS; i++) {
    const first = FIRST_PORT + ((start + i) % BLOCKS) * BLOCK_SIZE;
    const claim = await listenOn(first);
    if (!claim) continue;
    claim.unref();
    return { first, next: 1 };
  }
  throw new Error(`no block of test ports between ${FIRST_PORT} and ${FIRST_PORT + BLOCKS * BLOCK_SIZE} is free`);
}

/** A port of this process's block that nothing listens on now, outside the kernel's ephemeral range. */
export async function freePort(): Promise<number> {
  for (;;) {
    current ??= await claimBlock();
    while (current.next < BLOCK_SIZE) {
      const port = current.first + current.next++;
      const probe = await listenOn(port);
      if (!probe) continue;
      await new Promise((resolve) => probe.close(resolve));
      return port;
    }
    // A process that used up its hundred ports (none does today) claims another block.
    current = null;
  }
}

/** `count` distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) ports.push(await freePort());
  return ports;
}
