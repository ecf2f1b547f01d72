/**
 * The one wall clock. The composition root creates it once and hands it to every component
 * that reads time (stores, read path, tx-list, upstream health and client, chain tracker),
 * so tests can move time and no component drifts from another. Nothing else in src/ calls
 * Date.now(); durations for metrics use process.hrtime, which is not wall time.
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
