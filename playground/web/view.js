// The mutated pod as YAML lines, each marked with what the JSON Patch did to it: `add` where the
// line is inside a value the patch adds (or puts where the pod held null, which Kubernetes reads
// as absent), `change` where the patch replaces a value the user wrote (on OCI, the Multus list
// the policy extends), nothing where the line is the user's. Marks come from the patch the
// policy server computes, not from comparing texts, so they show what the API server would be
// sent.

import { stringify } from 'yaml';

// A number as the JSON text wrote it: JSON.parse would round 12345678901234567891 and drop the
// zero of 1.50, and the policy keeps both.
export class RawNumber {
  constructor(text) {
    this.text = text;
  }
}

// JSON.parse, keeping every number's text where the engine gives it (the reviver's third
// argument; browsers without it get numbers).
export function parseJson(text) {
  return JSON.parse(text, (key, value, context) =>
    typeof value === 'number' && context?.source !== undefined ? new RawNumber(context.source) : value,
  );
}

// The value at a JSON Pointer (RFC 6901), or undefined.
export function at(value, pointer) {
  if (pointer === '') {
    return value;
  }
  let here = value;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (here === null || typeof here !== 'object' || !Object.hasOwn(here, key)) {
      return undefined;
    }
    here = here[key];
  }
  return here;
}

// Pointer -> mark, from a patch of `add` and `replace` operations applied to `original`.
export function marks(patch, original) {
  const byPath = new Map();
  for (const op of patch ?? []) {
    if (op.op === 'add') {
      byPath.set(op.path, 'add');
    } else if (op.op === 'replace') {
      byPath.set(op.path, at(original, op.path) === null ? 'add' : 'change');
    }
  }
  return byPath;
}

// [{text, mark, path}] for `value`, in kubectl's layout (a list under a key is not indented).
export function yamlLines(value, byPath = new Map()) {
  const lines = [];
  block(value, '', '', byPath.get('') ?? null, byPath, lines);
  return lines;
}

function block(value, indent, path, mark, byPath, lines) {
  if (!isContainer(value) || isEmpty(value)) {
    lines.push({ text: indent + scalar(value), mark, path });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const here = `${path}/${i}`;
      const itemMark = mark ?? byPath.get(here) ?? null;
      if (isContainer(item) && !isEmpty(item)) {
        // The item's lines line up two spaces in; its first one takes the dash.
        const first = lines.length;
        block(item, `${indent}  `, here, itemMark, byPath, lines);
        lines[first].text = `${indent}- ${lines[first].text.slice(indent.length + 2)}`;
      } else {
        lines.push({ text: `${indent}- ${scalar(item)}`, mark: itemMark, path: here });
      }
    });
  } else {
    for (const [key, item] of Object.entries(value)) {
      const here = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      const itemMark = mark ?? byPath.get(here) ?? null;
      if (isContainer(item) && !isEmpty(item)) {
        lines.push({ text: `${indent}${scalar(key)}:`, mark: itemMark, path: here });
        block(item, Array.isArray(item) ? indent : `${indent}  `, here, itemMark, byPath, lines);
      } else {
        lines.push({ text: `${indent}${scalar(key)}: ${scalar(item)}`, mark: itemMark, path: here });
      }
    }
  }
}

function isContainer(value) {
  return value !== null && typeof value === 'object' && !(value instanceof RawNumber);
}

function isEmpty(value) {
  return isContainer(value) && (Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0);
}

// One scalar (or empty container) as YAML, on one line: strings that YAML would read as
// something else are quoted, and multi-line strings are written as JSON strings, which YAML
// reads the same.
function scalar(value) {
  if (value instanceof RawNumber) {
    return value.text;
  }
  if (typeof value === 'string' && /[\n\r]/.test(value)) {
    return JSON.stringify(value);
  }
  return stringify(value, { lineWidth: 0, flowCollectionPadding: false }).trimEnd();
}
