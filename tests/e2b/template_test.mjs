#!/usr/bin/env node
// ember-e2b's template-build API with E2B's own Template builder (the e2b
// package at the version package-lock.json pins).
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=KEY node tests/e2b/template_test.mjs
//
// The server must be running with the ember template "default" there
// (tests/integration/e2b.sh).  Builds, each a microVM: a template from
// "default" with runCmd (as the default user and as root), copy of a
// file and a directory (owner, mode; a plain tar too), setEnvs, setWorkdir, setUser and a
// start command with a ready command, then a sandbox of it; the same
// template again under another name (uploads skipped, steps cached); a
// template from a root filesystem directory (busybox-static); a runCmd
// that fails.  Without a VM: fromImage of a registry name, a name that
// exists, Template.exists.  Prints "ok - e2b: ..." / "not ok - ..." lines
// and "# template NAME" for each name it may have built (the caller
// removes them) and "# sandbox ID" for each sandbox (killed here).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BuildError, Sandbox, Template } from 'e2b';

const env = process.env;
for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!env[v]) {
		console.error(`template_test.mjs: set ${v}`);
		process.exit(2);
	}
}

let failed = 0;
const prefix = 'e2b: template: ';
function oneLine(s) {
	s = String(s).replace(/\s+/g, ' ').trim();
	return s.length > 600 ? s.slice(0, 600) + '...' : s;
}
const show = (v) => oneLine(JSON.stringify(v));
function expect(cond, why) {
	if (!cond) throw new Error(why);
}
const now = () => Number(process.hrtime.bigint() / 1000000n);
function within(ms, p, what = 'the call') {
	let timer;
	const t = new Promise((_, rej) => {
		timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
	});
	return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
async function check(name, fn, ms = 300000) {
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
async function expectThrow(p, cls) {
	let r;
	try {
		r = await p;
	} catch (e) {
		expect(e instanceof cls, `threw ${e && e.constructor && e.constructor.name}: ${e && e.message}, not a ${cls.name}`);
		return e;
	}
	throw new Error(`no ${cls.name}; it returned ${show(r)}`);
}
// The caller's line in this file (for the SDK's stack traces).
function lineHere() {
	const m = new Error().stack.split('\n')[2].match(/template_test\.mjs:(\d+):/);
	return m ? Number(m[1]) : -1;
}

const REQ = { requestTimeoutMs: 60000 };
const BUILD_MS = 240000;
const tag = Math.random().toString(36).slice(2, 8);
const names = { a: `e2bt-a-${tag}`, b: `e2bt-b-${tag}`, img: `e2bt-img-${tag}`, bad: `e2bt-bad-${tag}` };
for (const n of Object.values(names)) console.log(`# template ${n}`);
const created = new Set();

async function build(t, name) {
	const logs = [];
	const info = await within(BUILD_MS, Template.build(t, name, {
		...REQ, onBuildLogs: (e) => logs.push(String(e.message)),
	}), `Template.build(${name})`);
	return { info, logs };
}
async function create(name) {
	const sbx = await within(120000, Sandbox.create(name, { ...REQ, timeoutMs: 600000 }), `Sandbox.create(${name})`);
	created.add(sbx.sandboxId);
	console.log(`# sandbox ${sbx.sandboxId}`);
	return sbx;
}
const run = (sbx, cmd, opts = {}) =>
	within(90000, sbx.commands.run(cmd, { ...REQ, timeoutMs: 60000, ...opts }), `commands.run(${show(cmd)})`);

// The build context: a file and a directory.
const ctx = fs.mkdtempSync(path.join(os.tmpdir(), 'e2bt-ctx-'));
// Content of this run's own: the first build uploads it, the second skips.
const hello = `hello from the context ${tag}\n`;
fs.writeFileSync(path.join(ctx, 'hello.txt'), hello);
fs.mkdirSync(path.join(ctx, 'dir', 'sub'), { recursive: true });
fs.writeFileSync(path.join(ctx, 'dir', 'a.txt'), 'a\n');
fs.writeFileSync(path.join(ctx, 'dir', 'sub', 'b.txt'), `b ${tag}\n`);
fs.writeFileSync(path.join(ctx, 'dir', '.hidden'), 'h\n');
fs.writeFileSync(path.join(ctx, 'plain.txt'), `plain ${tag}\n`);

function appTemplate() {
	return Template({ fileContextPath: ctx })
		.fromTemplate('default')
		.runCmd('id -un > /home/user/built-by')
		.runCmd('mkdir -p /opt/app && echo root-ran > /opt/app/root.txt && id -un >> /opt/app/root.txt', { user: 'root' })
		.copy('hello.txt', '/opt/app/', { user: 'user', mode: 0o640 })
		.copy('dir', '/opt/data', { user: 'user' })
		.copy('plain.txt', '/opt/plain/p.txt', { gzip: false }) // a tar not gzipped
		.setEnvs({ GREETING: "it's $HOME", OTHER: 'two words' })
		.setWorkdir('/opt/app')
		.copy('hello.txt', 'rel/')
		.setUser('user')
		.setStartCmd('httpd -f -p 8000 -h /opt/app', 'wget -q -O /dev/null http://127.0.0.1:8000/hello.txt');
}

async function main() {
	await check('fromImage of a registry name: BuildError saying ember builds from local images', async () => {
		const t = Template().fromImage('python:3').runCmd('true');
		const e = await expectThrow(Template.build(t, names.bad, REQ), BuildError);
		expect(/local images only/.test(e.message) && /docker save/.test(e.message), `message ${show(e.message)}`);
		expect(!(await Template.exists(names.bad, REQ)), 'the template exists');
	});

	let a = null;
	await check('Template.build from the template default: runCmd, copy, setEnvs, setWorkdir, setUser, setStartCmd', async () => {
		a = await build(appTemplate(), names.a);
		expect(a.info.templateId === names.a, `templateId ${show(a.info.templateId)}`);
		expect(a.logs.some((l) => /Uploaded 'hello\.txt'/.test(l)) && a.logs.some((l) => /Uploaded 'dir'/.test(l)),
			`uploads not in the logs: ${show(a.logs.slice(0, 20))}`);
		expect(a.logs.some((l) => /^\+ step \d+\/\d+ .*RUN/.test(l)), `no step in the logs: ${show(a.logs.slice(-30))}`);
		expect(await Template.exists(names.a, REQ), 'Template.exists says no');
	});

	if (a) {
		await check('a sandbox of the built template: env, user, commands in the WORKDIR, a relative COPY there, files with owner and mode, the started server', async () => {
			const sbx = await create(names.a);
			try {
				// Commands start in the template's WORKDIR, as envd's do.
				let r = await run(sbx, 'printf "%s|%s|%s|%s" "$GREETING" "$OTHER" "$(id -un)" "$(pwd)"');
				expect(r.stdout === "it's $HOME|two words|user|/opt/app", `env, user, cwd: ${show(r.stdout)}`);
				r = await run(sbx, 'cat rel/hello.txt');
				expect(r.stdout === hello, `a relative COPY dest in the WORKDIR: ${show(r.stdout)}`);
				r = await run(sbx, 'cat /home/user/built-by /opt/app/root.txt');
				expect(r.stdout === 'user\nroot-ran\nroot\n', `the RUNs' users: ${show(r.stdout)}`);
				r = await run(sbx, 'stat -c "%U %a %n" /opt/app/hello.txt /opt/data/a.txt /opt/data/sub/b.txt /opt/data/.hidden && cat /opt/app/hello.txt /opt/data/a.txt /opt/data/sub/b.txt');
				expect(r.stdout === 'user 640 /opt/app/hello.txt\nuser 644 /opt/data/a.txt\nuser 644 /opt/data/sub/b.txt\nuser 644 /opt/data/.hidden\n' +
					`${hello}a\nb ${tag}\n`, `the copies: ${show(r.stdout)}`);
				r = await run(sbx, 'stat -c "%U %a" /opt/plain/p.txt && cat /opt/plain/p.txt');
				expect(r.stdout === `root 644\nplain ${tag}\n`, `the plain tar's copy: ${show(r.stdout)}`);
				r = await run(sbx, 'test ! -e /.ember-copy/* && test ! -e /opt/data/dir && echo clean');
				expect(r.stdout === 'clean\n', `what the copies left: ${show(r.stdout)}`);
				r = await run(sbx, 'wget -q -O - http://127.0.0.1:8000/hello.txt');
				expect(r.stdout === hello, `the server: ${show(r.stdout)}`);
			} finally {
				await within(30000, Sandbox.kill(sbx.sandboxId, REQ)).catch(() => {});
				created.delete(sbx.sandboxId);
			}
		});
		await check('the same template under another name: uploads skipped, steps cached', async () => {
			const b = await build(appTemplate(), names.b);
			expect(b.logs.some((l) => /Skipping upload of 'hello\.txt', already cached/.test(l)), `no skipped upload: ${show(b.logs.slice(0, 20))}`);
			expect(b.logs.filter((l) => /^\+ step \d+\/\d+ .*: cached$/.test(l)).length >= 4,
				`steps not cached: ${show(b.logs.filter((l) => /^\+ step/.test(l)))}`);
		});
		await check('a build of a name that exists: built again (cached steps), then it replaces the old one', async () => {
			const b2 = await build(appTemplate().setEnvs({ AGAIN: 'yes' }), names.b);
			expect(b2.logs.some((l) => /to be replaced/.test(l)), `no replacement said: ${show(b2.logs.slice(-20))}`);
			const sbx = await create(names.b);
			try {
				const r = await run(sbx, 'echo "$AGAIN|$OTHER"');
				expect(r.stdout === 'yes|two words\n', `the new template's env: ${show(r.stdout)}`);
			} finally {
				await within(30000, Sandbox.kill(sbx.sandboxId, REQ)).catch(() => {});
				created.delete(sbx.sandboxId);
			}
		});
	}

	await check('fromImage of a root filesystem directory (busybox-static), then a sandbox of it', async () => {
		const root = fs.mkdtempSync(path.join(os.tmpdir(), 'e2bt-root-'));
		fs.chmodSync(root, 0o755);
		fs.mkdirSync(path.join(root, 'bin'));
		fs.copyFileSync('/bin/busybox', path.join(root, 'bin', 'busybox'));
		fs.chmodSync(path.join(root, 'bin', 'busybox'), 0o755);
		fs.symlinkSync('busybox', path.join(root, 'bin', 'sh'));
		// E2B's commands run in /bin/bash -l -c: busybox's sh stands in.
		fs.writeFileSync(path.join(root, 'bin', 'bash'), '#!/bin/sh\nexec /bin/sh "$@"\n', { mode: 0o755 });
		for (const d of ['etc', 'tmp', 'root']) fs.mkdirSync(path.join(root, d));
		try {
			const t = Template().fromImage(root).runCmd('echo from-image > /etc/marker', { user: 'root' }).setEnvs({ IMG: 'yes' });
			await build(t, names.img);
			const sbx = await create(names.img);
			try {
				const r = await run(sbx, 'cat /etc/marker; echo "$IMG"');
				expect(r.stdout === 'from-image\nyes\n', `in the sandbox: ${show(r.stdout)}`);
			} finally {
				await within(30000, Sandbox.kill(sbx.sandboxId, REQ)).catch(() => {});
				created.delete(sbx.sandboxId);
			}
		} finally {
			fs.rmSync(root, { recursive: true, force: true });
		}
	});

	await check('a failing runCmd: BuildError naming the failure, its output in the logs, the SDK pointing at its line', async () => {
		const t = Template().fromTemplate('default').runCmd('true');
		const line = lineHere() + 1;
		t.runCmd('echo boom-output; exit 3');
		const logs = [];
		let e;
		try {
			await within(BUILD_MS, Template.build(t, names.bad, { ...REQ, onBuildLogs: (x) => logs.push(String(x.message)) }));
		} catch (x) {
			e = x;
		}
		expect(e instanceof BuildError, `threw ${e && e.name}: ${e && e.message}`);
		expect(/exit status 3/.test(e.message), `message ${show(e.message)}`);
		expect(logs.some((l) => l === 'boom-output'), `output not in the logs: ${show(logs.slice(-15))}`);
		expect(String(e.stack).includes(`template_test.mjs:${line}:`), `stack ${show(String(e.stack).split('\n').slice(0, 3))}, wanted line ${line}`);
		expect(!(await Template.exists(names.bad, REQ)), 'the failed template exists');
	});

	await check('Template.exists: true for default and base, false for a name never built', async () => {
		expect(await Template.exists('default', REQ), 'default: no');
		expect(await Template.exists('base', REQ), 'base: no');
		expect(!(await Template.exists(`e2bt-none-${tag}`, REQ)), 'a missing one: yes');
	});
}

try {
	await main();
} catch (e) {
	failed++;
	console.log(`not ok - ${prefix}the test itself (${oneLine(e && e.stack ? e.stack : e)})`);
} finally {
	for (const id of created) await within(30000, Sandbox.kill(id, REQ)).catch(() => {});
	fs.rmSync(ctx, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
