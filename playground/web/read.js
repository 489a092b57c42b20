// Reading what the user typed, YAML or JSON, into the JSON text the policy is given.
//
// The YAML reader is the `yaml` package (eemeli/yaml): maintained, without dependencies, YAML 1.2
// (JSON is YAML, so one reader takes both), and its errors carry a line and a column. serde_yaml,
// which the Rust tests read their cases with, is archived; a Rust reader in the wasm would also
// grow the module that BENCHMARKS.md reports.
//
// The JSON is written here rather than with JSON.stringify: integers are read as BigInt so that
// none is rounded on the way (a pod's numbers are the user's, and the policy keeps them), and
// maps are read as Map so that keys keep the order they were written in, "0" and "1" included.
// Other numbers are doubles, written back in their shortest form: 1.50 reaches the policy as 1.5,
// the same number.

import { parseDocument } from 'yaml';

// A reason the text cannot be read; `yaml`'s messages carry the line, the column and the text.
export class InputError extends Error {}

// The JSON text of the one YAML or JSON document in `text`, or `empty` when it holds none.
export function jsonOf(text, empty) {
  const doc = parseDocument(text, { intAsBigInt: true, prettyErrors: true });
  const error = doc.errors[0];
  if (error) {
    throw new InputError(error.message);
  }
  if (doc.contents === null) {
    if (empty === undefined) {
      throw new InputError('nothing to read: the text holds no document');
    }
    return empty;
  }
  return write(doc.toJS({ mapAsMap: true, maxAliasCount: 1000 }), []);
}

function write(value, path) {
  if (value === null || value === undefined) {
    return 'null';
  }
  switch (typeof value) {
    case 'boolean':
      return String(value);
    case 'bigint':
      return value.toString();
    case 'number':
      if (!Number.isFinite(value)) {
        throw new InputError(`${where(path)} is ${value}, which JSON cannot hold`);
      }
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item, i) => write(item, [...path, i])).join(',')}]`;
  }
  if (value instanceof Map) {
    const seen = new Set();
    const members = [];
    for (const [key, item] of value) {
      if (key !== null && typeof key === 'object') {
        throw new InputError(`${where(path)} has a key that is not a string, number or boolean`);
      }
      const name = String(key ?? 'null');
      // `1` and "1" are two YAML keys but one JSON key, which a JSON reader would take the last of.
      if (seen.has(name)) {
        throw new InputError(`${where(path)} has the key "${name}" twice`);
      }
      seen.add(name);
      members.push(`${JSON.stringify(name)}:${write(item, [...path, name])}`);
    }
    return `{${members.join(',')}}`;
  }
  throw new InputError(`${where(path)} is a ${value.constructor?.name ?? typeof value}, not JSON`);
}

function where(path) {
  return path.length === 0 ? 'the document' : path.join('.');
}
