/**
 * The status page in a real headless browser (Debian's Chromium driven by playwright-core): it
 * renders, shows the tip the fake upstream reports (its burn tip and the tip block's anchor side
 * by side), shows the next tip within 3 s of the fake's chain advancing (the DOM is polled, no
 * fixed sleeps), and shows an upstream's error text as text (markup in it is never parsed) with
 * the failures since its last success, all under the page's strict Content-Security-Policy (any
 * violation would be reported on the console, which the test collects).
 * Needs /usr/bin/chromium (apt-get install chromium); STATUS_PAGE_SCREENSHOT=<path> saves a
 * screenshot of the page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { tipAnchorText } from '../../src/http/admin/status-page.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';

const CHROMIUM = '/usr/bin/chromium';
const HOSTILE = '<img src=x id=injected onerror="document.title=1">refused & "quoted"';

let upstream: FakeUpstream;
let proxy: ProxyServer;
let context: BrowserContext;
let page: Page;
let profile: string;
const consoleProblems: string[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { chainTip: { pollIntervalMs: 200 } } });
  profile = mkdtempSync(join(tmpdir(), 'status-page-chromium-'));
  // A fresh profile (--user-data-dir, which playwright-core takes as launchPersistentContext's first argument).
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1400, height: 1000 },
  });
  page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') consoleProblems.push(message.text());
  });
  page.on('pageerror', (error) => consoleProblems.push(error.message));
  // Some traffic, so the ratio tables have rows.
  for (const path of ['/extended/v2/blocks/2', '/extended/v2/blocks/2', '/extended']) await fetchRaw(proxy.url + path);
  await page.goto(`${proxy.adminUrl}/`);
});
afterAll(async () => {
  await context?.close();
  await proxy?.close();
  await upstream?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

const text = (selector: string): Promise<string> => page.locator(selector).innerText();

/** Polls the DOM until `selector`'s text satisfies `test`, for at most `timeoutMs`. */
async function untilText(selector: string, test: (value: string) => boolean, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let value = await text(selector);
  while (!test(value)) {
    if (Date.now() > deadline) throw new Error(`${selector} still shows ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await page.waitForTimeout(50);
    value = await text(selector);
  }
  return value;
}

const heightText = (height: number): string => height.toLocaleString('en-US');

describe('the status page in Chromium', () => {
  it('renders and shows the tip the fake upstream reports', async () => {
    expect(await page.title()).toBe('stacks-cache-proxy status');
    await untilText('#tip-height', (v) => v === heightText(upstream.tip().height), 10_000);
    expect(await text('#tip-hash')).toBe(upstream.tip().index_block_hash);
    expect(await text('#tip-burn')).toBe(heightText(upstream.tip().burn_block_height));
    // Next to the burn tip: the tip block's own anchor once the chain model has read it, "unknown" until then.
    const tipBlock = JSON.parse((await fetchRaw(`${upstream.url}/extended/v2/blocks/${upstream.tip().index_block_hash}`)).body.toString()) as {
      burn_block_height: number;
    };
    expect(['unknown (not read yet)', tipAnchorText(upstream.tip().burn_block_height, tipBlock.burn_block_height)]).toContain(await text('#tip-anchor'));
    await untilText('#connection', (v) => v === 'live', 5_000);
    const origin = new URL(upstream.url).origin;
    expect(await page.locator(`#upstreams tr[data-origin="${origin}"]`).count()).toBe(1);
    expect(await text('#routes')).toContain('block');
  });

  it('shows a new tip within 3 s of the chain advancing', async () => {
    upstream.advanceTip(1);
    const expected = heightText(upstream.tip().height);
    const started = Date.now();
    await untilText('#tip-height', (v) => v === expected, 3_000);
    expect(Date.now() - started).toBeLessThanOrEqual(3_000);
    expect(await text('#tip-hash')).toBe(upstream.tip().index_block_hash);
  });

  it("shows an upstream's error as text, its markup never parsed", async () => {
    // Every request of that upstream: any success (the mempool watcher's poll, a block's warm-up
    // on a loaded machine) would end the run of failures the page lists.
    upstream.setFailing({ status: 401, body: JSON.stringify({ error: 'Unauthorized', message: HOSTILE }) }, /^\//);
    try {
      const origin = new URL(upstream.url).origin;
      const cell = `#upstreams tr[data-origin="${origin}"] td.error-text`;
      await page.locator(cell).waitFor({ timeout: 10_000 });
      const shown = await untilText(cell, (v) => v.includes(HOSTILE), 10_000);
      expect(shown).toContain('401');
      // Shown as characters: no element was made from it, and its handler never ran.
      expect(await page.locator('#injected').count()).toBe(0);
      expect(await page.locator('#upstreams img').count()).toBe(0);
      expect(await page.title()).toBe('stacks-cache-proxy status');
      expect(await text('#poll-error')).toContain(HOSTILE);
      // The failures since its last success, listed under the last error.
      const failures = await untilText(`${cell} .recent-failures`, (v) => v.includes('invalid on chain_tip'), 10_000);
      expect(failures).toMatch(/since its last success, newest first:/);
      const screenshot = process.env.STATUS_PAGE_SCREENSHOT;
      if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    } finally {
      upstream.setFailing(null);
    }
  });

  it('breaks no rule of its Content-Security-Policy and throws nothing', () => {
    expect(consoleProblems).toEqual([]);
  });
});
