/**
 * The start-up notes (src/startup-notes.ts) and the Node.js version check
 * (src/runtime/node-version.ts): what a newcomer is told, from the real configuration loader,
 * through a real pino logger.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { REQUIRED_NODE_MAJOR, unsupportedNodeMessage } from '../../src/runtime/node-version.js';
import { keylessHiroUpstreams, logStartupNotes } from '../../src/startup-notes.js';

interface Line {
  level: number;
  msg: string;
  upstreams?: string[];
  tipPollsPerMinute?: number;
}

/** The lines logStartupNotes writes for this environment (over config/default.json). */
function notesFor(env: Record<string, string>): Line[] {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  logStartupNotes(pino({ level: 'info' }, sink), loadConfig(env));
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
}

const WARN = 40;
const INFO = 30;

describe('start-up notes', () => {
  it('on the defaults (the public Hiro API, no key): one info line naming UPSTREAM_URLS and one plain warning', () => {
    const lines = notesFor({});
    expect(lines.map((line) => line.level)).toEqual([INFO, WARN]);
    expect(lines[0]!.upstreams).toEqual(['https://api.hiro.so']);
    expect(lines[0]!.msg).toContain('reading from https://api.hiro.so; set UPSTREAM_URLS');
    expect(lines[1]!.msg).toMatch(
      /^no UPSTREAM_API_KEY: the public Hiro API allows 50 requests\/min without a key, and the chain tip poll alone sends 60\/min/,
    );
    expect(lines[1]!.msg).toContain('set UPSTREAM_API_KEY');
    expect(lines[1]).toMatchObject({ upstreams: ['https://api.hiro.so'], tipPollsPerMinute: 60 });
  });

  it('no warning with UPSTREAM_API_KEY, or with an x-api-key header for that upstream', () => {
    expect(notesFor({ UPSTREAM_API_KEY: 'k-1' }).map((line) => line.level)).toEqual([INFO]);
    const config = loadConfig({});
    expect(keylessHiroUpstreams({ ...config.upstream, headers: { 'X-Api-Key': 'k' } })).toEqual([]);
    expect(keylessHiroUpstreams({ ...config.upstream, headersByUrl: { 'https://api.hiro.so': { 'x-api-key': 'k' } } })).toEqual([]);
    // A header for another upstream does not count.
    expect(keylessHiroUpstreams({ ...config.upstream, headersByUrl: { 'https://other.example': { 'x-api-key': 'k' } } })).toEqual(['https://api.hiro.so']);
  });

  it('never logs a password in an upstream URL', () => {
    const lines = notesFor({ UPSTREAM_URLS: 'http://bob:UrlPassQQ@node-1.example:3999' });
    const text = JSON.stringify(lines);
    expect(text).not.toContain('UrlPassQQ');
    expect(lines[0]!.msg).toContain('reading from http://bob:***@node-1.example:3999');
  });

  it('an empty UPSTREAM_API_KEY (what compose passes when it is unset) is no key', () => {
    expect(notesFor({ UPSTREAM_API_KEY: '' }).map((line) => line.level)).toEqual([INFO, WARN]);
  });

  it('warns for the testnet host too, names only the keyless Hiro upstreams, and never for other upstreams', () => {
    const lines = notesFor({ UPSTREAM_URLS: 'http://127.0.0.1:3999,https://api.testnet.hiro.so' });
    expect(lines[0]!.upstreams).toEqual(['http://127.0.0.1:3999', 'https://api.testnet.hiro.so']);
    expect(lines[1]!.upstreams).toEqual(['https://api.testnet.hiro.so']);
    expect(notesFor({ UPSTREAM_URLS: 'http://127.0.0.1:3999' }).map((line) => line.level)).toEqual([INFO]);
    // Not fooled by a look-alike host.
    expect(notesFor({ UPSTREAM_URLS: 'https://api.hiro.so.example.com' }).map((line) => line.level)).toEqual([INFO]);
  });

  it('says the tip poll alone exceeds the limit only when it does', () => {
    const config = loadConfig({});
    let text = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    logStartupNotes(pino(sink), { ...config, chainTip: { ...config.chainTip, pollIntervalMs: 5000 } });
    const warning = JSON.parse(text.split('\n')[1]!) as Line;
    expect(warning.tipPollsPerMinute).toBe(12);
    expect(warning.msg).toContain('the chain tip poll sends 12/min of them and every cache miss more');
    expect(warning.msg).not.toContain('alone');
  });
});

describe('the Node.js version check', () => {
  it('accepts 24 and later, refuses older, and says how to get Node 24', () => {
    expect(unsupportedNodeMessage('24.0.0', '/n')).toBeUndefined();
    expect(unsupportedNodeMessage('24.21.0', '/n')).toBeUndefined();
    expect(unsupportedNodeMessage('26.1.0', '/n')).toBeUndefined();
    for (const old of ['20.20.2', '22.15.0', '23.11.1', '18.0.0']) {
      const message = unsupportedNodeMessage(old, '/usr/bin/node');
      expect(message).toContain(`Node.js 24 or later is needed; this is Node.js ${old} (/usr/bin/node).`);
      expect(message).toContain('`npm ci` installs Node 24');
      expect(message).toContain('nvm install 24');
    }
    expect(unsupportedNodeMessage('garbage', '/n')).toContain('Node.js 24 or later is needed');
  });

  it("agrees with package.json's engines and the bundled Node", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
    };
    expect(pkg.engines.node).toBe(`>=${REQUIRED_NODE_MAJOR}`);
    expect(Number(pkg.devDependencies.node?.split('.')[0])).toBe(REQUIRED_NODE_MAJOR);
  });
});
