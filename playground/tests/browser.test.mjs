// The playground in a real browser: Debian's Chromium, driven by playwright-core, on the built
// site (`make playground-site`) opened from file://, as a user opens the folder, and once from a
// static server. The page is held to the waPC module's answers that `wapc-answers` wrote
// (`make playground-test` runs both): byte for byte for every e2e case, and the patch of every
// example. What the examples must show beyond that is written here by hand from the README's
// table of what each cloud injects.
//
//   node --test playground/tests/browser.test.mjs
//   (PLAYGROUND_SITE, PLAYGROUND_ANSWERS, PLAYGROUND_OUT and CHROMIUM override the paths.)

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { parse } from 'yaml';
import { serve } from '../serve.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const site = resolve(process.env.PLAYGROUND_SITE ?? join(root, 'target/playground'));
const answers = JSON.parse(
  readFileSync(process.env.PLAYGROUND_ANSWERS ?? join(root, 'target/playground-test/answers.json'), 'utf8'),
);
const out = resolve(process.env.PLAYGROUND_OUT ?? join(root, 'target/playground-test'));
const page_url = pathToFileURL(join(site, 'index.html')).href;

// The flags this machine's Chromium needs headless, as root and without a network.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Each cloud's example worker, and what its patch must add, from the README's table: the devices
// are the pod's 8 GPUs times the example settings' per-GPU count.
const CLOUDS = {
  aws: {
    pod: 'pods/pytorchjob-worker.yaml',
    added: [
      ['vpc.amazonaws.com/efa: "32"', 2],
      ['- name: FI_EFA_USE_HUGE_PAGE', 1],
      ['cpu: 100m', 1],
      ['mountPath: /opt/amazon-efa-ofi', 1],
      ['mountPath: /dev/shm', 1],
    ],
  },
  azure: {
    pod: 'pods/mpijob-worker.yaml',
    added: [
      ['rdma/hca_shared_devices_a: "8"', 2],
      ['- IPC_LOCK', 1],
      ['allowPrivilegeEscalation: false', 1],
      ['type: RuntimeDefault', 1],
      ['value: /etc/nccl/nccl-topo.xml', 1],
      ['mountPath: /etc/nccl', 1],
      ['mountPath: /dev/shm', 1],
    ],
  },
  gcp: {
    pod: 'pods/jobset-worker.yaml',
    added: [
      ['- name: NCCL_', 24],
      ['- name: tcpxo-daemon', 1],
      ['restartPolicy: Always', 1],
      ['networking.gke.io/default-interface: eth0', 1],
      ['mountPath: /dev/aperture_devices', 1],
    ],
  },
  oci: {
    pod: 'pods/volcano-worker.yaml',
    added: [
      ['nvidia.com/mlnxnics: "64"', 2],
      ['network-operator/sriov-net', 1],
      ['- name: NCCL_IB_GID_INDEX', 1],
      ['mountPath: /dev/shm', 1],
    ],
  },
  // Beyond the four clouds: settings/rdma.yaml's host-device NIC per GPU, each on hostdevice-net.
  rdma: {
    pod: 'pods/jobset-worker.yaml',
    added: [
      ['nvidia.com/hostdev: "8"', 2],
      ['k8s.v1.cni.cncf.io/networks: hostdevice-net,hostdevice-net,', 1],
      ['- IPC_LOCK', 1],
      ['allowPrivilegeEscalation: false', 1],
      ['mountPath: /dev/shm', 1],
    ],
  },
};

let context;
let profile;
const errors = [];
const requests = new Set();

before(async () => {
  profile = mkdtempSync(join(tmpdir(), 'playground-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 1000 },
  });
  mkdirSync(out, { recursive: true });
});

after(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

async function open(url = page_url) {
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') {
      errors.push(`${url}: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => errors.push(`${url}: ${error.message}`));
  page.on('request', (request) => requests.add(request.url().replace(/#.*/, '')));
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.generation !== '0');
  return page;
}

test("a vendor file beyond the clouds brings its source's worker, and the page answers for it", async () => {
  const page = await open();
  await page.selectOption('#settings-example', 'settings/vendor/coreweave.yaml');
  const shown = await view(page);
  assert.equal(shown.pod, readFileSync(join(root, 'examples/pods/coreweave-worker.yaml'), 'utf8'));
  assert.equal(shown.verdict, 'mutated');
  assert.deepEqual(
    JSON.parse(shown.patch),
    example('settings/vendor/coreweave.yaml', 'pods/coreweave-worker.yaml').patch,
  );
  // CoreWeave's boolean InfiniBand resource, once in requests and once in limits.
  assert.equal(added(shown).filter((text) => text.includes('rdma/ib: "1"')).length, 2);
  await page.close();
});

// What the page shows, as a user reads it.
function view(page) {
  return page.evaluate(() => {
    const text = (id) => document.getElementById(id).textContent;
    const status = (id) => ({ state: document.getElementById(id).dataset.state, text: text(id) });
    return {
      verdict: document.getElementById('verdict').dataset.verdict,
      message: text('verdict-message'),
      warnings: [...document.querySelectorAll('#warnings li')].map((li) => li.textContent),
      patch: text('patch'),
      answer: text('answer'),
      lines: [...document.querySelectorAll('#mutated .line')].map((line) => ({
        text: line.textContent.replace(/\n$/, ''),
        mark: line.classList.contains('add') ? 'add' : line.classList.contains('change') ? 'change' : null,
      })),
      settingsStatus: status('settings-status'),
      podStatus: status('pod-status'),
      settings: document.getElementById('settings').value,
      pod: document.getElementById('pod').value,
      cloud: document.getElementById('cloud').value,
      recordShown: !document.getElementById('record-panel').hidden,
      record: [...document.querySelectorAll('#record tr')].map((tr) => [
        tr.querySelector('th').textContent,
        tr.querySelector('td').textContent,
      ]),
      recordKey: text('record-key'),
      recordJson: text('record-json'),
    };
  });
}

function example(settings, pod) {
  const found = answers.examples.find((e) => e.settings === settings && e.pod === pod);
  assert.ok(found, `wapc-answers wrote nothing for ${settings} with ${pod}`);
  return found;
}

const added = (shown) => shown.lines.filter((line) => line.mark === 'add').map((line) => line.text);

test('opens with an example worker and a cloud, and answers from file:// at once', async (t) => {
  const timings = [];
  const ready = [];
  for (let i = 0; i < 5; i++) {
    const page = await open();
    await page.waitForFunction(() => performance.getEntriesByName('first-answer').length > 0);
    const [policy, answer] = await page.evaluate(() =>
      ['policy-ready', 'first-answer'].map((mark) => performance.getEntriesByName(mark)[0].startTime),
    );
    ready.push(policy);
    timings.push(answer);
    if (i === 0) {
      const shown = await view(page);
      assert.equal(shown.verdict, 'mutated');
      assert.match(shown.settings, /^aws:/m);
      assert.match(shown.pod, /^kind: Pod$/m);
      await page.screenshot({ path: join(out, 'playground.png') });
    }
    await page.close();
  }
  timings.sort((a, b) => a - b);
  const median = timings[Math.floor(timings.length / 2)];
  t.diagnostic(`load to first answer: ${timings.map((ms) => ms.toFixed(0)).join(', ')} ms (median ${median.toFixed(0)})`);
  writeFileSync(join(out, 'first-answer.json'), JSON.stringify({ firstAnswer: timings, policyReady: ready }));
  // Generous: this is a check that the page answers without waiting on anything, not a benchmark.
  assert.ok(median < 5000, `the first answer took ${median} ms`);
});

for (const [cloud, { pod, added: expected }] of Object.entries(CLOUDS)) {
  test(`${cloud}: the example worker's verdict, patch and highlighted additions`, async () => {
    const page = await open();
    // The pod as it was sent: invalid settings reject it, and the page shows it unmarked.
    await page.selectOption('#pod-example', pod);
    await page.fill('#settings', '{}');
    const original = await view(page);
    assert.equal(original.verdict, 'rejected');
    assert.equal(added(original).length, 0);

    await page.selectOption('#settings-example', `settings/${cloud}.yaml`);
    const shown = await view(page);
    assert.equal(shown.verdict, 'mutated');
    assert.equal(shown.cloud, cloud);
    assert.equal(shown.settingsStatus.state, 'valid');
    assert.deepEqual(JSON.parse(shown.patch), example(`settings/${cloud}.yaml`, pod).patch);
    assert.ok(
      JSON.parse(shown.patch).every((op) => op.op === 'add'),
      'the policy only adds to these workers',
    );
    for (const [line, count] of expected) {
      const matching = added(shown).filter((text) => text.includes(line));
      assert.equal(matching.length, count, `highlighted lines with ${line}: ${matching.join(' | ')}`);
    }
    // The highlighting is exactly the additions: without them, the mutated pod is the original.
    assert.deepEqual(
      shown.lines.filter((line) => line.mark === null).map((line) => line.text),
      original.lines.map((line) => line.text),
    );
    await page.close();
  });
}

// The record of what was injected, decoded in the page (README, "Operating"; behaviour.md §2.1)
// for each cloud's example worker, written by hand: the cloud and its fabric, the device the
// README's table names, the machine the pod's node selector names where the policy knows it
// (the Azure pod names an agent pool, the OCI pod nothing), each GPU container with the count
// the README's table gives (8 GPUs × the example settings' per-GPU count; GCP has no device).
const RECORDS = {
  aws: [
    ['Cloud', 'aws'],
    ['Fabric', 'efa'],
    ['Device', 'vpc.amazonaws.com/efa'],
    ['Machine', 'p5.48xlarge (from nodeSelector node.kubernetes.io/instance-type)'],
    ['Container pytorch', '32 devices'],
  ],
  azure: [
    ['Cloud', 'azure'],
    ['Fabric', 'infiniband'],
    ['Device', 'rdma/hca_shared_devices_a'],
    ['Machine', 'not known: no one machine the policy knows is named'],
    ['Container worker', '8 devices'],
  ],
  gcp: [
    ['Cloud', 'gcp'],
    ['Fabric', 'tcpxo'],
    ['Device', 'none (the NICs come through GKE networks)'],
    ['Machine', 'a3-megagpu-8g (from nodeSelector cloud.google.com/gke-accelerator)'],
    ['Container trainer', 'wired'],
  ],
  oci: [
    ['Cloud', 'oci'],
    ['Fabric', 'sriov'],
    ['Device', 'nvidia.com/mlnxnics'],
    ['Machine', 'not known: no one machine the policy knows is named'],
    ['Container trainer', '64 devices'],
  ],
};

for (const [cloud, rows] of Object.entries(RECORDS)) {
  test(`${cloud}: the page shows the record of what was injected, decoded`, async () => {
    const page = await open();
    await page.selectOption('#settings-example', `settings/${cloud}.yaml`);
    await page.selectOption('#pod-example', CLOUDS[cloud].pod);
    const shown = await view(page);
    assert.equal(shown.verdict, 'mutated', shown.message);
    assert.ok(shown.recordShown, 'the record panel is hidden');
    const [policy, ...rest] = [shown.record.at(-1), ...shown.record.slice(0, -1)];
    assert.deepEqual(rest, rows);
    assert.equal(policy[0], 'Policy');
    assert.match(policy[1], /^\d+\.\d+\.\d+$/);
    assert.equal(shown.recordKey, 'nmp.nvidia.com/multi-node-networking-injected');
    // The pretty JSON is the record the pod carries, as the highlighted line shows it.
    const recordLine = added(shown).find((text) =>
      text.trim().startsWith('nmp.nvidia.com/multi-node-networking-injected: '),
    );
    assert.ok(recordLine, 'no highlighted record line in the mutated pod');
    const onPod = parse(recordLine.trim())['nmp.nvidia.com/multi-node-networking-injected'];
    assert.deepEqual(JSON.parse(shown.recordJson), JSON.parse(onPod));
    assert.equal(shown.recordJson, JSON.stringify(JSON.parse(onPod), null, 2));

    // A pod the policy leaves alone has no record to show.
    await page.selectOption('#pod-example', 'pods/not-opted-in.yaml');
    const plain = await view(page);
    assert.equal(plain.verdict, 'unchanged');
    assert.ok(!plain.recordShown, 'a record is shown for an unchanged pod');
    await page.close();
  });
}

// The example pods of the GCP fabrics: a worker per new GCP fabric through the chart's GCP block (the machine,
// named by its GPU model or instance type, picks the fabric), and AMD GPUs on Azure.
const MACHINES = [
  {
    settings: 'settings/gcp.yaml',
    pod: 'pods/gcp-a3-ultra-rdma-worker.yaml',
    added: [
      ['mountPath: /usr/local/gib', 1],
      ['value: gIB', 1],
      ['tuner_config_a3u.txtpb', 1],
      ['"interfaceName":"eth2"', 1],
      ['daemon', 0],
    ],
  },
  {
    settings: 'settings/gcp.yaml',
    pod: 'pods/gcp-a3-high-tcpx-worker.yaml',
    added: [
      ['- name: tcpx-daemon', 1],
      ['- name: tcpxo-daemon', 0],
      ['- name: NCCL_GPUDIRECTTCPX_SOCKET_IFNAME', 1],
      ['"interfaceName":"eth4"', 1],
      ['"interfaceName":"eth5"', 0],
    ],
  },
  {
    settings: 'settings/azure.yaml',
    pod: 'pods/azure-mi300x-amd-worker.yaml',
    added: [
      ['rdma/hca_shared_devices_a: "8"', 2],
      ['- name: RCCL_MSCCL_ENABLE', 1],
      ['- IPC_LOCK', 1],
      // Azure ships no topology file for ND MI300X v5: its row turns it off.
      ['/etc/nccl', 0],
    ],
  },
];

for (const { settings, pod, added: expected } of MACHINES) {
  test(`${pod} with ${settings}: the machine's fabric and GPUs`, async () => {
    const page = await open();
    await page.selectOption('#settings-example', settings);
    await page.selectOption('#pod-example', pod);
    const shown = await view(page);
    assert.equal(shown.verdict, 'mutated', shown.message);
    assert.deepEqual(JSON.parse(shown.patch), example(settings, pod).patch);
    for (const [line, count] of expected) {
      const matching = added(shown).filter((text) => text.includes(line));
      assert.equal(matching.length, count, `highlighted lines with ${line}: ${matching.join(' | ')}`);
    }
    await page.close();
  });
}

test("the chart's whole values block: the cloud menu switches the cloud in place", async () => {
  const page = await open();
  await page.selectOption('#settings-example', 'chart-values.yaml');
  let shown = await view(page);
  assert.equal(shown.cloud, 'aws');
  assert.equal(shown.verdict, 'mutated');
  assert.deepEqual(
    JSON.parse(shown.patch),
    example('chart-values.yaml', 'pods/pytorchjob-worker.yaml').patch,
  );

  await page.selectOption('#cloud', 'gcp');
  shown = await view(page);
  const block = parse(shown.settings).multinodeNetworking;
  assert.deepEqual(
    Object.fromEntries(Object.entries(block).map(([name, settings]) => [name, settings.enabled])),
    { aws: false, azure: false, gcp: true, oci: false },
  );
  assert.equal(block.aws.efaDevicesPerGPU, 4, "the other clouds' values stay");
  assert.match(shown.settings, /^# The multinodeNetworking block/, 'the comments stay');
  assert.equal(shown.verdict, 'mutated');
  assert.equal(added(shown).filter((line) => line.includes('- name: tcpxo-daemon')).length, 1);
  await page.close();
});

test('a bad setting shows the policy server\'s error, naming the field', async () => {
  const page = await open();
  await page.fill('#settings', 'aws:\n  enabled: true\n  efaDevicesPerGpu: 4\n');
  let shown = await view(page);
  assert.equal(shown.settingsStatus.state, 'invalid');
  assert.match(shown.settingsStatus.text, /aws\.efaDevicesPerGpu: unknown key/);
  assert.equal(shown.verdict, 'rejected');
  assert.match(shown.message, /^the policy settings are invalid: .*aws\.efaDevicesPerGpu/);
  assert.equal(added(shown).length, 0);

  await page.fill('#settings', 'aws:\n  enabled: true\n  efaDevicesPerGPU: "4"\n');
  shown = await view(page);
  assert.equal(shown.settingsStatus.state, 'invalid');
  assert.match(shown.settingsStatus.text, /aws\.efaDevicesPerGPU/);

  // Text that is not YAML is the page's to explain, with the line: the policy never sees it.
  await page.fill('#settings', 'aws:\n  enabled: true\n efaDevicesPerGPU: [4\n');
  shown = await view(page);
  assert.equal(shown.settingsStatus.state, 'unreadable');
  assert.match(shown.settingsStatus.text, /line 3/);
  assert.equal(shown.verdict, 'waiting');
  await page.close();
});

// Settings from the cluster: an EKS cluster's nodes (cluster-settings/tests/nodes/eks-p5.json: two
// p5.48xlarge, 32 EFA each) pasted in, the settings pane gets what `make settings` writes (4 EFA per
// GPU for pods that name no type), and the example worker, 8 GPUs on a p5.48xlarge, gets its 32.
test('nodes pasted from kubectl give the settings pane the settings for that cluster', async () => {
  const page = await open();
  await page.click('#cluster-panel summary');
  await page.fill('#cluster', readFileSync(join(root, 'cluster-settings/tests/nodes/eks-p5.json'), 'utf8'));
  await page.click('#cluster-write');
  await page.waitForFunction(() => document.getElementById('cluster-status').dataset.state === 'valid');
  let shown = await view(page);
  assert.match(shown.settings, /^# Read from 3 nodes \(2 with GPUs\) of one EKS cluster/);
  assert.match(shown.settings, /^aws:\n {2}enabled: true\n/m);
  assert.match(shown.settings, /^ {2}efaDevicesPerGPU: 4$/m);
  assert.match(shown.settings, /examples\/settings\/vendor\/aws\.yaml/);
  assert.equal(shown.settingsStatus.state, 'valid');
  assert.equal(shown.cloud, 'aws');
  assert.equal(shown.verdict, 'mutated');
  assert.equal(added(shown).filter((text) => text.includes('vpc.amazonaws.com/efa: "32"')).length, 2);

  // What is not the JSON of nodes is refused under the editor, in one sentence, and the settings stay.
  const before = shown.settings;
  await page.fill('#cluster', 'kind: NodeList\n');
  await page.click('#cluster-write');
  await page.waitForFunction(() => document.getElementById('cluster-status').dataset.state === 'invalid');
  const status = await page.textContent('#cluster-status');
  assert.match(status, /^the cluster's JSON: not JSON .*expected the JSON that `kubectl get nodes -o json` prints/);
  shown = await view(page);
  assert.equal(shown.settings, before);
  await page.close();
});

test('the malformed pod shows the rejection, and the pod that is not opted in is unchanged', async () => {
  const page = await open();
  await page.selectOption('#pod-example', 'pods/malformed.yaml');
  let shown = await view(page);
  assert.equal(shown.verdict, 'rejected');
  assert.match(shown.message, /container "trainer" requests nvidia\.com\/gpu "1\.5", which is not a whole/);
  assert.equal(shown.message, example('settings/aws.yaml', 'pods/malformed.yaml').message);
  assert.match(shown.patch, /^No patch/);
  assert.equal(added(shown).length, 0);

  await page.selectOption('#pod-example', 'pods/not-opted-in.yaml');
  shown = await view(page);
  assert.equal(shown.verdict, 'unchanged');
  assert.deepEqual(shown.warnings, []);
  assert.match(shown.patch, /^No patch/);
  assert.equal(added(shown).length, 0);
  await page.close();
});

test('a large integer in the pod keeps its digits through the policy and the view', async () => {
  const page = await open();
  const pod = (await view(page)).pod.replace('terminationGracePeriodSeconds: 30', 'terminationGracePeriodSeconds: 12345678901234567891');
  await page.fill('#pod', pod);
  const shown = await view(page);
  assert.equal(shown.verdict, 'mutated');
  assert.ok(shown.answer.includes('"terminationGracePeriodSeconds":12345678901234567891'), shown.answer);
  assert.ok(shown.lines.some((line) => line.text === '  terminationGracePeriodSeconds: 12345678901234567891'));
  await page.close();
});

test('the share link reopens the same settings and pod', async () => {
  const page = await open();
  await page.selectOption('#pod-example', 'pods/volcano-worker.yaml');
  const settings = '# mine\noci:\n  enabled: true\n  rdmaDevicesPerGPU: 2\n';
  await page.fill('#settings', settings);
  const pod = (await view(page)).pod.replace('llama3-70b-sft-worker-1', 'llama3-70b-sft-worker-7 # ünïcode');
  await page.fill('#pod', pod);
  await page.waitForFunction(
    () => document.getElementById('share').dataset.generation === document.body.dataset.generation,
  );
  const before = await view(page);
  const link = await page.evaluate(() => document.getElementById('share').href);
  assert.equal(await page.evaluate(() => location.href), link, 'the address bar holds the link too');
  assert.ok(link.startsWith(`${page_url}#v1.`), link);

  const reopened = await open(link);
  const after = await view(reopened);
  assert.equal(after.settings, settings);
  assert.equal(after.pod, pod);
  assert.equal(after.verdict, 'mutated');
  assert.equal(after.patch, before.patch);
  // 8 GPUs x 2 NICs per GPU.
  assert.match(after.patch, /nvidia\.com~1mlnxnics","value":"16"/);
  await page.close();
  await reopened.close();
});

test("the page's calls answer every e2e case byte for byte as the waPC module does", async () => {
  const page = await open();
  assert.ok(answers.cases.length > 100, `only ${answers.cases.length} answers to compare`);
  // Decoding with `fatal` throws on bytes that are not UTF-8, so equal strings mean equal bytes.
  const given = await page.evaluate(
    (cases) =>
      cases.map(({ call, payload }) =>
        new TextDecoder('utf-8', { fatal: true }).decode(window.playground[call](new TextEncoder().encode(payload))),
      ),
    answers.cases,
  );
  const differing = answers.cases.filter((c, i) => given[i] !== c.answer).map((c) => `${c.name} (${c.file})`);
  assert.deepEqual(differing, []);
  await page.close();
});

test('typed into the editors, every e2e case of a pod gets its expected verdict and patch', async () => {
  const page = await open();
  const cases = answers.cases.filter((c) => c.pod);
  assert.ok(cases.length > 50, `only ${cases.length} cases of a pod`);
  const failures = [];
  for (const c of cases) {
    await page.fill('#settings', c.settings);
    await page.fill('#pod', c.pod);
    const shown = await view(page);
    const waPC = JSON.parse(c.answer);
    const verdict = !c.accepted ? 'rejected' : c.expectedPatch ? 'mutated' : 'unchanged';
    const problems = [];
    if (shown.verdict !== verdict) {
      problems.push(`verdict ${shown.verdict}, expected ${verdict} (${shown.message})`);
    }
    if (c.expectedPatch && JSON.stringify(JSON.parse(shown.patch)) !== JSON.stringify(c.expectedPatch)) {
      problems.push(`patch ${shown.patch}\nexpected ${JSON.stringify(c.expectedPatch)}`);
    }
    if (!c.expectedPatch && !shown.patch.startsWith('No patch')) {
      problems.push(`a patch where none was expected: ${shown.patch}`);
    }
    if (JSON.stringify(shown.warnings) !== JSON.stringify(waPC.warnings ?? [])) {
      problems.push(`warnings ${JSON.stringify(shown.warnings)}, the module gave ${JSON.stringify(waPC.warnings)}`);
    }
    if (!c.accepted && shown.message !== waPC.message) {
      problems.push(`message ${shown.message}, the module gave ${waPC.message}`);
    }
    if (problems.length > 0) {
      failures.push(`${c.name} (${c.file}): ${problems.join('; ')}`);
    }
  }
  assert.deepEqual(failures, []);
  await page.close();
});

test('served over HTTP, the page answers as from a folder', async () => {
  const { server, url } = await serve(site);
  try {
    const page = await open(url);
    const shown = await view(page);
    assert.equal(shown.verdict, 'mutated');
    assert.deepEqual(
      JSON.parse(shown.patch),
      example('settings/aws.yaml', 'pods/pytorchjob-worker.yaml').patch,
    );
    await page.close();
  } finally {
    server.close();
  }
});

test('no page logged an error to the console', () => {
  assert.deepEqual(errors, []);
});

test('the page asked for nothing but its own three files', () => {
  const own = (url) => ['index.html', 'style.css', 'playground.js', ''].some((file) => url.endsWith(`/${file}`));
  assert.deepEqual([...requests].filter((url) => !own(url)), []);
  assert.ok(requests.size >= 3, [...requests].join(', '));
});
