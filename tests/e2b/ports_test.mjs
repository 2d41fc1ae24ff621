#!/usr/bin/env node
// A sandbox's own ports through ember-e2b with E2B's JavaScript SDK (the
// e2b package that package-lock.json pins; tests/integration/e2b.sh
// starts ember-e2b):
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY node tests/e2b/ports_test.mjs
//
// A Node HTTP server started in the sandbox (commands.run, background)
// on the guest's 127.0.0.1:8080, reached through sandbox.getHost(8080)
// (PORT-ID.DOMAIN, DOMAIN as create answered it: ember-e2b's default
// localhost:PORT; the name is given as the Host header of a connection
// to ember-e2b, as a wildcard DNS name would route it): a GET with its
// query string as sent, a POST whose body streams there and back, a
// WebSocket echo (a raw Upgrade, frames made here), the headers
// E2b-Sandbox-Id and E2b-Sandbox-Port instead of the name, 64
// WebSockets at once (the next request 503, envd calls unaffected), a
// port nothing listens on (502 at once, E2B's words), an unknown
// sandbox; a sandbox created with network {allowPublicTraffic: false}:
// a trafficAccessToken, 403 without it or with a wrong one, 200 with
// it; a paused sandbox (502 saying so) and one created with autoResume
// (resumed by a request to its port).
// Prints "ok - ..." / "not ok - ... (why)" lines and exits 1 when a
// check failed; every sandbox it made is killed at the end.
import { Sandbox as CI } from '@e2b/code-interpreter';
import { Sandbox } from 'e2b';
import crypto from 'node:crypto';
import http from 'node:http';
import { expect, needEnv, show as showN, sleep, tap, within } from './tap.mjs';

const env = process.env;
needEnv('ports_test.mjs', ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']);
const TPL = env.PORTS_TEMPLATE || 'base';
const api = new URL(env.E2B_API_URL);
const REQ = { requestTimeoutMs: 240000 };
const t = tap('e2b: ports: ', 240000);
const check = t.check;
const created = new Set();
const show = (v) => showN(v, 300);

// The server in the guest: GET echoes its URL and Host; POST /echo sends
// its body back as it comes (chunked); an Upgrade is a WebSocket echo
// of text frames (short ones: what this test sends).
const SERVER = `
const http = require('http'), crypto = require('crypto');
const s = http.createServer((req, res) => {
	if (req.method === 'POST') {
		res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'X-Seen-Host': req.headers.host });
		req.pipe(res);
		return;
	}
	res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Seen-Host': req.headers.host });
	res.end('hello from the guest ' + req.url);
});
s.on('upgrade', (req, sock, head) => {
	const acc = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] +
		'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
	sock.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n' +
		'Connection: Upgrade\\r\\nSec-WebSocket-Accept: ' + acc + '\\r\\n\\r\\n');
	let buf = head;
	sock.on('data', (d) => {
		buf = Buffer.concat([buf, d]);
		while (buf.length >= 6) {
			const op = buf[0] & 15, len = buf[1] & 127;
			if (buf.length < 6 + len) break;
			const mask = buf.subarray(2, 6), p = Buffer.alloc(len);
			for (let i = 0; i < len; i++) p[i] = buf[6 + i] ^ mask[i % 4];
			buf = buf.subarray(6 + len);
			if (op === 8) { sock.end(Buffer.from([0x88, 0])); return; }
			const out = Buffer.from('echo: ' + p.toString());
			sock.write(Buffer.concat([Buffer.from([0x81, out.length]), out]));
		}
	});
});
s.listen(PORT, '127.0.0.1');
`;

async function create(opts = {}, cls = Sandbox) {
	const sbx = await within(300000, cls.create(TPL, { ...REQ, ...opts }), 'Sandbox.create');
	created.add(sbx.sandboxId);
	console.log(`# sandbox ${sbx.sandboxId}`);
	return sbx;
}

// One request to ember-e2b for HOST (the Host header): {status, headers, body}.
function request(host, { method = 'GET', path = '/', headers = {}, body } = {}) {
	return new Promise((resolve, reject) => {
		const req = http.request({
			host: api.hostname, port: api.port, method, path, agent: false,
			headers: { Host: host, ...headers },
		}, (res) => {
			const parts = [];
			res.on('data', (d) => parts.push(d));
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(parts) }));
			res.on('error', reject);
		});
		req.on('error', reject);
		if (typeof body === 'function') body(req);
		else req.end(body);
	});
}

// Start SERVER on PORT in SBX and wait until it answers through getHost.
async function startServer(sbx, port, headers = {}) {
	await sbx.files.write(`/tmp/server${port}.js`, SERVER.replace('PORT', String(port)), REQ);
	await sbx.commands.run(`node /tmp/server${port}.js`, { ...REQ, background: true });
	const end = Date.now() + 180000;
	let r;
	while (Date.now() < end) {
		r = await request(sbx.getHost(port), { path: '/ready', headers });
		if (r.status === 200) return;
		await sleep(500);
	}
	throw new Error(`the server never answered: ${r && r.status} ${r && r.body}`);
}

// A client's WebSocket frame: text @s, masked.
function frame(op, s) {
	const p = Buffer.from(s), mask = crypto.randomBytes(4);
	const out = Buffer.alloc(6 + p.length);
	out[0] = 0x80 | op;
	out[1] = 0x80 | p.length;
	mask.copy(out, 2);
	for (let i = 0; i < p.length; i++) out[6 + i] = p[i] ^ mask[i % 4];
	return out;
}

// A WebSocket to HOST (an Upgrade through ember-e2b): its socket.
function openWs(host) {
	return new Promise((resolve, reject) => {
		const req = http.request({
			host: api.hostname, port: api.port, path: '/ws', agent: false,
			headers: { Host: host, Connection: 'Upgrade', Upgrade: 'websocket',
				'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), 'Sec-WebSocket-Version': '13' },
		});
		req.on('upgrade', (res, sock) => resolve(sock));
		req.on('response', (res) => {
			// The answer's body says why (a 502 names what failed).
			let b = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { if (b.length < 300) b += d; });
			res.on('end', () => reject(new Error(`no upgrade: ${res.statusCode} ${b.trim()}`)));
			res.on('error', () => reject(new Error(`no upgrade: ${res.statusCode}`)));
		});
		req.on('error', reject);
		req.end();
	});
}

async function main() {
	let sbx, priv;
	const P = 8080;

	await check('create answers the domain; getHost(8080) is 8080-ID.DOMAIN; a public sandbox\'s traffic token is its envd token', async () => {
		sbx = await create();
		expect(sbx.sandboxDomain === `localhost:${api.port}`, `sandboxDomain ${show(sbx.sandboxDomain)}`);
		expect(sbx.getHost(P) === `${P}-${sbx.sandboxId}.localhost:${api.port}`, `getHost ${sbx.getHost(P)}`);
		expect(sbx.trafficAccessToken && sbx.trafficAccessToken === sbx.envdAccessToken,
			`trafficAccessToken ${show(sbx.trafficAccessToken)}`);
	}, 320000);
	if (!sbx) return;
	const host = sbx.getHost(P);
	if (!(await check('a Node server started in the sandbox answers through getHost(8080)', () => startServer(sbx, P), 300000)))
		return;
	await check('a GET through getHost(8080): its URL as sent and its Host reach the guest', async () => {
		const r = await request(host, { path: '/a%20b/c?x=1%262&y' });
		expect(r.status === 200, `status ${r.status} ${r.body}`);
		expect(r.body.toString() === 'hello from the guest /a%20b/c?x=1%262&y', `body ${show(r.body.toString())}`);
		expect(r.headers['x-seen-host'] === host, `host seen ${show(r.headers['x-seen-host'])}`);
	});
	await check('a HEAD through getHost(8080): headers, no body', async () => {
		const r = await request(host, { method: 'HEAD', path: '/h' });
		expect(r.status === 200 && r.body.length === 0, `status ${r.status}, ${r.body.length} bytes`);
	});
	await check('a POST of 4 MiB written in pieces streams to the guest and back (chunked both ways)', async () => {
		const piece = crypto.randomBytes(64 << 10);
		const all = [];
		const r = await request(host, {
			method: 'POST', path: '/echo', headers: { 'Content-Type': 'application/octet-stream' },
			body: async (req) => {
				for (let i = 0; i < 64; i++) {
					all.push(piece);
					if (!req.write(piece)) await new Promise((res) => req.once('drain', res));
				}
				req.end();
			},
		});
		const want = Buffer.concat(all);
		expect(r.status === 200, `status ${r.status}: ${r.body.toString().slice(0, 300)}`);
		expect(r.body.length === want.length && r.body.equals(want), `${r.body.length} bytes back of ${want.length}`);
	});
	await check('a POST with a Content-Length through getHost(8080)', async () => {
		const r = await request(host, { method: 'POST', path: '/echo', body: 'x'.repeat(100000) });
		expect(r.status === 200 && r.body.toString() === 'x'.repeat(100000), `status ${r.status}, ${r.body.length} bytes`);
	});
	await check('a WebSocket through getHost(8080): the guest\'s 101, then an echo both ways, then a close', async () => {
		const key = crypto.randomBytes(16).toString('base64');
		const sock = await new Promise((resolve, reject) => {
			const req = http.request({
				host: api.hostname, port: api.port, path: '/ws', agent: false,
				headers: { Host: host, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' },
			});
			req.on('upgrade', (res, s, head) => {
				const acc = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
				if (res.headers['sec-websocket-accept'] !== acc)
					reject(new Error(`Sec-WebSocket-Accept ${show(res.headers['sec-websocket-accept'])}`));
				if (head.length) s.unshift(head);
				resolve(s);
			});
			req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
			req.on('error', reject);
			req.end();
		});
		let got = Buffer.alloc(0);
		const frames = [];
		const closed = new Promise((res) => sock.on('close', res));
		sock.on('data', (d) => {
			got = Buffer.concat([got, d]);
			while (got.length >= 2 && got.length >= 2 + (got[1] & 127)) {
				frames.push({ op: got[0] & 15, text: got.subarray(2, 2 + (got[1] & 127)).toString() });
				got = got.subarray(2 + (got[1] & 127));
			}
		});
		for (const m of ['ping-ember', 'second message']) {
			const n = frames.length;
			sock.write(frame(1, m));
			const end = Date.now() + 30000;
			while (frames.length === n && Date.now() < end) await sleep(20);
			expect(frames.length > n && frames[n].text === `echo: ${m}`, `frames ${show(frames)}`);
		}
		sock.write(frame(8, ''));
		await within(30000, closed, 'the close');
		expect(frames.some((f) => f.op === 8), `no close frame: ${show(frames)}`);
	}, 120000);
	await check('the headers E2b-Sandbox-Id and E2b-Sandbox-Port 8080 instead of the name', async () => {
		const r = await request(`${api.hostname}:${api.port}`, {
			path: '/by-header', headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(P) },
		});
		expect(r.status === 200 && r.body.toString() === 'hello from the guest /by-header', `status ${r.status} ${show(r.body.toString())}`);
	});
	await check('64 WebSockets at once to one sandbox: the next request gets 503 (Retry-After), its envd calls still work; once closed, 200 again', async () => {
		const socks = await Promise.all(Array.from({ length: 64 }, () => openWs(host)));
		try {
			const r = await request(host, { path: '/65th' });
			expect(r.status === 503 && r.headers['retry-after'] === '1' && /the most at once/.test(r.body.toString()),
				`the 65th: ${r.status} ${r.body}`);
			const c = await sbx.commands.run('echo envd-ok', REQ);
			expect(c.stdout.trim() === 'envd-ok', `commands.run meanwhile: ${show(c.stdout)}`);
		} finally {
			await Promise.all(socks.map((sk) => new Promise((res) => {
				sk.on('close', res);
				sk.on('error', res);
				sk.write(frame(8, ''));
				setTimeout(() => { sk.destroy(); res(); }, 20000);
			})));
		}
		const end = Date.now() + 30000;
		let r;
		do {
			r = await request(host, { path: '/after' });
		} while (r.status === 503 && Date.now() < end && (await sleep(200), true));
		expect(r.status === 200, `after closing them: ${r.status} ${r.body}`);
	}, 180000);
	await check('a port nothing listens on: 502 within 10 s, E2B\'s words', async () => {
		const t0 = Date.now();
		const r = await within(10000, request(sbx.getHost(3000), { path: '/' }), 'port 3000');
		const j = JSON.parse(r.body.toString());
		expect(r.status === 502, `status ${r.status}`);
		expect(j.error === 'The sandbox is running but port is not open' && j.port === ':3000' && j.sandboxId === sbx.sandboxId, `body ${show(j)}`);
		expect(Date.now() - t0 < 10000, 'slow');
	});
	await check('an unknown sandbox\'s host: 502 that says so', async () => {
		const r = await request(`${P}-0123456789ab.localhost:${api.port}`, { path: '/' });
		expect(r.status === 502 && /not found/.test(r.body.toString()), `status ${r.status} ${r.body}`);
	});
	await check('a host of another domain is no sandbox\'s: ember-e2b\'s own 401', async () => {
		const r = await request(`${P}-${sbx.sandboxId}.example.com`, { path: '/' });
		expect(r.status === 401, `status ${r.status} ${r.body}`);
	});

	await check('network {allowPublicTraffic: false}: create answers a trafficAccessToken', async () => {
		priv = await create({ network: { allowPublicTraffic: false } }, CI);
		expect(typeof priv.trafficAccessToken === 'string' && priv.trafficAccessToken.length >= 16 &&
			priv.trafficAccessToken !== priv.envdAccessToken, `trafficAccessToken ${show(priv.trafficAccessToken)}`);
		const info = await Sandbox.getInfo(priv.sandboxId, REQ);
		expect(info.network && info.network.allowPublicTraffic === false, `getInfo network ${show(info.network)}`);
	}, 320000);
	if (priv) await privateChecks(priv, host);
	await pauseChecks(sbx, host);
}

async function privateChecks(priv, host) {
	const P = 8080;
	const tok = { 'e2b-traffic-access-token': priv.trafficAccessToken };
	await check('its port answers with the token (e2b-traffic-access-token)', () => startServer(priv, P, tok), 300000);
	await check('its port without the token, or with a wrong one: 403; with it: 200', async () => {
		const ph = priv.getHost(P);
		const none = await request(ph, { path: '/' });
		expect(none.status === 403, `without: ${none.status} ${none.body}`);
		const wrong = await request(ph, { path: '/', headers: { 'e2b-traffic-access-token': 'f'.repeat(32) } });
		expect(wrong.status === 403, `wrong: ${wrong.status}`);
		const hdr = await request(`${api.hostname}:${api.port}`, {
			path: '/', headers: { 'E2b-Sandbox-Id': priv.sandboxId, 'E2b-Sandbox-Port': String(P) },
		});
		expect(hdr.status === 403, `by header, without: ${hdr.status}`);
		const ok = await request(ph, { path: '/t', headers: tok });
		expect(ok.status === 200 && ok.body.toString() === 'hello from the guest /t', `with: ${ok.status} ${ok.body}`);
		const other = await request(host, { path: '/p', headers: tok });
		expect(other.status === 200, `a public sandbox with a token: ${other.status}`);
	});
	await check('its code interpreter: runCode, and a context (the SDK sends only the traffic token for it)', async () => {
		const ctx = await priv.createCodeContext({ requestTimeoutMs: 240000 });
		const ex = await priv.runCode('x = 40 + 2; x', { context: ctx, timeoutMs: 240000 });
		expect(ex.text === '42', `runCode ${show(ex.text)} ${show(ex.error)}`);
	}, 300000);
}

async function pauseChecks(sbx, host) {
	await check('a paused sandbox (no autoResume): its ports answer 502 that says it is paused; connect resumes it', async () => {
		await sbx.pause(REQ);
		const r = await request(host, { path: '/' });
		expect(r.status === 502 && /paused/.test(r.body.toString()), `status ${r.status} ${r.body}`);
		await Sandbox.connect(sbx.sandboxId, REQ);
	}, 240000);
	await check('a paused sandbox created with autoResume: a request to its port resumes it', async () => {
		const ar = await create({ timeoutMs: 300000, lifecycle: { onTimeout: 'pause', autoResume: true } });
		await ar.pause(REQ);
		expect((await Sandbox.getInfo(ar.sandboxId, REQ)).state === 'paused', 'not paused');
		const r = await request(ar.getHost(3000), { path: '/' });
		const j = JSON.parse(r.body.toString());
		expect(r.status === 502 && j.error === 'The sandbox is running but port is not open', `status ${r.status} ${show(j)}`);
		const st = (await Sandbox.getInfo(ar.sandboxId, REQ)).state;
		expect(st === 'running', `state ${st}`);
	}, 320000);
}

try {
	await main();
} catch (e) {
	t.fail('the test runs', e);
} finally {
	for (const id of created)
		await Sandbox.kill(id, REQ).catch(() => {});
}
process.exit(t.failed() ? 1 : 0);
