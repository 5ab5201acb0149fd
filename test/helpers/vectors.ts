import { readFileSync } from 'node:fs';

/** The independently sourced vectors in ../shared (beside the repository). */
export type Vectors = Record<string, any>;

export const vectors: Vectors = JSON.parse(
  readFileSync(new URL('../../../shared/vectors/nano-vectors.json', import.meta.url), 'utf8'),
) as Vectors;
