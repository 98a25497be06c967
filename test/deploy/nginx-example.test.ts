// deploy/nginx/platform.conf, the operators' example for replicas behind nginx: nginx itself accepts
// it (`nginx -t`), and it keeps the choices the cluster test's nginx makes (test/cluster/nginx.ts,
// docs/production.md "nginx in front of the replicas").
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { locateNginx, missing, requireNginx, requireOpenssl } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';

const ROOT = REPOSITORY;
const EXAMPLE = path.join(ROOT, 'deploy', 'nginx', 'platform.conf');
/** Where the example expects certificates; the test points these paths at a throwaway certificate. */
const CERTIFICATE_DIR = '/etc/nginx/tls/';

/** A directive or a block of nginx's configuration language, comments dropped. */
interface Directive { name: string; args: string[]; block?: Directive[] }

/** Parses nginx configuration text (words, quoted strings, `;`, `{ }`, `#` comments) into directives. */
function parseNginx(text: string): Directive[] {
  const tokens: string[] = [];
  const pattern = /#[^\n]*|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([{};])|([^\s{};"'#][^\s{};]*)/g;
  for (const match of text.matchAll(pattern)) {
    if (match[0].startsWith('#')) continue;
    tokens.push(match[1] ?? match[2] ?? match[3] ?? match[4]!);
  }
  let at = 0;
  const readBlock = (top: boolean): Directive[] => {
    const directives: Directive[] = [];
    while (at < tokens.length) {
      if (tokens[at] === '}') {
        assert.ok(!top, 'an unmatched }');
        at += 1;
        return directives;
      }
      const words: string[] = [];
      while (at < tokens.length && tokens[at] !== ';' && tokens[at] !== '{') words.push(tokens[at++]!);
      assert.ok(at < tokens.length, `a directive without ; or {: ${words.join(' ')}`);
      const [name, ...args] = words;
      if (tokens[at++] === ';') directives.push({ name: name!, args });
      else directives.push({ name: name!, args, block: readBlock(false) });
    }
    assert.ok(top, 'an unclosed {');
    return directives;
  };
  return readBlock(true);
}

const named = (directives: Directive[], name: string) => directives.filter((directive) => directive.name === name);
const headers = (location: Directive) => new Map(named(location.block!, 'proxy_set_header').map((d) => [d.args[0]!.toLowerCase(), d.args[1]]));
const value = (directives: Directive[], name: string) => named(directives, name).map((d) => d.args.join(' '));

describe('the nginx example for operators (deploy/nginx/platform.conf)', () => {
  const config = parseNginx(fs.readFileSync(EXAMPLE, 'utf8'));
  const upstreams = named(config, 'upstream');
  const servers = named(config, 'server');
  const tlsServers = servers.filter((server) => value(server.block!, 'listen').some((listen) => / ssl\b/.test(listen)));
  const serverFor = (host: string) => tlsServers.find((server) => value(server.block!, 'server_name').some((names) => names.split(' ').includes(host)));

  test('two upstreams without keepalive, each replica out for 2 s after one failure', () => {
    assert.deepEqual(upstreams.map((upstream) => upstream.args[0]).sort(), ['platform_data_api', 'platform_management_api']);
    for (const upstream of upstreams) {
      assert.deepEqual(named(upstream.block!, 'keepalive'), [], `${upstream.args[0]}: keepalive would turn a draining replica's closed connection into a 502`);
      const members = named(upstream.block!, 'server');
      assert.ok(members.length >= 2, `${upstream.args[0]}: several replicas`);
      for (const member of members) assert.deepEqual(member.args.slice(1).sort(), ['fail_timeout=2s', 'max_fails=1'], `${upstream.args[0]}: ${member.args.join(' ')}`);
    }
  });

  test('every proxied location: retried only where nothing was sent, forwarded headers for TRUST_PROXY, 32 MiB bodies', () => {
    const locations = servers.flatMap((server) => named(server.block!, 'location').map((location) => ({ server, location })));
    assert.ok(locations.length >= 3);
    for (const { server, location } of locations) {
      const where = `${value(server.block!, 'server_name')} location ${location.args.join(' ')}`;
      const block = location.block!;
      assert.match(value(block, 'proxy_pass')[0] ?? '', /^http:\/\/platform_(management|data)_api$/, where);
      assert.deepEqual(value(block, 'proxy_http_version'), ['1.1'], where);
      const nextUpstream = value(block, 'proxy_next_upstream');
      assert.deepEqual(nextUpstream, ['error timeout http_503'], `${where}: no non_idempotent, no http_502`);
      assert.deepEqual(value(block, 'proxy_next_upstream_tries'), ['3'], where);
      assert.deepEqual(value(block, 'proxy_connect_timeout'), ['2s'], where);
      const set = headers(location);
      assert.equal(set.get('x-forwarded-for'), '$proxy_add_x_forwarded_for', where);
      assert.equal(set.get('x-forwarded-proto'), '$scheme', where);
      assert.equal(set.get('x-forwarded-host'), '$host', where);
      assert.equal(set.get('connection'), '$platform_connection_upgrade', `${where}: Connection: close unless upgrading`);
      assert.deepEqual(value(server.block!, 'client_max_body_size'), ['32m'], where);
    }
    const map = named(config, 'map')[0]!;
    assert.deepEqual(map.args, ['$http_upgrade', '$platform_connection_upgrade']);
    assert.deepEqual(map.block!.map((entry) => [entry.name, ...entry.args]), [['default', 'upgrade'], ['', 'close']]);
  });

  test('the data API host carries /mqtt as a WebSocket with an hour of idle time; the management host its own upstream', () => {
    const data = serverFor('data.city.example');
    const management = serverFor('api.city.example');
    assert.ok(data && management, 'a TLS server for each public host');
    const mqtt = named(data.block!, 'location').find((location) => location.args.join(' ') === '= /mqtt');
    assert.ok(mqtt, 'location = /mqtt');
    assert.equal(headers(mqtt).get('upgrade'), '$http_upgrade');
    assert.deepEqual(value(mqtt.block!, 'proxy_read_timeout'), ['1h']);
    assert.deepEqual(value(mqtt.block!, 'proxy_send_timeout'), ['1h']);
    assert.ok(named(data.block!, 'location').every((location) => value(location.block!, 'proxy_pass')[0] === 'http://platform_data_api'));
    assert.ok(named(management.block!, 'location').every((location) => value(location.block!, 'proxy_pass')[0] === 'http://platform_management_api'));
    for (const server of [data, management]) {
      for (const file of [...value(server.block!, 'ssl_certificate'), ...value(server.block!, 'ssl_certificate_key')]) {
        assert.ok(file.startsWith(CERTIFICATE_DIR), `${file}: the test expects certificates under ${CERTIFICATE_DIR}`);
      }
    }
  });

  describe('nginx -t', { skip: missing(requireNginx(), requireOpenssl()) }, () => {
    let dir: string;
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nginx-example-'));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /**
     * The example as an operator includes it, in a main configuration of the test's own (pid, logs
     * and temp files in the test's folder, so that no root paths are needed). The one change made to
     * the file: its certificate paths (under /etc/nginx/tls/) point at a self-signed certificate
     * made here.
     */
    function checkWithNginx(exampleText: string): { status: number | null; output: string } {
      const tls = path.join(dir, 'tls');
      fs.mkdirSync(tls, { recursive: true });
      for (const file of new Set([...exampleText.matchAll(/^\s*ssl_certificate(?:_key)?\s+(\S+);/gm)].map((m) => m[1]!))) {
        assert.ok(file.startsWith(CERTIFICATE_DIR), file);
      }
      const names = new Set([...exampleText.matchAll(/\/etc\/nginx\/tls\/([\w.-]+)\.(?:crt|key);/g)].map((m) => m[1]!));
      for (const name of names) {
        if (fs.existsSync(path.join(tls, `${name}.crt`))) continue;
        const made = spawnSync('openssl', [
          'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${name}`,
          '-keyout', path.join(tls, `${name}.key`), '-out', path.join(tls, `${name}.crt`),
        ], { encoding: 'utf8', timeout: 60_000 });
        assert.equal(made.status, 0, `openssl: ${made.stderr}`);
      }
      const included = path.join(dir, 'platform.conf');
      fs.writeFileSync(included, exampleText.replaceAll(CERTIFICATE_DIR, `${tls}/`));
      const temp = path.join(dir, 'temp');
      fs.mkdirSync(temp, { recursive: true });
      const main = path.join(dir, 'nginx.conf');
      fs.writeFileSync(main, [
        `pid ${dir}/nginx.pid;`,
        `error_log ${dir}/error.log;`,
        'events {}',
        'http {',
        `  access_log ${dir}/access.log;`,
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => `  ${kind}_temp_path ${temp}/${kind};`),
        `  include ${included};`,
        '}',
        '',
      ].join('\n'));
      const run = spawnSync(locateNginx()!, ['-t', '-p', `${dir}/`, '-e', `${dir}/error.log`, '-c', main], { encoding: 'utf8', timeout: 60_000 });
      return { status: run.status, output: `${run.stdout}${run.stderr}` };
    }

    test('accepts the example as it is', () => {
      const { status, output } = checkWithNginx(fs.readFileSync(EXAMPLE, 'utf8'));
      assert.equal(status, 0, output);
      assert.match(output, /test is successful/);
    });

    test('refuses it with a mistake in it (the check is not a formality)', () => {
      const broken = fs.readFileSync(EXAMPLE, 'utf8').replace('proxy_next_upstream error timeout http_503;', 'proxy_next_upstream error timeout http_5O3;');
      const { status, output } = checkWithNginx(broken);
      assert.notEqual(status, 0);
      assert.match(output, /invalid value "http_5O3"/);
    });
  });
});
