// The process entry of `telesync`: bin/telesync.js loads it through tsx; the Docker image runs its
// compiled form (dist/src/cli/entry.js).
import { endQuietlyWhenStdoutCloses } from './cli-io.js';
import { limitHeapGrowth } from './heap-growth.js';
import { runCli } from './main.js';

limitHeapGrowth();
endQuietlyWhenStdoutCloses();
process.exitCode = await runCli(process.argv.slice(2));
