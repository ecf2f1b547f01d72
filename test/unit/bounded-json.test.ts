import { describe, expect, it } from 'vitest';
import { parseBoundedJson, parseHeapEstimate, PARSE_HEAP_BUDGET } from '../../src/upstream/bounded-json.js';

const MiB = 2 ** 20;
/** A JSON array of `unit` repeated to about `mib` MiB. */
const arrayOf = (unit: string, mib: number): Buffer => Buffer.from(`[${`${unit},`.repeat(Math.floor((mib * MiB) / (unit.length + 1)))}${unit}]`);

describe('upstream JSON parsed within a heap budget', () => {
  it('never scans a body whose worst case fits the budget', () => {
    expect(parseHeapEstimate(arrayOf('{}', 1))).toBe(0);
    expect(parseBoundedJson(arrayOf('{}', 1))).toHaveLength(349_526);
  });

  it('refuses 10 MiB of empty objects, arrays or numbers (50 to 220 MiB of heap when parsed)', () => {
    for (const unit of ['{}', '[]', '0']) {
      expect(parseHeapEstimate(arrayOf(unit, 10))).toBeGreaterThan(PARSE_HEAP_BUDGET);
      expect(parseBoundedJson(arrayOf(unit, 10))).toBeUndefined();
    }
  });

  it("parses 10 MiB answers shaped like the upstream's: one long string, or a list of events", () => {
    const source = Buffer.from(JSON.stringify({ tx_id: '0x01', smart_contract: { source_code: 'x'.repeat(10 * MiB) } }));
    expect((parseBoundedJson(source) as { tx_id: string }).tx_id).toBe('0x01');
    const event = JSON.stringify({
      event_index: 1,
      event_type: 'fungible_token_asset',
      tx_id: `0x${'ab'.repeat(32)}`,
      asset: {
        asset_event_type: 'transfer',
        asset_id: 'SP000000000000000000002Q6VF78.token::token',
        sender: 'SP000000000000000000002Q6VF78',
        recipient: 'SP000000000000000000002Q6VF78',
        amount: '1000',
      },
    });
    const events = arrayOf(event, 10);
    expect(parseHeapEstimate(events)).toBeLessThanOrEqual(PARSE_HEAP_BUDGET);
    expect(parseBoundedJson(events)).toBeInstanceOf(Array);
  });

  it('answers undefined for a body that is not JSON, as before', () => {
    expect(parseBoundedJson(Buffer.from('<html>'))).toBeUndefined();
  });
});
