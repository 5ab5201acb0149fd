// Writes oclif.manifest.json as `oclif manifest` does (the list of commands oclif reads instead of loading each one),
// with @oclif/core's Plugin, a dependency already: the oclif CLI package, which brought 122 packages to npm ci (the AWS
// SDK among them, for its publishing commands), was a devDependency for this alone.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Plugin } from '@oclif/core';

const root = resolve(import.meta.dirname, '..');
const plugin = new Plugin({ errorOnManifestCreate: true, ignoreManifest: true, respectNoCacheDefault: true, root, type: 'core' });
await plugin.load();
const file = join(root, 'oclif.manifest.json');
writeFileSync(file, JSON.stringify(plugin.manifest, null, 2));
console.log(`wrote manifest to ${file}`);
