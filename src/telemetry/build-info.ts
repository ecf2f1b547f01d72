/** What is running, for the build_info gauge: the proxy version from package.json and Node's. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../paths.js';

export interface BuildInfo {
  version: string;
  node: string;
}

let packageVersion: string | undefined;

/** Read once per process: the file does not change while the proxy runs. */
export function buildInfo(): BuildInfo {
  packageVersion ??= (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return { version: packageVersion, node: process.version };
}
