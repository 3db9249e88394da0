// usdtprof's HTML viewer (docs/html.md): the flame graph, function table,
// sandwich and facts of one profile, or the differential flame graph and
// table of a diff. Everything it shows comes from the JSON in #data and is put
// in the page with textContent and properties only, never as markup: names
// come from profiled processes, which any user may name.
'use strict';
(function () {
const D = JSON.parse(document.getElementById('data').textContent);
const MIN_PX = 3;         // frames narrower than this are folded into their parent's "N more"
const TABLE_ROWS = 1000;  // rows of the function table shown before "show all"

// ---- helpers -----------------------------------------------------------
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
// As the text report's human_ns: about three significant digits.
function ns(v) {
  const a = Math.abs(v), sign = v < 0 ? '-' : '';
  if (a < 1000) return sign + Math.round(a) + ' ns';
  const [unit, div] = a < 999500 ? ['us', 1e3] : a < 999500000 ? ['ms', 1e6] : ['s', 1e9];
  const x = a / div;
  return sign + x.toFixed(x < 9.995 ? 2 : x < 99.95 ? 1 : 0) + ' ' + unit;
}
// "~" before a time within the calibration's spread, as the text report's
// time_text: a self time within the spread over its calls (u), an average or
// one call's duration within one call's share of it (perCall).
const UNCERTAIN_NOTE = '~: within the calibration\'s spread, not precise (a self time: of its calls; ' +
  'an average or one call\'s duration: of one call)';
function uncertain(v, u) { return u > 0 && v <= u; }
function perCall(u, calls) { return calls ? Math.floor((u + calls - 1) / calls) : 0; }
function nsMarked(v, u) { return (uncertain(v, u) ? '~' : '') + ns(v); }
function pct(part, whole) { return whole ? (100 * part / whole).toFixed(1) + '%' : '0.0%'; }
function hashOf(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return h >>> 0; }
function warm(name) { const h = hashOf(name); return `hsl(${10 + h % 40},${60 + (h >> 8) % 30}%,${55 + (h >> 16) % 15}%)`; }

// ---- state in the URL hash ---------------------------------------------
const state = {};
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.view = p.get('view') || (D.kind === 'diff' ? 'flame' : 'flame');
  state.time = p.get('time') || D.time || 'wall';
  state.proc = p.get('proc') || 'all';
  state.thread = p.get('thread') || 'all';
  state.zoom = Number(p.get('zoom') || 0);
  state.search = p.get('search') || '';
  state.fn = p.get('fn') || '';
  state.sort = p.get('sort') || 'self';
  state.asc = p.get('asc') === '1';
  state.all = p.get('all') === '1';
}
function go(changes) {
  const next = Object.assign({}, state, changes);
  const p = new URLSearchParams();
  for (const k of ['view', 'time', 'proc', 'thread', 'zoom', 'search', 'fn', 'sort', 'asc', 'all']) {
    let v = next[k];
    if (typeof v === 'boolean') v = v ? '1' : '';
    if (v !== '' && v !== undefined && v !== null) p.set(k, String(v));
  }
  const h = '#' + p.toString();
  if (h === location.hash) render(); else location.hash = h;
}

// ---- trees -------------------------------------------------------------
// A tree: node 0 is a synthetic root (label), name[i] an index into names
// (-1 for the root), parent, children (largest first), calls, self, total.
function newTree(label) {
  return {label, name: [-1], parent: [-1], children: [[]], calls: [0], open: [0], on: [0], off: [0], self: [0], total: [0],
    dist: [null], unc: [0]};
}
function addNode(t, name, parent) {
  const i = t.name.length;
  t.name.push(name); t.parent.push(parent); t.children.push([]);
  t.calls.push(0); t.open.push(0); t.on.push(0); t.off.push(0); t.self.push(0); t.total.push(0); t.dist.push(null); t.unc.push(0);
  t.children[parent].push(i);
  return i;
}
// Totals from self times (children come after their parents), children largest first.
function finish(t) {
  for (let i = t.name.length - 1; i >= 0; i--) {
    t.total[i] += t.self[i];
    if (i > 0) t.total[t.parent[i]] += t.total[i];
  }
  for (const c of t.children) c.sort((a, b) => t.total[b] - t.total[a] || nameOf(t, a).localeCompare(nameOf(t, b)));
  return t;
}
function nameOf(t, i) { return i === 0 ? t.label : D.tree.names[t.name[i]]; }
function selfIn(on, off, time) { return time === 'cpu' ? on : time === 'offcpu' ? off : on + off; }

// --per-thread: the threads' frames ({node, pid, tid, name}), largest first.
const THREADS = D.kind === 'report' ? D.tree.threads || [] : [];
function threadOf(tid) { return THREADS.find(x => String(x.tid) === tid); }

// The scope's tree: the paths of every process merged by name path (as
// build_call_tree does), or those of one process, or (thread: a tid) those
// below one thread's frame, without it and without any other thread's frame
// below it (a thread of its own), as report --per-thread's tables.
function scopeTree(proc, thread, time) {
  const nodes = D.tree.nodes, roots = D.tree.roots;
  // The calibration's spread per node; none off-CPU (probes run on the CPU: off-CPU time is not compensated).
  const U = time === 'offcpu' ? null : D.tree.uncertain;
  const rootOf = new Map(roots.map(r => [r.node, r.pid]));
  const one = threadOf(thread);
  const label = one ? D.tree.names[nodes[one.node][0]]
    : proc === 'all' ? 'all' : D.tree.names[nodes[roots.find(r => String(r.pid) === proc).node][0]];
  const frames = new Set(THREADS.map(x => x.node));
  const t = newTree(label);
  const moved = new Int32Array(nodes.length).fill(-1);
  const keys = new Map(), width = D.tree.names.length + 1; // key: parent * width + name
  for (let i = 0; i < nodes.length; i++) {
    const [name, parent, calls, open, on, off, dmin, dmax, buckets] = nodes[i];
    if (parent < 0) continue; // a process
    let into;
    if (one) {
      if (frames.has(i)) continue;
      into = parent === one.node ? 0 : moved[parent];
      if (into < 0) continue;
    } else if (rootOf.has(parent)) {
      if (proc !== 'all' && String(rootOf.get(parent)) !== proc) continue;
      into = 0;
    } else {
      into = moved[parent];
      if (into < 0) continue;
    }
    const key = into * width + name;
    let j = keys.get(key);
    if (j === undefined) { j = addNode(t, name, into); keys.set(key, j); }
    moved[i] = j;
    t.calls[j] += calls; t.open[j] += open; t.on[j] += on; t.off[j] += off;
    t.self[j] += selfIn(on, off, time);
    if (U) t.unc[j] += U[i];
    if (buckets) t.dist[j] = addDist(t.dist[j], dmin, dmax, buckets);
  }
  return finish(t);
}

// ---- durations (as profile/distribution.cpp) -----------------------------
// {min, max, counts: Map bucket -> count}: histograms add up, min of the
// minimums, max of the maximums; buckets [2^b, 2^(b+1)) ns, the first from 0.
// buckets: [bucket, count, bucket, count, ...], as the page's data has them,
// or a Map bucket -> count (another distribution's counts).
function addDist(d, min, max, buckets) {
  if (!d) d = {min, max, counts: new Map()};
  else { d.min = Math.min(d.min, min); d.max = Math.max(d.max, max); }
  const add = (b, n) => d.counts.set(b, (d.counts.get(b) || 0) + n);
  if (buckets instanceof Map) buckets.forEach((n, b) => add(b, n));
  else for (let k = 0; k + 1 < buckets.length; k += 2) add(buckets[k], buckets[k + 1]);
  return d;
}
function bucketLow(b) { return b ? 2 ** b : 0; }
function bucketHigh(b) { return 2 ** (Math.min(b, 39) + 1); }
// The duration below which a share q of the calls fall, placed linearly in its
// bucket, never outside min..max: bucket_quantile's arithmetic.
function quantile(d, q) {
  const sorted = [...d.counts.entries()].sort((a, b) => a[0] - b[0]);
  const counted = sorted.reduce((s, [, n]) => s + n, 0);
  if (!counted) return 0;
  const rank = Math.min(Math.max(Math.floor(q * counted + 0.5), 1), counted);
  let below = 0;
  for (const [b, n] of sorted) {
    if (below + n >= rank) {
      const lo = bucketLow(b), hi = bucketHigh(b);
      const v = Math.min(Math.floor(lo + (rank - below) / n * (hi - lo)), hi - 1);
      return Math.min(Math.max(v, d.min), Math.max(d.min, d.max));
    }
    below += n;
  }
  return 0;
}

// Depth first from the root, children in order: visit(i, outermost), outermost
// when no frame above i has its name.
function walk(t, visit) {
  const n = t.name.length;
  const active = new Int32Array(D.tree.names.length + 1);
  const stack = new Int32Array(2 * n + 2); // ~i: leaving i
  let top = 0;
  stack[top++] = 0;
  while (top) {
    const i = stack[--top];
    if (i < 0) { active[t.name[~i] + 1]--; continue; }
    const name = t.name[i] + 1;
    if (i > 0) visit(i, active[name] === 0);
    active[name]++;
    stack[top++] = ~i;
    const c = t.children[i];
    for (let k = c.length - 1; k >= 0; k--) stack[top++] = c[k];
  }
}

// Per function, as summarize_functions: total counts outermost activations only.
function functionsOf(t) {
  const by = new Map();
  walk(t, (i, outer) => {
    const n = t.name[i];
    let f = by.get(n);
    if (!f) { f = {name: D.tree.names[n], calls: 0, open: 0, self: 0, on: 0, off: 0, total: 0, recursive: false, dist: null, unc: 0}; by.set(n, f); }
    f.calls += t.calls[i]; f.open += t.open[i]; f.self += t.self[i]; f.on += t.on[i]; f.off += t.off[i]; f.unc += t.unc[i];
    if (outer) f.total += t.total[i]; else f.recursive = true;
    const d = t.dist[i]; // every call's, recursive inner ones too
    if (d) f.dist = addDist(f.dist, d.min, d.max, d.counts);
  });
  // Synthetic frames ([running at attach], ...) are never called.
  const called = [...by.values()].filter(f => f.calls > 0);
  for (const f of called) {
    const d = f.dist;
    Object.assign(f, d ? {min: d.min, p50: quantile(d, 0.5), p99: quantile(d, 0.99), max: d.max}
      : {min: null, p50: null, p99: null, max: null});
  }
  return called;
}

// ---- the flame graph -----------------------------------------------------
// Draws tree t zoomed on node `zoom` (its ancestors above it, full width);
// inverted: the root at the bottom (callers). opts.color(i), opts.match(i),
// opts.click(i), opts.tip(i) -> text.
function flame(t, zoom, opts) {
  const box = el('div', 'flame');
  const width = Math.max(opts.width || 0, 400);
  const frames = [];
  const anc = [];
  for (let a = t.parent[zoom]; a >= 0; a = t.parent[a]) anc.unshift(a);
  anc.forEach((a, depth) => frames.push({i: a, x: 0, w: width, depth, cls: 'anc'}));
  const todo = [[zoom, 0, width, anc.length]];
  while (todo.length) {
    const [i, x, w, depth] = todo.pop();
    frames.push({i, x, w, depth});
    const scale = t.total[i] ? w / t.total[i] : 0;
    let cx = x, more = 0, moreTotal = 0;
    for (const c of t.children[i]) {
      const cw = t.total[c] * scale;
      if (cw >= MIN_PX) { todo.push([c, cx, cw, depth + 1]); cx += cw; }
      else { more++; moreTotal += t.total[c]; }
    }
    if (more) frames.push({more, moreTotal, parent: i, x: cx, w: Math.max(moreTotal * scale, 1), depth: depth + 1});
  }
  const rows = frames.reduce((m, f) => Math.max(m, f.depth + 1), 0);
  const H = 17;
  box.style.height = rows * H + 'px';
  box.style.width = width + 'px';
  const frag = document.createDocumentFragment();
  for (const f of frames) {
    const d = el('div', 'fr' + (f.cls ? ' ' + f.cls : ''));
    d.style.left = f.x.toFixed(1) + 'px';
    d.style.width = Math.max(f.w - 0.5, 0.5).toFixed(1) + 'px';
    d.style.top = (opts.inverted ? (rows - 1 - f.depth) : f.depth) * H + 'px';
    if (f.more) {
      d.className += ' more';
      d.dataset.more = f.more;
      d.title = `${f.more} more frame${f.more > 1 ? 's' : ''} under ${nameOf(t, f.parent)}, each under ${MIN_PX} px: ` +
        `${ns(f.moreTotal)} (${pct(f.moreTotal, t.total[0])}) in all; zoom in to see them`;
      if (f.w > 40) d.textContent = `${f.more} more`;
      if (opts.moreMatch && opts.moreMatch(f.parent)) d.className += ' match';
    } else {
      const name = nameOf(t, f.i);
      d.dataset.i = f.i;
      d.dataset.name = name;
      d.style.background = opts.color(f.i);
      if (f.w > 24) d.textContent = name;
      d.title = opts.tip(f.i);
      if (opts.match && opts.match(f.i)) d.className += ' match';
    }
    frag.appendChild(d);
  }
  box.appendChild(frag);
  box.addEventListener('click', e => {
    const i = e.target.dataset && e.target.dataset.i;
    if (i !== undefined) opts.click(Number(i));
  });
  return box;
}

function breadcrumbs(t, zoom, onClick) {
  const nav = el('nav', 'crumbs');
  const chain = [];
  for (let a = zoom; a >= 0; a = t.parent[a]) chain.unshift(a);
  chain.forEach((a, k) => {
    if (k) nav.appendChild(el('span', 'sep', ' \u203a '));
    const b = el(k === chain.length - 1 ? 'span' : 'a', 'crumb', nameOf(t, a));
    if (k < chain.length - 1) { b.href = '#'; b.dataset.i = a; b.addEventListener('click', e => { e.preventDefault(); onClick(a); }); }
    nav.appendChild(b);
  });
  return nav;
}

// ---- the report's views ------------------------------------------------
let cache = {};
function scope() {
  const key = state.proc + '/' + state.thread + '/' + state.time;
  if (cache.key !== key) {
    const t = scopeTree(state.proc, state.thread, state.time);
    cache = {key, t, functions: null};
  }
  return cache;
}
function compileSearch() {
  if (!state.search) return null;
  try { return new RegExp(state.search); } catch (e) { return 'invalid'; }
}
function tipOf(t) {
  return i => `${nameOf(t, i)}\ntotal ${ns(t.total[i])} (${pct(t.total[i], t.total[0])}), self ${nsMarked(t.self[i], t.unc[i])}` +
    (i ? `, calls ${t.calls[i]}` + (t.open[i] ? `, ${t.open[i]} open` : '') +
     (t.calls[i] ? `, avg ${nsMarked(Math.floor(t.total[i] / t.calls[i]), perCall(t.unc[i], t.calls[i]))}` : '') +
     `\non-CPU self ${ns(t.on[i])}, off-CPU self ${ns(t.off[i])}` : '') +
    (t.unc[i] ? `\ncalibration's spread over these calls: ${ns(t.unc[i])}` : '') +
    (uncertain(t.self[i], t.unc[i]) ? '\n' + UNCERTAIN_NOTE : '');
}

function flameView(main) {
  const {t} = scope();
  const zoom = state.zoom < t.name.length ? state.zoom : 0;
  const re = compileSearch();
  const bar = el('div', 'bar');
  const input = el('input');
  input.id = 'search'; input.placeholder = 'search (regex)'; input.value = state.search;
  input.addEventListener('change', () => go({search: input.value}));
  bar.appendChild(input);
  const matched = el('span', 'matched');
  matched.id = 'matched';
  let isMatch = null, hasMatchBelow = null;
  if (re === 'invalid') matched.textContent = 'invalid regular expression';
  else if (re) {
    const hit = new Uint8Array(t.name.length);
    for (let i = 1; i < t.name.length; i++) hit[i] = re.test(nameOf(t, i)) ? 1 : 0;
    let sum = 0;
    walkMatches(t, hit, i => { sum += t.total[i]; });
    // Frames folded into "N more" with a match among them or below.
    const below = new Uint8Array(t.name.length);
    for (let i = t.name.length - 1; i > 0; i--) if (hit[i] || below[i]) below[t.parent[i]] = 1;
    isMatch = i => hit[i] === 1;
    hasMatchBelow = p => t.children[p].some(c => hit[c] || below[c]);
    matched.textContent = `Matched: ${ns(sum)} of ${ns(t.total[0])} (${pct(sum, t.total[0])})`;
    matched.dataset.ns = sum;
    matched.dataset.share = t.total[0] ? sum / t.total[0] : 0;
  }
  bar.appendChild(matched);
  const reset = el('button', '', 'reset zoom');
  reset.addEventListener('click', () => go({zoom: 0}));
  bar.appendChild(reset);
  main.appendChild(bar);
  main.appendChild(breadcrumbs(t, zoom, i => go({zoom: i})));
  main.appendChild(flame(t, zoom, {
    width: main.clientWidth - 16, color: i => warm(nameOf(t, i)), match: isMatch, moreMatch: hasMatchBelow,
    tip: tipOf(t), click: i => go({zoom: i}),
  }));
  main.appendChild(el('p', 'hint', 'Click a frame to zoom, a breadcrumb to zoom out; double-click a frame for its sandwich. ' +
    `Frames under ${MIN_PX} px are folded into "N more" blocks (hover for what they hold).`));
  main.querySelector('.flame').addEventListener('dblclick', e => {
    const i = e.target.dataset && e.target.dataset.i;
    if (i !== undefined && Number(i) > 0) go({view: 'sandwich', fn: nameOf(t, Number(i))});
  });
}
// The outermost matching frames: nested matches are inside them already.
function walkMatches(t, hit, take) {
  const stack = [0];
  while (stack.length) {
    const i = stack.pop();
    if (hit[i]) { take(i); continue; }
    for (const c of t.children[i]) stack.push(c);
  }
}

function oneCall(v, f) { return nsMarked(v, perCall(f.unc, f.calls)); }
const COLUMNS = [
  ['name', 'Function', f => f.name, null],
  ['calls', 'Calls', f => f.calls, String],
  ['self', 'Self', f => f.self, (v, f) => nsMarked(v, f.unc)],
  ['selfpct', 'Self %', f => f.self, null],
  ['total', 'Total', f => f.total, ns],
  ['totalpct', 'Total %', f => f.total, null],
  ['avg', 'Avg', f => (f.calls ? Math.floor(f.total / f.calls) : 0), oneCall],
  ['min', 'Min', f => f.min, oneCall],
  ['p50', 'p50', f => f.p50, oneCall],
  ['p99', 'p99', f => f.p99, oneCall],
  ['max', 'Max', f => f.max, oneCall],
  ['on', 'On-CPU self', f => f.on, ns],
  ['off', 'Off-CPU self', f => f.off, ns],
];
// The duration columns only when the profile carries durations.
const HAS_DURATIONS = D.kind === 'report' && D.tree.nodes.some(r => r.length > 6);
const TABLE_COLUMNS = HAS_DURATIONS ? COLUMNS : COLUMNS.filter(k => !['min', 'p50', 'p99', 'max'].includes(k[0]));
function tableView(main) {
  const c = scope(), t = c.t;
  if (!c.functions) c.functions = functionsOf(t);
  const col = TABLE_COLUMNS.find(k => k[0] === state.sort) || TABLE_COLUMNS[2];
  const rows = c.functions.slice().sort((a, b) => {
    const x = col[2](a), y = col[2](b);
    const d = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return (state.asc ? d : -d) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  });
  const table = el('table', 'functions');
  table.id = 'functions';
  const head = el('tr');
  for (const [key, label] of TABLE_COLUMNS) {
    const th = el('th', key === col[0] ? 'sorted' : '', label + (key === col[0] ? (state.asc ? ' \u25b2' : ' \u25bc') : ''));
    th.dataset.key = key;
    th.addEventListener('click', () => go({sort: key, asc: key === col[0] ? !state.asc : key === 'name'}));
    head.appendChild(th);
  }
  head.appendChild(el('th', '', 'Marks'));
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  const shown = state.all ? rows : rows.slice(0, TABLE_ROWS);
  const total = t.total[0];
  let marked = false;
  for (const f of shown) {
    const tr = el('tr');
    Object.assign(tr.dataset, {name: f.name, calls: f.calls, open: f.open, self: f.self, total: f.total,
      on: f.on, off: f.off, recursive: f.recursive, uncertain: f.unc});
    if (HAS_DURATIONS && f.min !== null) Object.assign(tr.dataset, {min: f.min, p50: f.p50, p99: f.p99, max: f.max});
    const name = el('td', 'name');
    const a = el('a', '', f.name);
    a.href = '#'; a.title = 'callers and callees of ' + f.name;
    a.addEventListener('click', e => { e.preventDefault(); go({view: 'sandwich', fn: f.name}); });
    name.appendChild(a);
    tr.appendChild(name);
    for (const [key, , value, format] of TABLE_COLUMNS.slice(1)) {
      const v = value(f);
      const td = tr.appendChild(el('td', 'num', key.endsWith('pct') ? pct(v, total) : v === null ? '' : format(v, f)));
      td.dataset.key = key;
      if (td.textContent.startsWith('~')) { td.title = UNCERTAIN_NOTE; marked = true; }
    }
    tr.appendChild(el('td', 'marks', [f.recursive ? 'recursive' : '', f.open ? f.open + ' open' : ''].filter(Boolean).join(', ')));
    body.appendChild(tr);
  }
  main.appendChild(table);
  if (shown.length < rows.length) {
    const more = el('button', 'more-rows', `${rows.length - shown.length} more functions not shown: show all`);
    more.addEventListener('click', () => go({all: true}));
    main.appendChild(more);
  }
  main.appendChild(el('p', 'hint', 'Total counts each outermost activation once (recursion is never counted twice); ' +
    'avg is total / calls. Click a header to sort, a name for its callers and callees.'));
  if (marked) main.appendChild(el('p', 'hint', UNCERTAIN_NOTE)).id = 'uncertain-note';
}

// A function's callers (inverted tree, it at the bottom) and callees (its
// outermost activations' subtrees merged), and the edges as report
// --callers/--callees counts them (docs/report-json.md).
function sandwichOf(t, fname) {
  const all = [], outer = [];
  walk(t, (i, o) => { if (nameOf(t, i) === fname) { all.push(i); if (o) outer.push(i); } });
  const callers = newTree(fname), callees = newTree(fname);
  const ckeys = new Map(), ekeys = new Map();
  for (const o of outer) {
    callers.calls[0] += t.calls[o];
    let into = 0;
    for (let a = t.parent[o]; a > 0; a = t.parent[a]) {
      const key = into + ':' + t.name[a];
      let j = ckeys.get(key);
      if (j === undefined) { j = addNode(callers, t.name[a], into); ckeys.set(key, j); }
      callers.self[j] += 0; callers.calls[j] += t.calls[o];
      callers.total[j] += t.total[o];
      into = j;
    }
    callers.total[0] += t.total[o];
    // The subtree below o, merged into callees by name path.
    callees.self[0] += t.self[o]; callees.on[0] += t.on[o]; callees.off[0] += t.off[o]; callees.unc[0] += t.unc[o];
    const stack = t.children[o].map(c => [c, 0]);
    while (stack.length) {
      const [i, into2] = stack.pop();
      const key = into2 + ':' + t.name[i];
      let j = ekeys.get(key);
      if (j === undefined) { j = addNode(callees, t.name[i], into2); ekeys.set(key, j); }
      callees.calls[j] += t.calls[i]; callees.self[j] += t.self[i]; callees.on[j] += t.on[i]; callees.off[j] += t.off[i];
      callees.unc[j] += t.unc[i];
      for (const c of t.children[i]) stack.push([c, j]);
    }
  }
  // Callers: totals are set directly (a path's time at each of its callers).
  for (const c of callers.children) c.sort((a, b) => callers.total[b] - callers.total[a]);
  finish(callees);
  const callerEdges = new Map(), calleeEdges = new Map();
  const isOuter = new Set(outer);
  const edge = (m, name) => { let e = m.get(name); if (!e) { e = {name, calls: 0, time: 0}; m.set(name, e); } return e; };
  for (const i of all) {
    const e = edge(callerEdges, t.parent[i] > 0 ? nameOf(t, t.parent[i]) : '[root]');
    e.calls += t.calls[i];
    if (isOuter.has(i)) e.time += t.total[i];
    for (const c of t.children[i]) {
      const ce = edge(calleeEdges, nameOf(t, c));
      ce.calls += t.calls[c];
      if (isOuter.has(i)) ce.time += t.total[c];
    }
  }
  const order = (a, b) => b.time - a.time || b.calls - a.calls || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return {callers, callees, callerEdges: [...callerEdges.values()].sort(order),
    calleeEdges: [...calleeEdges.values()].sort(order), outerSelf: callees.self[0], total: callers.total[0], count: all.length};
}

function edgeTable(id, title, edges, whole, extra) {
  const box = el('div', 'edges');
  box.appendChild(el('h3', '', title));
  const table = el('table', 'functions');
  table.id = id;
  const head = el('tr');
  for (const h of ['Calls', 'Time', 'Time %', 'Function']) head.appendChild(el('th', '', h));
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  for (const e of extra ? edges.concat([extra]) : edges) {
    const tr = el('tr');
    Object.assign(tr.dataset, {name: e.name, calls: e.calls, time: e.time});
    tr.appendChild(el('td', 'num', e.calls));
    tr.appendChild(el('td', 'num', ns(e.time)));
    tr.appendChild(el('td', 'num', pct(e.time, whole)));
    const td = el('td', 'name');
    if (e.name.startsWith('[') && (e.name === '[root]' || e.name === '[self]')) td.textContent = e.name;
    else {
      const a = el('a', '', e.name);
      a.href = '#';
      a.addEventListener('click', ev => { ev.preventDefault(); go({fn: e.name}); });
      td.appendChild(a);
    }
    tr.appendChild(td);
    body.appendChild(tr);
  }
  box.appendChild(table);
  return box;
}

function sandwichView(main) {
  const c = scope(), t = c.t;
  if (!c.functions) c.functions = functionsOf(t);
  const bar = el('div', 'bar');
  const pick = el('select');
  pick.id = 'function';
  const names = c.functions.slice().sort((a, b) => b.total - a.total).map(f => f.name);
  const fname = names.includes(state.fn) ? state.fn : names[0];
  for (const n of names.slice(0, 2000).concat(names.includes(fname) && names.indexOf(fname) >= 2000 ? [fname] : [])) {
    const o = el('option', '', n);
    o.value = n;
    pick.appendChild(o);
  }
  pick.value = fname || '';
  pick.addEventListener('change', () => go({fn: pick.value}));
  bar.appendChild(el('span', '', 'Function: '));
  bar.appendChild(pick);
  main.appendChild(bar);
  if (!fname) { main.appendChild(el('p', '', 'No function has calls in this scope.')); return; }
  const s = sandwichOf(t, fname);
  const f = c.functions.find(x => x.name === fname);
  main.appendChild(el('p', 'summary', `${fname}: ${f.calls} calls, self ${nsMarked(f.self, f.unc)}, total ${ns(f.total)}` +
    (f.recursive ? ' [recursive]' : '') + (f.open ? ` (${f.open} open)` : '')));
  const lists = el('div', 'lists');
  lists.appendChild(edgeTable('callers', 'Callers', s.callerEdges, s.total));
  lists.appendChild(edgeTable('callees', 'Callees', s.calleeEdges, s.total, {name: '[self]', calls: '', time: s.outerSelf}));
  main.appendChild(lists);
  const width = main.clientWidth - 16;
  const tipC = i => `${nameOf(s.callers, i)}\n${ns(s.callers.total[i])} of ${fname}'s time (${pct(s.callers.total[i], s.total)}) through this caller path`;
  main.appendChild(el('h3', '', 'Callers (each path up from ' + fname + ')'));
  main.appendChild(flame(s.callers, 0, {width, inverted: true, color: i => warm(nameOf(s.callers, i)), tip: tipC,
    click: i => i > 0 && go({fn: nameOf(s.callers, i)})}));
  main.appendChild(el('h3', '', 'Callees'));
  main.appendChild(flame(s.callees, 0, {width, color: i => warm(nameOf(s.callees, i)), tip: tipOf(s.callees),
    click: i => i > 0 && go({fn: nameOf(s.callees, i)})}));
}

function factsView(main) {
  const F = D.facts;
  const dl = el('dl', 'facts');
  dl.id = 'facts';
  const add = (k, v) => { dl.appendChild(el('dt', '', k)); const dd = dl.appendChild(el('dd')); if (v instanceof Node) dd.appendChild(v); else dd.textContent = v; };
  add('Command', F.command.length ? F.command.join(' ') : '(attached to running processes)');
  const procs = el('ul');
  for (const p of F.processes) procs.appendChild(el('li', '', `${p.comm} (pid ${p.pid})` + (p.cmdline.length ? ': ' + p.cmdline.join(' ') : '')));
  add('Processes', procs);
  add('Duration', ns(F.duration_ns));
  if (F.start_unix_ns) add('Recorded', new Date(F.start_unix_ns / 1e6).toISOString() + ' to ' + new Date(F.stop_unix_ns / 1e6).toISOString());
  add('Sampling', F.sampled_fraction < 1 ? `probes attached ${(100 * F.sampled_fraction).toFixed(1)}% of the time (counts and times not scaled)` :
    'probes attached the whole time (exact counts)');
  add('Times', D.raw ? 'as measured (--raw): the probes\' own cost included' :
    F.calibration ? 'compensated for the probes\' own cost' :
    F.compensated_parts ? `compensated for the probes' own cost: each of ${F.compensated_parts} of the ${F.merged_parts} merged ` +
      'profiles with its own calibration, before merging (they were calibrated apart)' :
    'as measured (no calibration in the profile)');
  if (F.calibration) {
    const C = F.calibration, ul = el('ul');
    for (const k of C.kinds) ul.appendChild(el('li', '', `${k.kind}: ${k.own_ns.toFixed(1)} ns own, ${k.caller_ns.toFixed(1)} ns in the caller per call ` +
      `(spread ${k.own_spread_ns.toFixed(1)} / ${k.caller_spread_ns.toFixed(1)} ns, ${k.batches} batches)`));
    ul.appendChild(el('li', '', `removed ${ns(C.removed_ns)} in all; ${C.clamped} self times clamped at 0; calibrating took ${ns(C.cost_ns)}` +
      (C.offcpu_hook ? '' : '; no context-switch hook: off-CPU time not split')));
    add('Calibration', ul);
  }
  if (F.uncompensated) add('Uncompensated', F.uncompensated);
  if (D.tree.uncertain) add('Marks', UNCERTAIN_NOTE);
  const an = el('table', 'anomalies');
  an.id = 'anomalies';
  for (const a of F.anomalies) {
    const tr = el('tr', a.count ? 'nonzero' : '');
    tr.appendChild(el('td', '', a.name)); tr.appendChild(el('td', 'num', a.count)); tr.appendChild(el('td', '', a.what));
    an.appendChild(tr);
  }
  add('Anomalies', an);
  main.appendChild(dl);
}

// ---- the diff's views ----------------------------------------------------
// BASE and NEW's trees merged by name path: width from either profile (the
// larger), colour by the change of self time.
function diffTree() {
  if (cache.diff) return cache.diff;
  const nodes = D.tree.nodes;
  const t = newTree('all');
  t.base = [0]; t.now = [0]; t.bself = [0]; t.nself = [0]; t.bcalls = [0]; t.ncalls = [0];
  for (let i = 0; i < nodes.length; i++) {
    const [name, parent, bself, nself, bcalls, ncalls] = nodes[i];
    const j = addNode(t, name, parent < 0 ? 0 : parent + 1);
    t.bself.push(bself); t.nself.push(nself); t.base.push(0); t.now.push(0);
    t.bcalls.push(bcalls); t.ncalls.push(ncalls);
  }
  for (let i = t.name.length - 1; i >= 0; i--) {
    t.base[i] += t.bself[i]; t.now[i] += t.nself[i];
    if (i > 0) { t.base[t.parent[i]] += t.base[i]; t.now[t.parent[i]] += t.now[i]; }
    t.self[i] = Math.max(t.bself[i], t.nself[i]);
  }
  for (let i = t.name.length - 1; i >= 0; i--) {
    t.total[i] += Math.max(t.base[i], t.now[i]);
  }
  // A parent is at least as wide as its children side by side.
  for (let i = t.name.length - 1; i >= 0; i--) {
    const sum = t.children[i].reduce((s, c) => s + t.total[c], 0);
    if (sum > t.total[i]) t.total[i] = sum;
  }
  for (const c of t.children) c.sort((a, b) => t.total[b] - t.total[a]);
  cache.diff = t;
  return t;
}
// Blue (faster) to orange-red (slower), by the change of self time relative
// to the largest; a colour-blind-safe diverging pair (blue/orange).
function diffColor(t, i, scale) {
  const d = t.nself[i] - t.bself[i];
  if (i && !t.bcalls[i] && t.ncalls[i]) return 'hsl(28,100%,36%)';
  if (i && t.bcalls[i] && !t.ncalls[i]) return 'hsl(210,90%,30%)';
  const s = Math.min(Math.abs(d) / (scale || 1), 1);
  const light = 92 - 40 * s;
  return d > 0 ? `hsl(28,90%,${light}%)` : d < 0 ? `hsl(210,75%,${light}%)` : 'hsl(0,0%,88%)';
}
function diffFlameView(main) {
  const t = diffTree();
  const zoom = state.zoom < t.name.length ? state.zoom : 0;
  let scale = 0;
  for (let i = 1; i < t.name.length; i++) scale = Math.max(scale, Math.abs(t.nself[i] - t.bself[i]));
  const legend = el('div', 'legend');
  legend.id = 'legend';
  for (const [color, text] of [['hsl(210,75%,52%)', 'less self time in NEW'], ['hsl(0,0%,88%)', 'unchanged'],
    ['hsl(28,90%,52%)', 'more self time in NEW'], ['hsl(210,90%,30%)', 'vanished (only in BASE)'], ['hsl(28,100%,36%)', 'appeared (only in NEW)']]) {
    const sw = el('span', 'swatch');
    sw.style.background = color;
    legend.appendChild(sw);
    legend.appendChild(el('span', '', text));
  }
  legend.appendChild(el('span', 'note', 'Width: the larger of the two profiles\' time; shade: the size of the change of self time.'));
  main.appendChild(legend);
  main.appendChild(breadcrumbs(t, zoom, i => go({zoom: i})));
  main.appendChild(flame(t, zoom, {
    width: main.clientWidth - 16, color: i => diffColor(t, i, scale), click: i => go({zoom: i}),
    tip: i => `${nameOf(t, i)}\nself ${ns(t.bself[i])} -> ${ns(t.nself[i])} (${t.nself[i] >= t.bself[i] ? '+' : ''}${ns(t.nself[i] - t.bself[i])})` +
      `\ntotal ${ns(t.base[i])} -> ${ns(t.now[i])}` + (i ? `\ncalls ${t.bcalls[i]} -> ${t.ncalls[i]}` : ''),
  }));
}
function diffTableView(main) {
  const table = el('table', 'functions');
  table.id = 'diff';
  const head = el('tr');
  for (const h of ['Function', 'Base calls', 'New calls', 'Base self', 'New self', 'Base total', 'New total', 'Change', 'Share', 'z',
    'Status']) head.appendChild(el('th', '', h));
  table.appendChild(el('thead')).appendChild(head);
  const body = table.appendChild(el('tbody'));
  for (const r of D.functions) {
    const tr = el('tr', r.significant ? 'significant' : '');
    Object.assign(tr.dataset, {name: r.name, delta: r.delta_self_ns, significant: r.significant, status: r.status});
    tr.appendChild(el('td', 'name', r.name));
    tr.appendChild(el('td', 'num', r.base.calls));
    tr.appendChild(el('td', 'num', r.new.calls));
    tr.appendChild(el('td', 'num', ns(r.base.self_ns)));
    tr.appendChild(el('td', 'num', ns(r.new.self_ns)));
    tr.appendChild(el('td', 'num', ns(r.base.total_ns)));
    tr.appendChild(el('td', 'num', ns(r.new.total_ns)));
    tr.appendChild(el('td', 'num', (r.delta_self_ns > 0 ? '+' : '') + ns(r.delta_self_ns)));
    tr.appendChild(el('td', 'num', (r.delta_share > 0 ? '+' : '') + r.delta_share.toFixed(1) + ' pp'));
    tr.appendChild(el('td', 'num', r.z === null ? '-' : r.z.toFixed(1) + (r.significant ? ' *' : '')));
    tr.appendChild(el('td', '', r.status));
    body.appendChild(tr);
  }
  main.appendChild(table);
  main.appendChild(el('p', 'hint', '* significant: beyond 3 times the spread the profiles show (docs/diff.md). ' +
    `BASE ${ns(D.base.total_self_ns)} in all, NEW ${ns(D.new.total_self_ns)}` + (D.normalize ? ' (NEW scaled to BASE\'s total)' : '') + '.'));
}

// ---- the page ------------------------------------------------------------
const VIEWS = D.kind === 'diff'
  ? [['flame', 'Differential flame graph', diffFlameView], ['table', 'Functions', diffTableView]]
  : [['flame', 'Flame graph', flameView], ['table', 'Functions', tableView], ['sandwich', 'Sandwich', sandwichView],
     ['facts', 'Recording', factsView]];

function controls() {
  const box = document.getElementById('controls');
  box.textContent = '';
  if (D.kind === 'diff') {
    box.appendChild(el('span', '', `time: ${D.time}`));
    return;
  }
  const time = el('select');
  time.id = 'time';
  for (const [v, label] of [['wall', 'wall-clock'], ['cpu', 'on-CPU'], ['offcpu', 'off-CPU']]) {
    const o = el('option', '', label); o.value = v; time.appendChild(o);
  }
  time.value = state.time;
  time.addEventListener('change', () => go({time: time.value, zoom: 0}));
  box.appendChild(el('label', '', 'time '));
  box.appendChild(time);
  if (D.tree.roots.length > 1) {
    const proc = el('select');
    proc.id = 'process';
    const all = el('option', '', 'all processes'); all.value = 'all'; proc.appendChild(all);
    for (const r of D.tree.roots) {
      const o = el('option', '', D.tree.names[D.tree.nodes[r.node][0]]); o.value = String(r.pid); proc.appendChild(o);
    }
    proc.value = state.proc;
    proc.addEventListener('change', () => go({proc: proc.value, thread: 'all', zoom: 0}));
    box.appendChild(el('label', '', ' process '));
    box.appendChild(proc);
  }
  if (THREADS.length) {
    // The chosen process's threads (every thread's with all processes).
    const thread = el('select');
    thread.id = 'thread';
    const all = el('option', '', 'all threads'); all.value = 'all'; thread.appendChild(all);
    for (const x of THREADS) {
      if (state.proc !== 'all' && String(x.pid) !== state.proc) continue;
      const o = el('option', '', D.tree.names[D.tree.nodes[x.node][0]]); o.value = String(x.tid); thread.appendChild(o);
    }
    thread.value = threadOf(state.thread) ? state.thread : 'all';
    thread.addEventListener('change', () => go({thread: thread.value, zoom: 0}));
    box.appendChild(el('label', '', ' thread '));
    box.appendChild(thread);
  }
}

function render() {
  readHash();
  const started = performance.now();
  document.getElementById('title').textContent = document.title;
  const tabs = document.getElementById('tabs');
  tabs.textContent = '';
  for (const [key, label] of VIEWS) {
    const a = el('a', key === state.view ? 'tab active' : 'tab', label);
    a.href = '#'; a.dataset.view = key;
    a.addEventListener('click', e => { e.preventDefault(); go({view: key}); });
    tabs.appendChild(a);
  }
  controls();
  const main = document.getElementById('main');
  main.textContent = '';
  const view = VIEWS.find(v => v[0] === state.view) || VIEWS[0];
  view[2](main);
  document.body.dataset.rendered = String(performance.now() - started);
  document.body.dataset.ready = (Number(document.body.dataset.ready || 0) + 1).toString();
}

window.addEventListener('hashchange', render);
window.addEventListener('resize', () => { clearTimeout(window.usdtprofResize); window.usdtprofResize = setTimeout(render, 200); });
render();
})();
