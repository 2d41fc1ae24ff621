#!/usr/bin/env node
// ember-e2b's sandbox.pty with E2B's JavaScript SDK (e2b, the version
// package-lock.json pins): create (the SDK's /bin/bash -i -l on a guest
// terminal of the asked size), sendInput, output through onData, resize
// (stty size follows), Ctrl-C as the byte 0x03 ending a sleep, the exit
// status, connect from a second handle, kill; and the bad input: resize
// and pty input for a process without a PTY, for an unknown pid; with
// PTY_BREAK_PTMX=1 (a real guest only) a guest without /dev/ptmx.
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY [PTY_USER=root] node tests/e2b/pty_test.mjs
//
// PTY_USER: the user the PTYs run as (default: the SDK's, "user").  Prints
// "ok - e2b-pty: ..." / "not ok - e2b-pty: ... (why)" lines and
// "# sandbox ID" for the sandbox it made (killed before it exits); exits
// 1 when a check failed.
import { Sandbox, NotFoundError, SandboxError } from 'e2b';
import { expect, needEnv, oneLine, show, sleep, tap, within } from './tap.mjs';

const env = process.env;
needEnv('pty_test.mjs', ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']);
const t = tap('e2b-pty: ', 180000);
const check = t.check;
async function expectThrow(p, cls, re) {
	let r;
	try {
		r = await p;
	} catch (e) {
		expect(e instanceof cls, `threw ${e && e.constructor && e.constructor.name}: ${e && e.message}, not a ${cls.name}`);
		expect(!re || re.test(e.message), `message ${show(e.message)}`);
		return;
	}
	throw new Error(`no ${cls.name}; it returned ${show(r)}`);
}

const REQ = { requestTimeoutMs: 120000 };
// bash -i -l's start: its profile and completions take long where the
// CPU is emulated (the KVM box's host userland with a fake ember).
const SHELL_START_MS = 180000;
const USER = env.PTY_USER ? { user: env.PTY_USER } : {};
const enc = new TextEncoder();
// A terminal's output, decoded as it comes, with a wait for a pattern.
function screen() {
	const dec = new TextDecoder();
	const s = { text: '' };
	s.onData = (d) => {
		s.text += dec.decode(d, { stream: true });
	};
	s.waitFor = async (re, ms = 20000) => {
		const end = Date.now() + ms;
		while (!re.test(s.text)) {
			if (Date.now() > end) throw new Error(`no ${re} in ${show(s.text.slice(-300))}`);
			await sleep(50);
		}
	};
	return s;
}

let sbx;
try {
	sbx = await within(120000, Sandbox.create(REQ), 'Sandbox.create');
	console.log(`# sandbox ${sbx.sandboxId}`);
	// The first exec of a restored sandbox is the slow one (its agent's
	// pages come back): not under a PTY check's deadline.
	await within(300000, sbx.commands.run('true', { ...REQ, ...USER }), 'commands.run');
} catch (e) {
	console.log(`not ok - e2b-pty: Sandbox.create and a first command (${oneLine(e.message)})`);
	process.exit(1);
}

const a = screen();
let h;
await check('pty.create 80x24: a shell on a terminal; typed input runs, its output through onData', async () => {
	h = await sbx.pty.create({ ...REQ, ...USER, cols: 80, rows: 24, onData: a.onData, timeoutMs: 600000 });
	expect(Number.isInteger(h.pid) && h.pid > 0, `pid ${h.pid}`);
	await sbx.pty.sendInput(h.pid, enc.encode('echo "R-$((6*7))" "T=$TERM" "$(tty)"\n'), REQ);
	await a.waitFor(/R-42 T=xterm-256color \/dev\/pts\/\d+/, SHELL_START_MS);
}, SHELL_START_MS + 60000);
await check('the terminal has the size asked (stty size: 24 80); pty.resize to 100x30 follows', async () => {
	await sbx.pty.sendInput(h.pid, enc.encode('echo "S1=$(stty size)"\n'), REQ);
	await a.waitFor(/S1=24 80/);
	await sbx.pty.resize(h.pid, { cols: 100, rows: 30 }, REQ);
	await sleep(300);
	await sbx.pty.sendInput(h.pid, enc.encode('echo "S2=$(stty size)"\n'), REQ);
	await a.waitFor(/S2=30 100/);
});
await check('Ctrl-C (the byte 0x03) ends a sleep 100 in the guest; the shell stays (status 130)', async () => {
	await sbx.pty.sendInput(h.pid, enc.encode('sleep 100\n'), REQ);
	await sleep(1000);
	const t0 = Date.now();
	await sbx.pty.sendInput(h.pid, new Uint8Array([3]), REQ);
	await sbx.pty.sendInput(h.pid, enc.encode('echo "C=$?"\n'), REQ);
	await a.waitFor(/C=130/);
	expect(Date.now() - t0 < 20000, `took ${Date.now() - t0} ms`);
});
await check('pty.connect: a second handle gets the same terminal\'s output', async () => {
	const b = screen();
	const h2 = await sbx.pty.connect(h.pid, { ...REQ, onData: b.onData, timeoutMs: 600000 });
	expect(h2.pid === h.pid, `pid ${h2.pid}`);
	await sbx.pty.sendInput(h.pid, enc.encode('echo "B-$((7*8))"\n'), REQ);
	await b.waitFor(/B-56/);
	await a.waitFor(/B-56/);
	await h2.disconnect();
});
await check('exit 7: the handle ends with exit code 7', async () => {
	await sbx.pty.sendInput(h.pid, enc.encode('exit 7\n'), REQ);
	const r = await h.wait().catch((e) => e);
	expect(r && r.exitCode === 7, `ended with ${show(r && { exitCode: r.exitCode, message: r.message })}`);
});
await check('pty.kill: a running PTY is killed (true), its handle ends; a second kill: false', async () => {
	const c = screen();
	const k = await sbx.pty.create({ ...REQ, ...USER, cols: 40, rows: 10, onData: c.onData, timeoutMs: 600000 });
	await sbx.pty.sendInput(k.pid, enc.encode('echo "K-$((2+2))"\n'), REQ);
	await c.waitFor(/K-4/, SHELL_START_MS);
	expect((await sbx.pty.kill(k.pid, REQ)) === true, 'kill did not say true');
	const r = await k.wait().catch((e) => e);
	expect(r && r.exitCode !== 0 && /killed/.test(String(r.error || r.message)), `ended with ${show(r && { exitCode: r.exitCode, error: r.error })}`);
	await sleep(200);
	expect((await sbx.pty.kill(k.pid, REQ)) === false, 'a second kill did not say false');
}, SHELL_START_MS + 60000);
await check('bad input: resize and pty input for a command without a PTY, for an unknown pid', async () => {
	const cmd = await sbx.commands.run('sleep 30', { ...REQ, ...USER, background: true });
	try {
		await expectThrow(sbx.pty.resize(cmd.pid, { cols: 10, rows: 10 }, REQ), SandboxError, /has no PTY/);
		await expectThrow(sbx.pty.sendInput(cmd.pid, enc.encode('x'), REQ), SandboxError, /has no PTY/);
	} finally {
		await cmd.kill();
	}
	await expectThrow(sbx.pty.resize(999999, { cols: 10, rows: 10 }, REQ), NotFoundError, /not found/);
	await expectThrow(sbx.pty.sendInput(999999, enc.encode('x'), REQ), NotFoundError, /not found/);
});
if (env.PTY_BREAK_PTMX === '1') {
	// Never where the "guest" is the host (a fake ember): it unmounts devpts.
	await check('a guest without /dev/ptmx and devpts: pty.create fails, saying so; commands still run', async () => {
		await sbx.commands.run('umount /dev/pts && rm -f /dev/ptmx', { ...REQ, user: 'root' });
		// The start event comes before the guest's answer: the error
		// ends the handle (or the create, when it came first).
		const re = /no PTY in this sandbox \(its guest has no \/dev\/ptmx/;
		let e = null;
		try {
			const n = await sbx.pty.create({ ...REQ, ...USER, cols: 80, rows: 24, onData: () => {}, timeoutMs: 600000 });
			e = await n.wait().then(() => null, (x) => x);
			expect(e, 'the PTY ran');
		} catch (x) {
			e = e || x;
		}
		expect(e instanceof SandboxError && re.test(e.message), `${e && e.constructor && e.constructor.name}: ${show(e && e.message)}`);
		const r = await sbx.commands.run('echo still', REQ);
		expect(r.stdout === 'still\n', `stdout ${show(r.stdout)}`);
	});
}
await sbx.kill().catch(() => {});
process.exit(t.failed() ? 1 : 0);
