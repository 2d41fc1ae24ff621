// SPDX-License-Identifier: Apache-2.0
// The JavaScript side of a context (guest-init/INTERP.md): one node
// process per context, Node's standard library only.  fd 1 and fd 2 are
// pipes the server streams as stdout and stderr events; fd 3 brings one
// JSON request a line, fd 4 takes one JSON message a line back (ready,
// result, error, done).  The code runs in one vm context that persists
// between calls, so top-level let/const/function declarations stay.
'use strict';
const fs = require('fs');
const readline = require('readline');
const util = require('util');
const vm = require('vm');

const REQ_FD = 3;
const CTL_FD = 4;

function send(msg) {
	fs.writeSync(CTL_FD, JSON.stringify(msg) + '\n');
}

// The user's globals: the usual Node ones, with console writing to fd 1
// and fd 2 (synchronous for pipes on Linux, so output is in the pipe
// before "done" is sent).
const sandbox = {
	console: new console.Console({ stdout: process.stdout, stderr: process.stderr }),
	require, process, Buffer, URL, URLSearchParams, TextEncoder, TextDecoder,
	setTimeout, clearTimeout, setInterval, clearInterval,
	setImmediate, clearImmediate, queueMicrotask, structuredClone,
	fetch: globalThis.fetch, AbortController, atob, btoa,
};
sandbox.global = sandbox;
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);

// A SIGINT from the server (timeout, closed connection) breaks a running
// script through breakOnSigint; while the call waits on a Promise, this
// handler gives up the wait instead.  Between calls it is ignored.
let cancelWait = null;
process.on('SIGINT', () => {
	if (cancelWait)
		cancelWait();
});

class Interrupted extends Error {
	constructor() {
		super('interrupted');
		this.name = 'KeyboardInterrupt';
		this.stack = 'KeyboardInterrupt: interrupted';
	}
}

// A stack without the frames of this file and of node's vm module that
// called into the cell.
function userStack(stack) {
	const lines = String(stack || '').split('\n');
	const cut = lines.findIndex((l) => l.includes(__filename) || l.includes('(node:vm'));
	return (cut < 0 ? lines : lines.slice(0, cut)).join('\n');
}

function errorMessage(e) {
	// Errors from the vm context are of another realm: no instanceof.
	if (e && typeof e === 'object' && 'stack' in e)
		return {
			type: 'error', name: String(e.name || 'Error'),
			value: String(e.message === undefined ? '' : e.message),
			traceback: userStack(e.stack),
		};
	// A thrown non-Error value (throw 1, throw "x").
	return { type: 'error', name: 'Error', value: util.inspect(e), traceback: '' };
}

async function execute(code, count) {
	let value = vm.runInContext(code, context, {
		filename: `<cell-${count}>`, breakOnSigint: true,
	});
	if (value && typeof value.then === 'function') {
		value = await new Promise((resolve, reject) => {
			cancelWait = () => reject(new Interrupted());
			value.then(resolve, reject);
		}).finally(() => { cancelWait = null; });
	}
	if (value !== undefined)
		send({ type: 'result', is_main_result: true, text: util.inspect(value) });
}

function withEnv(env, fn) {
	const old = {};
	for (const k of Object.keys(env)) {
		old[k] = process.env[k];
		process.env[k] = String(env[k]);
	}
	return fn().finally(() => {
		for (const k of Object.keys(old)) {
			if (old[k] === undefined)
				delete process.env[k];
			else
				process.env[k] = old[k];
		}
	});
}

// Calls run one after the other: the server sends the next request only
// after this one's "done", but a queue keeps the order regardless.
let count = 0;
let chain = Promise.resolve();
const lines = readline.createInterface({ input: fs.createReadStream(null, { fd: REQ_FD }) });
lines.on('line', (line) => {
	let req;
	try {
		req = JSON.parse(line);
	} catch (e) {
		return;
	}
	chain = chain.then(async () => {
		count += 1;
		try {
			await withEnv(req.env || {}, () => execute(String(req.code || ''), count));
		} catch (e) {
			if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')
				e = new Interrupted();
			send(errorMessage(e));
		}
		send({ type: 'done', execution_count: count });
	});
});
lines.on('close', () => process.exit(0));
send({ type: 'ready' });
