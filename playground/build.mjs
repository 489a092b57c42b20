// Builds the playground site from the policy compiled for the browser:
//
//   node playground/build.mjs --wasm target/wasm32-unknown-unknown/release/playground.wasm \
//       --wasm-bindgen wasm-bindgen --out target/playground
//
// What `make playground-site` runs after `cargo build`. The site is three files: index.html,
// style.css and playground.js, which holds the page's scripts, the `yaml` reader, the examples
// and the wasm module. One script and no fetch, because browsers refuse both module scripts and
// fetch() to pages opened from file://, and the page must work from a folder as it does from a
// static host.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');

// The policy crate registers itself with a waPC host through two exported functions, which a
// browser has no host for; they come along because a cdylib exports every `#[no_mangle]` function
// of the crates it links. Without them the waPC imports they use are unreachable, and wasm-bindgen
// drops both.
const WAPC_EXPORTS = ['wapc_init', '__guest_call'];

const args = options(process.argv.slice(2));
const out = resolve(args.out ?? join(root, 'target/playground'));
const work = join(root, 'target/playground-build');

rmSync(work, { recursive: true, force: true });
mkdirSync(join(work, 'bindgen'), { recursive: true });
const stripped = join(work, 'playground.wasm');
writeFileSync(stripped, withoutExports(readFileSync(args.wasm), WAPC_EXPORTS));
execFileSync(
  args['wasm-bindgen'] ?? 'wasm-bindgen',
  ['--target', 'web', '--no-typescript', '--remove-name-section', '--remove-producers-section', '--out-dir', join(work, 'bindgen'), stripped],
  { stdio: 'inherit' },
);
const wasmPath = join(work, 'bindgen/playground_bg.wasm');
const wasm = readFileSync(wasmPath);
const foreign = imports(wasm).filter((module) => module !== './playground_bg.js');
if (foreign.length > 0) {
  throw new Error(`the page's wasm imports from ${foreign.join(', ')}, which only wasm-bindgen's glue may give`);
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: [join(here, 'web/main.js')],
  bundle: true,
  format: 'iife',
  minify: true,
  target: 'es2022',
  legalComments: 'none',
  outfile: join(out, 'playground.js'),
  // wasm-bindgen's glue finds its wasm beside itself by import.meta.url unless given the bytes,
  // which the page always gives it.
  logOverride: { 'empty-import-meta': 'silent' },
  plugins: [virtualModules({ glue: join(work, 'bindgen/playground.js'), wasm: wasmPath })],
});
for (const file of ['index.html', 'style.css']) {
  cpSync(join(here, 'web', file), join(out, file));
}
const size = (file) => statSync(join(out, file)).size;
console.log(
  `playground: ${out}${sep}index.html (wasm ${wasm.length} bytes; playground.js ${size('playground.js')} bytes)`,
);

function options(argv) {
  const parsed = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) {
      throw new Error(`usage: build.mjs --wasm FILE [--wasm-bindgen PATH] [--out DIR] (at ${argv[i]})`);
    }
    parsed[argv[i].slice(2)] = argv[i + 1];
  }
  if (!parsed.wasm) {
    throw new Error('usage: build.mjs --wasm FILE [--wasm-bindgen PATH] [--out DIR]');
  }
  return parsed;
}

// `playground:glue`, `playground:wasm` (its bytes) and `playground:examples` (the files under
// examples/settings, at any depth, the chart's values and examples/pods, read now: the site is
// rebuilt to pick up a new one).
function virtualModules({ glue, wasm }) {
  return {
    name: 'playground',
    setup(build) {
      build.onResolve({ filter: /^playground:/ }, ({ path }) => {
        const name = path.slice('playground:'.length);
        if (name === 'glue') {
          return { path: glue };
        }
        if (name === 'wasm') {
          return { path: wasm, namespace: 'wasm' };
        }
        return { path: name, namespace: 'playground' };
      });
      build.onLoad({ filter: /.*/, namespace: 'wasm' }, ({ path }) => ({
        contents: readFileSync(path),
        loader: 'binary',
      }));
      build.onLoad({ filter: /^examples$/, namespace: 'playground' }, () => ({
        contents: JSON.stringify(exampleFiles()),
        loader: 'json',
      }));
    },
  };
}

function exampleFiles() {
  const examples = join(root, 'examples');
  const read = (path) => ({ name: relative(examples, path).split(sep).join('/'), text: readFileSync(path, 'utf8') });
  const settings = [...filesUnder(join(examples, 'settings')), join(examples, 'chart-values.yaml'), join(examples, 'helix-values.yaml')];
  return { settings: settings.map(read), pods: filesUnder(join(examples, 'pods')).map(read) };
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true })
    .map((name) => join(dir, name))
    .filter((path) => /\.(ya?ml|json)$/.test(path) && statSync(path).isFile())
    .sort();
}

// The WebAssembly binary format: a header, then sections of (id, size as unsigned LEB128, body).

function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) {
      return [value, at];
    }
  }
}

function toLeb(value) {
  const bytes = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value > 0) {
      byte |= 0x80;
    }
    bytes.push(byte);
  } while (value > 0);
  return bytes;
}

function* sections(bytes) {
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at];
    const [size, start] = leb(bytes, at + 1);
    yield { id, start: at, body: start, end: start + size };
    at = start + size;
  }
}

function name(bytes, at) {
  const [length, start] = leb(bytes, at);
  return [new TextDecoder().decode(bytes.subarray(start, start + length)), start + length];
}

// The module without the named exports (export section: id 7, a count, then name, kind, index).
function withoutExports(bytes, names) {
  const parts = [];
  let found = 0;
  for (const section of sections(bytes)) {
    if (section.id !== 7) {
      parts.push(bytes.subarray(section.start, section.end));
      continue;
    }
    const kept = [];
    let [count, at] = leb(bytes, section.body);
    for (; count > 0; count--) {
      const [exported, afterName] = name(bytes, at);
      const [, end] = leb(bytes, afterName + 1);
      if (names.includes(exported)) {
        found++;
      } else {
        kept.push(bytes.subarray(at, end));
      }
      at = end;
    }
    const body = Buffer.concat([Buffer.from(toLeb(kept.length)), ...kept]);
    parts.push(Buffer.from([7, ...toLeb(body.length)]), body);
  }
  if (found !== names.length) {
    throw new Error(`expected the exports ${names.join(', ')} in the policy's wasm, found ${found} of them`);
  }
  return Buffer.concat([bytes.subarray(0, 8), ...parts]);
}

// The module names of the imports (import section: id 2, a count, then module, name, kind, type).
function imports(bytes) {
  const modules = [];
  for (const section of sections(bytes)) {
    if (section.id !== 2) {
      continue;
    }
    let [count, at] = leb(bytes, section.body);
    for (; count > 0; count--) {
      const [module, afterModule] = name(bytes, at);
      const [, afterName] = name(bytes, afterModule);
      modules.push(module);
      at = skipImportType(bytes, afterName);
    }
  }
  return modules;
}

function skipImportType(bytes, at) {
  const kind = bytes[at];
  if (kind === 0 || kind === 4) {
    // function: a type index; tag: an attribute byte and a type index
    return leb(bytes, kind === 4 ? at + 2 : at + 1)[1];
  }
  if (kind === 1) {
    // table: a reference type, then limits
    return limits(bytes, at + 2);
  }
  if (kind === 2) {
    return limits(bytes, at + 1);
  }
  // global: a value type and mutability
  return at + 3;
}

function limits(bytes, at) {
  const flags = bytes[at];
  let next = leb(bytes, at + 1)[1];
  if (flags & 1) {
    next = leb(bytes, next)[1];
  }
  return next;
}
