#!/usr/bin/env node
// Processes that outlive a pause, through E2B's JavaScript SDK (the e2b
// package that package-lock.json pins) on ember-e2b
// (tests/integration/ontimeout.sh starts it):
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY KEEP_TEMPLATE=NAME node tests/e2b/keepprocs_test.mjs
//
// A background `sleep 30; echo done` and a `sleep 300`, the sandbox
// paused (pause: parked, every connection cut) and resumed
// (Sandbox.connect): commands.list() shows both by their pids,
// commands.connect(pid) re-attaches to the first and its wait() gives
// `done` (printed after the resume) and exit 0, commands.kill() ends
// the second.  Prints "ok - ..." / "not ok - ... (why)" lines and exits
// 1 when a check failed; the sandbox is killed at the end.
import { Sandbox } from 'e2b';
import { expect, needEnv, show, tap, within } from './tap.mjs';

const env = process.env;
needEnv('keepprocs_test.mjs', ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'KEEP_TEMPLATE']);
const REQ = { requestTimeoutMs: 240000 };
const t = tap('keepprocs: e2b: ', 300000);
const check = t.check;

let sbx, h, h2, t0;
const ok = await check('a sandbox, a background `sleep 30; echo done` and a `sleep 300`', async () => {
	sbx = await within(240000, Sandbox.create(env.KEEP_TEMPLATE, { ...REQ, timeoutMs: 600000 }), 'Sandbox.create');
	console.log(`# sandbox ${sbx.sandboxId}`);
	t0 = Date.now();
	h = await sbx.commands.run('echo started; sleep 30; echo done', { ...REQ, background: true, timeoutMs: 0 });
	h2 = await sbx.commands.run('sleep 300', { ...REQ, background: true, timeoutMs: 0 });
	expect(h.pid > 0 && h2.pid > 0 && h.pid !== h2.pid, `pids ${h.pid} ${h2.pid}`);
});
if (ok) {
	await check('pause (parked: its connections cut) and Sandbox.connect (resumed)', async () => {
		await within(240000, sbx.betaPause(REQ), 'pause');
		const i = await Sandbox.getInfo(sbx.sandboxId, REQ);
		expect(i.state === 'paused', `state ${show(i.state)}`);
		sbx = await within(240000, Sandbox.connect(sbx.sandboxId, { ...REQ, timeoutMs: 600000 }), 'Sandbox.connect');
	});
	await check('commands.list() after the resume shows both, by their pids', async () => {
		const l = await sbx.commands.list(REQ);
		const pids = l.map((p) => p.pid);
		expect(pids.includes(h.pid) && pids.includes(h2.pid), `pids ${h.pid} ${h2.pid}, list ${show(l)}`);
		const p = l.find((x) => x.pid === h.pid);
		expect(p.cmd === '/bin/bash' && p.args.join(' ').includes('sleep 30'), `its config ${show(p)}`);
	});
	await check('commands.connect(pid): wait() gives its output, `done` (after the resume), exit 0', async () => {
		const out = [];
		const c = await sbx.commands.connect(h.pid, { ...REQ, timeoutMs: 0, onStdout: (d) => out.push(d) });
		const r = await c.wait();
		expect(r.exitCode === 0 && r.stdout.includes('done') && out.join('').includes('done'),
			`exit ${r.exitCode}, stdout ${show(r.stdout)}, onStdout ${show(out)}`);
		expect(Date.now() - t0 >= 29000, `ended after ${Date.now() - t0} ms, before its sleep 30`);
	}, 400000);
	await check('commands.kill(pid) after the resume ends the other; list no longer shows it', async () => {
		const k = await sbx.commands.kill(h2.pid, REQ);
		expect(k === true, `kill said ${show(k)}`);
		let l;
		for (let i = 0; i < 50; i++) {
			l = await sbx.commands.list(REQ);
			if (!l.some((p) => p.pid === h2.pid)) return;
			await new Promise((r) => setTimeout(r, 200));
		}
		throw new Error(`still listed: ${show(l)}`);
	});
	await check('commands.connect to an unknown pid: NotFoundError', async () => {
		const e = await sbx.commands.connect(999999, REQ).then(() => null, (x) => x);
		expect(e && e.name === 'NotFoundError', `got ${show(e && `${e.name}: ${e.message}`)}`);
	});
}
if (sbx) await sbx.kill(REQ).catch(() => {});
process.exit(t.failed() ? 1 : 0);
