// Opens usdtprof's HTML pages (report --format html, diff --format html) from
// disk in headless Chromium (Debian's, driven by npm puppeteer-core) and uses
// them as a user would: reads the function table, clicks a frame, searches,
// opens a function's sandwich, switches the time domain. Prints one JSON
// object of what the page showed (tests/e2e/test_html.cpp compares it with
// `report --format json` of the same profile).
//
//   node html_report.mjs report FILE SHOT.png CLICK_FUNCTION SEARCH SANDWICH_FUNCTION
//   node html_report.mjs table FILE SHOT.png     the function table, every row
//   node html_report.mjs large FILE SHOT.png     how long opening, a zoom and a search take
//   node html_report.mjs diff FILE SHOT.png      the diff table, the legend and the frames' colours
//   node html_report.mjs threads FILE SHOT.png   per thread chosen in the thread switch: its function table and flame graph
//   node html_report.mjs processes FILE SHOT.png per process chosen in the process switch: its function table and flame graph
//   node html_report.mjs marks FILE SHOT.png     the "~" marks: each table cell's text and tooltip, on-CPU then
//                                                wall-clock, the legend, the frames' tooltips, tiny's sandwich
import puppeteer from 'puppeteer-core';

const [mode, file, shot, ...args] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--window-size=1280,900', '--allow-file-access-from-files'],
});
const out = {messages: [], requests: []};
try {
  const page = await browser.newPage();
  await page.setViewport({width: 1280, height: 900});
  page.on('console', m => ['warn', 'warning', 'error'].includes(m.type()) && out.messages.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', e => out.messages.push(`pageerror: ${e.message}`));
  // Self-contained: nothing but the file itself may be fetched.
  page.on('request', r => r.url().split('#')[0] !== 'file://' + file && out.requests.push(r.url()));

  // Each render of the page counts up body.dataset.ready; act() waits for the next one.
  const renders = () => page.evaluate(() => Number(document.body.dataset.ready || 0));
  async function act(action) {
    const before = await renders();
    const t0 = Date.now();
    await action();
    await page.waitForFunction(n => Number(document.body.dataset.ready || 0) > n, {timeout: 120000}, before);
    return {wall_ms: Date.now() - t0, render_ms: await page.evaluate(() => Number(document.body.dataset.rendered))};
  }
  async function open(hash) {
    const t0 = Date.now();
    await page.goto('file://' + file + (hash || ''), {timeout: 120000});
    await page.waitForFunction(() => document.body.dataset.ready, {timeout: 120000});
    return {wall_ms: Date.now() - t0, render_ms: await page.evaluate(() => Number(document.body.dataset.rendered))};
  }
  const frames = () => page.$$eval('.flame .fr', fs => fs.map(f => ({
    name: f.classList.contains('more') ? null : f.dataset.name, more: Number(f.dataset.more || 0),
    i: f.dataset.i === undefined ? null : Number(f.dataset.i), anc: f.classList.contains('anc'),
    match: f.classList.contains('match'), left: parseFloat(f.style.left), width: parseFloat(f.style.width),
    top: parseFloat(f.style.top), color: f.style.backgroundColor})));
  const tableRows = id => page.$$eval(`#${id} tbody tr`, rows => rows.map(r => Object.assign({}, r.dataset)));
  const search = async text => act(async () => {
    await page.click('#search', {clickCount: 3});
    await page.type('#search', text);
    await page.keyboard.press('Enter');
  });
  const matched = () => page.$eval('#matched', m => ({text: m.textContent, ns: Number(m.dataset.ns), share: Number(m.dataset.share)}));

  if (mode === 'report') {
    const [clickName, searchText, sandwichName] = args;
    out.open = await open();
    out.title = await page.title();
    out.table = (await act(() => page.click('.tab[data-view="table"]')), await tableRows('functions'));
    out.shown = await page.$$eval('#functions tbody td.name', tds => tds.map(td => td.textContent));
    await act(() => page.select('#time', 'cpu'));
    out.table_cpu = await tableRows('functions');
    await act(() => page.click('#functions th[data-key="calls"]'));
    out.by_calls = (await tableRows('functions')).map(r => Number(r.calls));
    await act(() => page.select('#time', 'wall'));
    await act(() => page.click('.tab[data-view="flame"]'));
    out.flame_width = await page.$eval('.flame', f => parseFloat(f.style.width));
    out.before = await frames();
    const target = out.before.find(f => f.name === clickName && !f.anc);
    if (!target) throw new Error(`no frame named ${clickName}`);
    out.zoom = await act(() => page.click(`.flame .fr[data-i="${target.i}"]`));
    out.hash = await page.evaluate(() => location.hash);
    out.crumbs = await page.$$eval('.crumbs .crumb', cs => cs.map(c => c.textContent));
    out.after = await frames();
    out.search = await search(searchText);
    out.matched = await matched();
    out.search_frames = await frames();
    out.hash_after_search = await page.evaluate(() => location.hash);
    // The state is in the hash: a reload shows the same zoom and search.
    out.reloaded = await open(out.hash_after_search);
    out.matched_reloaded = await matched();
    out.crumbs_reloaded = await page.$$eval('.crumbs .crumb', cs => cs.map(c => c.textContent));
    await page.screenshot({path: shot});
    out.sandwich = await act(() => page.evaluate(n => { location.hash = '#view=sandwich&fn=' + encodeURIComponent(n); }, sandwichName));
    out.callers = await tableRows('callers');
    out.callees = await tableRows('callees');
    out.sandwich_frames = await frames();
    await page.screenshot({path: shot.replace(/\.png$/, '-sandwich.png')});
    await act(() => page.click('.tab[data-view="facts"]'));
    out.facts = await page.$eval('#facts', f => f.innerText);
    out.anomalies = await page.$$eval('#anomalies tr', rs => rs.map(r => r.cells[0].textContent));
  } else if (mode === 'table') {
    out.open = await open('#view=table&all=1');
    out.table = await tableRows('functions');
    out.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
    await page.screenshot({path: shot});
  } else if (mode === 'large') {
    out.open = await open();
    out.before = (await frames()).length;
    out.more = (await frames()).filter(f => f.more).reduce((s, f) => s + f.more, 0);
    const deep = (await frames()).filter(f => f.name && !f.anc && f.i > 0).sort((a, b) => b.width - a.width)[1];
    out.zoom = await act(() => page.click(`.flame .fr[data-i="${deep.i}"]`));
    out.search = await search('Class000[1-4]\.');
    out.matched = await matched();
    out.table = await act(() => page.click('.tab[data-view="table"]'));
    out.rows = (await tableRows('functions')).length;
    out.more_rows = await page.$eval('.more-rows', b => b.textContent).catch(() => null);
    out.sandwich = await act(() => page.click('#functions tbody td.name a'));
    await page.screenshot({path: shot});
  } else if (mode === 'threads') {
    out.open = await open('#view=table&all=1');
    const options = await page.$$eval('#thread option', os => os.map(o => ({value: o.value, label: o.textContent})));
    out.threads = [];
    for (const o of options.filter(o => o.value !== 'all')) {
      await act(() => page.select('#thread', o.value));
      const table = await tableRows('functions');
      await act(() => page.click('.tab[data-view="flame"]'));
      const roots = (await frames()).filter(f => f.name !== null && f.i === 0);
      out.threads.push({tid: o.value, label: o.label, table, hash: await page.evaluate(() => location.hash),
                        crumbs: await page.$$eval('.crumbs .crumb', cs => cs.map(c => c.textContent)),
                        root: roots.length ? roots[0].name : null});
      await act(() => page.click('.tab[data-view="table"]'));
    }
    await act(() => page.select('#thread', options[1].value));
    await act(() => page.click('.tab[data-view="flame"]'));
    await page.screenshot({path: shot});
  } else if (mode === 'processes') {
    out.open = await open('#view=table&all=1');
    const options = await page.$$eval('#process option', os => os.map(o => ({value: o.value, label: o.textContent})));
    out.processes = [];
    for (const o of options) {
      await act(() => page.select('#process', o.value));
      const table = await tableRows('functions');
      await act(() => page.click('.tab[data-view="flame"]'));
      out.processes.push({pid: o.value, label: o.label, table, hash: await page.evaluate(() => location.hash),
                          crumbs: await page.$$eval('.crumbs .crumb', cs => cs.map(c => c.textContent))});
      await act(() => page.click('.tab[data-view="table"]'));
    }
    await act(() => page.select('#process', options[1].value));
    await act(() => page.click('.tab[data-view="flame"]'));
    await page.screenshot({path: shot});
  } else if (mode === 'marks') {
    // Each row's data with its cells' text and tooltips by column key.
    const cells = () => page.$$eval('#functions tbody tr', rows => rows.map(r => {
      const keyed = [...r.cells].filter(c => c.dataset.key);
      return Object.assign({}, r.dataset, {cells: Object.fromEntries(keyed.map(c => [c.dataset.key, c.textContent])),
        titles: Object.fromEntries(keyed.filter(c => c.title).map(c => [c.dataset.key, c.title]))});
    }));
    const note = () => page.$eval('#uncertain-note', n => n.textContent).catch(() => null);
    out.open = await open('#view=table&all=1&time=cpu');
    out.table_cpu = await cells();
    out.note_cpu = await note();
    await act(() => page.select('#time', 'wall'));
    out.table = await cells();
    out.note = await note();
    await act(() => page.click('.tab[data-view="flame"]'));
    out.tips = await page.$$eval('.flame .fr[data-name]', fs => fs.map(f => ({name: f.dataset.name, tip: f.title})));
    await page.screenshot({path: shot});
    await act(() => page.evaluate(() => { location.hash = '#view=sandwich&fn=tiny&time=cpu'; }));
    out.sandwich_cpu = await page.$eval('p.summary', p => p.textContent);
    await act(() => page.click('.tab[data-view="facts"]'));
    out.facts = await page.$eval('#facts', f => f.innerText);
  } else if (mode === 'diff') {
    out.open = await open();
    out.legend = await page.$eval('#legend', l => l.innerText);
    out.frames = await frames();
    await page.screenshot({path: shot});
    await act(() => page.click('.tab[data-view="table"]'));
    out.table = await tableRows('diff');
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
