#!/usr/bin/env node
// Pause on timeout through E2B's JavaScript SDK (the e2b package that
// package-lock.json pins) on ember-e2b (tests/integration/ontimeout.sh
// starts it):
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY ONTIMEOUT_TEMPLATE=NAME node tests/e2b/ontimeout_test.mjs
//
// Sandbox.create with lifecycle {onTimeout: 'pause', autoResume: true},
// then a 5 s timeout (setTimeout): getInfo says so, it is paused (not killed) at its
// end, and commands.run resumes it with its /tmp (memory) intact;
// lifecycle {onTimeout: 'pause'} alone: envd calls find it paused, and
// Sandbox.connect resumes it; the older body's autoPause: true; bad
// bodies.  Prints "ok - ..." / "not ok - ... (why)" lines and exits 1
// when a check failed; every sandbox it made is killed at the end.
import { Sandbox } from 'e2b';
import { expect, needEnv, show, sleep, tap, within } from './tap.mjs';

const env = process.env;
needEnv('ontimeout_test.mjs', ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'ONTIMEOUT_TEMPLATE']);
const TPL = env.ONTIMEOUT_TEMPLATE;
const REQ = { requestTimeoutMs: 120000 };
const RUN = { ...REQ, timeoutMs: 120000 };
const t = tap('ontimeout: e2b: ', 240000);
const check = t.check;
const created = new Set();
async function create(opts) {
	const sbx = await within(240000, Sandbox.create(TPL, { ...REQ, ...opts }), 'Sandbox.create');
	created.add(sbx.sandboxId);
	console.log(`# sandbox ${sbx.sandboxId}`);
	return sbx;
}
// waits until sandbox ID's state is STATE (getInfo), for up to MS
async function waitState(id, state, ms) {
	const end = Date.now() + ms;
	let s;
	while (Date.now() < end) {
		s = (await Sandbox.getInfo(id, REQ)).state;
		if (s === state) return;
		await sleep(500);
	}
	throw new Error(`state ${show(s)} after ${ms / 1000} s, wanted ${state}`);
}
// POST /sandboxes with BODY as it is (what older SDKs send): [status, json]
async function rawCreate(body) {
	const r = await fetch(`${env.E2B_API_URL}/sandboxes`, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', 'X-API-KEY': env.E2B_API_KEY },
		body: JSON.stringify({ templateID: TPL, ...body }),
	});
	const j = await r.json().catch(() => null);
	if (j && j.sandboxID) created.add(j.sandboxID);
	return [r.status, j];
}

let a;
await check("Sandbox.create with lifecycle {onTimeout: 'pause', autoResume: true}: getInfo says so", async () => {
	// Time to set it up, then 5 s (setTimeout): a loaded host is slow.
	a = await create({ timeoutMs: 120000, lifecycle: { onTimeout: 'pause', autoResume: true } });
	const i = await Sandbox.getInfo(a.sandboxId, REQ);
	expect(i.lifecycle && i.lifecycle.onTimeout === 'pause' && i.lifecycle.autoResume === true,
		`lifecycle ${show(i.lifecycle)}`);
	const r = await a.commands.run('echo kept >/tmp/mem', RUN);
	expect(r.exitCode === 0, `exit ${r.exitCode}`);
	await a.setTimeout(5000, REQ);
});
await check('after its 5 s timeout (setTimeout) it is paused, not killed', async () => {
	expect(a, 'no sandbox');
	await waitState(a.sandboxId, 'paused', 120000);
});
await check('autoResume: commands.run on the paused sandbox resumes it, its /tmp (memory) intact', async () => {
	expect(a, 'no sandbox');
	const r = await a.commands.run('cat /tmp/mem', RUN);
	expect(r.stdout === 'kept\n', `stdout ${show(r.stdout)}`);
	const i = await Sandbox.getInfo(a.sandboxId, REQ);
	expect(i.state === 'running', `state ${show(i.state)}`);
});

let b;
await check("lifecycle {onTimeout: 'pause'} without autoResume: paused at its end; an envd call does not resume it", async () => {
	b = await create({ timeoutMs: 120000, lifecycle: { onTimeout: 'pause' } });
	await b.commands.run('echo b-kept >/tmp/mem', RUN);
	await b.setTimeout(5000, REQ);
	await waitState(b.sandboxId, 'paused', 120000);
	let threw = null;
	try {
		await b.commands.run('true', { ...RUN, requestTimeoutMs: 30000 });
	} catch (e) {
		threw = e;
	}
	expect(threw, 'commands.run on it answered');
	const i = await Sandbox.getInfo(b.sandboxId, REQ);
	expect(i.state === 'paused' && i.lifecycle.autoResume === false, `state ${show(i.state)}, lifecycle ${show(i.lifecycle)}`);
});
await check('Sandbox.connect resumes it and commands.run works, its memory intact', async () => {
	expect(b, 'no sandbox');
	const s = await within(240000, Sandbox.connect(b.sandboxId, { ...REQ, timeoutMs: 60000 }), 'Sandbox.connect');
	const r = await s.commands.run('cat /tmp/mem', RUN);
	expect(r.stdout === 'b-kept\n', `stdout ${show(r.stdout)}`);
});

await check("the older body's autoPause: true: onTimeout pause, autoResume false", async () => {
	const [st, j] = await rawCreate({ timeout: 60, autoPause: true });
	expect(st === 201 && j && j.sandboxID, `status ${st}: ${show(j)}`);
	console.log(`# sandbox ${j.sandboxID}`);
	const i = await Sandbox.getInfo(j.sandboxID, REQ);
	expect(i.lifecycle.onTimeout === 'pause' && i.lifecycle.autoResume === false, `lifecycle ${show(i.lifecycle)}`);
});
await check('bad bodies: autoResume without autoPause, autoPauseMemory false, autoPause not a boolean: 400 each', async () => {
	const bad = [
		[{ timeout: 60, autoResume: { enabled: true } }, /autoResume can only be true when onTimeout is pause/],
		[{ timeout: 60, autoPause: true, autoPauseMemory: false }, /Not supported by ember: autoPauseMemory/],
		[{ timeout: 60, autoPause: 'yes' }, /autoPause is of the wrong type/],
	];
	for (const [body, re] of bad) {
		const [st, j] = await rawCreate(body);
		expect(st === 400 && j && re.test(j.message), `${show(body)}: ${st} ${show(j)}`);
	}
});

for (const id of created) {
	try {
		await Sandbox.kill(id, REQ);
	} catch (e) {
		console.log(`# kill ${id}: ${e.message}`);
	}
}
process.exit(t.failed() ? 1 : 0);
