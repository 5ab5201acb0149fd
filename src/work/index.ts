export { DEV_THRESHOLDS, LIVE_THRESHOLDS, NETWORK_THRESHOLDS, expectedHashes, harderThreshold, multiplierOf, parseThreshold, thresholdsAtEpoch, type Thresholds } from './thresholds.js';
export { validateWork, workValue } from './pow.js';
export { generateWork, workEngine, type GenerateOptions } from './generator.js';
export { CHOICE_FILE, kernelPicker, measureKernels, readChoice, writeChoice, type KernelChoice, type KernelRate } from './kernel-choice.js';
export { idleWorkers, liveWorkers, shutdownWorkers } from './pool.js';
export { nativeKernels, type EngineName } from './engines.js';
export { WorkCache } from './cache.js';
export { remoteWork, type WorkServer } from './remote.js';
export { providerSettings, workProvider, type ProviderSettings, type WorkMode, type WorkObserver } from './provider.js';
