export { DEV_THRESHOLDS, LIVE_THRESHOLDS, expectedHashes, multiplierOf, parseThreshold, type Thresholds } from './thresholds.js';
export { validateWork, workValue } from './pow.js';
export { generateWork, liveWorkers, shutdownWorkers } from './generator.js';
export { WorkCache } from './cache.js';
