import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';
import { freePort, freePorts } from './ports.js';

const run = promisify(execFile);

describe('test ports for child processes', () => {
  test('distinct, free, and outside the kernel\'s ephemeral range', async () => {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ports = await freePorts(20);
    assert.equal(new Set(ports).size, 20);
    for (const port of ports) {
      assert.ok(port < low!, `${port} is below the ephemeral range starting at ${low}`);
      // Nothing listens there: this process can bind it.
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('test processes asking at the same moment never get the same port', async () => {
    const script = "import { freePorts } from './test/helpers/ports.ts'; console.log(JSON.stringify(await freePorts(10))); setTimeout(() => {}, 1500);";
    const answers = await Promise.all(Array.from({ length: 4 }, () =>
      run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd() })));
    const all = [...answers.flatMap(({ stdout }) => JSON.parse(stdout) as number[]), await freePort()];
    assert.equal(new Set(all).size, all.length, `ports handed out twice: ${all.join(', ')}`);
  });
});
