/**
 * `npm run docs:config`: writes docs/configuration.md from the settings schema (scripts/config-docs.ts).
 * Run it after changing a setting, its default or its `.describe()` text; test/unit/config-docs.test.ts
 * fails while the committed page is stale.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/paths.js';
import { CONFIGURATION_PAGE, renderConfigurationPage } from './config-docs.js';

const target = join(projectRoot(), CONFIGURATION_PAGE);
writeFileSync(target, renderConfigurationPage());
process.stdout.write(`wrote ${target}\n`);
