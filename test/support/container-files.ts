import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The repository's root. */
export const REPOSITORY_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The parts of a compose service these tests read. */
export interface ComposeService {
  environment?: Record<string, string | number | boolean | null>;
  entrypoint?: string | string[];
  ports?: string[];
  healthcheck?: { test?: string | string[]; start_period?: string; timeout?: string };
  stop_grace_period?: string;
}

/** The `telesync` service of docker-compose.yml. */
export function readComposeService(name = 'telesync'): ComposeService {
  const compose = parse(readFileSync(join(REPOSITORY_ROOT, 'docker-compose.yml'), 'utf8')) as {
    services?: Record<string, ComposeService>;
  };
  const service = compose.services?.[name];
  if (service === undefined) throw new Error(`docker-compose.yml has no service "${name}"`);
  return service;
}

/** The node script of a healthcheck written as ['CMD', 'node', '-e', script]; undefined otherwise. */
export function nodeHealthcheckScript(service: ComposeService): string | undefined {
  const test = service.healthcheck?.test;
  if (!Array.isArray(test) || test[0] !== 'CMD' || test[1] !== 'node' || test[2] !== '-e') {
    return undefined;
  }
  return test[3];
}

/** The final stage of the Dockerfile: what the image runs with. */
export function finalDockerStage(): string {
  const dockerfile = readFileSync(join(REPOSITORY_ROOT, 'Dockerfile'), 'utf8');
  const stages = dockerfile.split(/^FROM /m);
  return `FROM ${stages.at(-1)!}`;
}

/** The shell command of the final stage's RUN instruction that writes `path` (continuations joined). */
export function runInstructionWriting(path: string): string | undefined {
  const joined = finalDockerStage().replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .filter((line) => line.startsWith('RUN '))
    .map((line) => line.slice('RUN '.length).trim())
    .find((command) => command.includes(`> ${path}`));
}
