// Bundles src/ into one file for the page: node build.mjs [outfile].
// The flags are fixed so the same lockfile gives the same bytes (the Go
// test web/bundle_test.go rebuilds the committed ../static/chat.js and
// compares): a production React (no development checks, no eval), minified,
// licences kept at the end of the file.
import * as esbuild from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outfile = path.resolve(process.argv[2] || path.join(here, '..', 'static', 'chat.js'));

await esbuild.build({
  absWorkingDir: here,
  entryPoints: ['src/main.jsx'],
  outfile,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['es2022'],
  jsx: 'automatic',
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  charset: 'utf8',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
