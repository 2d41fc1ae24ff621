#!/usr/bin/env node
// ember-mcp: sandboxes belong to the principal that created them (the
// local user over stdio, the bearer token over HTTP), not to the MCP
// session, and outlive the session and ember-mcp itself.  Driven with the
// official MCP TypeScript SDK's client.
//
//   node tests/mcp/owner_test.mjs [--server PATH]
//
// stdio: a sandbox created (with Python state and a file) and parked in
// one ember-mcp process is resumed and used from a second one; a paused
// one is left to a third.  HTTP: a sandbox created and paused in one
// session is used from a new session of the same server, then from a new
// session of a restarted server with the same token; a server of another
// token and the local user over stdio get "no sandbox ... of yours" for
// it (use, resume, kill, a prefix of its id) and do not list it.  The
// record (mcp.owner) holds the principal and the TTL, and a hash of the
// token, never the token.  Prints "ok - mcp owner: ..." / "not ok - ..."
// lines; exits 1 when a check failed.  $EMBER_STATE_DIR must hold the
// template ("default", or $MCP_TEMPLATE); everything made is killed at
// the end.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = argv.indexOf(name);
	return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const repo = resolve(new URL('../..', import.meta.url).pathname);
const server = resolve(opt('--server', process.env.EMBER_MCP || join(repo, 'build/ember-mcp')));
const stateDir = process.env.EMBER_STATE_DIR;
if (!stateDir) {
	console.error('owner_test.mjs: set EMBER_STATE_DIR');
	process.exit(2);
}
const templateArgs = process.env.MCP_TEMPLATE ? ['--template', process.env.MCP_TEMPLATE] : [];
const CALL = { timeout: 180000 }; // per request: a park or a resume on a slow host
const tmp = mkdtempSync(join(tmpdir(), 'ember-mcp-owner.'));
const TTL = 240; // create_sandbox's timeout here: the record keeps it
const SERVER_TTL = 900; // the servers' --ttl: not what a use renews to

// ---- reporting ---------------------------------------------------------------
let failed = 0;
const oneLine = (s) => {
	s = String(s).replace(/\s+/g, ' ').trim();
	return s.length > 400 ? s.slice(0, 400) + '...' : s;
};
async function check(name, fn) {
	try {
		await fn();
		console.log(`ok - mcp owner: ${name}`);
		return true;
	} catch (e) {
		failed++;
		console.log(`not ok - mcp owner: ${name} (${oneLine(e && e.message ? e.message : e)})`);
		return false;
	}
}
function expect(cond, why) {
	if (!cond) throw new Error(why);
}
const show = (v) => oneLine(JSON.stringify(v));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint() / 1000000n);

// ---- servers and clients -------------------------------------------------------
const logs = [];
function collect(name, stream) {
	const log = { name, text: '' };
	logs.push(log);
	stream?.on('data', (d) => {
		if (process.env.MCP_SERVER_LOG) appendFileSync(process.env.MCP_SERVER_LOG, d);
		log.text += d.toString();
		if (log.text.length > 200000) log.text = log.text.slice(-100000);
	});
	return log;
}
const procs = []; // ember-mcp --http processes, stopped at the end

// `ember-mcp --http 127.0.0.1:0 --token-file FILE`: {proc, url} once it
// printed its URL, or null.
function startHttp(tokenFile, name) {
	return new Promise((res) => {
		const proc = spawn(server, ['--http', '127.0.0.1:0', '--token-file', tokenFile, '--ttl', String(SERVER_TTL),
			...templateArgs], { env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
		procs.push(proc);
		const log = collect(name, proc.stderr);
		let done = false;
		const finish = (v) => { if (!done) { done = true; clearTimeout(timer); res(v); } };
		const timer = setTimeout(() => finish(null), 30000);
		proc.stderr.on('data', () => {
			const m = log.text.match(/ember-mcp: listening on (http:\/\/\S+\/mcp)/);
			if (m) finish({ proc, url: m[1] });
		});
		proc.on('exit', () => finish(null));
	});
}
async function stopHttp(s) {
	if (!s || s.proc.exitCode !== null || s.proc.signalCode !== null) return true;
	const exited = new Promise((r) => s.proc.on('exit', () => r(true)));
	s.proc.kill('SIGTERM');
	return Promise.race([exited, sleep(15000).then(() => false)]);
}

// A connected SDK client: over stdio a new ember-mcp process of its own;
// over HTTP ({url, token}) a new session.
async function connect(name, http) {
	const client = new Client({ name: `ember-owner-${name}`, version: '1.0.0' }, { capabilities: {} });
	let transport;
	if (http) {
		transport = new StreamableHTTPClientTransport(new URL(http.url), {
			requestInit: { headers: { Authorization: `Bearer ${http.token}` } },
		});
	} else {
		transport = new StdioClientTransport({
			command: server, args: ['--ttl', String(SERVER_TTL), ...templateArgs],
			env: { ...process.env }, stderr: 'pipe',
		});
		collect(`ember-mcp (stdio, ${name})`, transport.stderr);
	}
	await client.connect(transport, CALL);
	return { client, transport, http };
}
// Goes away as a client does (HTTP: DELETE the session; stdio: its
// stdin closed, and up to 20 s for ember-mcp to exit by itself before
// the SDK's close() would signal it): over stdio {code, signal} of its
// exit, or null when it did not.
async function disconnect(c) {
	if (!c) return null;
	let self = null;
	try {
		if (c.http) {
			await c.transport.terminateSession();
		} else {
			const p = c.transport._process;
			if (p && p.stdin && p.exitCode === null && p.signalCode === null) {
				const exited = new Promise((r) => p.once('exit', (code, signal) => r({ code, signal })));
				p.stdin.end();
				self = await Promise.race([exited, sleep(20000).then(() => null)]);
			}
		}
	} catch { /* the checks after say what is left */ }
	try {
		await c.client.close();
	} catch { /* likewise */ }
	return self;
}
const call = (c, name, args) => c.client.callTool({ name, arguments: args }, undefined, CALL);
const texts = (r) => (r.content || []).filter((x) => x.type === 'text').map((x) => x.text).join(' ');
function sc(r) {
	expect(r && !r.isError, `isError: ${show(r && r.content)}`);
	expect(r.structuredContent, `no structuredContent: ${show(r)}`);
	return r.structuredContent;
}
async function cmd(c, sid, command) {
	return sc(await call(c, 'run_command', { sandbox_id: sid, command }));
}
async function listed(c) {
	return (sc(await call(c, 'list_sandboxes', {})).sandboxes || []);
}
const NOT_YOURS = /no sandbox \S+ of yours/;
// Every tool that names SID is refused with "no sandbox ... of yours".
async function refused(c, sid) {
	for (const [tool, args] of [
		['run_command', { sandbox_id: sid, command: 'echo leaked' }],
		['read_file', { sandbox_id: sid, path: '/root/owner.txt' }],
		['resume_sandbox', { sandbox_id: sid }],
		['pause_sandbox', { sandbox_id: sid }],
		['kill_sandbox', { sandbox_id: sid }],
		['run_command', { sandbox_id: sid.slice(0, 5), command: 'echo leaked' }],
	]) {
		const r = await call(c, tool, args);
		expect(r.isError && NOT_YOURS.test(texts(r)), `${tool} ${show(args)}: ${show(r)}`);
	}
	const l = await listed(c);
	expect(!l.some((s) => s.sandbox_id === sid), `list_sandboxes shows it: ${show(l)}`);
}
const exists = (sid) => existsSync(join(stateDir, sid, 'info'));
function record(sid) {
	return readFileSync(join(stateDir, sid, 'mcp.owner'), 'utf8');
}

// ---- the checks ------------------------------------------------------------------
async function main() {
	const uid = process.getuid();
	let sid = null; // the stdio sandbox
	const need = () => expect(sid, 'no sandbox');

	// stdio, process 1: create, state, park.
	let P1 = null;
	await check('stdio 1: create_sandbox, a file and Python state, then pause_sandbox to_disk (parked)', async () => {
		P1 = await connect('stdio-1');
		sid = sc(await call(P1, 'create_sandbox', { timeout: TTL })).sandbox_id;
		expect(sid, 'no sandbox id');
		expect((await cmd(P1, sid, 'echo kept > /root/owner.txt && cat /root/owner.txt')).stdout === 'kept\n', 'file');
		const y = sc(await call(P1, 'run_code', { sandbox_id: sid, code: 'y = 41' }));
		expect(!y.error, `y = 41: ${show(y)}`);
		const p = sc(await call(P1, 'pause_sandbox', { sandbox_id: sid, to_disk: true }));
		expect(p.state === 'parked', `pause: ${show(p)}`);
	});
	const exit1 = await disconnect(P1);
	await check('stdio 1 goes away (stdin closed): ember-mcp exits by itself (status 0) and its parked sandbox stays', async () => {
		need();
		expect(exit1 && exit1.code === 0 && exit1.signal === null, `exit ${show(exit1)}`);
		expect(exists(sid), `${sid} is gone`);
	});
	await check(`the record mcp.owner: principal user:${uid}, ttl ${TTL}, mode 0600`, () => {
		need();
		const r = record(sid);
		expect(r.includes(`principal=user:${uid}\n`) && r.includes(`ttl=${TTL}\n`), `record ${show(r)}`);
		expect((statSync(join(stateDir, sid, 'mcp.owner')).mode & 0o777) === 0o600, 'mode');
	});

	// stdio, process 2: resume and use it.
	let P2 = null;
	await check('stdio 2 (a new ember-mcp process): list_sandboxes shows it, parked', async () => {
		need();
		P2 = await connect('stdio-2');
		const l = await listed(P2);
		const e = l.find((s) => s.sandbox_id === sid);
		expect(e && e.state === 'parked', `list ${show(l)}`);
	});
	await check('stdio 2: resume_sandbox, then its file and its Python state (y + 1 gives 42) are there', async () => {
		need();
		expect(P2, 'no client');
		const r = sc(await call(P2, 'resume_sandbox', { sandbox_id: sid }));
		expect(r.state === 'running', `resume: ${show(r)}`);
		expect((await cmd(P2, sid, 'cat /root/owner.txt')).stdout === 'kept\n', 'file');
		const y = sc(await call(P2, 'run_code', { sandbox_id: sid, code: 'y + 1' }));
		const m = (y.results || []).find((x) => x.is_main_result);
		expect(m && m.text === '42', `y + 1: ${show(y)}`);
	});
	await check(`stdio 2: a use renews the TTL the record keeps (${TTL} s, not the server's ${SERVER_TTL}); a prefix of the id works`, async () => {
		need();
		expect(P2, 'no client');
		expect((await cmd(P2, sid.slice(0, 6), 'echo prefix')).stdout === 'prefix\n', 'prefix');
		const e = (await listed(P2)).find((s) => s.sandbox_id === sid);
		expect(e && e.ttl_left <= TTL && e.ttl_left > TTL - 60, `listed ${show(e)}`);
	});
	await check('stdio 2: pause_sandbox (in memory), then it goes away; the sandbox stays paused', async () => {
		need();
		expect(P2, 'no client');
		expect(sc(await call(P2, 'pause_sandbox', { sandbox_id: sid })).state === 'paused', 'pause');
		await disconnect(P2);
		P2 = null;
		expect(exists(sid), `${sid} is gone`);
	});

	// HTTP: one server, two sessions; a restart; another token.
	const tokA = join(tmp, 'token-a'), tokB = join(tmp, 'token-b');
	let H1 = await startHttp(tokA, 'ember-mcp --http (token A, 1)');
	if (!(await check('ember-mcp --http with token A starts', () => expect(H1, 'no "listening on" line')))) return;
	const tokenA = readFileSync(tokA, 'utf8').split('\n')[0].trim();
	let hsid = null;
	await check('HTTP session 1 (token A): the local user\'s sandbox is not its own: run_command, read_file, resume, pause, kill, a prefix: "no sandbox ... of yours"; not listed', async () => {
		need();
		const S1 = await connect('http-1', { url: H1.url, token: tokenA });
		try {
			await refused(S1, sid);
		} finally {
			await disconnect(S1);
		}
		expect(exists(sid), `${sid} is gone`);
	});
	await check('HTTP session 2 (token A): create_sandbox, a file, pause_sandbox; DELETE of the session kills nothing', async () => {
		const S2 = await connect('http-2', { url: H1.url, token: tokenA });
		try {
			hsid = sc(await call(S2, 'create_sandbox', { timeout: TTL })).sandbox_id;
			expect(hsid, 'no sandbox id');
			sc(await call(S2, 'write_file', { sandbox_id: hsid, path: '/root/owner.txt', content: 'http\n' }));
			expect(sc(await call(S2, 'pause_sandbox', { sandbox_id: hsid })).state === 'paused', 'pause');
		} finally {
			await disconnect(S2);
		}
		await sleep(500);
		expect(exists(hsid), `${hsid} is gone`);
	});
	await check('its record holds the SHA-256 of token A, never the token itself', () => {
		expect(hsid, 'no sandbox');
		const r = record(hsid);
		const h = createHash('sha256').update(tokenA).digest('hex');
		expect(r.includes(`principal=token:${h}\n`), `record ${show(r)}`);
		expect(!r.includes(tokenA), 'the token is in it');
	});
	await check('HTTP session 3 (token A, same server): lists it, resumes it, reads its file', async () => {
		expect(hsid, 'no sandbox');
		const S3 = await connect('http-3', { url: H1.url, token: tokenA });
		try {
			const e = (await listed(S3)).find((s) => s.sandbox_id === hsid);
			expect(e && e.state === 'paused', `listed ${show(e)}`);
			expect(sc(await call(S3, 'resume_sandbox', { sandbox_id: hsid })).state === 'running', 'resume');
			const f = sc(await call(S3, 'read_file', { sandbox_id: hsid, path: '/root/owner.txt' }));
			expect(f.content === 'http\n', `read ${show(f)}`);
			expect(sc(await call(S3, 'pause_sandbox', { sandbox_id: hsid })).state === 'paused', 'pause again');
		} finally {
			await disconnect(S3);
		}
	});
	await check('ember-mcp --http stopped (SIGTERM): it exits, its sandbox stays', async () => {
		expect(await stopHttp(H1), 'still running 15 s after SIGTERM');
		expect(hsid && exists(hsid), `${hsid} is gone`);
	});
	let H2 = await startHttp(tokA, 'ember-mcp --http (token A, 2)');
	let S4 = null;
	await check('a restarted ember-mcp --http, a new session with token A: lists it (paused), resumes and uses it', async () => {
		expect(H2, 'the second server did not start');
		expect(hsid, 'no sandbox');
		S4 = await connect('http-4', { url: H2.url, token: tokenA });
		const e = (await listed(S4)).find((s) => s.sandbox_id === hsid);
		expect(e && e.state === 'paused', `listed ${show(e)}`);
		expect(sc(await call(S4, 'resume_sandbox', { sandbox_id: hsid })).state === 'running', 'resume');
		expect((await cmd(S4, hsid, 'cat /root/owner.txt')).stdout === 'http\n', 'file');
	});
	await check('token A\'s session does not list the local user\'s sandbox', async () => {
		expect(S4, 'no session');
		const l = await listed(S4);
		expect(!l.some((s) => s.sandbox_id === sid), `listed ${show(l)}`);
	});
	let H3 = await startHttp(tokB, 'ember-mcp --http (token B)');
	await check('another token (a server of token B): token A gets 401 there; token B\'s session gets "no sandbox ... of yours" for token A\'s sandbox and the local user\'s, lists neither', async () => {
		expect(H3, 'the token B server did not start');
		expect(hsid && sid, 'no sandboxes');
		const r = await fetch(H3.url, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${tokenA}` },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'a', version: '0' } } }),
			signal: AbortSignal.timeout(10000),
		});
		await r.body?.cancel();
		expect(r.status === 401, `token A on token B's server: ${r.status}`);
		const tokenB = readFileSync(tokB, 'utf8').split('\n')[0].trim();
		const SB = await connect('http-b', { url: H3.url, token: tokenB });
		try {
			await refused(SB, hsid);
			await refused(SB, sid);
		} finally {
			await disconnect(SB);
		}
	});
	await check('... and token A\'s sandbox still runs for token A', async () => {
		expect(S4, 'no session');
		expect((await cmd(S4, hsid, 'echo still')).stdout === 'still\n', 'run');
	});
	await check('a DELETE while a call runs (sleep 10) is answered at once; the sandbox stays usable from another session', async () => {
		expect(S4 && hsid, 'no session');
		const S5 = await connect('http-5', { url: H2.url, token: tokenA });
		const running = call(S5, 'run_command', { sandbox_id: hsid, command: 'sleep 10' }).catch(() => null);
		await sleep(1500);
		const t0 = now();
		await S5.transport.terminateSession();
		const took = now() - t0;
		await S5.client.close().catch(() => {});
		await running;
		expect(took < 4000, `the DELETE took ${took} ms`);
		expect((await cmd(S4, hsid, 'echo after')).stdout === 'after\n', 'run after');
	});

	// stdio, process 3: the local user's, not token A's.
	let P3 = null;
	await check('stdio 3: token A\'s sandbox is not the local user\'s ("no sandbox ... of yours", not listed)', async () => {
		expect(hsid, 'no sandbox');
		P3 = await connect('stdio-3');
		await refused(P3, hsid);
	});
	await check('stdio 3: resumes its own paused sandbox and kills it; gone from the list and the state directory', async () => {
		need();
		expect(P3, 'no client');
		expect(sc(await call(P3, 'resume_sandbox', { sandbox_id: sid })).state === 'running', 'resume');
		expect((await cmd(P3, sid, 'cat /root/owner.txt')).stdout === 'kept\n', 'file');
		sc(await call(P3, 'kill_sandbox', { sandbox_id: sid }));
		const l = await listed(P3);
		expect(!l.some((s) => s.sandbox_id === sid), `listed ${show(l)}`);
		const end = now() + 10000;
		while (existsSync(join(stateDir, sid)) && now() < end) await sleep(200);
		expect(!existsSync(join(stateDir, sid)), 'its directory is still there');
		const r = await call(P3, 'run_command', { sandbox_id: sid, command: 'true' });
		expect(r.isError && NOT_YOURS.test(texts(r)), `after the kill: ${show(r)}`);
	});
	await disconnect(P3);
	await check('token A kills its sandbox from the restarted server', async () => {
		expect(S4, 'no session');
		sc(await call(S4, 'kill_sandbox', { sandbox_id: hsid }));
		const end = now() + 10000;
		while (existsSync(join(stateDir, hsid)) && now() < end) await sleep(200);
		expect(!existsSync(join(stateDir, hsid)), 'its directory is still there');
	});
	await disconnect(S4);
	await check('the servers end on SIGTERM', async () => {
		expect(await stopHttp(H2), 'token A server still running');
		expect(await stopHttp(H3), 'token B server still running');
	});
}

try {
	await main();
} catch (e) {
	failed++;
	console.log(`not ok - mcp owner: the test itself (${oneLine(e && e.stack ? e.stack : e)})`);
} finally {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
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
