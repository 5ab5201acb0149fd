import type { BackendKind } from '../../api/backend.js';
import { NanoPayError } from '../../errors.js';

/** What a consequence of `inconsistent` names: the party that answered, and what was not done. */
export interface InconsistencyContext {
  party?: BackendKind;
  outcome?: string;
}

/** The service (or node) said something that contradicts what was asked or what a block itself says. */
export function inconsistent(message: string, { party = 'service', outcome = 'Nothing was signed.' }: InconsistencyContext = {}): NanoPayError {
  return new NanoPayError('SERVICE_INCONSISTENT', `The ${party} answered inconsistently: ${message}. ${outcome}`, {
    hint: `nanopay checks every answer against what it asked and against the blocks themselves. Check the ${party === 'node' ? 'node URL' : 'API URL'} (a proxy or a faulty ${party} may sit in between).`,
  });
}
