/**
 * A throwaway HTTP server with the routes `web_demo` serves (GET only):
 * `/` is web/index.html, `/web/<file>`, `/dist/<path>`, and
 * `/zao/certificate` (what `certificate()` returns; null answers 503).
 * With `fake: true`, index.html loads fake-webtransport.js first, so the
 * page talks to an in-page fake server instead of the network.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { PKG } from './harness.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.css': 'text/css',
  '.png': 'image/png',
};

export interface StaticOptions {
  fake: boolean;
  /** The port to listen on (0 or absent: any). */
  port?: number;
  certificate: () => { hashes: string[]; port: number } | null;
}

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

/** The file under `root` that `rel` names, or null if it leaves `root`. */
function inside(root: string, rel: string): string | null {
  const p = normalize(join(root, decodeURIComponent(rel)));
  return p.startsWith(root + sep) ? p : null;
}

export async function startStatic(o: StaticOptions): Promise<StaticServer> {
  const web = join(PKG, 'web');
  const dist = join(PKG, 'dist');
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method !== 'GET') {
        res.writeHead(405).end();
        return;
      }
      if (path === '/zao/certificate') {
        const c = o.certificate();
        if (c === null) res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
        else res.writeHead(200, { 'content-type': TYPES['.json']!, 'cache-control': 'no-store' }).end(JSON.stringify(c));
        return;
      }
      let file: string | null = null;
      if (path === '/' || path === '/index.html') file = join(web, 'index.html');
      else if (path.startsWith('/web/')) file = inside(web, path.slice(5));
      else if (path.startsWith('/dist/')) file = inside(dist, path.slice(6));
      if (file === null) {
        res.writeHead(404).end();
        return;
      }
      try {
        let body: Buffer | string = await readFile(file);
        if (o.fake && file === join(web, 'index.html')) {
          body = body.toString('utf8').replace('<script type="module" src="/dist/web/main.js">', '<script type="module" src="/dist/test-browser/fake-webtransport.js"></script>\n  <script type="module" src="/dist/web/main.js">');
        }
        res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
      } catch {
        res.writeHead(404).end();
      }
    })();
  });
  await new Promise<void>((ok) => server.listen(o.port ?? 0, '127.0.0.1', ok));
  const a = server.address();
  const port = typeof a === 'object' && a !== null ? a.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
