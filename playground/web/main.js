// The playground page: the editors, the menus, and the policy's answer to what they hold. Every
// answer comes from the policy itself (the wasm module's `review`, which calls the same
// `validate` and `validate_settings` as the waPC module), so the page knows nothing of the
// settings but how to switch the cloud: the rest is passed through, and the policy's messages
// are shown as they are.

import init, { cluster_settings, review, validate, validate_settings } from 'playground:glue';
import wasm from 'playground:wasm';
import examples from 'playground:examples';
import { isMap, parseDocument } from 'yaml';
import { jsonOf } from './read.js';
import { encode, decode } from './share.js';
import { at, marks, parseJson, yamlLines } from './view.js';

// The settings' cloud blocks, each switched on by its `enabled`.
const CLOUDS = [
  ['aws', 'AWS (EFA)'],
  ['azure', 'Azure (InfiniBand)'],
  ['gcp', 'GCP (TCPXO)'],
  ['oci', 'OCI (SR-IOV)'],
  ['rdma', 'Beyond the clouds (RDMA device plugins)'],
];
const FIRST_VIEW = { settings: 'settings/aws.yaml', pod: 'pods/pytorchjob-worker.yaml' };
const YOUR_OWN = '';

const $ = (id) => document.getElementById(id);
let generation = 0;
let written = '';

main().catch((error) => {
  show('verdict-word', 'The policy could not be loaded.');
  show('verdict-message', String(error));
  throw error;
});

async function main() {
  await init({ module_or_path: wasm });
  performance.mark('policy-ready');
  // The policy's calls, for the browser test and the curious: `validate` and `validate_settings`
  // take and give the same bytes as the waPC module's.
  window.playground = { validate, validate_settings, review, cluster_settings };

  menu($('cloud'), [[YOUR_OWN, '—'], ...CLOUDS]);
  for (const [id, files] of [['settings', examples.settings], ['pod', examples.pods]]) {
    menu($(`${id}-example`), [[YOUR_OWN, '(your own)'], ...files.map((file) => [file.name, file.name])]);
  }

  const shared = await decode(location.hash.slice(1));
  if (shared) {
    $('settings').value = shared.settings;
    $('pod').value = shared.pod;
  } else {
    load('settings', FIRST_VIEW.settings);
    load('pod', FIRST_VIEW.pod);
  }
  update();
  // After the frame that shows it is painted: a timeout queued by the frame's callback.
  requestAnimationFrame(() => setTimeout(() => performance.mark('first-answer')));

  for (const id of ['settings', 'pod']) {
    $(id).addEventListener('input', () => {
      $(`${id}-example`).value = YOUR_OWN;
      update();
    });
    $(`${id}-example`).addEventListener('change', (e) => {
      if (load(id, e.target.value)) {
        if (id === 'settings') {
          load('pod', podFor(e.target.value));
        }
        update();
      }
    });
  }
  $('cloud').addEventListener('change', (e) => {
    switchCloud(e.target.value);
    update();
  });
  $('cluster-write').addEventListener('click', writeFromCluster);
  $('copy').addEventListener('click', copyLink);
  window.addEventListener('hashchange', async () => {
    const state = location.hash.slice(1) === written ? null : await decode(location.hash.slice(1));
    if (state) {
      $('settings').value = state.settings;
      $('pod').value = state.pod;
      $('settings-example').value = YOUR_OWN;
      $('pod-example').value = YOUR_OWN;
      update();
    }
  });
}

function menu(select, options) {
  select.replaceChildren(
    ...options.map(([value, label]) => Object.assign(document.createElement('option'), { value, textContent: label })),
  );
}

// Puts the example `name` in the editor; false if there is none of that name.
function load(editor, name) {
  const file = [...examples.settings, ...examples.pods].find((f) => f.name === name);
  if (file) {
    $(editor).value = file.text;
    $(`${editor}-example`).value = name;
  }
  return file !== undefined;
}

// The example pod made for a settings example, where there is one: a vendor file's own worker
// (`settings/vendor/coreweave.yaml` → `pods/coreweave-worker.yaml`).
function podFor(settings) {
  const stem = settings.split('/').pop().replace(/\.ya?ml$/, '');
  return `pods/${stem}-worker.yaml`;
}

// With the chart's whole block (several clouds in it), the cloud is switched where it stands,
// keeping the user's comments and other values; otherwise that cloud's example is loaded.
function switchCloud(cloud) {
  if (cloud === YOUR_OWN) {
    return;
  }
  const doc = parseDocument($('settings').value);
  const path = doc.errors.length === 0 ? blockPath(doc.toJS({ mapAsMap: true })) : null;
  const block = path && (path.length === 0 ? doc.contents : doc.getIn(path));
  if (isMap(block) && isMap(block.get(cloud))) {
    for (const [name] of CLOUDS) {
      if (isMap(block.get(name))) {
        doc.setIn([...path, name, 'enabled'], name === cloud);
      }
    }
    $('settings').value = doc.toString();
    $('settings-example').value = YOUR_OWN;
  } else {
    load('settings', `settings/${cloud}.yaml`);
  }
}

// Where the policy reads its settings from in a document: the first `multinodeNetworking` block
// at any depth (a whole values file), else the document itself, as `settings_block` in Rust does.
function blockPath(value) {
  const find = (here, path) => {
    if (here instanceof Map && here.has('multinodeNetworking')) {
      return [...path, 'multinodeNetworking'];
    }
    const items = here instanceof Map ? [...here] : Array.isArray(here) ? [...here.entries()] : [];
    for (const [key, item] of items) {
      const found = find(item, [...path, key]);
      if (found) {
        return found;
      }
    }
    return null;
  };
  return find(value, []) ?? [];
}

function update() {
  generation += 1;
  const settings = read('settings', '{}');
  const pod = read('pod');
  if (settings === null || pod === null) {
    const unread = settings === null ? 'settings' : 'pod';
    verdict('waiting', 'No answer yet', `The ${unread} cannot be read as YAML or JSON: see below the ${unread}.`);
    for (const id of ['warnings', 'patch', 'mutated', 'payload', 'answer', 'pod-hint']) {
      $(id).replaceChildren();
    }
    showRecord(null, null);
  } else {
    answer(JSON.parse(review(pod, settings)), pod);
  }
  document.body.dataset.generation = String(generation);
  share(generation);
}

// The editor's text as JSON, or null with the reason under the editor.
function read(id, empty) {
  const status = $(`${id}-status`);
  try {
    const json = jsonOf($(id).value, empty);
    status.replaceChildren();
    status.dataset.state = 'read';
    return json;
  } catch (error) {
    status.textContent = error.message;
    status.dataset.state = 'unreadable';
    return null;
  }
}

function answer(result, podJson) {
  if (result.error) {
    verdict('waiting', 'No answer', result.error);
    showRecord(null, null);
    return;
  }
  const check = JSON.parse(result.settingsAnswer);
  const status = $('settings-status');
  if (check.valid) {
    status.textContent = 'The policy accepts these settings.';
    status.dataset.state = 'valid';
  } else {
    // What the policy server logs when it refuses to load the policy.
    status.textContent = `The policy server refuses these settings and does not load the policy: ${check.message}`;
    status.dataset.state = 'invalid';
  }
  const enabled = CLOUDS.filter(([name]) => result.settings?.[name]?.enabled === true);
  $('cloud').value = enabled.length === 1 ? enabled[0][0] : YOUR_OWN;

  const response = parseJson(result.answer);
  const original = parseJson(podJson);
  const patch = result.patch === null ? null : JSON.parse(result.patch);
  if (!response.accepted) {
    verdict('rejected', 'Rejected', response.message);
  } else if (patch) {
    verdict('mutated', 'Mutated', `${patch.length} patch operation${patch.length === 1 ? '' : 's'}`);
  } else {
    verdict('unchanged', 'Unchanged', 'The pod is accepted as it is.');
  }
  $('warnings').replaceChildren(
    ...(response.warnings ?? []).map((w) => Object.assign(document.createElement('li'), { textContent: w })),
  );
  showRecord(response.audit_annotations?.injected ?? null, response.mutated_object ?? null);
  $('patch').textContent = result.patch ?? (response.accepted ? 'No patch: the pod is created as it is.' : 'No patch: the pod is not created.');
  $('payload').textContent = result.payload;
  $('answer').textContent = result.answer;

  const mutated = response.mutated_object ?? null;
  const byPath = patch ? marks(patch, original) : new Map();
  const lines = yamlLines(mutated ?? original, byPath);
  $('pod-title').textContent = mutated ? 'Mutated pod' : 'Pod';
  const added = lines.filter((l) => l.mark === 'add').length;
  const changed = lines.filter((l) => l.mark === 'change').length;
  $('pod-hint').textContent = mutated
    ? `${added} line${added === 1 ? '' : 's'} added, ${changed} changed`
    : 'as it was sent';
  $('mutated').replaceChildren(...lines.map((line) => row(line, original)));
  // The additions are what the user came for: the view opens a few lines above the first one.
  const first = $('mutated').querySelector('.add, .change');
  const above = first?.previousElementSibling?.previousElementSibling?.previousElementSibling;
  $('mutated').scrollTop = above ? above.offsetTop : 0;
}

// The record of what was injected (behaviour.md §2.1), from the answer's audit annotation: a
// table of what it says, and the JSON pretty-printed, as `kubectl … | jq .` shows it.
const RECORD_KEY = 'nmp.nvidia.com/multi-node-networking-injected';

function showRecord(text, mutated) {
  const record = text === null ? null : JSON.parse(text);
  $('record-panel').hidden = record === null;
  if (record === null) {
    $('record').tBodies[0].replaceChildren();
    $('record-json').textContent = '';
    return;
  }
  const annotations = mutated?.metadata?.annotations ?? {};
  // The key the settings chose: the annotation whose value is the record.
  const key = Object.keys(annotations).find((k) => annotations[k] === text);
  $('record-key').textContent = key ?? `${RECORD_KEY}: none on the pod (recordAnnotation: "")`;
  const machine = record.machine
    ? `${record.machine.name} (from ${record.machine.from})`
    : 'not known: no one machine the policy knows is named';
  const rows = [
    ['Cloud', record.cloud],
    ['Fabric', record.fabric],
    ['Device', record.device ?? 'none (the NICs come through GKE networks)'],
    ['Machine', machine],
    ...Object.entries(record.containers ?? {}).map(([name, got]) => [
      `Container ${name}`,
      got.claim !== undefined ? `claim ${got.claim}` : got.devices !== undefined ? `${got.devices} devices` : 'wired',
    ]),
    ['Policy', record.policy],
  ];
  $('record').tBodies[0].replaceChildren(
    ...rows.map(([name, value]) => {
      const tr = document.createElement('tr');
      tr.append(
        Object.assign(document.createElement('th'), { scope: 'row', textContent: name }),
        Object.assign(document.createElement('td'), { textContent: value }),
      );
      return tr;
    }),
  );
  $('record-json').textContent = JSON.stringify(record, null, 2);
}

function row(line, original) {
  const span = document.createElement('span');
  span.className = `line${line.mark ? ` ${line.mark}` : ''}`;
  span.dataset.gutter = line.mark === 'add' ? '+' : line.mark === 'change' ? '~' : ' ';
  span.textContent = `${line.text}\n`;
  if (line.mark === 'change') {
    span.title = `was: ${JSON.stringify(at(original, line.path))}`;
  }
  return span;
}

function verdict(kind, word, message) {
  $('verdict').dataset.verdict = kind;
  show('verdict-word', word);
  show('verdict-message', message ?? '');
}

function show(id, text) {
  $(id).textContent = text;
}

// The link is written after the answer (compression is asynchronous); a later edit wins.
async function share(mine) {
  const fragment = await encode({ settings: $('settings').value, pod: $('pod').value });
  if (mine !== generation) {
    return;
  }
  written = fragment;
  $('share').href = `#${fragment}`;
  $('share').dataset.generation = String(mine);
  try {
    history.replaceState(null, '', `#${fragment}`);
  } catch {
    // Some browsers refuse history changes on file:// pages; the link still holds the state.
  }
}

// Settings from the cluster's JSON, by the function `make settings` calls: they replace the
// settings pane's, and the page answers for them; a refusal stays under the cluster's editor.
function writeFromCluster() {
  const result = JSON.parse(cluster_settings($('cluster').value));
  const status = $('cluster-status');
  if (result.error) {
    status.textContent = result.error;
    status.dataset.state = 'invalid';
    return;
  }
  $('settings').value = result.yaml;
  $('settings-example').value = YOUR_OWN;
  status.textContent = 'Written into the settings below: the comments say what was read, and which vendor file holds what the nodes cannot tell.';
  status.dataset.state = 'valid';
  update();
}

async function copyLink() {
  try {
    await navigator.clipboard.writeText($('share').href);
    show('copied', 'Copied.');
  } catch {
    show('copied', 'Copy the link from the address bar.');
  }
}
