// The state of the page in the URL fragment, so that a link reopens the same settings and pod.
// The fragment never reaches a server, so a link to a public page can carry a private pod. The
// texts are deflated (the browser's CompressionStream), then written in base64url: a worker pod
// of 150 lines becomes a link of about 2,000 characters.

const PREFIX = 'v1.';

export async function encode(state) {
  const json = new TextEncoder().encode(JSON.stringify({ settings: state.settings, pod: state.pod }));
  const deflated = await pipe(json, new CompressionStream('deflate-raw'));
  let binary = '';
  for (const byte of deflated) {
    binary += String.fromCharCode(byte);
  }
  return PREFIX + btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

// The state in `fragment` (without the '#'), or null when it holds none of ours.
export async function decode(fragment) {
  if (!fragment.startsWith(PREFIX)) {
    return null;
  }
  try {
    const base64 = fragment.slice(PREFIX.length).replaceAll('-', '+').replaceAll('_', '/');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const json = await pipe(bytes, new DecompressionStream('deflate-raw'));
    const state = JSON.parse(new TextDecoder().decode(json));
    if (typeof state?.settings !== 'string' || typeof state?.pod !== 'string') {
      return null;
    }
    return { settings: state.settings, pod: state.pod };
  } catch {
    return null;
  }
}

async function pipe(bytes, transform) {
  const stream = new Blob([bytes]).stream().pipeThrough(transform);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
