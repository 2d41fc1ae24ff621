#!/usr/bin/env node
// ember-mcp's latencies through the official MCP SDK's client over stdio
// (run it through bench/mcp, which sets up the state directory):
//
//   node tests/mcp/bench.mjs SERVER [RUNS]
//
// RUNS times each (default 20), one after another, as a client sees
// them (the tools/call request to its result): create_sandbox to a usable
// sandbox (the tool returns when it is ready; each one killed before the
// next, not timed), run_code of `1+1` in Python and in JavaScript, and
// run_command of `true`, on one sandbox.  Prints each series' median, p90,
// min and max; asserts nothing (a failed call is reported and not timed).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const server = process.argv[2];
const runs = Number(process.argv[3] || 20);
if (!server || !(runs > 0)) {
	console.error('usage: bench.mjs SERVER [RUNS]');
	process.exit(2);
}
const CALL = { timeout: 300000 };
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

const transport = new StdioClientTransport({
	command: server,
	args: process.env.MCP_TEMPLATE ? ['--template', process.env.MCP_TEMPLATE] : [],
	env: { ...process.env },
	stderr: 'inherit',
});
const client = new Client({ name: 'ember-bench', version: '1.0.0' });
let t0 = now();
await client.connect(transport, CALL);
console.log(`connect (spawn ember-mcp, initialize): ${fmt(now() - t0)} ms`);
t0 = now();
await client.listTools(undefined, CALL);
console.log(`tools/list: ${fmt(now() - t0)} ms`);

async function call(name, args) {
	const r = await client.callTool({ name, arguments: args }, undefined, CALL);
	if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
	return r.structuredContent || {};
}
// series NAME FN CHECK WARM AFTER: RUNS timed calls of FN (one warm-up
// first, not timed, when WARM), AFTER(result) after each, not timed
async function series(name, fn, check, warm = true, after = null) {
	const ms = [];
	const all = []; // every call's ms in order (failed ones too), for the slowest's index
	let failures = 0;
	let why = '';
	if (warm) await fn().catch(() => {});
	for (let i = 0; i < runs; i++) {
		const t = now();
		try {
			const r = await fn();
			const d = now() - t;
			all.push(d);
			const bad = check ? check(r) : null;
			if (after) await after(r);
			if (bad) throw new Error(bad);
			ms.push(d);
		} catch (e) {
			failures++;
			why = e.message;
		}
	}
	const line = ms.length
		? `median ${fmt(median(ms)).padStart(8)} ms   p90 ${fmt(q(ms, 0.9)).padStart(8)} ms   min ${fmt(Math.min(...ms)).padStart(8)}   max ${fmt(Math.max(...ms)).padStart(8)}`
		: 'no successful call';
	const slowest = all.indexOf(Math.max(...all)) + 1;
	console.log(`${name.padEnd(28)} ${line}   (${ms.length} of ${runs}${ms.length ? `, slowest: #${slowest}` : ''}${failures ? `; ${failures} failed: ${why.slice(0, 200)}` : ''})`);
}

// each sandbox killed before the next create (not timed), as bench/template-run
await series('create_sandbox', () => call('create_sandbox', {}),
	(s) => (typeof s.sandbox_id === 'string' ? null : `no sandbox_id: ${JSON.stringify(s)}`), false,
	(s) => (s.sandbox_id ? call('kill_sandbox', { sandbox_id: s.sandbox_id }).catch(() => {}) : null));

const sid = (await call('create_sandbox', {})).sandbox_id;
const main = (s) => ((s.results || []).find((r) => r.is_main_result) || {}).text;
await series('run_code 1+1 (python)', () => call('run_code', { sandbox_id: sid, code: '1+1' }),
	(s) => (main(s) === '2' ? null : `got ${JSON.stringify(s)}`));
await series('run_code 1+1 (javascript)',
	() => call('run_code', { sandbox_id: sid, code: '1+1', language: 'javascript' }),
	(s) => (main(s) === '2' ? null : `got ${JSON.stringify(s)}`));
await series('run_command true', () => call('run_command', { sandbox_id: sid, command: 'true' }),
	(s) => (s.exit_code === 0 ? null : `got ${JSON.stringify(s)}`));
await call('kill_sandbox', { sandbox_id: sid }).catch(() => {});
await client.close();
