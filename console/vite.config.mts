import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// The web console, built into dist/console (served by `triad serve` at `/`): no CDN, no network.
export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // The console is one small bundle; the HTML never inlines a script (the server's CSP forbids it).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
