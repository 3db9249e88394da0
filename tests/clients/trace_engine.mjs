// Loads a Chrome trace in the DevTools Performance panel's trace engine
// (npm @paulirish/trace_engine) and prints, as one JSON object, what the
// panel would show: the engine's errors and warnings (e.g. "Begin/End events
// mismatch"), each thread's name, self time per slice name (microseconds,
// summed over threads) and the flow arrows it draws.
// Usage: node trace_engine.mjs TRACE.json
import fs from 'node:fs';
import * as Trace from '@paulirish/trace_engine';

// The engine uses DOMRect, which Node lacks (the package's README).
globalThis.DOMRect = class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height, top: y, left: x, right: x + width, bottom: y + height});
  }
};

const messages = [];
for (const level of ['error', 'warn']) {
  console[level] = (...args) => messages.push(`${level}: ${args.join(' ')}`);
}

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(file.traceEvents);
const parsed = model.parsedTrace().data;

const threads = {};
const self = {};
const slices = {};
for (const [pid, proc] of parsed.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    threads[`${pid}/${tid}`] = thread.name;
    for (const entry of thread.entries) {
      const node = parsed.Renderer.entryToNode.get(entry);
      if (!node || entry.ph !== 'X')
        continue;
      self[entry.name] = (self[entry.name] ?? 0) + node.selfTime;
      slices[entry.name] = (slices[entry.name] ?? 0) + 1;
    }
  }
}
const flows = parsed.Flows.flows.map(flow => flow.map(e => ({name: e.name, tid: e.tid, ts: e.ts})));
process.stdout.write(JSON.stringify({messages, threads, self, slices, flows}) + '\n');
