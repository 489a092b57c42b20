// Serves a folder on 127.0.0.1 for `make playground` and the browser test: any static host will
// do for the playground, this one needs nothing but Node.
//
//   node playground/serve.mjs [DIR] [PORT]     (DIR: target/playground; PORT: 8000, 0 = any free)

import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
};

export function serve(dir, port = 0) {
  const root = resolve(dir);
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, 'http://localhost').pathname);
    let file = normalize(join(root, path.endsWith('/') ? `${path}index.html` : path));
    // Nothing outside the folder, whatever `..` the path holds.
    if (file !== root && !file.startsWith(root + sep)) {
      response.writeHead(403).end();
      return;
    }
    try {
      if (statSync(file).isDirectory()) {
        file = join(file, 'index.html');
      }
      const size = statSync(file).size;
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': size });
      createReadStream(file).pipe(response);
    } catch {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => done({ server, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir = 'target/playground', port = '8000'] = process.argv.slice(2);
  const { url } = await serve(dir, Number(port));
  console.log(`The playground is at ${url} (Ctrl-C stops the server)`);
}
