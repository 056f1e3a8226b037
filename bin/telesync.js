#!/usr/bin/env node
// Entry point of the `telesync` command. It runs the TypeScript sources through tsx's loader so
// that `npx telesync` works straight after `npm ci`, with no build step to remember. The Docker
// image runs the compiled dist/ instead (see Dockerfile).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/entry.ts');
