// The two builds of the policy stay apart: the waPC module that the policy server runs links
// nothing of wasm-bindgen, and the page's module nothing of waPC.
//
//   node --test playground/tests/modules.test.mjs   (POLICY_WASM and PLAYGROUND_BUILD override)

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const policy = process.env.POLICY_WASM ?? join(root, 'policy.wasm');
const page = join(process.env.PLAYGROUND_BUILD ?? join(root, 'target/playground-build'), 'bindgen/playground_bg.wasm');

function interface_(path) {
  const module = new WebAssembly.Module(readFileSync(path));
  return {
    imports: new Set(WebAssembly.Module.imports(module).map((i) => i.module)),
    exports: WebAssembly.Module.exports(module).map((e) => e.name),
  };
}

test("the policy's waPC module imports only from its waPC host and WASI", () => {
  const { imports, exports } = interface_(policy);
  assert.deepEqual([...imports].sort(), ['wapc', 'wasi_snapshot_preview1']);
  assert.ok(exports.includes('wapc_init') && exports.includes('__guest_call'));
  assert.ok(!exports.some((name) => name.startsWith('__wbindgen')), exports.join(', '));
});

test("the page's module has the policy's calls and none of waPC's", () => {
  const { imports, exports } = interface_(page);
  assert.deepEqual([...imports], ['./playground_bg.js']);
  for (const call of ['validate', 'validate_settings', 'review', 'cluster_settings']) {
    assert.ok(exports.includes(call), `no ${call} in ${exports.join(', ')}`);
  }
  assert.ok(!exports.includes('wapc_init') && !exports.includes('__guest_call'), exports.join(', '));
});
