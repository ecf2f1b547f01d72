/** The `--import` module that gives a bare baseline a little background work (bench/baselines/background-work.ts). */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './proc.js';

export const BACKGROUND_WORK = pathToFileURL(join(ROOT, 'dist', 'bench', 'baselines', 'background-work.js')).href;
