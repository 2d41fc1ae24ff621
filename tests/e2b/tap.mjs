// The TAP-like lines and helpers that the e2b SDK tests share (ports,
// ontimeout, keepprocs, pty): "ok - PREFIX NAME (MS ms)" / "not ok - PREFIX
// NAME (why)", a check's deadline, the environment a test needs.
//
//   import { tap, needEnv, expect, within, sleep, show } from './tap.mjs';
//   needEnv('x_test.mjs', ['E2B_API_URL']);
//   const t = tap('e2b: x: ', 240000);
//   await t.check('a thing works', async () => { expect(1 + 1 === 2, 'sum'); });
//   process.exit(t.failed() ? 1 : 0);

// Exit 2 with one line when a variable of @names is not set.
export function needEnv(script, names) {
	for (const v of names) {
		if (!process.env[v]) {
			console.error(`${script}: set ${v}`);
			process.exit(2);
		}
	}
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const oneLine = (s, n = 400) => String(s).replace(/\s+/g, ' ').trim().slice(0, n);
export const show = (v, n = 400) => oneLine(JSON.stringify(v), n);

// Throw @why unless @cond.
export function expect(cond, why) {
	if (!cond) throw new Error(why);
}

// @p, or a rejection saying "@what: no answer within S s" after @ms.
export function within(ms, p, what = 'the call') {
	let timer;
	const t = new Promise((_, rej) => {
		timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
	});
	return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// Checks named after @prefix, each given @defaultMs unless it says.
export function tap(prefix, defaultMs) {
	let failed = 0;
	return {
		// One line for @fn's outcome; true when it passed.
		async check(name, fn, ms = defaultMs) {
			const t0 = Date.now();
			try {
				await within(ms, Promise.resolve().then(fn), 'the check');
				console.log(`ok - ${prefix}${name} (${Date.now() - t0} ms)`);
				return true;
			} catch (e) {
				failed++;
				console.log(`not ok - ${prefix}${name} (${oneLine(e && e.message ? `${e.name}: ${e.message}` : e)})`);
				return false;
			}
		},
		// A failure outside a check (the test's own crash).
		fail(name, e) {
			failed++;
			console.log(`not ok - ${prefix}${name} (${oneLine(e && e.stack ? e.stack.split('\n')[0] : e)})`);
		},
		failed: () => failed,
	};
}
