#!/usr/bin/env node
// ember-e2b's latencies as a program using E2B's official SDK sees them
// (run it through bench/e2b, which starts the server and sets E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY):
//
//   node tests/e2b/bench.mjs [CREATES] [CALLS]
//
// CREATES times (default 5), one after another: Sandbox.create() until
// the first runCode('1+1') result (also split into the create alone and
// that first call); each sandbox killed before the next, not timed.  Then
// on one sandbox, CALLS times each (default 20, one warm-up first):
// runCode('1+1') and commands.run('true'), each round trip.  Prints each
// series' median, p90, min and max; asserts nothing (a failed call is
// reported and not timed).
import { Sandbox } from '@e2b/code-interpreter';

const creates = Number(process.argv[2] || 5);
const calls = Number(process.argv[3] || 20);
if (!(creates > 0) || !(calls > 0) || !process.env.E2B_API_URL) {
	console.error('usage: E2B_API_URL=... E2B_SANDBOX_URL=... E2B_API_KEY=... bench.mjs [CREATES] [CALLS]');
	process.exit(2);
}
const OPTS = { requestTimeoutMs: 120000 };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const q = (xs, p) => {
	const v = [...xs].sort((a, b) => a - b);
	return v[Math.min(v.length - 1, Math.max(0, Math.ceil(v.length * p) - 1))];
};
const median = (xs) => {
	const v = [...xs].sort((a, b) => a - b);
	const n = v.length;
	return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
};
const fmt = (x) => (x === undefined ? '-' : x.toFixed(1));
function line(name, ms, runs, failures, why) {
	const s = ms.length
		? `median ${fmt(median(ms)).padStart(8)} ms   p90 ${fmt(q(ms, 0.9)).padStart(8)} ms   min ${fmt(Math.min(...ms)).padStart(8)}   max ${fmt(Math.max(...ms)).padStart(8)}`
		: 'no successful call';
	console.log(`${name.padEnd(34)} ${s}   (${ms.length} of ${runs}${failures ? `; ${failures} failed: ${why.slice(0, 200)}` : ''})`);
}
const value = (e) => (e.error ? `error ${e.error.name}: ${e.error.value}` : e.text);

// ---- create to the first result ---------------------------------------------------
{
	const total = [];
	const create = [];
	const first = [];
	let failures = 0;
	let why = '';
	for (let i = 0; i < creates; i++) {
		let sbx = null;
		try {
			const t0 = now();
			sbx = await Sandbox.create({ ...OPTS });
			const t1 = now();
			const e = await sbx.runCode('1+1', { ...OPTS, timeoutMs: 120000 });
			const t2 = now();
			if (value(e) !== '2') throw new Error(`runCode('1+1') gave ${JSON.stringify(value(e))}`);
			total.push(t2 - t0);
			create.push(t1 - t0);
			first.push(t2 - t1);
		} catch (e) {
			failures++;
			why = e.message;
		}
		if (sbx) await sbx.kill(OPTS).catch(() => {});
	}
	line('create to the first runCode result', total, creates, failures, why);
	line('  Sandbox.create()', create, creates, 0, '');
	line('  the first runCode(\'1+1\')', first, creates, 0, '');
}

// ---- round trips on one sandbox -----------------------------------------------------
async function series(name, fn, check) {
	const ms = [];
	let failures = 0;
	let why = '';
	await fn().catch(() => {}); // warm-up, not timed
	for (let i = 0; i < calls; i++) {
		const t = now();
		try {
			const r = await fn();
			const d = now() - t;
			const bad = check(r);
			if (bad) throw new Error(bad);
			ms.push(d);
		} catch (e) {
			failures++;
			why = e.message;
		}
	}
	line(name, ms, calls, failures, why);
}
let sbx;
try {
	sbx = await Sandbox.create({ ...OPTS });
} catch (e) {
	console.log(`Sandbox.create() failed: ${e.message}`);
	process.exit(1);
}
try {
	await series('runCode(\'1+1\')', () => sbx.runCode('1+1', { ...OPTS, timeoutMs: 60000 }),
		(e) => (value(e) === '2' ? null : `got ${JSON.stringify(value(e))}`));
	await series('commands.run(\'true\')', () => sbx.commands.run('true', { ...OPTS, timeoutMs: 60000 }),
		(r) => (r.exitCode === 0 ? null : `got ${JSON.stringify(r)}`));
} finally {
	await sbx.kill(OPTS).catch(() => {});
}
process.exit(0);
