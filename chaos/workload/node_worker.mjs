// One execution environment's runtime process for Node.js functions: what Lambda's Node.js runtime does
// inside the sandbox. The Node.js counterpart of chaos/workload/worker.py, with the same frame protocol.
//
// Started by chaos/workload/environment.py as `node node_worker.mjs CODE_DIR HANDLER IN_FD OUT_FD` with the
// function's environment: IN_FD brings invocations (one JSON document per line), OUT_FD takes newline-delimited
// JSON frames back (`init`, `log`, `result`). Node's standard library only: the function's own imports are its
// own (and the AWS SDK for JavaScript v3, which the sandbox provides the way Lambda's Node.js runtimes do).
//
// Ported from the runtime interface client that Lambda's nodejs20.x and nodejs22.x runtimes run,
// github.com/aws/aws-lambda-nodejs-runtime-interface-client 3.x (commit da5777a): src/index.mjs (process
// listeners, init), src/UserFunction.js (handler resolution), src/Runtime.js and src/CallbackContext.js
// (async and callback handlers, callbackWaitsForEmptyEventLoop through `beforeExit`), src/InvokeContext.js
// (the context object), src/LogPatch.js (console in Text and JSON format, AWS_LAMBDA_LOG_LEVEL filtering)
// and src/Errors.js (error records). Application records are written the way the runtime writes them to
// Lambda's telemetry file descriptor (`_LAMBDA_TELEMETRY_LOG_FD`): one log event per console call, newlines
// kept. What the sandbox replaces: the Runtime API (the pipes), X-Ray, response streaming (not emulated).

import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import util from "node:util";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [APP_ROOT, HANDLER, IN_FD, OUT_FD] = process.argv.slice(2);
const OUT = Number(OUT_FD);

// ------------------------------------------------------------------ frames to the execution environment

function sendRaw(text) {
  const data = Buffer.from(text + "\n", "utf8");
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(OUT, data, offset);
    } catch (error) {
      if (error.code !== "EAGAIN") throw error;
    }
  }
}

const send = (frame) => sendRaw(JSON.stringify(frame));

// Whatever the function writes to stdout or stderr without console: one log event per line, as Lambda
// captures the runtime process's output.
const pendingOutput = { stdout: "", stderr: "" };

function captureLines(name) {
  const stream = process[name];
  stream.write = (chunk, encoding, callback) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    const lines = (pendingOutput[name] + text).split("\n");
    pendingOutput[name] = lines.pop();
    for (const line of lines) send({ log: line + "\n" });
    const done = typeof encoding === "function" ? encoding : callback;
    if (done) process.nextTick(done);
    return true;
  };
}

function flushOutput() {
  for (const name of ["stdout", "stderr"]) {
    if (pendingOutput[name]) send({ log: pendingOutput[name] + "\n" });
    pendingOutput[name] = "";
  }
}

// ------------------------------------------------------------------ Errors.js

function isError(obj) {
  return (
    obj &&
    obj.name &&
    obj.message &&
    obj.stack &&
    typeof obj.name === "string" &&
    typeof obj.message === "string" &&
    typeof obj.stack === "string"
  );
}

function intoError(err) {
  return err instanceof Error ? err : new Error(err);
}

// What the runtime posts to the Runtime API for a failed init or invocation (and Lambda returns to the caller).
function toRapidResponse(error) {
  try {
    if (util.types.isNativeError(error) || isError(error)) {
      return {
        errorType: error.name?.replaceAll("\x7F", "%7F"),
        errorMessage: error.message?.replaceAll("\x7F", "%7F"),
        trace: error.stack.replaceAll("\x7F", "%7F").split("\n"),
      };
    }
    return { errorType: typeof error, errorMessage: error.toString(), trace: [] };
  } catch (_err) {
    return {
      errorType: "handled",
      errorMessage:
        "callback called with Error argument, but there was a problem while retrieving one or more of its message, name, and stack",
    };
  }
}

function withEnumerableProperties(error) {
  if (error instanceof Error) {
    const ret = Object.assign({ errorType: error.name, errorMessage: error.message, code: error.code }, error);
    if (typeof error.stack == "string") ret.stack = error.stack.split("\n");
    return ret;
  }
  return error;
}

// The error document of a Text-format error record; it always starts with a tab.
function toFormatted(error) {
  try {
    return "\t" + JSON.stringify(error, (_k, v) => withEnumerableProperties(v));
  } catch (_err) {
    return "\t" + JSON.stringify(toRapidResponse(error));
  }
}

class ImportModuleError extends Error {}
class HandlerNotFound extends Error {}
class MalformedHandlerName extends Error {}
class UserCodeSyntaxError extends Error {}
class NodeJsExit extends Error {
  constructor() {
    super(
      "The Lambda runtime client detected an unexpected Node.js exit code. This is most commonly caused by a Promise that was never settled. For more information, see https://nodejs.org/docs/latest/api/process.html#exit-codes",
    );
  }
}
class UnhandledPromiseRejection extends Error {
  constructor(reason, promise) {
    super(reason);
    this.reason = reason;
    this.promise = promise;
  }
}
for (const errorClass of [
  ImportModuleError,
  HandlerNotFound,
  MalformedHandlerName,
  UserCodeSyntaxError,
  NodeJsExit,
  UnhandledPromiseRejection,
]) {
  errorClass.prototype.name = `Runtime.${errorClass.name}`;
}

// ------------------------------------------------------------------ LogPatch.js

const REQUEST_ID_SYMBOL = Symbol.for("aws.lambda.runtime.requestId");
const currentRequestId = {
  get: () => globalThis[REQUEST_ID_SYMBOL],
  set: (id) => (globalThis[REQUEST_ID_SYMBOL] = id),
};

const jsonErrorReplacer = (_, value) => {
  if (value instanceof Error) {
    return Object.assign(
      {
        errorType: value?.constructor?.name ?? "UnknownError",
        errorMessage: value.message,
        stackTrace: typeof value.stack === "string" ? value.stack.split("\n") : value.stack,
      },
      value,
    );
  }
  return value;
};

function formatJsonMessage(requestId, timestamp, level, ...messageParams) {
  const result = { timestamp: timestamp, level: level.name, requestId: requestId };
  if (messageParams.length === 1) {
    result.message = messageParams[0];
    try {
      return JSON.stringify(result, jsonErrorReplacer);
    } catch (_) {
      result.message = util.format(result.message);
      return JSON.stringify(result);
    }
  }
  result.message = util.format(...messageParams);
  for (const param of messageParams) {
    if (param instanceof Error) {
      result.errorType = param?.constructor?.name ?? "UnknownError";
      result.errorMessage = param.message;
      result.stackTrace = typeof param.stack === "string" ? param.stack.split("\n") : [];
      break;
    }
  }
  return JSON.stringify(result);
}

// The telemetry descriptor's framing carries each message whole, so a message keeps its newlines.
const logText = (level, message, ...params) => {
  const time = new Date().toISOString();
  send({ log: `${time}\t${currentRequestId.get()}\t${level.name}\t${util.format(message, ...params)}\n` });
};

const logJson = (level, message, ...params) => {
  const time = new Date().toISOString();
  send({ log: formatJsonMessage(currentRequestId.get(), time, level, message, ...params) });
};

const structuredConsole = {};

function patchConsoleWith(log) {
  const NopLog = (_message, ..._params) => {};
  const levels = Object.freeze({
    TRACE: { name: "TRACE", priority: 1 },
    DEBUG: { name: "DEBUG", priority: 2 },
    INFO: { name: "INFO", priority: 3 },
    WARN: { name: "WARN", priority: 4 },
    ERROR: { name: "ERROR", priority: 5 },
    FATAL: { name: "FATAL", priority: 6 },
  });
  const threshold = levels[process.env["AWS_LAMBDA_LOG_LEVEL"]?.toUpperCase()] ?? levels.TRACE;
  const method = (level) =>
    level.priority >= threshold.priority ? (msg, ...params) => log(level, msg, ...params) : NopLog;
  console.trace = method(levels.TRACE);
  console.debug = method(levels.DEBUG);
  console.info = method(levels.INFO);
  console.log = console.info;
  console.warn = method(levels.WARN);
  console.error = method(levels.ERROR);
  console.fatal = (msg, ...params) => log(levels.FATAL, msg, ...params);
}

function patchConsole() {
  const json = process.env["AWS_LAMBDA_LOG_FORMAT"]?.toUpperCase() === "JSON";
  patchConsoleWith(json ? logJson : logText);
  structuredConsole.logError = json
    ? (_, err) => console.error(intoError(err))
    : (msg, err) => console.error(msg, toFormatted(intoError(err)));
}

// ------------------------------------------------------------------ UserFunction.js

const FUNCTION_EXPR = /^([^.]*)\.(.*)$/;
const RELATIVE_PATH_SUBSTRING = "..";

function _moduleRootAndHandler(fullHandlerString) {
  const handlerString = path.basename(fullHandlerString);
  const moduleRoot = fullHandlerString.substring(0, fullHandlerString.indexOf(handlerString));
  return [moduleRoot, handlerString];
}

function _splitHandlerString(handler) {
  const match = handler.match(FUNCTION_EXPR);
  if (!match || match.length != 3) throw new MalformedHandlerName("Bad handler");
  return [match[1], match[2]];
}

function _resolveHandler(object, nestedProperty) {
  return nestedProperty.split(".").reduce((nested, key) => nested && nested[key], object);
}

function _tryRequireFile(file, extension) {
  const filePath = file + (extension || "");
  return fs.existsSync(filePath) ? require(filePath) : undefined;
}

async function _tryAwaitImport(file, extension) {
  const filePath = file + (extension || "");
  return fs.existsSync(filePath) ? await import(filePath) : undefined;
}

function _hasFolderPackageJsonTypeModule(folder) {
  if (folder.endsWith("/node_modules")) return false;
  const pj = path.join(folder, "/package.json");
  if (fs.existsSync(pj)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(pj));
      if (pkg) return pkg.type === "module";
    } catch (e) {
      console.warn(`${pj} cannot be read, it will be ignored for ES module detection purposes.`, e);
      return false;
    }
  }
  if (folder === "/") return false;
  return _hasFolderPackageJsonTypeModule(path.resolve(folder, ".."));
}

function _hasPackageJsonTypeModule(file) {
  const jsPath = file + ".js";
  return fs.existsSync(jsPath) ? _hasFolderPackageJsonTypeModule(path.resolve(path.dirname(jsPath))) : false;
}

async function _tryRequire(appRoot, moduleRoot, module) {
  const lambdaStylePath = path.resolve(appRoot, moduleRoot, module);
  const extensionless = _tryRequireFile(lambdaStylePath);
  if (extensionless) return extensionless;
  const pjHasModule = _hasPackageJsonTypeModule(lambdaStylePath);
  if (!pjHasModule) {
    const loaded = _tryRequireFile(lambdaStylePath, ".js");
    if (loaded) return loaded;
  }
  const loaded =
    (pjHasModule && (await _tryAwaitImport(lambdaStylePath, ".js"))) ||
    (await _tryAwaitImport(lambdaStylePath, ".mjs")) ||
    _tryRequireFile(lambdaStylePath, ".cjs");
  if (loaded) return loaded;
  const nodeStylePath = require.resolve(module, { paths: [appRoot, moduleRoot] });
  return require(nodeStylePath);
}

async function _loadUserApp(appRoot, moduleRoot, module) {
  try {
    return await _tryRequire(appRoot, moduleRoot, module);
  } catch (e) {
    if (e instanceof SyntaxError) throw new UserCodeSyntaxError(e);
    if (e.code !== undefined && e.code === "MODULE_NOT_FOUND") throw new ImportModuleError(e);
    throw e;
  }
}

async function loadHandler(appRoot, fullHandlerString) {
  if (fullHandlerString.includes(RELATIVE_PATH_SUBSTRING)) {
    throw new MalformedHandlerName(
      `'${fullHandlerString}' is not a valid handler name. Use absolute paths when specifying root directories in handler names.`,
    );
  }
  const [moduleRoot, moduleAndHandler] = _moduleRootAndHandler(fullHandlerString);
  const [module, handlerPath] = _splitHandlerString(moduleAndHandler);
  const userApp = await _loadUserApp(appRoot, moduleRoot, module);
  const handlerFunc = _resolveHandler(userApp, handlerPath);
  if (!handlerFunc) throw new HandlerNotFound(`${fullHandlerString} is undefined or not exported`);
  if (typeof handlerFunc !== "function") throw new HandlerNotFound(`${fullHandlerString} is not a function`);
  return handlerFunc;
}

function handlerMetadata(handlerFunc) {
  let isAsync = false;
  try {
    isAsync = handlerFunc.constructor && handlerFunc.constructor.name === "AsyncFunction";
  } catch (_error) {
    isAsync = false;
  }
  return { streaming: false, isAsync, argsNum: handlerFunc.length };
}

// WarningForCallbackHandlers.js
function checkForDeprecatedCallback(metadata) {
  if (
    process.env.AWS_LAMBDA_NODEJS_DISABLE_CALLBACK_WARNING === undefined &&
    metadata.argsNum == 3 &&
    metadata.isAsync == false &&
    metadata.streaming == false
  ) {
    console.warn(
      `AWS Lambda plans to remove support for callback-based function handlers starting with Node.js 24. You will need to update this function to use an async handler to use Node.js 24 or later. For more information and to provide feedback on this change, see https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/137. To disable this warning, set the AWS_LAMBDA_NODEJS_DISABLE_CALLBACK_WARNING environment variable.`,
    );
  }
}

// ------------------------------------------------------------------ BeforeExitListener.js

const LISTENER_SYMBOL = Symbol.for("aws.lambda.beforeExit");
const NO_OP_LISTENER = () => {};
const BeforeExitListener = {
  invoke: () => globalThis[LISTENER_SYMBOL](),
  reset: () => (globalThis[LISTENER_SYMBOL] = NO_OP_LISTENER),
  set: (listener) => (globalThis[LISTENER_SYMBOL] = listener),
};

// ------------------------------------------------------------------ the Runtime API, over the two pipes

// Invocations arrive on IN_FD. While one runs, the pipe does not hold the event loop open, so `beforeExit`
// fires when the function's own work is done, as it does between Lambda's Runtime API calls.
class InvocationPipe {
  constructor(fd) {
    this.lines = [];
    this.waiting = null;
    this.pending = "";
    this.socket = new net.Socket({ fd, readable: true, writable: false });
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk) => this.receive(chunk));
    this.socket.on("end", () => process.exit(0)); // the environment is gone
  }

  receive(chunk) {
    const lines = (this.pending + chunk).split("\n");
    this.pending = lines.pop();
    this.lines.push(...lines.filter((line) => line.trim()));
    this.deliver();
  }

  deliver() {
    if (this.waiting && this.lines.length) {
      const resolve = this.waiting;
      this.waiting = null;
      this.socket.unref();
      resolve(JSON.parse(this.lines.shift()));
    }
  }

  next() {
    this.socket.ref();
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.deliver();
    });
  }
}

// RAPIDClient.js: a response or an error for the invocation in flight; nothing for one already answered.
class RuntimeClient {
  constructor() {
    this.inFlight = null;
  }

  answer(id, frameText) {
    if (id !== this.inFlight) return;
    this.inFlight = null;
    flushOutput();
    sendRaw(frameText);
  }

  postInvocationResponse(response, id, callback) {
    let bodyString;
    try {
      bodyString = JSON.stringify(response === undefined ? null : response);
    } catch (_err) {
      throw new Error("Unable to stringify response body");
    }
    this.answer(id, `{"result":{"value":${bodyString}}}`);
    callback();
  }

  postInvocationError(error, id, callback) {
    this.answer(id, JSON.stringify({ result: { error: toRapidResponse(error) } }));
    callback();
  }
}

// ------------------------------------------------------------------ CallbackContext.js

function rawCallbackContext(client, id, scheduleNext) {
  const postError = (err, callback) => {
    structuredConsole.logError("Invoke Error", err);
    client.postInvocationError(err, id, callback);
  };
  let isCompleteInvoked = false;
  const complete = (result, callback) => {
    if (isCompleteInvoked) {
      console.error(
        "Invocation has already been reported as done. Cannot call complete more than once per invocation.",
      );
      return;
    }
    isCompleteInvoked = true;
    client.postInvocationResponse(result, id, callback);
  };
  let waitForEmptyEventLoop = true;
  const callback = function (err, result) {
    BeforeExitListener.reset();
    if (err !== undefined && err !== null) {
      postError(err, scheduleNext);
    } else if (!waitForEmptyEventLoop) {
      complete(result, scheduleNext);
    } else {
      BeforeExitListener.set(() => setImmediate(() => complete(result, scheduleNext)));
    }
  };
  const done = (err, result) => {
    BeforeExitListener.reset();
    if (err !== undefined && err !== null) postError(err, scheduleNext);
    else complete(result, scheduleNext);
  };
  const callbackContext = {
    get callbackWaitsForEmptyEventLoop() {
      return waitForEmptyEventLoop;
    },
    set callbackWaitsForEmptyEventLoop(value) {
      waitForEmptyEventLoop = value;
    },
    succeed: (result) => done(null, result),
    fail: (err) => (err === undefined || err === null ? done("handled") : done(err, null)),
    done: done,
  };
  return [callback, callbackContext, () => (isCompleteInvoked = true)];
}

function buildCallbackContext(client, id, scheduleNext) {
  const [callback, callbackContext, markCompleted] = rawCallbackContext(client, id, scheduleNext);
  let finished = false;
  const onlyAllowFirstCall = (toWrap) =>
    function () {
      if (!finished) {
        toWrap.apply(null, arguments);
        finished = true;
      }
    };
  callbackContext.succeed = onlyAllowFirstCall(callbackContext.succeed);
  callbackContext.fail = onlyAllowFirstCall(callbackContext.fail);
  callbackContext.done = onlyAllowFirstCall(callbackContext.done);
  return [onlyAllowFirstCall(callback), callbackContext, markCompleted];
}

// ------------------------------------------------------------------ InvokeContext.js

function attachEnvironmentData(callbackContext, request) {
  delete process.env["_X_AMZN_TRACE_ID"]; // no X-Ray trace header in the sandbox
  const deadline = request.deadline_ms;
  return Object.assign(
    callbackContext,
    {
      functionVersion: process.env["AWS_LAMBDA_FUNCTION_VERSION"],
      functionName: process.env["AWS_LAMBDA_FUNCTION_NAME"],
      memoryLimitInMB: process.env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"],
      logGroupName: process.env["AWS_LAMBDA_LOG_GROUP_NAME"],
      logStreamName: process.env["AWS_LAMBDA_LOG_STREAM_NAME"],
    },
    {
      clientContext: undefined,
      identity: undefined,
      invokedFunctionArn: request.invoked_function_arn,
      awsRequestId: request.request_id,
      tenantId: undefined,
      getRemainingTimeInMillis: function () {
        return deadline - Date.now();
      },
    },
  );
}

// ------------------------------------------------------------------ Runtime.js

class Runtime {
  constructor(client, pipe, handler, metadata, errorCallbacks) {
    this.client = client;
    this.pipe = pipe;
    this.handler = handler;
    this.handlerMetadata = metadata;
    this.errorCallbacks = errorCallbacks;
  }

  scheduleIteration() {
    setImmediate(() => {
      this.handleOnceNonStreaming().then(
        () => {},
        (err) => {
          console.log(`Unexpected Top Level Error: ${err.toString()}`);
          this.errorCallbacks.uncaughtException(err);
        },
      );
    });
  }

  async handleOnceNonStreaming() {
    const request = await this.pipe.next();
    const invokeId = request.request_id;
    currentRequestId.set(invokeId);
    this.client.inFlight = invokeId;
    const [callback, callbackContext, markCompleted] = buildCallbackContext(
      this.client,
      invokeId,
      this.scheduleIteration.bind(this),
    );
    try {
      this._setErrorCallbacks(invokeId);
      this._setDefaultExitListener(invokeId, markCompleted, this.handlerMetadata.isAsync);
      const result = this.handler(request.event, attachEnvironmentData(callbackContext, request), callback);
      if (result && result.then && typeof result.then === "function") {
        result.then(callbackContext.succeed, callbackContext.fail).catch(callbackContext.fail);
      }
    } catch (err) {
      callback(err);
    }
  }

  _setErrorCallbacks(invokeId) {
    this.errorCallbacks.uncaughtException = (error) =>
      this.client.postInvocationError(error, invokeId, () => process.exit(129));
    this.errorCallbacks.unhandledRejection = (error) =>
      this.client.postInvocationError(error, invokeId, () => process.exit(128));
  }

  _setDefaultExitListener(invokeId, markCompleted, isAsync) {
    BeforeExitListener.set(() => {
      markCompleted();
      if (isAsync) {
        const nodeJsExitError = new NodeJsExit();
        structuredConsole.logError("Invoke Error", nodeJsExitError);
        this.client.postInvocationError(nodeJsExitError, invokeId, () => this.scheduleIteration());
      } else {
        this.client.postInvocationResponse(null, invokeId, () => this.scheduleIteration());
      }
    });
  }
}

// ------------------------------------------------------------------ index.mjs

// A failed init: Lambda runs the init again for every invocation, and it fails the same way; the record is
// written again outside any invocation (no request id), and the invocation fails with the init's error.
async function serveFailedInit(pipe, error) {
  for (;;) {
    await pipe.next();
    structuredConsole.logError("Uncaught Exception", error);
    flushOutput();
    send({ result: { error: toRapidResponse(error) } });
  }
}

async function main() {
  captureLines("stdout");
  captureLines("stderr");
  patchConsole();
  const pipe = new InvocationPipe(Number(IN_FD));
  const client = new RuntimeClient();
  let initSent = false;
  const initFailed = (exitCode) => (error) => {
    if (initSent) process.exit(exitCode); // after init, outside any invocation
    initSent = true;
    flushOutput();
    send({ init: { ms: performance.now(), error: toRapidResponse(error) } });
    serveFailedInit(pipe, error);
  };
  const errorCallbacks = { uncaughtException: initFailed(129), unhandledRejection: initFailed(128) };
  const onUncaughtException = (error) => {
    structuredConsole.logError("Uncaught Exception", error);
    errorCallbacks.uncaughtException(error);
  };
  process.on("uncaughtException", onUncaughtException);
  process.on("unhandledRejection", (reason, promise) => {
    const error = new UnhandledPromiseRejection(reason, promise);
    structuredConsole.logError("Unhandled Promise Rejection", error);
    errorCallbacks.unhandledRejection(error);
  });
  BeforeExitListener.reset();
  process.on("beforeExit", BeforeExitListener.invoke);

  let handler;
  try {
    handler = await loadHandler(APP_ROOT, HANDLER);
  } catch (error) {
    onUncaughtException(error); // the bootstrap's `await run(...)` rejects: an uncaught exception
    return;
  }
  const metadata = handlerMetadata(handler);
  checkForDeprecatedCallback(metadata);
  flushOutput();
  initSent = true;
  send({ init: { ms: performance.now(), error: null } });
  new Runtime(client, pipe, handler, metadata, errorCallbacks).scheduleIteration();
}

main();
