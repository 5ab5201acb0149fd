import { expect } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';

/** The NanoPayError `promise` rejects with; fails the test if it resolves or rejects with anything else. */
export async function failure(promise: Promise<unknown>): Promise<NanoPayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NanoPayError);
  return error as NanoPayError;
}
