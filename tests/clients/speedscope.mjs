// Imports profiles into speedscope (npm speedscope, its built app) in headless
// Chromium (Debian's, driven by npm puppeteer-core) as a user would open them,
// and prints, as one JSON line per file, what speedscope showed: the profile's
// title, every console warning or error and page error, and the Sandwich view's
// table (total, self, name per row, as shown) of the first profile (thread). A screenshot of each file's Sandwich view
// is written to OUT_DIR/NAME.png.
// Usage: node speedscope.mjs OUT_DIR FILE...
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import puppeteer from 'puppeteer-core';

const [outDir, ...files] = process.argv.slice(2);
const app = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules/speedscope/dist/release');

// speedscope fetches #profileURL=...: the app and the files from one local server.
const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm'};
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = url.startsWith('/profiles/') ? files[Number(url.split('/')[2])] : path.join(app, path.normalize(url));
  fs.readFile(file, (err, data) => {
    res.writeHead(err ? 404 : 200, {'Content-Type': types[path.extname(file)] ?? 'application/octet-stream'});
    res.end(err ? '' : data);
  });
});
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;

const browser = await puppeteer.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--enable-unsafe-swiftshader', '--window-size=1280,800'],
});
try {
  for (const [i, file] of files.entries()) {
    const page = await browser.newPage();
    await page.setViewport({width: 1280, height: 800});
    const messages = [];
    // speedscope's own complaints; not Chromium's about its software WebGL ("[.WebGL-...]GL Driver Message").
    page.on('console', m => ['warn', 'warning', 'error'].includes(m.type()) && !m.text().startsWith('[.WebGL-') &&
                            messages.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', e => messages.push(`pageerror: ${e.message}`));
    const name = path.basename(file);
    await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(`/profiles/${i}/${name}`)}`);
    // Loaded: speedscope titles the page after the profile.
    await page.waitForFunction(() => document.title !== 'speedscope', {timeout: 30000});
    await page.keyboard.press('3'); // the Sandwich view: a table of every function
    await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), {timeout: 30000});
    await new Promise(r => setTimeout(r, 300));
    // The table's text: "TOTAL (P%)", "\tSELF (P%)", "\tNAME" per row.
    const text = await page.evaluate(() => document.body.innerText);
    const lines = text.slice(text.indexOf('Symbol Name\n') + 12).split('\n');
    const rows = [];
    for (let l = 0; l + 2 < lines.length && lines[l]; l += 3) {
      rows.push({total: lines[l].replace(/ \(.*\)$/, ''), self: lines[l + 1].trim().replace(/ \(.*\)$/, ''),
                 name: lines[l + 2].replace(/^\t/, '')});
    }
    await page.screenshot({path: path.join(outDir, `${name}.png`)});
    process.stdout.write(JSON.stringify({file, title: await page.title(), messages, rows}) + '\n');
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
