/**
 * The Node.js the proxy needs, checked by the entry point before anything else is loaded: on an
 * older Node the dependencies fail deep inside (undici on Node 20: "Cannot read properties of
 * undefined (reading 'bind')"), which says nothing about the cause. This module imports nothing,
 * so it runs on any Node that can load an ES module.
 */

/** The oldest major that runs the proxy; package.json's `engines.node` says the same (a test checks). */
export const REQUIRED_NODE_MAJOR = 24;

/**
 * Why this Node cannot run the proxy, as a message that says how to get one that can; undefined
 * when `version` (process.versions.node, "20.20.2") is new enough.
 */
export function unsupportedNodeMessage(version: string, execPath: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isInteger(major) && major >= REQUIRED_NODE_MAJOR) return undefined;
  return [
    `Node.js ${REQUIRED_NODE_MAJOR} or later is needed; this is Node.js ${version} (${execPath}).`,
    `  From a clone: \`npm ci\` installs Node ${REQUIRED_NODE_MAJOR} for the npm scripts, so \`npm start\` runs on it whatever Node the machine has.`,
    `  Or install Node ${REQUIRED_NODE_MAJOR}: \`nvm install ${REQUIRED_NODE_MAJOR}\` (https://github.com/nvm-sh/nvm), or https://nodejs.org/en/download.`,
  ].join('\n');
}
