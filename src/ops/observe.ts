/**
 * What front ends learn about the calls operations made, without reaching past ops/ into the service
 * client: whether the answers were the sandbox's (test money, marked in every output), and who is being
 * waited for (the CLI's spinner and warnings, a server's log).
 */
export { SANDBOX_NOTE, talkedToSandbox, withSandboxMark } from '../api/sandbox-mark.js';
export { observeWaits, type WaitObserver } from '../api/waits.js';
