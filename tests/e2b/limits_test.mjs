#!/usr/bin/env node
// ember-e2b's limits and refusals with E2B's JavaScript SDKs (the e2b and
// @e2b/code-interpreter packages that package-lock.json pins;
// tests/integration/e2b.sh starts ember-e2b, E2B_TESTS part "limits"):
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY node tests/e2b/limits_test.mjs
//
// Each check is a defect of issue 26 (item 4) and failed before its fix:
// an upload of 1001 parts is refused (400) before any file is written;
// MakeDir under a regular file (400), a write or MakeDir under /proc
// (403) and a code context with a cwd that does not exist (400) are not
// 500s; 64 watchers per sandbox, the next one 429 (resource_exhausted),
// and another sandbox's watchers neither evicted nor refused; a process
// Connect stream that does not read does not hold the process's other
// stream up (it waited 30 s before); of two pauses at once, one pauses
// and the other returns false (409), as for a sandbox paused already.
// Raw HTTP (fetch, node:http) where the SDK hides the status.  Prints
// "ok - ..." / "not ok - ... (why)" lines and exits 1 when a check
// failed; every sandbox it made is killed at the end.  LIMITS_USER: the
// user of its envd calls (default "user", E2B's; "root" where the guest
// is a host without that user: fake_ember.py's).
import { Sandbox, InvalidArgumentError, SandboxError } from '@e2b/code-interpreter';
import http from 'node:http';
import { expect, needEnv, show as showN, sleep, tap, within } from './tap.mjs';

const env = process.env;
needEnv('limits_test.mjs', ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']);
const REQ = { requestTimeoutMs: 240000 };
const USER = env.LIMITS_USER || 'user';
const AS = { ...REQ, user: USER }; // an envd call's options
const t = tap('e2b: limits: ', 300000);
const check = t.check;
const created = new Set();
const show = (v) => showN(v, 300);
const sandboxUrl = env.E2B_SANDBOX_URL.replace(/\/$/, '');
const ENVD = '49983';

async function create() {
	const sbx = await within(300000, Sandbox.create({ ...REQ, timeoutMs: 900000 }), 'Sandbox.create');
	created.add(sbx.sandboxId);
	console.log(`# sandbox ${sbx.sandboxId}`);
	return sbx;
}

// The headers of a request to @sbx's envd as @user.
function envdHeaders(sbx, user = USER, more = {}) {
	const h = {
		'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': ENVD,
		Authorization: `Basic ${Buffer.from(`${user}:`).toString('base64')}`, ...more,
	};
	if (sbx.envdAccessToken) h['X-Access-Token'] = sbx.envdAccessToken;
	return h;
}

// A unary Connect call of envd: {status, code, message}.
async function rpc(sbx, method, body, user = USER) {
	const r = await within(120000, fetch(`${sandboxUrl}/${method}`, {
		method: 'POST',
		headers: envdHeaders(sbx, user, { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }),
		body: JSON.stringify(body),
	}), method);
	const text = await r.text();
	let j = {};
	try {
		j = JSON.parse(text);
	} catch {
		j = { message: text };
	}
	return { status: r.status, code: j.code, message: j.message, body: j };
}

// POST /files?path=P as @user with @data as its octet-stream body.
async function upload(sbx, path, data, user = USER) {
	const q = new URLSearchParams({ path, username: user });
	const r = await within(120000, fetch(`${sandboxUrl}/files?${q}`, {
		method: 'POST',
		headers: envdHeaders(sbx, user, { 'Content-Type': 'application/octet-stream' }),
		body: data,
	}), 'POST /files');
	return { status: r.status, text: await r.text() };
}

// A process Connect stream of @sbx's @pid that is never read: resolves
// with its request once the answer's headers came (the subscriber is
// there then); destroy() it when done.
function stalledSubscriber(sbx, pid) {
	return new Promise((resolve, reject) => {
		const u = new URL(sandboxUrl);
		const json = Buffer.from(JSON.stringify({ process: { pid } }));
		const env5 = Buffer.alloc(5);
		env5.writeUInt32BE(json.length, 1);
		const req = http.request({
			host: u.hostname, port: u.port, method: 'POST', path: '/process.Process/Connect', agent: false,
			headers: envdHeaders(sbx, USER, {
				'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1',
			}),
		}, (res) => {
			res.pause(); // reads nothing: its queue in ember-e2b grows
			if (res.statusCode !== 200) reject(new Error(`Connect: HTTP ${res.statusCode}`));
			else resolve(req);
		});
		req.on('error', (e) => reject(e));
		req.end(Buffer.concat([env5, json]));
	});
}

// Run a command that writes @mib MiB once /tmp/go-@tag exists, through
// commands.run (the Start stream, read), with @extra(pid) subscribing
// meanwhile; the ms from the go to the command's end.
async function timedOutput(sbx, tag, mib, extra) {
	const go = `/tmp/go-${tag}`;
	const cmd = `while [ ! -e ${go} ]; do sleep 0.1; done; head -c ${mib << 20} /dev/zero | tr '\\0' x`;
	let got = 0;
	const h = await within(120000, sbx.commands.run(cmd, {
		...AS, background: true, timeoutMs: 600000, onStdout: (d) => { got += d.length; },
	}), 'commands.run');
	const other = extra ? await within(60000, extra(h.pid), 'the second subscriber') : null;
	try {
		await sbx.files.write(go, '', AS);
		const t0 = Date.now();
		const r = await within(400000, h.wait(), 'the command');
		const ms = Date.now() - t0;
		expect(r.exitCode === 0, `exit ${r.exitCode}`);
		expect(got === mib << 20, `stdout ${got} bytes, wanted ${mib << 20}`);
		return ms;
	} finally {
		if (other) other.destroy();
	}
}

async function main() {
	const sbx = await create();

	// As root: the agent writes each file (before, 1000 were written
	// first); as the user, a script per file would take long.
	await check('an upload of 1001 parts is refused (400, InvalidArgumentError) and writes nothing', async () => {
		const files = [];
		for (let i = 0; i <= 1000; i++) files.push({ path: `/tmp/limits-up/f${i}`, data: `${i}` });
		let err = null;
		try {
			await sbx.files.write(files, { ...REQ, user: 'root' });
		} catch (e) {
			err = e;
		}
		expect(err instanceof InvalidArgumentError && /1000/.test(err.message),
			`not an InvalidArgumentError naming the limit: ${err && err.name}: ${err && err.message}`);
		const there = await sbx.files.exists('/tmp/limits-up', AS);
		const n = there ? (await sbx.files.list('/tmp/limits-up', AS)).length : 0;
		expect(!there, `/tmp/limits-up was made, with ${n} files`);
	});

	await check('an upload of 3 parts still writes the 3 files', async () => {
		const files = [0, 1, 2].map((i) => ({ path: `/tmp/limits-three/f${i}`, data: `part ${i}` }));
		const w = await sbx.files.write(files, AS);
		expect(Array.isArray(w) && w.length === 3, `answer ${show(w)}`);
		for (let i = 0; i < 3; i++) {
			const s = await sbx.files.read(`/tmp/limits-three/f${i}`, AS);
			expect(s === `part ${i}`, `f${i}: ${show(s)}`);
		}
	});

	await check('MakeDir under a regular file: 400 invalid_argument, not 500', async () => {
		await sbx.files.write('/tmp/limits-file', 'x', AS);
		const r = await rpc(sbx, 'filesystem.Filesystem/MakeDir', { path: '/tmp/limits-file/sub' });
		expect(r.status === 400 && r.code === 'invalid_argument' && /Not a directory/.test(r.message),
			`HTTP ${r.status} ${show(r.body)}`);
		let err = null;
		await sbx.files.makeDir('/tmp/limits-file/sub2', AS).catch((e) => { err = e; });
		expect(err instanceof InvalidArgumentError, `makeDir threw ${err && err.name}: ${err && err.message}`);
	});

	await check('MakeDir under /proc: 403 permission_denied, not 500', async () => {
		for (const user of new Set([USER, 'root'])) {
			const r = await rpc(sbx, 'filesystem.Filesystem/MakeDir', { path: '/proc/limits-dir' }, user);
			expect(r.status === 403 && r.code === 'permission_denied', `as ${user}: HTTP ${r.status} ${show(r.body)}`);
		}
	});

	await check('a write under /proc: 403 that says why, not 500 (as user and as root)', async () => {
		for (const user of new Set([USER, 'root'])) {
			const r = await upload(sbx, '/proc/limits-x', 'x', user);
			expect(r.status === 403 && /limits-x/.test(r.text), `as ${user}: HTTP ${r.status} ${r.text}`);
		}
	});

	await check('a code context whose cwd does not exist: 400 that names it, not 500', async () => {
		let err = null;
		await within(120000, sbx.createCodeContext({ ...REQ, cwd: '/nonexistent-limits' }), 'createCodeContext')
			.catch((e) => { err = e; });
		expect(err instanceof SandboxError && /^400\b/.test(err.message), `threw ${err && err.name}: ${err && err.message}`);
		const ctx = await within(120000, sbx.createCodeContext({ ...REQ, cwd: '/tmp' }), 'createCodeContext');
		expect(ctx && ctx.cwd === '/tmp', `context ${show(ctx)}`);
		await sbx.removeCodeContext(ctx).catch(() => {});
	});

	await check('a process stream that does not read holds the process\'s other stream up no more', async () => {
		const base = await timedOutput(sbx, 'a', 16, null);
		const stalled = await timedOutput(sbx, 'b', 16, (pid) => stalledSubscriber(sbx, pid));
		console.log(`# 16 MiB of output: ${base} ms with one stream, ${stalled} ms beside one that does not read`);
		expect(stalled < base + 20000, `${stalled} ms beside a stream that does not read, ${base} ms alone`);
	}, 900000);

	const other = await create();
	await check('64 watchers per sandbox: the 65th is 429 resource_exhausted; another sandbox\'s are kept', async () => {
		await sbx.files.makeDir('/tmp/limits-w', AS);
		const ids = [];
		for (let i = 0; i < 64; i += 8) {
			const batch = await Promise.all([...Array(8).keys()].map(() =>
				rpc(sbx, 'filesystem.Filesystem/CreateWatcher', { path: '/tmp/limits-w' })));
			for (const r of batch) {
				expect(r.status === 200 && r.body.watcherId, `watcher ${ids.length + 1}: HTTP ${r.status} ${show(r.body)}`);
				ids.push(r.body.watcherId);
			}
		}
		const over = await rpc(sbx, 'filesystem.Filesystem/CreateWatcher', { path: '/tmp/limits-w' });
		expect(over.status === 429 && over.code === 'resource_exhausted', `the 65th: HTTP ${over.status} ${show(over.body)}`);
		const o = await rpc(other, 'filesystem.Filesystem/CreateWatcher', { path: '/tmp' });
		expect(o.status === 200 && o.body.watcherId, `another sandbox's: HTTP ${o.status} ${show(o.body)}`);
		for (const id of ids.slice(0, 2)) {
			const e = await rpc(sbx, 'filesystem.Filesystem/GetWatcherEvents', { watcherId: id });
			expect(e.status === 200, `watcher ${id}: HTTP ${e.status} ${show(e.body)}`);
		}
		for (const id of ids) await rpc(sbx, 'filesystem.Filesystem/RemoveWatcher', { watcherId: id });
		const again = await rpc(sbx, 'filesystem.Filesystem/CreateWatcher', { path: '/tmp/limits-w' });
		expect(again.status === 200, `after removing them: HTTP ${again.status} ${show(again.body)}`);
		await rpc(sbx, 'filesystem.Filesystem/RemoveWatcher', { watcherId: again.body.watcherId });
		await rpc(other, 'filesystem.Filesystem/RemoveWatcher', { watcherId: o.body.watcherId });
	});

	await check('two pauses at once: one pauses (true), the other returns false (409)', async () => {
		const r = await within(300000, Promise.all([
			Sandbox.pause(other.sandboxId, REQ), Sandbox.pause(other.sandboxId, REQ)]), 'two pauses');
		expect(r.filter((x) => x === true).length === 1 && r.filter((x) => x === false).length === 1,
			`pause returned ${show(r)}`);
		const st = (await Sandbox.getInfo(other.sandboxId, REQ)).state;
		expect(st === 'paused', `state ${st}`);
		const third = await Sandbox.pause(other.sandboxId, REQ);
		expect(third === false, `a third pause returned ${show(third)}`);
	}, 400000);
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
