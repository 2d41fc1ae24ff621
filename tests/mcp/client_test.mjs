#!/usr/bin/env node
// ember-mcp end to end with the official MCP TypeScript SDK's client.
//
//   node tests/mcp/client_test.mjs stdio|http [--server PATH] [--no-confirm]
//
// Starts ember-mcp itself (over stdio: the SDK's StdioClientTransport
// spawns it; over HTTP: `ember-mcp --http 127.0.0.1:0 --token-file F`,
// the SDK's StreamableHTTPClientTransport with the bearer token) and
// prints one line per check, "ok - mcp TRANSPORT: ..." or
// "not ok - mcp TRANSPORT: ... (why)", then "#" lines with the servers'
// last stderr lines when something failed.  Exits 1 when a check failed.
//
// Every ember-mcp it starts runs with --kill-on-disconnect, so that the
// clean-up checks hold (by default sandboxes outlive the session: that is
// owner_test.mjs's).
//
// Sandboxes live in $EMBER_STATE_DIR (which must hold the template that
// ember-mcp uses, "default" unless MCP_TEMPLATE says otherwise); the
// clean-up checks look there: once the clients are gone, no sandbox
// directory is left and no process has the state directory in its
// command line.  EMBER_BIN etc. are passed on to ember-mcp.
import { spawn, execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

// ---- arguments, environment -------------------------------------------------
const argv = process.argv.slice(2);
const mode = argv[0];
if (mode !== 'stdio' && mode !== 'http') {
	console.error('usage: client_test.mjs stdio|http [--server PATH] [--no-confirm]');
	process.exit(2);
}
function opt(name, dflt) {
	const i = argv.indexOf(name);
	return i > 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
}
const repo = resolve(new URL('../..', import.meta.url).pathname);
function defaultServer() {
	for (const p of ['build/ember-mcp', 'build-mcp/ember-mcp']) {
		if (existsSync(join(repo, p))) return join(repo, p);
	}
	return join(repo, 'build/ember-mcp');
}
const server = resolve(opt('--server', process.env.EMBER_MCP || defaultServer()));
const doConfirm = !argv.includes('--no-confirm');
const stateDir = process.env.EMBER_STATE_DIR;
if (!stateDir) {
	console.error('client_test.mjs: set EMBER_STATE_DIR');
	process.exit(2);
}
const serverArgs = [...(process.env.MCP_TEMPLATE ? ['--template', process.env.MCP_TEMPLATE] : []),
	'--kill-on-disconnect'];
const CALL = { timeout: 120000 }; // per request: a hang fails, it does not stall
const tmp = mkdtempSync(join(tmpdir(), 'ember-mcp-test.'));
const TOOLS = ['create_sandbox', 'run_code', 'run_command', 'write_file', 'read_file',
	'list_files', 'pause_sandbox', 'resume_sandbox', 'kill_sandbox', 'list_sandboxes',
	'expose_port'];

// ---- reporting ----------------------------------------------------------------
let failed = 0;
const prefix = `mcp ${mode}: `;
function oneLine(s) {
	s = String(s).replace(/\s+/g, ' ').trim();
	return s.length > 400 ? s.slice(0, 400) + '...' : s;
}
// check NAME FN: ok when FN (sync or async) returns without throwing.
async function check(name, fn) {
	try {
		await fn();
		console.log(`ok - ${prefix}${name}`);
		return true;
	} catch (e) {
		failed++;
		console.log(`not ok - ${prefix}${name} (${oneLine(e && e.message ? e.message : e)})`);
		return false;
	}
}
function expect(cond, why) {
	if (!cond) throw new Error(why);
}
const show = (v) => oneLine(JSON.stringify(v));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint() / 1000000n);

// ---- servers and clients ---------------------------------------------------------
const logs = []; // [{name, text}] the servers' stderr, shown when a check failed
const serverLog = process.env.MCP_SERVER_LOG; // every server's stderr, appended, when set
function collect(name, stream) {
	const log = { name, text: '' };
	logs.push(log);
	stream?.on('data', (d) => {
		if (serverLog) appendFileSync(serverLog, d);
		log.text += d.toString();
		if (log.text.length > 200000) log.text = log.text.slice(-100000);
	});
	return log;
}
const httpServers = []; // child processes to stop at the end

function freePort() {
	return new Promise((res, rej) => {
		const s = createServer();
		s.on('error', rej);
		s.listen(0, '127.0.0.1', () => {
			const p = s.address().port;
			s.close(() => res(p));
		});
	});
}

// Starts `ember-mcp --http` on ADDR:PORT; resolves with {proc, url} once
// it printed its "listening on" line, or null when it exited first.
function startHttpOn(addrPort, tokenFile, extra, name) {
	return new Promise((res) => {
		const proc = spawn(server, ['--http', addrPort, '--token-file', tokenFile, ...serverArgs, ...extra],
			{ env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
		const log = collect(name, proc.stderr);
		let done = false;
		const finish = (v) => { if (!done) { done = true; clearTimeout(timer); res(v); } };
		const timer = setTimeout(() => { proc.kill('SIGKILL'); finish(null); }, 30000);
		proc.stderr.on('data', () => {
			const m = log.text.match(/ember-mcp: listening on (http:\/\/\S+\/mcp)/);
			if (m) finish({ proc, url: m[1] });
		});
		proc.on('error', () => finish(null));
		proc.on('exit', () => finish(null));
	});
}
// Port 0 first (the kernel picks one; the line says which); if ember-mcp
// does not take it, a port that was free a moment ago.
async function startHttp(tokenFile, extra, name) {
	let s = await startHttpOn('127.0.0.1:0', tokenFile, extra, name);
	if (s && /:0\/mcp$/.test(s.url)) {
		s.proc.kill('SIGKILL');
		s = null;
	}
	if (!s) s = await startHttpOn(`127.0.0.1:${await freePort()}`, tokenFile, extra, name);
	if (s) httpServers.push(s.proc);
	return s;
}

// A connected SDK client; over stdio it spawns its own ember-mcp.
// opts: {confirm, elicit: handler or undefined, name, http: {url, token}}
async function connect(opts = {}) {
	const capabilities = opts.elicit ? { elicitation: {} } : {};
	const client = new Client({ name: `ember-test-${opts.name || 'main'}`, version: '1.0.0' },
		{ capabilities });
	if (opts.elicit) client.setRequestHandler(ElicitRequestSchema, opts.elicit);
	let transport;
	if (mode === 'stdio') {
		transport = new StdioClientTransport({
			command: server,
			args: [...serverArgs, ...(opts.confirm ? ['--confirm'] : [])],
			env: { ...process.env },
			stderr: 'pipe',
		});
		collect(`ember-mcp (stdio, ${opts.name || 'main'})`, transport.stderr);
	} else {
		transport = new StreamableHTTPClientTransport(new URL(opts.http.url), {
			requestInit: { headers: { Authorization: `Bearer ${opts.http.token}` } },
		});
	}
	await client.connect(transport, CALL);
	return { client, transport };
}
// Over stdio: ends the server's stdin and waits up to MS for it to exit
// by itself (the SDK's close() would signal it after 2 s, which a server
// that kills its sandboxes first (--kill-on-disconnect) may need on a
// loaded host): {code, signal, ms}, or null when it did not exit (or the
// SDK keeps its process elsewhere).
async function ownExit(transport, ms) {
	const p = transport._process;
	if (!p || !p.stdin) return null;
	const t0 = now();
	if (p.exitCode !== null || p.signalCode !== null) return { code: p.exitCode, signal: p.signalCode, ms: 0 };
	const exited = new Promise((r) => p.once('exit', (code, signal) => r({ code, signal, ms: now() - t0 })));
	p.stdin.end();
	return Promise.race([exited, sleep(ms).then(() => null)]);
}
// Closes a client the way it goes away: stdio ends the server's stdin
// (ownExit()); HTTP DELETEs the session.  Resolves with ownExit()'s
// result over stdio, else null.
async function disconnect(c) {
	if (!c) return null;
	let self = null;
	try {
		if (mode === 'http') await c.transport.terminateSession();
		else self = await ownExit(c.transport, 20000);
	} catch { /* the check that follows says what is left */ }
	try {
		await c.client.close();
	} catch { /* likewise */ }
	return self;
}

// ---- helpers on results -----------------------------------------------------------
// A tool (run_code: per language) whose call ran into the request timeout
// is not tried again: the checks that need it fail at once, so that a
// server that hangs fails the test in minutes rather than hours.
const hung = new Set();
async function call(client, name, args) {
	const key = name === 'run_code' ? `${name} (${(args && args.language) || 'python'})` : name;
	if (hung.has(key)) throw new Error(`${key} timed out before: not tried again`);
	let r;
	try {
		r = await client.callTool({ name, arguments: args }, undefined, CALL);
	} catch (e) {
		if (e instanceof McpError && e.code === -32001) {
			hung.add(key);
			throw new Error(`${key}: no answer within ${CALL.timeout / 1000} s (${e.message})`);
		}
		throw e;
	}
	if (name === 'create_sandbox' && r && r.structuredContent && typeof r.structuredContent.sandbox_id === 'string') {
		remember(r.structuredContent.sandbox_id);
	}
	return r;
}
function sc(r) {
	expect(r && typeof r === 'object', `no result: ${show(r)}`);
	expect(!r.isError, `isError: ${show(r.content)}`);
	expect(r.structuredContent && typeof r.structuredContent === 'object',
		`no structuredContent: ${show(r)}`);
	return r.structuredContent;
}
const texts = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
function mainText(s) {
	const m = (s.results || []).find((x) => x.is_main_result);
	return m ? m.text : undefined;
}
async function code(client, sid, src, extra = {}) {
	return sc(await call(client, 'run_code', { sandbox_id: sid, code: src, ...extra }));
}
// runs CODE and expects its main result's text to be WANT
async function expectValue(client, sid, src, want, extra = {}) {
	const s = await code(client, sid, src, extra);
	expect(!s.error, `error: ${show(s.error)}`);
	expect(mainText(s) === want, `main result ${show(mainText(s))}, wanted ${show(want)}; got ${show(s)}`);
	return s;
}
async function cmd(client, sid, command, extra = {}) {
	return sc(await call(client, 'run_command', { sandbox_id: sid, command, ...extra }));
}
async function expectMcpError(p, code) {
	let r;
	try {
		r = await p;
	} catch (e) {
		expect(e instanceof McpError, `threw ${e}, not an McpError`);
		expect(e.code === code, `McpError code ${e.code} (${e.message}), wanted ${code}`);
		return e;
	}
	throw new Error(`no JSON-RPC error; result ${show(r)}`);
}

// ---- the state directory, processes -------------------------------------------------------
function sandboxDirs() {
	try {
		return readdirSync(stateDir).filter((n) => /^[0-9a-f]{12}$/.test(n));
	} catch {
		return [];
	}
}
function stateProcs(pattern = `${stateDir.replace(/\/+$/, "")}/`) {
	try {
		return execFileSync('pgrep', ['-af', pattern], { encoding: 'utf8' })
			.split('\n').filter((l) => l && !l.startsWith(`${process.pid} `));
	} catch {
		return []; // pgrep: none
	}
}
// The processes of each sandbox seen (its info file: the supervisor,
// with its start time, and ember), so that a supervisor, whose command
// line need not name the state directory, is found too.
const known = new Map(); // sandbox id -> [{pid, start}]
function procStart(pid) {
	try {
		const st = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/.*\) /s, '').split(' ');
		return st[0] === 'Z' ? null : st[19];
	} catch {
		return null;
	}
}
function remember(sid) {
	try {
		const info = readFileSync(join(stateDir, sid, 'info'), 'utf8');
		const get = (k) => (info.match(new RegExp(`^${k}=(.*)$`, 'm')) || [])[1];
		const ps = [];
		const sup = Number(get('supervisor'));
		if (sup > 0) ps.push({ pid: sup, start: get('supervisor_start'), what: 'supervisor' });
		const emb = Number(get('ember'));
		if (emb > 0) ps.push({ pid: emb, start: procStart(emb), what: 'ember' });
		known.set(sid, ps);
	} catch { /* no info file: the directory check says so */ }
}
function knownAlive(keep) {
	const out = [];
	for (const [sid, ps] of known) {
		if (keep.includes(sid)) continue;
		for (const p of ps) if (p.start && procStart(p.pid) === String(p.start)) out.push(`${p.what} ${p.pid} of ${sid}`);
	}
	return out;
}
// Waits up to SECONDS until the only sandboxes and processes left are
// KEEP's; throws with what is left.
async function waitOnly(keep, seconds) {
	let dirs, procs;
	const end = now() + seconds * 1000;
	for (;;) {
		dirs = sandboxDirs().filter((d) => !keep.includes(d));
		procs = stateProcs().filter((l) => !keep.some((k) => l.includes(k))).concat(knownAlive(keep));
		if ((dirs.length === 0 && procs.length === 0) || now() > end) break;
		await sleep(200);
	}
	expect(dirs.length === 0 && procs.length === 0,
		`after ${seconds} s still there: sandboxes ${show(dirs)}, processes ${show(procs)}`);
}
function listed(s, sid) {
	return JSON.stringify(s).includes(sid);
}

// ---- raw protocol checks -------------------------------------------------------------------------
const INIT = {
	jsonrpc: '2.0', id: 1, method: 'initialize',
	params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

// Over stdio: a server of our own, fed raw lines.
async function rawStdio() {
	const proc = spawn(server, serverArgs, { env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
	collect('ember-mcp (stdio, raw lines)', proc.stderr);
	let buf = '';
	const lines = [];
	proc.stdout.on('data', (d) => {
		buf += d.toString();
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const l = buf.slice(0, i).trim();
			buf = buf.slice(i + 1);
			if (l) lines.push(l);
		}
	});
	let exited = null;
	proc.on('exit', (code, sig) => { exited = { code, sig }; });
	const waitFor = async (pred, ms = 15000) => {
		const end = now() + ms;
		while (now() < end) {
			for (const l of lines) {
				let m;
				try { m = JSON.parse(l); } catch { continue; }
				if (pred(m)) return m;
			}
			if (exited) break;
			await sleep(50);
		}
		return null;
	};
	const send = (s) => proc.stdin.write(s + '\n');
	try {
		await check('raw: a line that is not JSON gets a -32700 error (id null)', async () => {
			send('{"jsonrpc": "2.0", "id": 1, "method": "initialize", ');
			const m = await waitFor((m) => m.error && m.error.code === -32700);
			expect(m, `no -32700 answer; got ${show(lines)}${exited ? `; ember-mcp exited ${show(exited)}` : ''}`);
			expect(m.id === null, `id ${show(m.id)}, wanted null`);
			expect(m.jsonrpc === '2.0', `jsonrpc ${show(m.jsonrpc)}`);
		});
		await check('raw: JSON that is not a JSON-RPC request (no method) gets -32600', async () => {
			send('{"jsonrpc":"2.0","id":7}');
			const m = await waitFor((m) => m.error && m.error.code === -32600);
			expect(m, `no -32600 answer; got ${show(lines)}`);
		});
		await check('raw: a request that is not an object (42) gets -32600', async () => {
			send('42');
			const m = await waitFor((m) => m.error && m.error.code === -32600 && m.id === null);
			expect(m, `no -32600 answer with id null; got ${show(lines)}`);
		});
		await check('raw: after the garbage, initialize still works', async () => {
			send(JSON.stringify({ ...INIT, id: 8 }));
			const m = await waitFor((m) => m.id === 8);
			expect(m && m.result && m.result.protocolVersion && m.result.capabilities && m.result.capabilities.tools,
				`answer ${show(m)}; all lines ${show(lines)}`);
		});
		await check('raw: ember-mcp exits when its stdin closes', async () => {
			proc.stdin.end();
			const end = now() + 10000;
			while (!exited && now() < end) await sleep(50);
			expect(exited, 'still running 10 s after EOF');
			expect(exited.code === 0, `exit ${show(exited)}`);
		});
	} finally {
		if (!exited) proc.kill('SIGKILL');
	}
}

// Over HTTP: fetch without the SDK.
async function post(url, body, headers = {}) {
	const r = await fetch(url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
		body: typeof body === 'string' ? body : JSON.stringify(body),
		signal: AbortSignal.timeout(30000),
	});
	const text = await r.text();
	let json = null;
	try {
		json = JSON.parse(text);
	} catch {
		// an SSE stream: the first data line
		const d = text.split('\n').find((l) => l.startsWith('data:'));
		try { json = d ? JSON.parse(d.slice(5)) : null; } catch { json = null; }
	}
	return { status: r.status, headers: r.headers, text, json };
}
async function rawHttp(url, token) {
	const auth = { Authorization: `Bearer ${token}` };
	await check('raw: a request without the token gets 401', async () => {
		const r = await post(url, INIT);
		expect(r.status === 401, `status ${r.status}: ${oneLine(r.text)}`);
	});
	await check('raw: a wrong token gets 401', async () => {
		const r = await post(url, INIT, { Authorization: `Bearer ${token}x` });
		expect(r.status === 401, `status ${r.status}: ${oneLine(r.text)}`);
		const r2 = await post(url, INIT, { Authorization: `Basic ${Buffer.from(`u:${token}`).toString('base64')}` });
		expect(r2.status === 401, `Basic auth with the token: status ${r2.status}`);
	});
	await check('raw: a GET without the token gets 401', async () => {
		const r = await fetch(url, { headers: { Accept: 'text/event-stream' }, signal: AbortSignal.timeout(10000) });
		await r.body?.cancel();
		expect(r.status === 401, `status ${r.status}`);
	});
	await check('raw: malformed JSON gets a -32700 error', async () => {
		const r = await post(url, '{"jsonrpc": "2.0", "id": 1, "method": ', auth);
		expect(r.json && r.json.error && r.json.error.code === -32700,
			`status ${r.status}: ${oneLine(r.text)}`);
		expect(r.status >= 400 && r.status < 500, `status ${r.status}, wanted 4xx`);
	});
	let sid = null;
	await check('raw: initialize with the token gives a session (Mcp-Session-Id)', async () => {
		const r = await post(url, INIT, auth);
		expect(r.status === 200, `status ${r.status}: ${oneLine(r.text)}`);
		expect(r.json && r.json.result && r.json.result.protocolVersion, `answer ${oneLine(r.text)}`);
		sid = r.headers.get('mcp-session-id');
		expect(sid, 'no Mcp-Session-Id header');
	});
	await check('raw: in a session, JSON that is not a request (no method) gets -32600', async () => {
		expect(sid, 'no session');
		const h = { ...auth, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
		await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
		const r = await post(url, { jsonrpc: '2.0', id: 2 }, h);
		expect(r.json && r.json.error && r.json.error.code === -32600, `status ${r.status}: ${oneLine(r.text)}`);
	});
	await check('raw: an unknown session id gets 404', async () => {
		const h = { ...auth, 'Mcp-Session-Id': 'no-such-session', 'MCP-Protocol-Version': '2025-06-18' };
		const r = await post(url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, h);
		expect(r.status === 404, `status ${r.status}: ${oneLine(r.text)}`);
	});
	await check('raw: DELETE ends the session; it is unknown afterwards', async () => {
		expect(sid, 'no session');
		const h = { ...auth, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' };
		const d = await fetch(url, { method: 'DELETE', headers: h, signal: AbortSignal.timeout(10000) });
		await d.body?.cancel();
		expect(d.status === 200 || d.status === 204, `DELETE status ${d.status}`);
		const r = await post(url, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, h);
		expect(r.status === 404, `after DELETE: status ${r.status}: ${oneLine(r.text)}`);
	});
}

// ---- rich results of run_code --------------------------------------------------------------------
// Each check stands alone (its own call), so that one can be run and
// debugged by itself.  The kernel's death runs in user "user"'s own
// context, so that the state the other checks keep (in root's) stays.
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_MAGIC = Buffer.from([0xff, 0xd8, 0xff]);
// the image content items of R, their data shortened for messages
const images = (r) => (r.content || []).filter((x) => x.type === 'image');
const brief = (r) => show((r.content || []).map((x) => ({ ...x, data: x.data && `${x.data.length} chars`, text: x.text && `${x.text.length} chars` })));
function hasMagic(b64, magic) {
	const b = Buffer.from(b64 || '', 'base64');
	return b.length > 100 && b.subarray(0, magic.length).equals(magic);
}

async function richResultChecks(c, sid) {
	const need = () => expect(sid, 'no sandbox');

	await check('run_code: display(HTML(...)) gives a result with its html (not the main result)', async () => {
		need();
		const s = await code(c, sid, 'from IPython.display import HTML, display\ndisplay(HTML("<b>ember</b>"))');
		expect(!s.error && s.results.length === 1, `got ${show(s)}`);
		expect(s.results[0].html === '<b>ember</b>' && s.results[0].is_main_result === false, `result ${show(s.results[0])}`);
	});

	await check('run_code: a DataFrame as the last value has data {a: [1, 2, 3]} besides text and html', async () => {
		need();
		const s = await code(c, sid, 'import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})');
		const m = (s.results || []).find((x) => x.is_main_result);
		expect(!s.error && m, `got ${show(s)}`);
		expect(m.data && JSON.stringify(m.data.a) === '[1,2,3]', `data ${show(m.data)}`);
		expect(/<table/.test(m.html || '') && typeof m.text === 'string', `html, text ${show(m)}`);
	});

	await check('run_code: a line plot gives chart (type line, its title and lines) and a PNG image content', async () => {
		need();
		const r = await call(c, 'run_code', {
			sandbox_id: sid,
			code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9], label="squares")\nplt.title("growth")\nplt.show()',
		});
		const s = sc(r);
		expect(!s.error && s.results.length === 1, `got ${show(s)}`);
		const ch = s.results[0].chart;
		expect(ch && ch.type === 'line' && ch.title === 'growth', `chart ${show(ch)}`);
		expect(ch.elements.length === 1 && ch.elements[0].label === 'squares' && ch.elements[0].points.length === 3,
			`elements ${show(ch.elements)}`);
		const imgs = images(r);
		expect(imgs.length === 1 && imgs[0].mimeType === 'image/png' && hasMagic(imgs[0].data, PNG_MAGIC), `content ${brief(r)}`);
	});

	await check('run_code: two figures give two PNG image contents, in order, each its result\'s png', async () => {
		need();
		const r = await call(c, 'run_code', {
			sandbox_id: sid,
			code: 'import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2])\nplt.figure(); plt.bar(["a"], [3])\nplt.show()',
		});
		const s = sc(r);
		const imgs = images(r);
		expect(!s.error && s.results.length === 2, `got ${show(s)}`);
		expect(imgs.length === 2 && imgs.every((x, i) => x.mimeType === 'image/png' && x.data === s.results[i].png),
			`content ${brief(r)}`);
		expect(s.results[0].chart.type === 'line' && s.results[1].chart.type === 'bar',
			`charts ${show(s.results.map((x) => x.chart && x.chart.type))}`);
	});

	// A JPEG needs Pillow in the guest (matplotlib writes JPEG through it).
	const pillow = sid ? await code(c, sid, 'import importlib.util\nprint(importlib.util.find_spec("PIL") is not None)')
		.then((s) => s.stdout.trim() === 'True', () => null) : null;
	if (pillow === false) {
		console.log(`ok - # SKIP ${prefix}run_code: a JPEG image content: no Pillow in the guest`);
	} else {
		await check('run_code: display(Image(jpeg bytes)) gives jpeg and an image/jpeg image content', async () => {
			need();
			const r = await call(c, 'run_code', {
				sandbox_id: sid,
				code: 'import io\nimport matplotlib.pyplot as plt\nfrom IPython.display import Image, display\n' +
					'fig = plt.figure(); plt.plot([1, 3, 2]); buf = io.BytesIO(); fig.savefig(buf, format="jpg"); plt.close(fig)\n' +
					'display(Image(data=buf.getvalue(), format="jpeg"))',
			});
			const s = sc(r);
			expect(!s.error && s.results.length === 1 && hasMagic(s.results[0].jpeg, JPEG_MAGIC), `got ${show(s)}`);
			const imgs = images(r);
			expect(imgs.length === 1 && imgs[0].mimeType === 'image/jpeg' && imgs[0].data === s.results[0].jpeg,
				`content ${brief(r)}`);
		});
	}

	await check('run_code: !echo hi runs a shell command (stdout hi)', async () => {
		need();
		const s = await code(c, sid, '!echo hi');
		expect(!s.error && s.stdout.trim() === 'hi', `got ${show(s)}`);
	});

	await check('run_code: a kernel death (os._exit(1), as user) is error ContextRestarted; the next call works; root\'s context keeps its state', async () => {
		need();
		await expectValue(c, sid, 'kept_by_root = 7; kept_by_root', '7');
		const s = await code(c, sid, 'import os; os._exit(1)', { user: 'user' });
		expect(s.error && s.error.name === 'ContextRestarted', `got ${show(s)}`);
		await expectValue(c, sid, '1+1', '2', { user: 'user' });
		await expectValue(c, sid, 'kept_by_root', '7');
	});
}

// ---- the checks --------------------------------------------------------------------------------------
async function main() {
	let http = null; // {url, token}
	if (mode === 'http') {
		const tokenFile = join(tmp, 'token');
		const s = await startHttp(tokenFile, [], 'ember-mcp --http');
		const ok = await check('ember-mcp --http on 127.0.0.1 starts and prints its URL', () => {
			expect(s, 'no "ember-mcp: listening on http://ADDR:PORT/mcp" line within 30 s (or it exited)');
			expect(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(s.url), `URL ${s.url}`);
		});
		if (!ok) return;
		await check('--token-file creates the token file, mode 0600, with a random token', () => {
			const st = statSync(tokenFile);
			expect((st.mode & 0o777) === 0o600, `mode ${(st.mode & 0o777).toString(8)}`);
			const t = readFileSync(tokenFile, 'utf8').split('\n')[0].trim();
			expect(t.length >= 16, `token ${show(t)} is too short`);
		});
		http = { url: s.url, token: readFileSync(tokenFile, 'utf8').split('\n')[0].trim() };
		await rawHttp(http.url, http.token);
		await check('a non-loopback address is refused', async () => {
			const p = spawn(server, ['--http', `0.0.0.0:${await freePort()}`, '--token-file', tokenFile],
				{ env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
			const log = collect('ember-mcp --http 0.0.0.0', p.stderr);
			const code = await new Promise((res) => {
				const t = setTimeout(() => { p.kill('SIGKILL'); res('running'); }, 5000);
				p.on('exit', (c) => { clearTimeout(t); res(c); });
			});
			expect(code !== 'running' && code !== 0, `exit ${code}; stderr ${oneLine(log.text)}`);
		});
	} else {
		await rawStdio();
	}

	let A = null;
	const ok = await check('the SDK client connects (initialize)', async () => {
		A = await connect({ name: 'main', http });
		const v = A.client.getServerVersion();
		expect(v && v.name, `server info ${show(v)}`);
		expect(A.client.getServerCapabilities()?.tools, `capabilities ${show(A.client.getServerCapabilities())}`);
	});
	if (!ok) return;
	const c = A.client;

	await check('list tools: all ten, each with a description and an object input schema', async () => {
		const { tools } = await c.listTools(undefined, CALL);
		const names = tools.map((t) => t.name);
		for (const t of TOOLS) expect(names.includes(t), `${t} missing; got ${show(names)}`);
		for (const t of tools) {
			expect(t.inputSchema && t.inputSchema.type === 'object', `${t.name}: inputSchema ${show(t.inputSchema)}`);
			expect(t.description, `${t.name}: no description`);
		}
		const rc = tools.find((t) => t.name === 'run_code');
		expect(rc.inputSchema.properties && rc.inputSchema.properties.code
			&& (rc.inputSchema.required || []).includes('sandbox_id') && rc.inputSchema.required.includes('code'),
			`run_code's schema ${show(rc.inputSchema)}`);
	});

	let sid = null;
	await check('create_sandbox gives a sandbox id, listed by list_sandboxes', async () => {
		const t0 = now();
		const s = sc(await call(c, 'create_sandbox', {}));
		sid = s.sandbox_id;
		expect(typeof sid === 'string' && sid.length > 0, `sandbox_id ${show(s)}`);
		const l = sc(await call(c, 'list_sandboxes', {}));
		expect(listed(l, sid), `list_sandboxes ${show(l)}`);
		console.log(`# create_sandbox took ${now() - t0} ms`);
	});
	const need = () => expect(sid, 'no sandbox');

	await check('create_sandbox: the sandbox is usable at once (run_command echo)', async () => {
		need();
		const s = await cmd(c, sid, 'echo ready');
		expect(s.stdout === 'ready\n' && s.exit_code === 0, `got ${show(s)}`);
	});

	await check('Python state is kept across calls (x = 1, then x += 1; x gives 2)', async () => {
		need();
		const a = await code(c, sid, 'x = 1');
		expect(!a.error, `x = 1: error ${show(a.error)}`);
		expect(mainText(a) === undefined, `x = 1 gave a main result ${show(a.results)}`);
		const b = await expectValue(c, sid, 'x += 1\nx', '2');
		expect(Number.isInteger(a.execution_count) && b.execution_count === a.execution_count + 1,
			`execution_count ${a.execution_count} then ${b.execution_count}`);
	});

	await check('stdout and stderr come back apart', async () => {
		need();
		const s = await code(c, sid, 'import sys\nprint("to out")\nprint("to err", file=sys.stderr)');
		expect(s.stdout === 'to out\n' && s.stderr === 'to err\n' && !s.error, `got ${show(s)}`);
	});

	await check('a pandas computation (a DataFrame sum gives 66)', async () => {
		need();
		await expectValue(c, sid,
			'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3], "b": [10, 20, 30]})\nint(df.sum().sum())', '66');
	});

	await check('a DataFrame as the last expression comes back as text and HTML', async () => {
		need();
		const s = await code(c, sid, 'df');
		const m = (s.results || []).find((x) => x.is_main_result);
		expect(m && /a\s+b/.test(m.text || '') && /<table/.test(m.html || ''), `got ${show(s)}`);
	});

	await check('a matplotlib chart comes back as an image content item with PNG bytes', async () => {
		need();
		const r = await call(c, 'run_code', {
			sandbox_id: sid,
			code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title("squares")\nplt.show()',
		});
		const s = sc(r);
		expect(!s.error, `error ${show(s.error)}`);
		const imgs = (r.content || []).filter((x) => x.type === 'image');
		expect(imgs.length === 1, `${imgs.length} image items; content ${show((r.content || []).map((x) => ({ ...x, data: x.data && `${x.data.length} chars` })))}`);
		expect(imgs[0].mimeType === 'image/png', `mimeType ${imgs[0].mimeType}`);
		const png = Buffer.from(imgs[0].data, 'base64');
		expect(png.length > 1000 && png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
			`${png.length} bytes, starting ${png.subarray(0, 8).toString('hex')}`);
	});

	await check('a raised exception comes back as name, value, traceback (ZeroDivisionError), not as isError', async () => {
		need();
		const r = await call(c, 'run_code', { sandbox_id: sid, code: 'def f():\n    return 1 / 0\n\nf()' });
		expect(!r.isError, `isError set: ${show(r)}`);
		const e = r.structuredContent && r.structuredContent.error;
		expect(e && e.name === 'ZeroDivisionError' && /division by zero/.test(e.value)
			&& typeof e.traceback === 'string' && /ZeroDivisionError/.test(e.traceback) && /\bin f\b/.test(e.traceback),
		`error ${show(e)}`);
	});

	await richResultChecks(c, sid);

	await check('JavaScript state is kept across calls (const and a function, then add(a - 38) gives 42)', async () => {
		need();
		const a = await code(c, sid, 'const a = 40;\nfunction add(n) { return a + n; }', { language: 'javascript' });
		expect(!a.error, `error ${show(a.error)}`);
		await expectValue(c, sid, 'add(a - 38)', '42', { language: 'javascript' });
	});

	await check('a JavaScript exception comes back as name and value (RangeError)', async () => {
		need();
		const s = await code(c, sid, 'throw new RangeError("boom")', { language: 'javascript' });
		expect(s.error && s.error.name === 'RangeError' && /boom/.test(s.error.value), `got ${show(s)}`);
	});

	await check('run_code in bash', async () => {
		need();
		const s = await code(c, sid, 'echo $((6 * 7))', { language: 'bash' });
		expect(s.stdout === '42\n' && !s.error, `got ${show(s)}`);
	});

	await check('a runaway loop (while True: pass, timeout 2) is interrupted; x is still 2 afterwards', async () => {
		need();
		const t0 = now();
		const r = await call(c, 'run_code', { sandbox_id: sid, code: 'while True:\n    pass', timeout: 2 });
		const took = now() - t0;
		const s = r.structuredContent || {};
		expect(r.isError || s.error, `neither an error nor isError: ${show(r)}`);
		expect(took >= 1500 && took < 15000, `returned after ${took} ms`);
		await expectValue(c, sid, 'x', '2');
	});

	const text = 'hello\nworld\n';
	const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
	await check('write_file then read_file: text', async () => {
		need();
		sc(await call(c, 'write_file', { sandbox_id: sid, path: '/root/mcp-test.txt', content: text }));
		const s = sc(await call(c, 'read_file', { sandbox_id: sid, path: '/root/mcp-test.txt' }));
		expect(s.content === text, `read ${show(s)}`);
	});
	await check('write_file then read_file: base64, all 256 byte values', async () => {
		need();
		sc(await call(c, 'write_file', { sandbox_id: sid, path: '/root/mcp-test.bin', content: bytes.toString('base64'), encoding: 'base64' }));
		const s = sc(await call(c, 'read_file', { sandbox_id: sid, path: '/root/mcp-test.bin', encoding: 'base64' }));
		expect(Buffer.from(s.content || '', 'base64').equals(bytes), `read ${show(s)}`);
		const k = await cmd(c, sid, 'od -An -tx1 /root/mcp-test.bin | tr -d " \\n" | head -c 16; echo; stat -c %s /root/mcp-test.bin');
		expect(k.stdout === '0001020304050607\n256\n', `in the guest: ${show(k)}`);
	});
	await check('read_file of a missing file is isError', async () => {
		need();
		const r = await call(c, 'read_file', { sandbox_id: sid, path: '/root/no-such-file' });
		expect(r.isError && texts(r), `got ${show(r)}`);
	});
	await check('list_files shows them', async () => {
		need();
		const s = sc(await call(c, 'list_files', { sandbox_id: sid, path: '/root' }));
		expect(Array.isArray(s.entries), `entries ${show(s)}`);
		const names = s.entries.map((e) => (typeof e === 'string' ? e : e.name || e.path || '').replace(/.*\//, ''));
		expect(names.includes('mcp-test.txt') && names.includes('mcp-test.bin'), `entries ${show(s.entries)}`);
	});

	await check('run_command "echo hi; exit 3" gives stdout hi and exit_code 3', async () => {
		need();
		const s = await cmd(c, sid, 'echo hi; exit 3');
		expect(s.stdout === 'hi\n' && s.exit_code === 3, `got ${show(s)}`);
	});
	await check('run_command: stderr, cwd and env', async () => {
		need();
		const s = await cmd(c, sid, 'echo $FOO; pwd; echo oops >&2', { cwd: '/tmp', env: { FOO: 'bar' } });
		expect(s.stdout === 'bar\n/tmp\n' && s.stderr === 'oops\n' && s.exit_code === 0, `got ${show(s)}`);
	});
	await check('users: root by default; user "user" runs as it (HOME /home/user), writes files it owns, reads and lists them; an unknown user is isError', async () => {
		need();
		const d = await cmd(c, sid, 'id -un; echo "$HOME"');
		expect(d.stdout === 'root\n/root\n' && d.exit_code === 0, `default: ${show(d)}`);
		const u = await cmd(c, sid, 'id -un; echo "$HOME $USER"; pwd', { user: 'user', cwd: '/home/user' });
		expect(u.stdout === 'user\n/home/user user\n/home/user\n' && u.exit_code === 0, `as user: ${show(u)}`);
		const r = await cmd(c, sid, 'id -un', { user: 'root' });
		expect(r.stdout === 'root\n', `as root: ${show(r)}`);
		sc(await call(c, 'write_file', { sandbox_id: sid, path: '/home/user/mcp/u.txt', content: text, user: 'user' }));
		const o = await cmd(c, sid, 'stat -c %U:%G /home/user/mcp /home/user/mcp/u.txt');
		expect(o.stdout === 'user:user\nuser:user\n', `owners: ${show(o)}`);
		const back = sc(await call(c, 'read_file', { sandbox_id: sid, path: '/home/user/mcp/u.txt', user: 'user' }));
		expect(back.content === text, `read as user: ${show(back)}`);
		const l = sc(await call(c, 'list_files', { sandbox_id: sid, path: '/home/user/mcp', user: 'user' }));
		expect(l.entries.length === 1 && l.entries[0].name === 'u.txt', `list as user: ${show(l)}`);
		const denied = await call(c, 'write_file', { sandbox_id: sid, path: '/root/u.txt', content: 'x', user: 'user' });
		expect(denied.isError && /ermission denied|cannot/.test(texts(denied)), `user writing /root: ${show(denied)}`);
		const nr = await call(c, 'read_file', { sandbox_id: sid, path: '/root/mcp-test.txt', user: 'user' });
		expect(nr.isError && /ermission denied/.test(texts(nr)), `user reading /root: ${show(nr)}`);
		const bad = await call(c, 'run_command', { sandbox_id: sid, command: 'true', user: 'nosuchuser' });
		expect(bad.isError && /nosuchuser/.test(texts(bad)), `unknown user: ${show(bad)}`);
	});
	await check('users: run_code python and javascript as user "user" (uid 1000), root by default; an unknown user is isError', async () => {
		need();
		const d = await code(c, sid, 'import os; os.getuid()');
		expect(d.results && d.results[0] && d.results[0].text === '0', `default: ${show(d)}`);
		const u = await code(c, sid, 'import os; (os.getuid(), os.environ["HOME"])', { user: 'user' });
		expect(u.results && u.results[0] && u.results[0].text === "(1000, '/home/user')", `python as user: ${show(u)}`);
		const j = await code(c, sid, 'process.getuid()', { language: 'javascript', user: 'user' });
		expect(j.results && j.results[0] && j.results[0].text === '1000', `javascript as user: ${show(j)}`);
		const bad = await call(c, 'run_code', { sandbox_id: sid, code: '1', user: 'nosuchuser' });
		expect(bad.isError && /nosuchuser/.test(texts(bad)), `unknown user: ${show(bad)}`);
	});
	await check('run_command on an unknown sandbox is isError', async () => {
		const r = await call(c, 'run_command', { sandbox_id: 'ffffffffffff', command: 'true' });
		expect(r.isError && texts(r), `got ${show(r)}`);
	});

	await check('ten run_command calls at once on one sandbox all succeed', async () => {
		need();
		const t0 = now();
		const rs = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => cmd(c, sid, `echo c${i}`)));
		const bad = rs.map((r, i) => (r.status === 'rejected' ? `#${i}: ${r.reason.message}`
			: r.value.stdout !== `c${i}\n` || r.value.exit_code !== 0 ? `#${i}: ${show(r.value)}` : null)).filter(Boolean);
		expect(bad.length === 0, `${bad.length} of 10 failed: ${bad.join('; ')}`);
		console.log(`# ten run_command at once: ${now() - t0} ms`);
	});
	await check('ten calls at once, run_code and run_command mixed, all succeed', async () => {
		need();
		const ps = Array.from({ length: 10 }, (_, i) => (i % 2
			? cmd(c, sid, `echo m${i}`).then((s) => (s.stdout === `m${i}\n` ? null : show(s)))
			: code(c, sid, `${i} * 10`).then((s) => (mainText(s) === String(i * 10) ? null : show(s)))));
		const rs = await Promise.allSettled(ps);
		const bad = rs.map((r, i) => (r.status === 'rejected' ? `#${i}: ${r.reason.message}` : r.value ? `#${i}: ${r.value}` : null))
			.filter(Boolean);
		expect(bad.length === 0, `${bad.length} of 10 failed: ${bad.join('; ')}`);
	});

	await check('pause_sandbox then resume_sandbox: it answers again and keeps its files', async () => {
		need();
		sc(await call(c, 'pause_sandbox', { sandbox_id: sid }));
		sc(await call(c, 'resume_sandbox', { sandbox_id: sid }));
		const s = await cmd(c, sid, 'cat /root/mcp-test.txt');
		expect(s.stdout === text, `got ${show(s)}`);
	});
	await check('... and the Python state (x is 2)', async () => {
		need();
		await expectValue(c, sid, 'x', '2');
	});

	await check('expose_port: a server in the sandbox fetched from the host; again: the same address', async () => {
		need();
		const s = await cmd(c, sid, 'mkdir -p /srv/mcp && echo mcp-port >/srv/mcp/index.html && ' +
			'busybox httpd -p 127.0.0.1:8123 -h /srv/mcp');
		expect(s.exit_code === 0, `httpd: ${show(s)}`);
		const r = sc(await call(c, 'expose_port', { sandbox_id: sid, port: 8123 }));
		expect(r.listening === true && /^127\.0\.0\.1:\d+$/.test(r.address) &&
			r.url === `http://${r.address}`, `got ${show(r)}`);
		const body = await (await fetch(`${r.url}/`)).text();
		expect(body === 'mcp-port\n', `fetched ${show(body)}`);
		const again = sc(await call(c, 'expose_port', { sandbox_id: sid, port: 8123 }));
		expect(again.address === r.address, `again: ${show(again)}`);
		const none = sc(await call(c, 'expose_port', { sandbox_id: sid, port: 8124 }));
		expect(none.listening === false, `a port nothing listens on: ${show(none)}`);
	});

	await check('unknown tool: a JSON-RPC error -32602', async () => {
		await expectMcpError(call(c, 'no_such_tool', {}), -32602);
	});
	await check('bad arguments (no command; a number as sandbox_id): JSON-RPC errors -32602', async () => {
		await expectMcpError(call(c, 'run_command', { sandbox_id: sid || 'x' }), -32602);
		await expectMcpError(call(c, 'run_command', { sandbox_id: 42, command: 'true' }), -32602);
		await expectMcpError(call(c, 'run_code', { sandbox_id: sid || 'x', code: 'x', language: 'cobol' }), -32602);
	});

	await check('a sandbox whose timeout (3 s) runs out is killed', async () => {
		const s = sc(await call(c, 'create_sandbox', { timeout: 3 }));
		const t = s.sandbox_id;
		expect(t, `got ${show(s)}`);
		await sleep(6000);
		const l = sc(await call(c, 'list_sandboxes', {}));
		expect(!listed(l, t), `still listed after 6 s: ${show(l)}`);
		await waitOnly(sid ? [sid] : [], 5);
	});

	await check('kill_sandbox: gone from list_sandboxes, its directory and processes too', async () => {
		need();
		const k = await call(c, 'create_sandbox', {});
		const victim = sc(k).sandbox_id;
		sc(await call(c, 'kill_sandbox', { sandbox_id: victim }));
		const l = sc(await call(c, 'list_sandboxes', {}));
		expect(!listed(l, victim), `still listed: ${show(l)}`);
		const r = await call(c, 'run_command', { sandbox_id: victim, command: 'true' });
		expect(r.isError, `run_command on it: ${show(r)}`);
		await waitOnly([sid], 10);
	});

	// Disconnect clean-up: a second client B with a sandbox of its own;
	// closing A kills A's sandboxes and no other.
	let B = null;
	let bsid = null;
	await check('a second client creates a sandbox of its own', async () => {
		B = await connect({ name: 'second', http });
		bsid = sc(await call(B.client, 'create_sandbox', {})).sandbox_id;
		expect(bsid, 'no sandbox id');
	});
	const exitA = await disconnect(A);
	await check(`--kill-on-disconnect: the first client goes away (${mode === 'http' ? 'DELETE' : 'stdin closed'}): every sandbox it created is killed, nothing left`, async () => {
		await waitOnly(bsid ? [bsid] : [], 20);
	});
	if (mode === 'stdio') {
		await check('ember-mcp exits by itself (status 0, no signal) when the client closes its stdin', () => {
			expect(exitA, 'still running 20 s after its stdin closed');
			expect(exitA.code === 0 && exitA.signal === null, `exit ${show(exitA)}`);
			console.log(`# ember-mcp exited ${exitA.ms} ms after its stdin closed (its sandbox killed first)`);
		});
	}
	await check('... and the second client\'s sandbox is untouched', async () => {
		expect(bsid, 'no sandbox');
		const s = await cmd(B.client, bsid, 'echo still');
		expect(s.stdout === 'still\n', `got ${show(s)}`);
	});
	await disconnect(B);
	await check('--kill-on-disconnect: the second client goes away: no sandbox, no ember process left', async () => {
		await waitOnly([], 20);
	});

	if (doConfirm) await confirmChecks();

	if (mode === 'http') {
		await check('ember-mcp --http ends on SIGTERM, leaving nothing', async () => {
			for (const p of httpServers) {
				if (p.exitCode !== null || p.signalCode !== null) continue;
				const exited = new Promise((res) => p.on('exit', res));
				p.kill('SIGTERM');
				expect(await Promise.race([exited.then(() => true), sleep(10000).then(() => false)]),
					'still running 10 s after SIGTERM');
			}
			await waitOnly([], 10);
		});
	}
}

// --confirm: run_code and run_command ask the user first (elicitation).
async function confirmChecks() {
	let http = null;
	if (mode === 'http') {
		const s = await startHttp(join(tmp, 'token-confirm'), ['--confirm'], 'ember-mcp --http --confirm');
		const ok = await check('--confirm: ember-mcp --http --confirm starts', () => {
			expect(s, 'no "listening on" line within 30 s');
		});
		if (!ok) return;
		http = { url: s.url, token: readFileSync(join(tmp, 'token-confirm'), 'utf8').split('\n')[0].trim() };
	}
	// a content that fits the requested schema: what a user ticking "yes" sends
	const fill = (schema) => {
		const out = {};
		for (const [k, p] of Object.entries((schema && schema.properties) || {})) {
			if (p.type === 'boolean') out[k] = true;
			else if (p.enum) out[k] = p.enum.find((v) => /^(yes|y|allow|approve|accept|run|ok|confirm)/i.test(v)) ?? p.enum[0];
			else if (p.type === 'number' || p.type === 'integer') out[k] = p.default ?? p.minimum ?? 1;
			else out[k] = p.default ?? 'yes';
		}
		return out;
	};
	const asked = { accept: [], decline: [] };
	const clients = [];
	try {
		await check('--confirm: a client that accepts the elicitation: the command runs', async () => {
			const A = await connect({
				name: 'accepts', confirm: true, http,
				elicit: async (req) => {
					asked.accept.push(req.params);
					return { action: 'accept', content: fill(req.params.requestedSchema) };
				},
			});
			clients.push(A);
			const sid = sc(await call(A.client, 'create_sandbox', {})).sandbox_id;
			const s = await cmd(A.client, sid, 'echo confirmed');
			expect(s.stdout === 'confirmed\n', `got ${show(s)}`);
			expect(asked.accept.length === 1, `asked ${asked.accept.length} times`);
		});
		await check('--confirm: the user is shown what would run', () => {
			expect(asked.accept.length > 0, 'not asked');
			expect(JSON.stringify(asked.accept[0]).includes('echo confirmed'), `asked ${show(asked.accept[0])}`);
		});
		await check('--confirm: a client that declines: run_command and run_code are isError with a message', async () => {
			const D = await connect({
				name: 'declines', confirm: true, http,
				elicit: async (req) => { asked.decline.push(req.params); return { action: 'decline' }; },
			});
			clients.push(D);
			const sid = sc(await call(D.client, 'create_sandbox', {})).sandbox_id;
			const r = await call(D.client, 'run_command', { sandbox_id: sid, command: 'echo declined' });
			expect(r.isError && texts(r) && !JSON.stringify(r).includes('declined\\n'), `run_command: ${show(r)}`);
			const r2 = await call(D.client, 'run_code', { sandbox_id: sid, code: '1 + 1' });
			expect(r2.isError && texts(r2), `run_code: ${show(r2)}`);
			expect(asked.decline.length === 2, `asked ${asked.decline.length} times`);
		});
		await check('--confirm: a client without elicitation: run_command is isError with a message', async () => {
			const N = await connect({ name: 'cannot-ask', confirm: true, http });
			clients.push(N);
			const sid = sc(await call(N.client, 'create_sandbox', {})).sandbox_id;
			const r = await call(N.client, 'run_command', { sandbox_id: sid, command: 'echo unasked' });
			expect(r.isError && texts(r) && !JSON.stringify(r).includes('unasked\\n'), `got ${show(r)}`);
		});
	} finally {
		for (const x of clients) await disconnect(x);
	}
	await check('--confirm: its clients gone, no sandbox and no ember process left', async () => {
		await waitOnly([], 20);
	});
}

try {
	await main();
} catch (e) {
	failed++;
	console.log(`not ok - ${prefix}the test itself (${oneLine(e && e.stack ? e.stack : e)})`);
} finally {
	for (const p of httpServers) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
	if (failed) {
		for (const l of logs) {
			const lines = l.text.trim().split('\n').filter(Boolean).slice(-15);
			if (!lines.length) continue;
			console.log(`#   ${l.name}, last stderr lines:`);
			for (const x of lines) console.log(`#     ${x}`);
		}
	}
	rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
