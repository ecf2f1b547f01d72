/**
 * The lint rules that keep the architecture's boundaries (eslint.config.js), run on small
 * sources under real file names: a pure module must keep its folder's layer rule as well as its
 * own (flat config lets a later block replace an earlier one's rule, which once let the pure
 * list override the layering for every file on it).
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: process.cwd() });

async function restrictedImports(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('lint layering', () => {
  it('keeps the layer rule of a pure module in cache/ (no import of http/)', async () => {
    const messages = await restrictedImports('src/cache/policy.ts', "import { sendError } from '../http/respond.js';\nexport const x = sendError;\n");
    expect(messages.join('\n')).toMatch(/cache\/ sits below http/);
  });

  it('keeps the pure rules too (no I/O, no clock, no telemetry)', async () => {
    const messages = await restrictedImports(
      'src/cache/policy.ts',
      "import { readFileSync } from 'node:fs';\nimport { systemClock } from '../clock.js';\nexport const x = [readFileSync, systemClock];\n",
    );
    expect(messages.some((m) => /Pure modules do no I\/O/.test(m))).toBe(true);
    expect(messages.some((m) => /Pure modules take time and report nothing/.test(m))).toBe(true);
  });

  it('applies the layer rule to pure modules of every folder (chain/ may not import cache/)', async () => {
    const messages = await restrictedImports('src/chain/finality.ts', "import { keyFor } from '../cache/key.js';\nexport const x = keyFor;\n");
    expect(messages.join('\n')).toMatch(/chain\/ sits below cache/);
  });

  it('keeps the live chain on top: nothing below imports src/live/', async () => {
    const messages = await restrictedImports(
      'src/http/pipeline.ts',
      "import { ClientSlots } from '../live/client-bounds.js';\nexport const x = ClientSlots;\n",
    );
    expect(messages.join('\n')).toMatch(/http\/ sits below live/);
  });

  it('lets an impure module of a folder import what its layer allows', async () => {
    const messages = await restrictedImports(
      'src/cache/read-path.ts',
      "import { parseBoundedJson } from '../upstream/bounded-json.js';\nexport const x = parseBoundedJson;\n",
    );
    expect(messages).toEqual([]);
  });
});
