#!/usr/bin/env node
// ember-e2b end to end with the official E2B JavaScript SDKs (e2b and
// @e2b/code-interpreter at the versions package-lock.json pins).
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY node tests/e2b/sdk_test.mjs
//
// The server must be running (tests/integration/e2b.sh starts it).  Prints
// one line per check, "ok - e2b: ..." or "not ok - e2b: ... (why)", and
// exits 1 when a check failed.  Every check asserts values, and every SDK
// call runs under a deadline, so that a hang fails rather than stalls.
// Each sandbox the test creates is killed before it exits (the caller
// checks that none is left).
import {
	Sandbox, AuthenticationError, CommandExitError, FileNotFoundError, SandboxError, SandboxNotFoundError, TimeoutError,
} from '@e2b/code-interpreter';

const env = process.env;
for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!env[v]) {
		console.error(`sdk_test.mjs: set ${v}`);
		process.exit(2);
	}
}
if (/^true$/i.test(env.E2B_DEBUG || '')) {
	console.error('sdk_test.mjs: unset E2B_DEBUG (the SDK then talks to no server at all)');
	process.exit(2);
}

// ---- reporting ----------------------------------------------------------------------
let failed = 0;
const prefix = 'e2b: ';
function oneLine(s) {
	s = String(s).replace(/\s+/g, ' ').trim();
	return s.length > 400 ? s.slice(0, 400) + '...' : s;
}
const show = (v) => oneLine(JSON.stringify(v));
function expect(cond, why) {
	if (!cond) throw new Error(why);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint() / 1000000n);

// within MS PROMISE: PROMISE, or a rejection once MS ms passed.
function within(ms, p, what = 'the call') {
	let timer;
	const t = new Promise((_, rej) => {
		timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
	});
	return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
// check NAME FN [MS]: ok when FN resolves within MS (default 120 s).
async function check(name, fn, ms = 120000) {
	const t0 = now();
	try {
		await within(ms, Promise.resolve().then(fn), 'the check');
		console.log(`ok - ${prefix}${name} (${now() - t0} ms)`);
		return true;
	} catch (e) {
		failed++;
		console.log(`not ok - ${prefix}${name} (${oneLine(e && e.message ? `${e.name}: ${e.message}` : e)})`);
		return false;
	}
}
// rejects P with an error of class CLS (and checks it further with MORE)
async function expectThrow(p, cls, more = () => {}) {
	let r;
	try {
		r = await p;
	} catch (e) {
		expect(e instanceof cls, `threw ${e && e.constructor && e.constructor.name}: ${e && e.message}, not a ${cls.name}`);
		more(e);
		return e;
	}
	throw new Error(`no ${cls.name}; it returned ${show(r)}`);
}

// ---- the SDK calls, each under a deadline -------------------------------------------------
const REQ = { requestTimeoutMs: 60000 }; // the SDK's own per-request limit
const RUN = { ...REQ, timeoutMs: 60000 }; // a command's or a cell's whole run
const CALL_MS = 90000; // ours, over the SDK's
const RUN_ID = `${process.pid}-${Date.now()}`;
const META = { suite: 'ember-e2b-sdk-test', run: RUN_ID };
const created = new Set(); // every sandbox id the test made: killed at the end
const snapshots = new Set(); // every snapshot it made: deleted at the end

async function create(opts = {}) {
	const sbx = await within(CALL_MS, Sandbox.create({ ...REQ, timeoutMs: 600000, metadata: META, ...opts }),
		'Sandbox.create');
	expect(sbx && typeof sbx.sandboxId === 'string' && sbx.sandboxId.length > 0, `sandboxId ${show(sbx && sbx.sandboxId)}`);
	created.add(sbx.sandboxId);
	console.log(`# sandbox ${sbx.sandboxId}`); // e2b.sh checks that none is left
	return sbx;
}
const code = (sbx, src, opts = {}) => within(CALL_MS, sbx.runCode(src, { ...RUN, ...opts }), `runCode(${show(src)})`);
const run = (sbx, cmd, opts = {}) => within(CALL_MS, sbx.commands.run(cmd, { ...RUN, ...opts }), `commands.run(${show(cmd)})`);
const call = (p, what) => within(CALL_MS, p, what);
async function listed(query, opts = {}) {
	const p = Sandbox.list({ ...REQ, ...opts, query });
	const all = [];
	for (let pages = 0; p.hasNext && pages < 100; pages++) all.push(...await call(p.nextItems(), 'Sandbox.list().nextItems()'));
	return all;
}
// runs SRC and expects no error and the main result's text WANT
async function expectValue(sbx, src, want, opts = {}) {
	const e = await code(sbx, src, opts);
	expect(!e.error, `error ${show(e.error)}`);
	expect(e.text === want, `text ${show(e.text)}, wanted ${show(want)}; results ${show(e.results)}`);
	return e;
}

// ---- rich results, IPython features and failures of the code interpreter -------------------
// Each check stands alone (its own cell; the failures in a context of their
// own, removed after), so that one can be run and debugged by itself.  The
// charts are figures like those of E2B's own chart tests, checked field by
// field as E2B's tests check them.

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
function expectPng(b64, what) {
	const b = Buffer.from(typeof b64 === 'string' ? b64 : '', 'base64');
	expect(b.length > 1000 && b.subarray(0, 8).equals(PNG_MAGIC), `${what}: not a PNG (${b.length} bytes)`);
}
// the one result of E, which must have no error
function onlyResult(e) {
	expect(!e.error, `error ${show(e.error)}`);
	expect(e.results.length === 1, `${e.results.length} results: ${show(e.results.map((r) => r.formats()))}`);
	return e.results[0];
}
// FN(ctx) on a fresh Python context of SBX, removed afterwards
async function inNewContext(sbx, fn) {
	const ctx = await call(sbx.createCodeContext(REQ), 'createCodeContext');
	try {
		return await fn(ctx);
	} finally {
		await call(sbx.removeCodeContext(ctx), 'removeCodeContext').catch(() => {});
	}
}
const sameList = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const LINE_FIGURE = `
import datetime
import numpy as np
import matplotlib.pyplot as plt
start = datetime.datetime(2023, 9, 1)
times = [start + datetime.timedelta(seconds=s) for s in range(100)]
phase = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(8, 5))
plt.plot(times, np.sin(phase), label='sin')
plt.plot(times, np.cos(phase), label='cos')
plt.xlabel('Time (s)')
plt.ylabel('Amplitude (Hz)')
plt.title('Two waves')
plt.show()
`;
const BAR_FIGURE = `
import matplotlib.pyplot as plt
plt.figure()
plt.bar(['A', 'B', 'C', 'D'], [100, 200, 300, 400], label='Books Sold')
plt.xlabel('Author')
plt.ylabel('Copies')
plt.title('Sales')
plt.show()
`;
const PIE_FIGURE = `
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.pie([90, 10], labels=['Yes', 'No'], startangle=90)
ax.set_title('Share')
plt.show()
`;

async function richResultChecks(sbx) {
	const need = () => expect(sbx, 'no sandbox (Sandbox.create failed)');

	await check('runCode: display(HTML(...)) is a result with its html, not the main result', async () => {
		need();
		const r = onlyResult(await code(sbx, 'from IPython.display import HTML, display\ndisplay(HTML("<b>ember</b>"))'));
		expect(r.html === '<b>ember</b>', `html ${show(r.html)}`);
		expect(r.isMainResult === false, `isMainResult ${show(r.isMainResult)}`);
	});

	await check('runCode: a DataFrame as the last value has html and data ({a: [1, 2, 3]})', async () => {
		need();
		const r = onlyResult(await code(sbx, 'import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})'));
		expect(r.isMainResult === true, `isMainResult ${show(r.isMainResult)}`);
		expect(typeof r.html === 'string' && r.html.includes('<table'), `html ${show(r.html)}`);
		expect(r.data && sameList(r.data.a, [1, 2, 3]), `data ${show(r.data)}`);
		expect(r.formats().includes('data'), `formats ${show(r.formats())}`);
	});

	await check('runCode: a line chart over datetimes: chart field by field, and its PNG', async () => {
		need();
		const r = onlyResult(await code(sbx, LINE_FIGURE));
		expectPng(r.png, 'png');
		const c = r.chart;
		expect(c && c.type === 'line', `chart ${show(c)}`);
		expect(c.title === 'Two waves', `title ${show(c.title)}`);
		expect(c.x_label === 'Time (s)' && c.y_label === 'Amplitude (Hz)', `labels ${show([c.x_label, c.y_label])}`);
		expect(c.x_unit === 's' && c.y_unit === 'Hz', `units ${show([c.x_unit, c.y_unit])}`);
		expect(c.x_scale === 'datetime' && c.y_scale === 'linear', `scales ${show([c.x_scale, c.y_scale])}`);
		expect(Array.isArray(c.x_ticks) && c.x_ticks.length > 0 &&
			c.x_ticks.every((t) => typeof t === 'string' && !Number.isNaN(Date.parse(t))), `x_ticks ${show(c.x_ticks)}`);
		expect(Array.isArray(c.y_ticks) && c.y_ticks.every((t) => typeof t === 'number'), `y_ticks ${show(c.y_ticks)}`);
		expect([c.x_tick_labels, c.y_tick_labels].every((l) => Array.isArray(l) && l.every((t) => typeof t === 'string')),
			`tick labels ${show([c.x_tick_labels, c.y_tick_labels])}`);
		expect(c.elements.length === 2, `${c.elements.length} elements`);
		expect(sameList(c.elements.map((l) => l.label), ['sin', 'cos']), `labels ${show(c.elements.map((l) => l.label))}`);
		for (const l of c.elements) {
			expect(l.points.length === 100 && l.points.every((p) => typeof p[0] === 'string' && typeof p[1] === 'number'),
				`${l.label}: ${l.points.length} points, first ${show(l.points[0])}`);
			expect(l.points[0][0].startsWith('2023-09-01'), `${l.label}: first point ${show(l.points[0])}`);
		}
	});

	await check('runCode: a bar chart: 4 bars 100..400 in group "Books Sold", labelled by their ticks; its PNG', async () => {
		need();
		const r = onlyResult(await code(sbx, BAR_FIGURE));
		expectPng(r.png, 'png');
		const c = r.chart;
		expect(c && c.type === 'bar', `chart ${show(c)}`);
		expect(c.title === 'Sales' && c.x_label === 'Author' && c.y_label === 'Copies',
			`title, labels ${show([c.title, c.x_label, c.y_label])}`);
		expect(c.x_unit === null && c.y_unit === null, `units ${show([c.x_unit, c.y_unit])}`);
		expect(sameList(c.elements.map((b) => b.value), [100, 200, 300, 400]), `values ${show(c.elements)}`);
		expect(c.elements.every((b) => b.group === 'Books Sold'), `groups ${show(c.elements)}`);
		expect(sameList(c.elements.map((b) => b.label), ['A', 'B', 'C', 'D']), `labels ${show(c.elements)}`);
	});

	await check('runCode: a pie chart of 90/10: wedges of 324 and 36 degrees, radius 1; its PNG', async () => {
		need();
		const r = onlyResult(await code(sbx, PIE_FIGURE));
		expectPng(r.png, 'png');
		const c = r.chart;
		expect(c && c.type === 'pie' && c.title === 'Share', `chart ${show(c)}`);
		expect(sameList(c.elements.map((w) => [w.label, w.angle, w.radius]), [['Yes', 324, 1], ['No', 36, 1]]),
			`elements ${show(c.elements)}`);
	});

	await check('runCode: !echo hi runs a shell command (stdout "hi")', async () => {
		need();
		const e = await code(sbx, '!echo hi');
		expect(!e.error, `error ${show(e.error)}`);
		expect(e.logs.stdout.join('').trim() === 'hi', `stdout ${show(e.logs.stdout)}`);
	});

	await check('runCode: %time 1+1 prints its timing (Wall time)', async () => {
		need();
		const e = await code(sbx, '%time 1+1');
		expect(!e.error, `error ${show(e.error)}`);
		expect(e.logs.stdout.join('').includes('Wall time'), `stdout ${show(e.logs.stdout)}`);
	});

	await check('runCode: top-level await asyncio.sleep(0) runs without an error', async () => {
		need();
		const e = await code(sbx, 'import asyncio\nawait asyncio.sleep(0)');
		expect(!e.error, `error ${show(e.error)}`);
	});

	await check('runCode: os._exit(1) is error ContextRestarted, then the context runs 1+1', async () => {
		need();
		await inNewContext(sbx, async (context) => {
			const e = await code(sbx, 'import os; os._exit(1)', { context });
			expect(e.error && e.error.name === 'ContextRestarted', `error ${show(e.error)}; results ${show(e.results)}`);
			await expectValue(sbx, '1+1', '2', { context });
		});
	});

	await check('runCode: a segfault (ctypes.string_at(0)) is error ContextRestarted, then the context runs 1+1', async () => {
		need();
		await inNewContext(sbx, async (context) => {
			const e = await code(sbx, 'import ctypes; ctypes.string_at(0)', { context });
			expect(e.error && e.error.name === 'ContextRestarted', `error ${show(e.error)}; results ${show(e.results)}`);
			await expectValue(sbx, '1+1', '2', { context });
		});
	});

	await check('runCode: binary garbage on stdout (every byte value) arrives as text with U+FFFD, no error', async () => {
		need();
		const e = await code(sbx, 'import os; os.write(1, bytes(range(256)) * 4); print("after")');
		expect(!e.error, `error ${show(e.error)}`);
		const out = e.logs.stdout.join('');
		expect(out.includes('\ufffd') && out.includes('after'), `stdout ${show(out.slice(-300))}`);
	});

	await check('runCode: while True: pass with timeoutMs 3000 rejects (TimeoutError); the context keeps its state', async () => {
		need();
		await inNewContext(sbx, async (context) => {
			await expectValue(sbx, 'kept_state = 41; kept_state', '41', { context });
			await expectThrow(code(sbx, 'while True: pass', { context, timeoutMs: 3000 }), TimeoutError);
			await sleep(5000); // as E2B's own interrupt test: ember-e2b notices the client gone, interrupts it
			await expectValue(sbx, 'kept_state + 1', '42', { context, timeoutMs: 30000 });
		});
	}, 180000);

	await check('runCode: an output flood (10**6 lines of 100 bytes) is cut: bounded stdout, the note on stderr, the call ends', async () => {
		need();
		await inNewContext(sbx, async (context) => {
			const e = await within(360000, sbx.runCode("for i in range(10**6): print('x'*100)",
				{ ...RUN, context, timeoutMs: 300000 }), 'the flood');
			const out = e.logs.stdout.join('').length;
			const err = e.logs.stderr.join('');
			expect(!e.error, `error ${show(e.error)}`);
			expect(out > (1 << 20) && out <= 9 * (1 << 20), `${out} bytes of stdout`);
			expect(err.includes('output over 8 MiB'), `stderr ${show(err.slice(0, 300))}`);
			await expectValue(sbx, '1+1', '2', { context });
		});
	}, 400000);
}

// ---- the checks ---------------------------------------------------------------------------
async function main() {
	// The E2B quickstart, calls as its docs have them (each under a deadline).
	await check('the E2B quickstart: create, run code twice keeping state, a shell command, kill', async () => {
		const sbx = await call(Sandbox.create(), 'Sandbox.create');
		created.add(sbx.sandboxId);
		console.log(`# sandbox ${sbx.sandboxId}`);
		const a = await call(sbx.runCode('x = 1'), 'runCode');
		expect(!a.error, `x = 1: error ${show(a.error)}`);
		const e = await call(sbx.runCode('x+=1; x'), 'runCode');
		expect(!e.error && e.text === '2', `text ${show(e.text)}, wanted "2"; error ${show(e.error)}`);
		const r = await call(sbx.commands.run('echo hello'), 'commands.run');
		expect(r.stdout === 'hello\n' && r.exitCode === 0, `echo hello gave ${show(r)}`);
		const k = await call(sbx.kill(), 'kill');
		expect(k === true, `kill returned ${show(k)}`);
		created.delete(sbx.sandboxId);
	});

	let sbx = null;
	const need = () => expect(sbx, 'no sandbox (Sandbox.create failed)');
	await check('Sandbox.create() (code-interpreter-v1) with envs, metadata and a timeout: getInfo knows it', async () => {
		sbx = await create({ envs: { EMBER_E2B_TEST: 'from-create' } });
		const i = await call(sbx.getInfo(), 'getInfo');
		expect(i.sandboxId === sbx.sandboxId, `getInfo sandboxId ${show(i.sandboxId)}`);
		expect(i.state === 'running', `state ${show(i.state)}`);
		expect(i.metadata && i.metadata.suite === META.suite && i.metadata.run === RUN_ID, `metadata ${show(i.metadata)}`);
		expect(i.templateId === 'code-interpreter-v1', `templateId ${show(i.templateId)}`);
		const left = i.endAt.getTime() - Date.now();
		expect(left > 500000 && left < 700000, `endAt ${i.endAt.toISOString()}: ${left} ms left, wanted about 600 s`);
		expect(i.startedAt.getTime() <= Date.now() + 5000, `startedAt ${i.startedAt.toISOString()}`);
	});

	await check('runCode: x = 1, then x += 1; x gives the text "2" as the main result', async () => {
		need();
		const a = await code(sbx, 'x = 1');
		expect(!a.error && a.results.length === 0, `x = 1 gave ${show(a)}`);
		const e = await expectValue(sbx, 'x += 1; x', '2');
		expect(e.results.length === 1 && e.results[0].isMainResult === true, `results ${show(e.results)}`);
		expect(e.executionCount > 0, `executionCount ${show(e.executionCount)}`);
	});

	await check('runCode: print() reaches logs.stdout and onStdout, sys.stderr reaches logs.stderr and onStderr', async () => {
		need();
		const out = [];
		const err = [];
		const e = await code(sbx, 'import sys\nprint("to out")\nprint("to err", file=sys.stderr)',
			{ onStdout: (m) => out.push(m.line), onStderr: (m) => err.push(m.line) });
		expect(!e.error, `error ${show(e.error)}`);
		expect(e.logs.stdout.join('') === 'to out\n', `logs.stdout ${show(e.logs.stdout)}`);
		expect(e.logs.stderr.join('') === 'to err\n', `logs.stderr ${show(e.logs.stderr)}`);
		expect(out.join('') === 'to out\n' && err.join('') === 'to err\n', `callbacks: out ${show(out)}, err ${show(err)}`);
	});

	await check('runCode: a matplotlib chart comes back as a PNG result', async () => {
		need();
		const e = await code(sbx, 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title("ember")\nplt.show()');
		expect(!e.error, `error ${show(e.error)}`);
		const pngs = e.results.filter((r) => typeof r.png === 'string' && r.png.length > 0);
		expect(pngs.length === 1, `${pngs.length} PNG results; results ${show(e.results.map((r) => r.formats()))}`);
		const b = Buffer.from(pngs[0].png, 'base64');
		expect(b.length > 1000 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
			`not a PNG: ${b.length} bytes, starts ${b.subarray(0, 8).toString('hex')}`);
		expect(pngs[0].isMainResult === false, `a figure is not the main result: ${show(pngs[0].isMainResult)}`);
	});

	await check('runCode: a pandas DataFrame comes back with text and HTML', async () => {
		need();
		const e = await code(sbx, 'import pandas as pd\npd.DataFrame({"a": [1, 2], "b": [3, 4]})');
		expect(!e.error, `error ${show(e.error)}`);
		const m = e.results.find((r) => r.isMainResult);
		expect(m && typeof m.html === 'string' && m.html.includes('<table') && m.html.includes('<td>4</td>'), `html ${show(m && m.html)}`);
		expect(typeof m.text === 'string' && /a\s+b/.test(m.text), `text ${show(m.text)}`);
	});

	await check('runCode: 1/0 comes back as execution.error ZeroDivisionError with value and traceback', async () => {
		need();
		const errs = [];
		const e = await code(sbx, '1/0', { onError: (x) => errs.push(x) });
		expect(e.error, `no error; results ${show(e.results)}`);
		expect(e.error.name === 'ZeroDivisionError', `name ${show(e.error.name)}`);
		expect(/division by zero/.test(e.error.value), `value ${show(e.error.value)}`);
		expect(typeof e.error.traceback === 'string' && e.error.traceback.includes('ZeroDivisionError'),
			`traceback ${show(e.error.traceback)}`);
		expect(e.text === undefined, `text ${show(e.text)}`);
		expect(errs.length === 1 && errs[0].name === 'ZeroDivisionError', `onError got ${show(errs)}`);
		// and the context lives on
		await expectValue(sbx, 'x', '2');
	});

	await richResultChecks(sbx);

	await check('createCodeContext: a second context has state of its own', async () => {
		need();
		const ctx = await call(sbx.createCodeContext(REQ), 'createCodeContext');
		expect(ctx && typeof ctx.id === 'string' && ctx.id.length > 0, `context ${show(ctx)}`);
		await expectValue(sbx, 'y = 5; y', '5', { context: ctx });
		const e = await code(sbx, 'y');
		expect(e.error && e.error.name === 'NameError', `y in the default context: ${show(e.error || e.results)}`);
		await expectValue(sbx, 'y * 2', '10', { context: ctx });
	});

	await check('code contexts: a fresh one restarted at once, then removed; the interpreter still answers; the default cwd is /home/user', async () => {
		need();
		const ctx = await call(sbx.createCodeContext(REQ), 'createCodeContext');
		await call(sbx.restartCodeContext(ctx), 'restartCodeContext');
		await call(sbx.removeCodeContext(ctx), 'removeCodeContext');
		const list = await call(sbx.listCodeContexts(), 'listCodeContexts');
		expect(!list.some((c) => c.id === ctx.id), `removed context still listed: ${show(list)}`);
		await expectValue(sbx, 'import os; os.getcwd()', '/home/user');
	});

	await check('runCode in a language ember has not: execution.error UnsupportedLanguage that says so', async () => {
		need();
		const e = await code(sbx, 'echo hi', { language: 'bash' });
		expect(e.error && e.error.name === 'UnsupportedLanguage' && /not supported by ember/.test(e.error.value),
			`error ${show(e.error)}`);
	});

	await check('commands.run: stdout and stderr streamed to onStdout/onStderr, exit code 0', async () => {
		need();
		const out = [];
		const err = [];
		const r = await run(sbx, 'echo out1; echo err1 >&2; sleep 0.2; echo out2; echo err2 >&2',
			{ onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
		expect(r.exitCode === 0, `exitCode ${show(r.exitCode)}`);
		expect(r.stdout === 'out1\nout2\n', `stdout ${show(r.stdout)}`);
		expect(r.stderr === 'err1\nerr2\n', `stderr ${show(r.stderr)}`);
		expect(out.join('') === r.stdout && err.join('') === r.stderr, `callbacks: out ${show(out)}, err ${show(err)}`);
	});

	await check('commands.run: a nonzero exit raises CommandExitError with exitCode, stdout and stderr', async () => {
		need();
		await expectThrow(run(sbx, 'echo partial; echo bad >&2; exit 3'), CommandExitError, (e) => {
			expect(e.exitCode === 3, `exitCode ${show(e.exitCode)}`);
			expect(e.stdout === 'partial\n' && e.stderr === 'bad\n', `stdout ${show(e.stdout)}, stderr ${show(e.stderr)}`);
		});
	});

	await check('commands.run {background: true}: runs, is listed, kill() ends it', async () => {
		need();
		const out = [];
		const h = await run(sbx, 'echo started; exec sleep 600', { background: true, onStdout: (d) => out.push(d) });
		expect(Number.isInteger(h.pid) && h.pid > 0, `pid ${show(h.pid)}`);
		const t0 = now();
		while (!out.join('').includes('started') && now() - t0 < 20000) await sleep(50);
		expect(out.join('') === 'started\n', `background stdout ${show(out)}`);
		const ps = await call(sbx.commands.list(REQ), 'commands.list');
		expect(ps.some((p) => p.pid === h.pid), `commands.list lacks pid ${h.pid}: ${show(ps)}`);
		const k = await call(h.kill(), 'handle.kill');
		expect(k === true, `kill returned ${show(k)}`);
		let res;
		try {
			res = await call(h.wait(), 'handle.wait');
		} catch (e) {
			res = e;
		}
		expect(res instanceof CommandExitError && res.exitCode !== 0, `wait() after kill: ${show(res && (res.message || res))}`);
		const again = await call(sbx.commands.kill(h.pid, REQ), 'commands.kill');
		expect(again === false, `kill of an ended process returned ${show(again)}`);
	});

	await check('commands.run {stdin: true}: sendStdin reaches `head -n1`', async () => {
		need();
		const h = await run(sbx, 'head -n1', { background: true, stdin: true });
		await call(sbx.commands.sendStdin(h.pid, 'hello stdin\nnot read\n', REQ), 'sendStdin');
		const r = await call(h.wait(), 'handle.wait');
		expect(r.exitCode === 0 && r.stdout === 'hello stdin\n', `got ${show(r)}`);
	});

	await check('commands.run {stdin: true}: sendStdin twice, closeStdin ends `wc -c`', async () => {
		need();
		const h = await run(sbx, 'wc -c', { background: true, stdin: true });
		await call(sbx.commands.sendStdin(h.pid, 'abc', REQ), 'sendStdin');
		await call(sbx.commands.sendStdin(h.pid, 'defg\n', REQ), 'sendStdin');
		await call(sbx.commands.closeStdin(h.pid, REQ), 'closeStdin');
		const r = await call(h.wait(), 'handle.wait');
		expect(r.exitCode === 0 && r.stdout.trim() === '8', `got ${show(r)}`);
	});

	await check('envs given to Sandbox.create reach commands.run and runCode', async () => {
		need();
		const r = await run(sbx, 'echo "$EMBER_E2B_TEST"');
		expect(r.stdout === 'from-create\n', `commands.run saw ${show(r.stdout)}`);
		await expectValue(sbx, 'import os; os.environ.get("EMBER_E2B_TEST")', 'from-create'); // E2B strips a str's quotes
	});

	await check('envs given to commands.run and runCode reach them, over the sandbox\'s', async () => {
		need();
		const r = await run(sbx, 'echo "$EMBER_E2B_TEST $ONLY_HERE"', { envs: { EMBER_E2B_TEST: 'per-call', ONLY_HERE: 'yes' } });
		expect(r.stdout === 'per-call yes\n', `commands.run saw ${show(r.stdout)}`);
		await expectValue(sbx, 'import os; os.environ.get("ONLY_HERE")', 'yes', { envs: { ONLY_HERE: 'yes' } });
	});

	await check('commands.run {cwd}: runs there', async () => {
		need();
		const r = await run(sbx, 'pwd', { cwd: '/tmp' });
		expect(r.stdout === '/tmp\n', `pwd gave ${show(r.stdout)}`);
	});

	await check('users: commands run as user (HOME /home/user, cwd /home/user) by default, as root with {user: "root"}; files written as user are its; an unknown user fails', async () => {
		need();
		const d = await run(sbx, 'id -un; id -u; echo "$HOME $USER"; pwd');
		expect(d.stdout === 'user\n1000\n/home/user user\n/home/user\n', `default: ${show(d.stdout)}`);
		const r = await run(sbx, 'id -un; echo "$HOME"', { user: 'root' });
		expect(r.stdout === 'root\n/root\n', `as root: ${show(r.stdout)}`);
		await call(sbx.files.write('/home/user/e2b-owned/u.txt', 'mine', REQ), 'files.write');
		await call(sbx.files.makeDir('/home/user/e2b-owned/d', REQ), 'files.makeDir');
		await call(sbx.files.write('/tmp/e2b-root/r.txt', 'root\'s', { ...REQ, user: 'root' }), 'files.write as root');
		const o = await run(sbx, 'stat -c "%n %U:%G %a" /home/user/e2b-owned /home/user/e2b-owned/u.txt /home/user/e2b-owned/d /tmp/e2b-root/r.txt');
		expect(o.stdout === '/home/user/e2b-owned user:user 755\n/home/user/e2b-owned/u.txt user:user 644\n' +
			'/home/user/e2b-owned/d user:user 755\n/tmp/e2b-root/r.txt root:root 644\n', `owners: ${show(o.stdout)}`);
		expect(await call(sbx.files.read('/home/user/e2b-owned/u.txt', REQ), 'files.read') === 'mine', 'read back');
		await expectThrow(call(sbx.files.write('/root/e2b-denied.txt', 'no', REQ), 'files.write to /root'), SandboxError,
			(e) => expect(/ermission denied/.test(e.message), `message ${show(e.message)}`));
		await expectThrow(run(sbx, 'true', { user: 'nosuchuser' }), SandboxError,
			(e) => expect(/nosuchuser/.test(e.message), `message ${show(e.message)}`));
		await run(sbx, 'rm -rf /home/user/e2b-owned');
	});

	const dir = '/home/user/e2b-test';
	await check('files.write / files.read / files.list / files.exists', async () => {
		need();
		const w = await call(sbx.files.write(`${dir}/hello.txt`, 'hello files\n', REQ), 'files.write');
		expect(w && w.path === `${dir}/hello.txt` && w.name === 'hello.txt', `write returned ${show(w)}`);
		const t = await call(sbx.files.read(`${dir}/hello.txt`, REQ), 'files.read');
		expect(t === 'hello files\n', `read ${show(t)}`);
		const l = await call(sbx.files.list(dir, REQ), 'files.list');
		const e = l.find((x) => x.name === 'hello.txt');
		expect(e && e.type === 'file' && e.size === 12 && e.path === `${dir}/hello.txt`, `list ${show(l)}`);
		expect(await call(sbx.files.exists(`${dir}/hello.txt`, REQ), 'files.exists') === true, 'exists is not true');
		const c = await run(sbx, `cat ${dir}/hello.txt`);
		expect(c.stdout === 'hello files\n', `cat in the sandbox: ${show(c.stdout)}`);
	});

	await check('files: 256 KiB of every byte value written and read back byte for byte', async () => {
		need();
		const data = Buffer.alloc(256 * 1024);
		for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 8)) & 255;
		const ab = data.buffer.slice(data.byteOffset, data.byteOffset + data.length);
		await call(sbx.files.write(`${dir}/bin.dat`, ab, REQ), 'files.write');
		const back = Buffer.from(await call(sbx.files.read(`${dir}/bin.dat`, { ...REQ, format: 'bytes' }), 'files.read'));
		expect(back.equals(data), `read back ${back.length} bytes, ${back.equals(data) ? 'equal' : 'different'}`);
	});

	await check('files.remove: then files.exists is false and files.read raises FileNotFoundError', async () => {
		need();
		await call(sbx.files.remove(`${dir}/hello.txt`, REQ), 'files.remove');
		const x = await call(sbx.files.exists(`${dir}/hello.txt`, REQ), 'files.exists');
		expect(x === false, `exists after remove: ${show(x)}`);
		await expectThrow(call(sbx.files.read(`${dir}/hello.txt`, REQ), 'files.read'), FileNotFoundError);
		const l = await call(sbx.files.list(dir, REQ), 'files.list');
		expect(!l.some((e) => e.name === 'hello.txt') && l.some((e) => e.name === 'bin.dat'), `list ${show(l)}`);
	});

	await check('files.makeDir (parents too; false when it exists), getInfo, rename', async () => {
		need();
		const m = await call(sbx.files.makeDir(`${dir}/a/b`, REQ), 'files.makeDir');
		expect(m === true, `makeDir returned ${show(m)}`);
		const again = await call(sbx.files.makeDir(`${dir}/a/b`, REQ), 'files.makeDir');
		expect(again === false, `makeDir of an existing directory returned ${show(again)}`);
		const i = await call(sbx.files.getInfo(`${dir}/a/b`, REQ), 'files.getInfo');
		expect(i.type === 'dir' && i.name === 'b' && i.path === `${dir}/a/b`, `getInfo ${show(i)}`);
		await call(sbx.files.write(`${dir}/a/b/old.txt`, 'moved', REQ), 'files.write');
		const r = await call(sbx.files.rename(`${dir}/a/b/old.txt`, `${dir}/a/new.txt`, REQ), 'files.rename');
		expect(r && r.path === `${dir}/a/new.txt` && r.type === 'file', `rename returned ${show(r)}`);
		expect(await call(sbx.files.exists(`${dir}/a/b/old.txt`, REQ), 'files.exists') === false, 'the old name is still there');
		expect(await call(sbx.files.read(`${dir}/a/new.txt`, REQ), 'files.read') === 'moved', 'the new name reads otherwise');
		await call(sbx.files.remove(`${dir}/a`, REQ), 'files.remove');
		expect(await call(sbx.files.exists(`${dir}/a`, REQ), 'files.exists') === false, 'remove of a directory left it');
	});

	await check('files.watchDir: a file written in the directory is an event', async () => {
		need();
		const events = [];
		const h = await call(sbx.files.watchDir(dir, (e) => events.push(e), { ...REQ, timeoutMs: 60000 }), 'files.watchDir');
		try {
			await call(sbx.files.write(`${dir}/watched.txt`, 'seen', REQ), 'files.write');
			const t0 = now();
			while (!events.some((e) => e.name === 'watched.txt') && now() - t0 < 20000) await sleep(100);
			const mine = events.filter((e) => e.name === 'watched.txt');
			expect(mine.some((e) => e.type === 'create' || e.type === 'write'), `events ${show(events)}`);
		} finally {
			await call(h.stop(), 'stop');
		}
	});

	await check('commands.connect: a background command\'s later output and exit reach a new handle', async () => {
		need();
		const h = await run(sbx, 'sleep 2; echo late; exit 4', { background: true });
		await h.disconnect();
		const out = [];
		const c = await call(sbx.commands.connect(h.pid, { ...RUN, onStdout: (d) => out.push(d) }), 'commands.connect');
		expect(c.pid === h.pid, `connect gave pid ${show(c.pid)}`);
		await expectThrow(call(c.wait(), 'handle.wait'), CommandExitError, (e) => {
			expect(e.exitCode === 4, `exitCode ${show(e.exitCode)}`);
		});
		expect(out.join('') === 'late\n', `onStdout got ${show(out)}`);
	});

	await check('setTimeout: getInfo\'s endAt moves to now + the new timeout', async () => {
		need();
		await call(sbx.setTimeout(900000, REQ), 'setTimeout');
		const i = await call(sbx.getInfo(), 'getInfo');
		const left = i.endAt.getTime() - Date.now();
		expect(left > 840000 && left <= 905000, `endAt ${i.endAt.toISOString()}: ${left} ms left, wanted about 900 s`);
	});

	await check('setTimeout: a sandbox whose timeout lapses is gone (getInfo: SandboxNotFoundError)', async () => {
		const s = await create({ metadata: { ...META, role: 'short-lived' } });
		await call(s.setTimeout(3000, REQ), 'setTimeout');
		const t0 = now();
		let gone = null;
		while (now() - t0 < 40000) {
			try {
				await call(s.getInfo(), 'getInfo');
			} catch (e) {
				gone = e;
				break;
			}
			await sleep(500);
		}
		expect(gone instanceof SandboxNotFoundError, `after ${now() - t0} ms: ${gone ? gone.message : 'still there'}`);
		const l = await listed({ metadata: { run: RUN_ID, role: 'short-lived' } });
		expect(l.length === 0, `Sandbox.list still has ${show(l.map((x) => x.sandboxId))}`);
		created.delete(s.sandboxId);
	}, 90000);

	await check('Sandbox.list: has ours (running, with its metadata); a metadata filter selects', async () => {
		need();
		const all = await listed(undefined);
		const mine = all.find((x) => x.sandboxId === sbx.sandboxId);
		expect(mine, `not in Sandbox.list(): ${show(all.map((x) => x.sandboxId))}`);
		expect(mine.state === 'running' && mine.metadata.run === RUN_ID && mine.templateId === 'code-interpreter-v1',
			`listed as ${show(mine)}`);
		expect(mine.startedAt instanceof Date && !isNaN(mine.startedAt) && mine.endAt > mine.startedAt, `times ${show(mine)}`);
		const sel = await listed({ metadata: { run: RUN_ID, suite: META.suite } });
		expect(sel.length === 1 && sel[0].sandboxId === sbx.sandboxId, `filter {run, suite}: ${show(sel.map((x) => x.sandboxId))}`);
		const none = await listed({ metadata: { run: `${RUN_ID}-other` } });
		expect(none.length === 0, `filter {run: other}: ${show(none.map((x) => x.sandboxId))}`);
		const paused = await listed({ metadata: { run: RUN_ID }, state: ['paused'] });
		expect(paused.length === 0, `filter state paused: ${show(paused.map((x) => x.sandboxId))}`);
	});

	await check('what ember does not do is an SDK error that says so: metrics, network rules, a pause on timeout without memory', async () => {
		need();
		const says = (e) => expect(/not supported|no \w+ support/i.test(e.message), `message ${show(e.message)}`);
		await expectThrow(call(sbx.getMetrics(REQ), 'getMetrics'), SandboxError, says);
		await expectThrow(call(Sandbox.create({ ...REQ, metadata: META, network: { denyOut: ['8.8.8.8'] } }), 'Sandbox.create'),
			SandboxError, says);
		await expectThrow(call(Sandbox.create({ ...REQ, metadata: META,
			lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } }), 'Sandbox.create'),
			SandboxError, says);
		const l = await listed({ metadata: { run: RUN_ID } });
		expect(l.length === 1 && l[0].sandboxId === sbx.sandboxId, `sandboxes of this run: ${show(l.map((x) => x.sandboxId))}`);
	});

	await check('pause: getInfo and Sandbox.list say paused; pause again returns false', async () => {
		need();
		await expectValue(sbx, 'kept = 41; kept', '41');
		await call(sbx.files.write('/home/user/kept.txt', 'kept across pause', REQ), 'files.write');
		const p = await call(sbx.pause(REQ), 'pause');
		expect(p === true, `pause returned ${show(p)}`);
		const i = await call(sbx.getInfo(), 'getInfo');
		expect(i.state === 'paused', `getInfo state ${show(i.state)}`);
		const l = await listed({ metadata: { run: RUN_ID }, state: ['paused'] });
		expect(l.length === 1 && l[0].sandboxId === sbx.sandboxId && l[0].state === 'paused', `list paused: ${show(l)}`);
		const again = await call(sbx.pause(REQ), 'pause');
		expect(again === false, `a second pause returned ${show(again)}`);
	});

	await check('connect after pause: running again; the Python variable and the file survived', async () => {
		need();
		const s = await call(Sandbox.connect(sbx.sandboxId, REQ), 'Sandbox.connect');
		expect(s.sandboxId === sbx.sandboxId, `connect gave ${show(s.sandboxId)}`);
		sbx = s;
		const i = await call(sbx.getInfo(), 'getInfo');
		expect(i.state === 'running', `getInfo state ${show(i.state)}`);
		await expectValue(sbx, 'kept + 1', '42');
		const t = await call(sbx.files.read('/home/user/kept.txt', REQ), 'files.read');
		expect(t === 'kept across pause', `read ${show(t)}`);
		const r = await run(sbx, 'echo "$EMBER_E2B_TEST"');
		expect(r.stdout === 'from-create\n', `envs after resume: ${show(r.stdout)}`);
	}, 180000);

	await check('connect to a running sandbox: the same sandbox, usable', async () => {
		need();
		const s = await call(Sandbox.connect(sbx.sandboxId, REQ), 'Sandbox.connect');
		expect(s.sandboxId === sbx.sandboxId, `connect gave ${show(s.sandboxId)}`);
		await expectValue(s, 'kept', '41');
	});

	await check('fork: a copy with the same state; what the copy changes stays in it', async () => {
		need();
		const forks = await call(sbx.fork({ ...REQ, timeoutMs: 300000 }), 'fork');
		expect(Array.isArray(forks) && forks.length === 1, `fork gave ${show(forks)}`);
		const f = forks[0];
		expect(f instanceof Sandbox, `fork gave ${f && f.message ? f.message : show(f)}`);
		created.add(f.sandboxId);
		console.log(`# sandbox ${f.sandboxId}`);
		try {
			expect(f.sandboxId !== sbx.sandboxId, 'the fork has the same id');
			await expectValue(f, 'kept', '41');
			const t = await call(f.files.read('/home/user/kept.txt', REQ), 'files.read');
			expect(t === 'kept across pause', `the fork read ${show(t)}`);
			await expectValue(f, 'kept = 7; kept', '7');
			await call(f.files.write('/home/user/kept.txt', 'changed in the fork', REQ), 'files.write');
			await expectValue(sbx, 'kept', '41');
			const o = await call(sbx.files.read('/home/user/kept.txt', REQ), 'files.read');
			expect(o === 'kept across pause', `the original read ${show(o)}`);
		} finally {
			if (await call(f.kill(REQ), 'kill')) created.delete(f.sandboxId);
		}
	}, 180000);

	await check('createSnapshot: Sandbox.create(snapshotId) starts with its state; listSnapshots; deleteSnapshot', async () => {
		need();
		const snap = await call(sbx.createSnapshot(REQ), 'createSnapshot');
		expect(snap && typeof snap.snapshotId === 'string' && snap.snapshotId.length > 0, `createSnapshot gave ${show(snap)}`);
		snapshots.add(snap.snapshotId);
		const s = await create({ template: snap.snapshotId });
		try {
			await expectValue(s, 'kept', '41');
			const t = await call(s.files.read('/home/user/kept.txt', REQ), 'files.read');
			expect(t === 'kept across pause', `read ${show(t)}`);
		} finally {
			if (await call(s.kill(REQ), 'kill')) created.delete(s.sandboxId);
		}
		const p = Sandbox.listSnapshots({ ...REQ, sandboxId: sbx.sandboxId });
		const l = await call(p.nextItems(), 'listSnapshots');
		expect(l.some((x) => x.snapshotId === snap.snapshotId), `listSnapshots ${show(l)}`);
		const d = await call(Sandbox.deleteSnapshot(snap.snapshotId, REQ), 'deleteSnapshot');
		expect(d === true, `deleteSnapshot returned ${show(d)}`);
		snapshots.delete(snap.snapshotId);
		const again = await call(Sandbox.deleteSnapshot(snap.snapshotId, REQ), 'deleteSnapshot');
		expect(again === false, `a second deleteSnapshot returned ${show(again)}`);
	}, 180000);

	await check('envd refuses a request without the sandbox\'s access token', async () => {
		need();
		const r = await call(fetch(`${env.E2B_SANDBOX_URL.replace(/\/$/, '')}/filesystem.Filesystem/ListDir`, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1',
				'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' },
			body: JSON.stringify({ path: '/home/user', depth: 1 }),
		}), 'fetch');
		const body = await r.text();
		expect(r.status === 401 || r.status === 403, `HTTP ${r.status}: ${oneLine(body)}`);
		expect(!body.includes('kept.txt'), `the listing came back: ${oneLine(body)}`);
	});

	await check('kill: then Sandbox.list lacks it, getInfo raises SandboxNotFoundError, kill again returns false', async () => {
		need();
		const id = sbx.sandboxId;
		const k = await call(sbx.kill(REQ), 'kill');
		expect(k === true, `kill returned ${show(k)}`);
		created.delete(id);
		const l = await listed(undefined);
		expect(!l.some((x) => x.sandboxId === id), `Sandbox.list still has ${id}`);
		await expectThrow(call(Sandbox.getInfo(id, REQ), 'getInfo'), SandboxNotFoundError);
		const again = await call(Sandbox.kill(id, REQ), 'Sandbox.kill');
		expect(again === false, `a second kill returned ${show(again)}`);
		sbx = null;
	});

	await check('a wrong API key is refused: AuthenticationError (create, list, kill)', async () => {
		const bad = { ...REQ, apiKey: `${env.E2B_API_KEY}-wrong` };
		await expectThrow(call(Sandbox.create({ ...bad, metadata: META }), 'Sandbox.create'), AuthenticationError);
		await expectThrow(call(Sandbox.list(bad).nextItems(), 'Sandbox.list'), AuthenticationError);
		await expectThrow(call(Sandbox.kill('0123456789ab', bad), 'Sandbox.kill'), AuthenticationError);
		const l = await listed({ metadata: { run: RUN_ID } });
		expect(l.length === 0, `sandboxes of this run: ${show(l.map((x) => x.sandboxId))}`);
	});

	await check('an unknown sandbox: connect and getInfo raise SandboxNotFoundError, kill returns false', async () => {
		await expectThrow(call(Sandbox.connect('0123456789ab', REQ), 'Sandbox.connect'), SandboxNotFoundError);
		await expectThrow(call(Sandbox.getInfo('0123456789ab', REQ), 'Sandbox.getInfo'), SandboxNotFoundError);
		await expectThrow(call(Sandbox.setTimeout('0123456789ab', 10000, REQ), 'Sandbox.setTimeout'), SandboxNotFoundError);
		const k = await call(Sandbox.kill('0123456789ab', REQ), 'Sandbox.kill');
		expect(k === false, `kill returned ${show(k)}`);
	});
}

try {
	await main();
} catch (e) {
	failed++;
	console.log(`not ok - ${prefix}the test itself (${oneLine(e && e.stack ? e.stack : e)})`);
} finally {
	// Whatever happened, no sandbox of this run is left.
	for (const id of created) {
		try {
			await within(30000, Sandbox.kill(id, REQ));
		} catch (e) {
			console.log(`# kill ${id}: ${oneLine(e.message)}`);
		}
	}
	for (const id of snapshots) {
		try {
			await within(30000, Sandbox.deleteSnapshot(id, REQ));
		} catch (e) {
			console.log(`# deleteSnapshot ${id}: ${oneLine(e.message)}`);
		}
	}
}
process.exit(failed ? 1 : 0);
