// The page's own logic in Node, without the policy: reading YAML into JSON, the YAML view of a
// pod with its marks, and the share link's encoding.
//
//   node --test playground/tests/unit.test.mjs

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { InputError, jsonOf } from '../web/read.js';
import { decode, encode } from '../web/share.js';
import { RawNumber, at, marks, parseJson, yamlLines } from '../web/view.js';

test('YAML is read into JSON in the order written, integers exact', () => {
  assert.equal(
    jsonOf('b: 1\na: 12345678901234567891\n"0": x\nlist: [1, {x: null}]\n'),
    '{"b":1,"a":12345678901234567891,"0":"x","list":[1,{"x":null}]}',
  );
});

test('JSON is read as it is', () => {
  const text = '{"spec":{"containers":[{"name":"a","env":[]}]},"apiVersion":"v1"}';
  assert.equal(jsonOf(text), text);
});

test('YAML 1.2: yes and on are strings, quoted numbers are strings, aliases are resolved', () => {
  assert.equal(jsonOf('a: yes\nb: on\nc: "8"\nd: &x {k: 1}\ne: *x\n'), '{"a":"yes","b":"on","c":"8","d":{"k":1},"e":{"k":1}}');
});

test('what JSON cannot hold is refused, naming where', () => {
  assert.throws(() => jsonOf('a:\n  b: .inf\n'), new InputError('a.b is Infinity, which JSON cannot hold'));
  assert.throws(() => jsonOf('1: x\n"1": y\n'), /the document has the key "1" twice/);
  assert.throws(() => jsonOf('? [a]\n: x\n'), /not a string, number or boolean/);
});

test('unreadable YAML is refused with its line and column', () => {
  assert.throws(() => jsonOf('a: 1\na: 2\n'), /unique at line 2, column 1/);
  assert.throws(() => jsonOf('a: [1\nb: 2\n'), /line 2/);
});

test('an empty document is the given default, or refused', () => {
  assert.equal(jsonOf('# nothing\n', '{}'), '{}');
  assert.throws(() => jsonOf('  \n'), /holds no document/);
});

test('a number read with its text is written as that text', () => {
  const value = { a: new RawNumber('12345678901234567891'), b: new RawNumber('1.50'), c: '1.50' };
  assert.deepEqual(
    yamlLines(value).map((l) => l.text),
    ['a: 12345678901234567891', 'b: 1.50', 'c: "1.50"'],
  );
  // Where the engine gives no source text (Node 20), numbers are numbers.
  const parsed = parseJson('{"n":2}').n;
  assert.ok(parsed === 2 || parsed.text === '2');
});

test("the view is kubectl's YAML, and reads back as the value", () => {
  const value = {
    metadata: { name: 'w', annotations: { 'a/b': 'true', empty: '' } },
    spec: {
      containers: [{ name: 'c', args: ['x: y', '- z', 'multi\nline'], resources: {}, ports: [] }],
      nested: [[1, 2], []],
    },
  };
  const lines = yamlLines(value).map((l) => l.text);
  assert.deepEqual(lines, [
    'metadata:',
    '  name: w',
    '  annotations:',
    '    a/b: "true"',
    '    empty: ""',
    'spec:',
    '  containers:',
    '  - name: c',
    '    args:',
    '    - "x: y"',
    '    - "- z"',
    '    - "multi\\nline"',
    '    resources: {}',
    '    ports: []',
    '  nested:',
    '  - - 1',
    '    - 2',
    '  - []',
  ]);
  assert.deepEqual(parse(lines.join('\n')), value);
});

test('lines are marked by the patch: added, added where null stood, changed', () => {
  const original = { metadata: { annotations: { net: 'a' } }, spec: { volumes: null, containers: [{ env: [{ name: 'A' }] }] } };
  const mutated = {
    metadata: { annotations: { net: 'a,b', 'x/y': '1' } },
    spec: { volumes: [{ name: 'v' }], containers: [{ env: [{ name: 'A' }, { name: 'B', value: '2' }] }] },
  };
  const patch = [
    { op: 'replace', path: '/metadata/annotations/net', value: 'a,b' },
    { op: 'add', path: '/metadata/annotations/x~1y', value: '1' },
    { op: 'replace', path: '/spec/volumes', value: [{ name: 'v' }] },
    { op: 'add', path: '/spec/containers/0/env/1', value: { name: 'B', value: '2' } },
  ];
  const shown = yamlLines(mutated, marks(patch, original)).map((l) => `${l.mark ?? '.'} ${l.text}`);
  assert.deepEqual(shown, [
    '. metadata:',
    '.   annotations:',
    'change     net: a,b',
    'add     x/y: "1"',
    '. spec:',
    'add   volumes:',
    'add   - name: v',
    '.   containers:',
    '.   - env:',
    '.     - name: A',
    'add     - name: B',
    'add       value: "2"',
  ]);
});

test('a JSON Pointer finds what it names, escapes included', () => {
  const value = { 'a/b': { '~c': [10, 20] } };
  assert.equal(at(value, '/a~1b/~0c/1'), 20);
  assert.equal(at(value, '/a~1b/missing'), undefined);
  assert.equal(at(value, ''), value);
});

test('the share link carries both texts exactly, and nothing else is taken for one', async () => {
  const state = { settings: '# ü\naws: {enabled: true}\n', pod: 'kind: Pod\n'.repeat(200) };
  const fragment = await encode(state);
  assert.match(fragment, /^v1\.[A-Za-z0-9_-]+$/);
  assert.ok(fragment.length < 200, `a repetitive pod should compress: ${fragment.length} characters`);
  assert.deepEqual(await decode(fragment), state);
  assert.equal(await decode('section-2'), null);
  assert.equal(await decode('v1.not-deflate'), null);
  assert.equal(await decode(''), null);
});
