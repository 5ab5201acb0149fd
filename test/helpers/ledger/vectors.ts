import { readFileSync } from 'node:fs';

/**
 * Independently sourced Nano test vectors (keys, mnemonics, blocks, work, units,
 * URIs), copied into the repository from the project's shared vector set; each
 * vector names its public source inside the file.
 */
export type Vectors = Record<string, any>;

export const vectors: Vectors = JSON.parse(readFileSync(new URL('../../fixtures/nano-vectors.json', import.meta.url), 'utf8')) as Vectors;
