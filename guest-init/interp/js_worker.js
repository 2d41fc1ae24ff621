// SPDX-License-Identifier: Apache-2.0
// The JavaScript side of a context (guest-init/INTERP.md): one node
// process per context, Node's standard library only.  fd 1 and fd 2 are
// pipes the server streams as stdout and stderr events; fd 3 brings one
// JSON request a line, fd 4 takes one JSON message a line back (ready,
// result, error, done).  The code runs in one vm context that persists
// between calls, so top-level let/const/function declarations stay.
//
// Beyond plain scripts: static `import` of modules (rewritten to
// `require` before compiling, see rewriteImports), dynamic `import()`,
// and top-level `await` (a cell that does not compile as a script and
// uses `await` goes through Node's own REPL evaluator, which turns it
// into an async function whose declarations still land in the context).
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

// `require` (and so `import`) in a cell resolves as in a script in the
// context's working directory: its node_modules, then node's global
// folders; not from this file's directory.
const userRequire = require('module').createRequire(
	require('path').join(process.cwd(), '<cell>'));

// The user's globals: the usual Node ones, with console writing to fd 1
// and fd 2 (synchronous for pipes on Linux, so output is in the pipe
// before "done" is sent).
const sandbox = {
	console: new console.Console({ stdout: process.stdout, stderr: process.stderr }),
	require: userRequire, process, Buffer, URL, URLSearchParams, TextEncoder, TextDecoder,
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
function onSigint() {
	if (cancelWait)
		cancelWait();
}
process.on('SIGINT', onSigint);

class Interrupted extends Error {
	constructor() {
		super('interrupted');
		this.name = 'KeyboardInterrupt';
		this.stack = 'KeyboardInterrupt: interrupted';
	}
}

// A stack without the frames that called into the cell: this file's,
// node's vm and REPL machinery, the microtask queue an awaited cell ran
// from.  Frames above the cell's last one (node's fs in a failed
// readFileSync) stay.
function userStack(stack) {
	const lines = String(stack || '').split('\n');
	const frame = (l) => /^\s+at /.test(l);
	let cut = -1;
	lines.forEach((l, i) => {
		if (frame(l) && l.includes('<cell-'))
			cut = i + 1;
	});
	if (cut < 0)
		cut = lines.findIndex((l) => frame(l) && (l.includes(__filename) ||
			/\(node:(vm|repl|domain|internal\/process\/task_queues)[:)]/.test(l)));
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

// ---- static import: `import` declarations become `require` calls

// The next token of @code from @i, comments and white space skipped:
// {kind: 'name' | 'string' | 'punct' | 'end', text, start, end}.
const SPACE = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)+/y;
const NAME = /[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*/y;
const NUMBER = /[\w.]+/y;
function sticky(re, code, i) {
	re.lastIndex = i;
	return re.exec(code);
}
function nextToken(code, i) {
	const space = sticky(SPACE, code, i);
	if (space)
		i += space[0].length;
	if (i >= code.length)
		return { kind: 'end', text: '', start: i, end: i };
	const c = code[i];
	if (c === '"' || c === "'") {
		const end = skipString(code, i);
		return { kind: 'string', text: code.slice(i, end), start: i, end };
	}
	const name = sticky(NAME, code, i);
	if (name)
		return { kind: 'name', text: name[0], start: i, end: i + name[0].length };
	return { kind: 'punct', text: c, start: i, end: i + 1 };
}

// The index after the string literal that starts at @i.
function skipString(code, i) {
	const q = code[i];
	for (i++; i < code.length && code[i] !== q && code[i] !== '\n'; i++)
		if (code[i] === '\\')
			i++;
	return i + 1;
}

// From inside a template literal at @i: the index after its closing
// backtick (open: false), or after a `${` (open: true).
function skipTemplate(code, i) {
	for (; i < code.length; i++) {
		if (code[i] === '\\')
			i++;
		else if (code[i] === '`')
			return { end: i + 1, open: false };
		else if (code[i] === '$' && code[i + 1] === '{')
			return { end: i + 2, open: true };
	}
	return { end: i, open: false };
}

// The index after the regular expression literal that starts at @i.
function skipRegex(code, i) {
	let inClass = false;
	for (i++; i < code.length && code[i] !== '\n'; i++) {
		const c = code[i];
		if (c === '\\')
			i++;
		else if (c === '[')
			inClass = true;
		else if (c === ']')
			inClass = false;
		else if (c === '/' && !inClass)
			break;
	}
	const flags = sticky(NAME, code, i + 1);
	return i + 1 + (flags ? flags[0].length : 0);
}

// Where a `/` starts a regular expression rather than divides: after
// an operator, an opening bracket, a keyword that takes an expression,
// or at the start.
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new',
	'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);
function regexAllowed(prev) {
	if (prev.kind === 'start')
		return true;
	if (prev.kind === 'name')
		return REGEX_AFTER_WORD.has(prev.text);
	if (prev.kind === 'punct')
		return prev.text !== ')' && prev.text !== ']';
	return false;
}

// The import declaration whose `import` keyword ends at @i, as
// {end, names} (names: the `var` declarators, '' for `import 'm'`), or
// null for what this does not handle (import attributes, `import.meta`,
// a malformed one): left alone, node's own SyntaxError says what it is.
function parseImport(code, i) {
	let t = nextToken(code, i);
	let spec;
	const parts = [];
	const req = () => `require(${spec})`;
	if (t.kind === 'string') {
		spec = t.text;
	} else {
		let dflt = null, ns = null, named = null;
		if (t.kind === 'name' && !(t.text === 'from' && nextToken(code, t.end).kind === 'string')) {
			dflt = t.text;
			t = nextToken(code, t.end);
			if (t.text === ',')
				t = nextToken(code, t.end);
		}
		if (t.text === '*') {
			const as = nextToken(code, t.end);
			const id = nextToken(code, as.end);
			if (as.text !== 'as' || id.kind !== 'name')
				return null;
			ns = id.text;
			t = nextToken(code, id.end);
		} else if (t.text === '{') {
			named = [];
			for (t = nextToken(code, t.end); t.text !== '}'; ) {
				if (t.kind !== 'name' && t.kind !== 'string')
					return null;
				let local = t.text;
				const key = t.text;
				t = nextToken(code, t.end);
				if (t.text === 'as') {
					const id = nextToken(code, t.end);
					if (id.kind !== 'name')
						return null;
					local = id.text;
					t = nextToken(code, id.end);
				}
				named.push(local === key ? key : `${key}: ${local}`);
				if (t.text === ',')
					t = nextToken(code, t.end);
				else if (t.text !== '}')
					return null;
			}
			t = nextToken(code, t.end);
		}
		if (t.text !== 'from' || (!dflt && !ns && !named))
			return null;
		const s = nextToken(code, t.end);
		if (s.kind !== 'string')
			return null;
		spec = s.text;
		// A CommonJS module compiled from ESM keeps its default export
		// apart; node's built-ins are their own default.
		if (dflt)
			parts.push(`${dflt} = ((m) => m && m.__esModule ? m.default : m)(${req()})`);
		if (ns)
			parts.push(`${ns} = ${req()}`);
		if (named)
			parts.push(`{${named.join(', ')}} = ${req()}`);
		t = s;
	}
	let end = t.end;
	const after = nextToken(code, end);
	if (after.text === ';')
		end = after.end;
	else if (after.kind === 'name' && (after.text === 'with' || after.text === 'assert') &&
		!/\n/.test(code.slice(t.end, after.start)))
		return null;
	return { end, names: parts.length ? parts.join(', ') : '', spec };
}

// @code with each top-level `import` declaration replaced, on its own
// lines (so that line numbers hold), by the equivalent `require`:
// `import fs from 'fs'` -> `var fs = require('fs')`, `import * as p
// from 'node:path'`, `import {a, b as c} from 'm'`, `import 'm'`.
// `var`, not `const`: a cell that imports can run again (notebooks
// re-run cells; a second `const fs` would be a SyntaxError).  The scan
// skips strings, template literals, comments and regular expressions,
// and looks at bracket depth 0 only: an `import` in a block stays the
// SyntaxError it is.
function rewriteImports(code) {
	if (!/\bimport\b/.test(code))
		return code;
	const out = [];
	let last = 0, depth = 0, i = 0;
	const templates = [];       // depth of each open template's ${
	let prev = { kind: 'start', text: '' };
	while (i < code.length) {
		const c = code[i];
		if (/\s/.test(c)) {
			i++;
			continue;
		}
		if (c === '/' && (code[i + 1] === '/' || code[i + 1] === '*')) {
			i = nextToken(code, i).start;
			continue;
		}
		let t;
		if (c === '`' || (c === '}' && templates.length && templates[templates.length - 1] === depth - 1)) {
			if (c === '}') {
				templates.pop();
				depth--;
			}
			const tpl = skipTemplate(code, i + 1);
			if (tpl.open) {
				templates.push(depth);
				depth++;
				prev = { kind: 'punct', text: '{' };
			} else {
				prev = { kind: 'string', text: '' };
			}
			i = tpl.end;
			continue;
		}
		if (c === '/' && regexAllowed(prev)) {
			i = skipRegex(code, i);
			prev = { kind: 'string', text: '' };
			continue;
		}
		if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(code[i + 1] || ''))) {
			const num = sticky(NUMBER, code, i);
			t = { kind: 'number', text: num[0], end: i + num[0].length };
		} else {
			t = nextToken(code, i);
		}
		if (t.kind === 'punct') {
			if ('([{'.includes(t.text))
				depth++;
			else if (')]}'.includes(t.text))
				depth = Math.max(0, depth - 1);
		}
		if (t.kind === 'name' && t.text === 'import' && depth === 0 && prev.text !== '.') {
			const next = nextToken(code, t.end);
			const imp = next.text === '(' || next.text === '.' ? null : parseImport(code, t.end);
			if (imp) {
				const lines = code.slice(i, imp.end).split('\n').length - 1;
				out.push(code.slice(last, i),
					imp.names ? `var ${imp.names};` : `require(${imp.spec});`,
					'\n'.repeat(lines));
				last = i = imp.end;
				prev = { kind: 'punct', text: ';' };
				continue;
			}
		}
		prev = t;
		i = t.end;
	}
	out.push(code.slice(last));
	return out.join('');
}

// ---- dynamic import() and top-level await

// import() from a cell loads the module as the main program would.
// Node >= 20.12/21.7 has a constant for that (and warns once that it is
// experimental: that one warning is dropped); older ones reject a
// callback here without --experimental-vm-modules, so there cells with
// `import(` go through the REPL evaluator, whose loader works.
const MAIN_LOADER = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
if (MAIN_LOADER) {
	const emitWarning = process.emitWarning;
	process.emitWarning = function (warning, ...rest) {
		if (String(warning && warning.message || warning).includes('USE_MAIN_CONTEXT_DEFAULT_LOADER'))
			return;
		return emitWarning.call(this, warning, ...rest);
	};
}

// Node's REPL evaluator (made on first use): it compiles top-level
// `await` into an async function and hoists the cell's declarations
// into the context, as a notebook expects.  Its errors reach us through
// the domain it runs in rather than its callback.
let replServer = null;
let replDone = null;
function replEval(code, filename) {
	if (!replServer) {
		const domain = require('domain');
		const repl = require('repl');
		const { PassThrough, Writable } = require('stream');
		const dom = domain.create();
		dom.on('error', (e) => {
			if (replDone)
				replDone(e);
			else    // a callback of an earlier cell threw
				process.stderr.write(`Uncaught ${errorMessage(e).traceback || util.inspect(e)}\n`);
		});
		replServer = new repl.REPLServer({
			input: new PassThrough(),
			output: new Writable({ write: (chunk, enc, cb) => cb() }),
			terminal: false, useGlobal: false, breakEvalOnSigint: true,
			prompt: '', domain: dom,
		});
	}
	return new Promise((resolve, reject) => {
		const done = (err, value) => {
			replDone = null;
			if (err)    // an incomplete cell: the REPL's Recoverable
				reject(err instanceof Error && err.name === 'SyntaxError' && err.err ? err.err : err);
			else
				resolve(value);
		};
		replDone = done;
		// The REPL breaks the cell's synchronous part on SIGINT with a
		// watchdog, then runs it with breakOnSigint, which stops our
		// listener: node then puts back SIGINT's default action (death)
		// over the watchdog's handler.  Not listening while it runs
		// keeps the watchdog's; listening again after restores ours.
		process.removeListener('SIGINT', onSigint);
		try {
			replServer.eval(code, context, filename, (err, value) => {
				if (replDone === done)
					done(err, value);
			});
		} finally {
			process.on('SIGINT', onSigint);
		}
	});
}

// A SyntaxError as V8 words it, with the cell's line (the REPL's own
// parser quotes the line but not its number): the cell compiled as an
// async function's body, opened on its first line.
function clearSyntaxError(code, filename, err) {
	try {
		new vm.Script(`(async () => {${code}\n})`, { filename });
	} catch (e) {
		if (e && e.name === 'SyntaxError')
			return e;
	}
	return err;
}

// Waits for @promise; a SIGINT (timeout, closed connection) gives up
// the wait.
function settle(promise) {
	return new Promise((resolve, reject) => {
		cancelWait = () => reject(new Interrupted());
		promise.then(resolve, reject);
	}).finally(() => { cancelWait = null; });
}

async function execute(code, count) {
	const filename = `<cell-${count}>`;
	code = rewriteImports(code);
	let script = null;
	let viaRepl = !MAIN_LOADER && /\bimport\s*\(/.test(code);
	if (!viaRepl) {
		try {
			script = new vm.Script(code, {
				filename, importModuleDynamically: MAIN_LOADER,
			});
		} catch (e) {
			if (!(e && e.name === 'SyntaxError' && /\bawait\b/.test(code)))
				throw e;
			viaRepl = true;
		}
	}
	let value;
	if (viaRepl) {
		try {
			value = await settle(replEval(code, filename));
		} catch (e) {
			throw e && e.name === 'SyntaxError' ? clearSyntaxError(code, filename, e) : e;
		} finally {
			// Interrupted: what the cell does later is no call's.
			replDone = null;
		}
	} else {
		value = script.runInContext(context, { breakOnSigint: true });
	}
	if (value && typeof value.then === 'function')
		value = await settle(value);
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
