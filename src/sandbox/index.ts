export { startSandbox, type RunningSandbox, type SandboxOptions } from './server.js';
export { CREDIT_COSTS, FREE_CREDITS, tierPriceRaw } from './pricing.js';
