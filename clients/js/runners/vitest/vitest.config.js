// vitest config for the runner examples: run from clients/js with
//   node_modules/.bin/vitest run --config runners/vitest/vitest.config.js replay.test.js
// regression.test.js fails on purpose (test/runners.test.js checks how).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('.', import.meta.url)),
    include: ['*.test.js'],
  },
});
