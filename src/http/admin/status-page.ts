/**
 * The operator's status page (GET / on the admin listener): one HTML document, its stylesheet
 * (/status.css) and its script (/status.js), served as they are: no front-end build, no
 * dependency. The script reads /status.json every second and redraws the panels in place.
 *
 * Everything shown is set with textContent or as an attribute value, never parsed as HTML:
 * upstream error texts come from outside. The Content-Security-Policy (status-endpoints.ts)
 * allows scripts and styles from this origin only, so neither inline handlers nor injected
 * markup could run anyway.
 */

export const STATUS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stacks-cache-proxy status</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="status.css">
<script src="status.js" defer></script>
</head>
<body>
<header>
  <h1>stacks-cache-proxy</h1>
  <span id="connection" class="badge unknown">connecting…</span>
  <span id="generated" class="muted"></span>
  <span id="workers" class="muted"></span>
</header>
<main>
  <section class="card" id="chain-panel">
    <h2>Chain tip</h2>
    <div class="big"><span id="tip-height">–</span></div>
    <dl>
      <dt>Index block hash</dt><dd class="mono" id="tip-hash">–</dd>
      <dt>Burn tip</dt><dd id="tip-burn">–</dd>
      <dt>Tip block anchored at</dt><dd id="tip-anchor">–</dd>
      <dt>Age</dt><dd id="tip-age">–</dd>
      <dt>Finality watermark</dt><dd id="finality">–</dd>
      <dt>Last tip poll error</dt><dd id="poll-error" class="muted">none</dd>
    </dl>
  </section>
  <section class="card" id="traffic-panel">
    <h2>Traffic</h2>
    <div class="stats">
      <div><span class="big" id="requests-rate">–</span><span class="label">requests/s</span></div>
      <div><span class="big" id="upstream-rate">–</span><span class="label">upstream requests/s</span></div>
      <div><span class="big" id="hit-ratio">–</span><span class="label">hit ratio</span></div>
    </div>
    <p class="muted" id="traffic-totals"></p>
  </section>
  <section class="card" id="tiers-panel">
    <h2>Cache tiers</h2>
    <div id="tiers"></div>
  </section>
  <section class="card wide" id="upstreams-panel">
    <h2>Upstreams</h2>
    <table>
      <thead><tr><th>Upstream</th><th>State</th><th>Breaker</th><th>Tip</th><th>Lag</th><th>In flight / queued</th><th>Push or poll</th><th>Last error</th></tr></thead>
      <tbody id="upstreams"></tbody>
    </table>
  </section>
  <section class="card" id="classes-panel">
    <h2>Hit ratio by freshness class</h2>
    <table>
      <thead><tr><th>Class</th><th>Ratio</th><th>Hit</th><th>Stale</th><th>Reval.</th><th>Miss</th><th>Uncached</th></tr></thead>
      <tbody id="classes"></tbody>
    </table>
  </section>
  <section class="card" id="routes-panel">
    <h2>Hit ratio by route family</h2>
    <table>
      <thead><tr><th>Route</th><th>Ratio</th><th>Hit</th><th>Stale</th><th>Reval.</th><th>Miss</th><th>Uncached</th></tr></thead>
      <tbody id="routes"></tbody>
    </table>
  </section>
  <section class="card" id="reorgs-panel">
    <h2>Recent reorgs</h2>
    <p class="muted" id="reorgs-summary"></p>
    <ul id="reorgs" class="events"></ul>
  </section>
  <section class="card" id="purges-panel">
    <h2>Recent purges</h2>
    <p class="muted" id="purges-summary"></p>
    <ul id="purges" class="events"></ul>
  </section>
  <section class="card" id="live-panel">
    <h2>Live chain</h2>
    <dl id="live"></dl>
  </section>
</main>
<footer class="muted">Refreshed every second from <a href="status.json">status.json</a>. Metrics: <a href="metrics">/metrics</a>.</footer>
</body>
</html>
`;

/** A dot in the accent colour: the tab's icon (without one the browser asks for /favicon.ico, a 404). */
export const STATUS_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6" fill="#5546ff"/></svg>
`;

export const STATUS_CSS = `:root {
  --bg: #f4f5f7; --card: #fff; --text: #1d2330; --muted: #6b7280; --line: #e3e6eb;
  --ok: #17803d; --warn: #b45309; --bad: #b91c1c; --accent: #5546ff;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #111418; --card: #1b1f26; --text: #e6e8eb; --muted: #9aa3af; --line: #2c323c; --ok: #4ade80; --warn: #fbbf24; --bad: #f87171; --accent: #a5a0ff; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
header { display: flex; align-items: center; gap: 12px; padding: 12px 20px; background: var(--card); border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 0 0 10px; }
main { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 14px; padding: 14px 20px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; min-width: 0; }
.wide { grid-column: 1 / -1; }
.big { font-size: 28px; font-weight: 600; font-variant-numeric: tabular-nums; }
.stats { display: flex; gap: 28px; flex-wrap: wrap; }
.stats > div { display: flex; flex-direction: column; }
.label, .muted { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 10px 0 0; }
dt { color: var(--muted); }
dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 5px 8px 5px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; font-size: 12px; }
td.error-text { max-width: 460px; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; border: 1px solid currentColor; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); } .unknown { color: var(--muted); }
.error-text { color: var(--bad); }
.recent-failures { margin-top: 6px; font-size: 12px; }
.recent-failures ul { margin: 2px 0 0; padding-left: 16px; }
.events { list-style: none; margin: 6px 0 0; padding: 0; max-height: 220px; overflow-y: auto; }
.events li { padding: 4px 0; border-bottom: 1px solid var(--line); }
.bar { height: 6px; background: var(--line); border-radius: 3px; overflow: hidden; margin: 4px 0 10px; }
.bar > span { display: block; height: 100%; background: var(--accent); }
.tier-name { font-weight: 600; }
footer { padding: 4px 20px 20px; }
a { color: var(--accent); }
`;

/**
 * What the page says of the tip block's anchor next to the burn tip (upstream-contract §5: the
 * burn tip runs ahead of the tip block's anchor whenever burn blocks come without a Stacks block,
 * which is no fault). Written once here: the unit tests call it, and STATUS_JS carries its source
 * (so it must stay self-contained plain JavaScript: no helper, no nested function).
 */
export function tipAnchorText(burnHeight: number, anchorBurnHeight: number | null | undefined): string {
  if (anchorBurnHeight === null || anchorBurnHeight === undefined) return 'unknown (not read yet)';
  const anchor = anchorBurnHeight.toLocaleString('en-US');
  const gap = burnHeight - anchorBurnHeight;
  if (gap === 0) return anchor + ' (the burn tip)';
  if (gap < 0) return anchor + ' (' + (-gap).toLocaleString('en-US') + ' above the burn tip last read)';
  return anchor + ' (' + gap.toLocaleString('en-US') + (gap === 1 ? ' burn block' : ' burn blocks') + ' without a Stacks block yet)';
}

/**
 * The page's script. Plain ES2019 for any current browser; kept short. It never assigns
 * innerHTML: every value goes through text nodes (`text`, `cell`) or `textContent`.
 */
export const STATUS_JS = `'use strict';
(function () {
  var REFRESH_MS = 1000;
  var TIMEOUT_MS = 3000;
  var byId = function (id) { return document.getElementById(id); };

  function setText(id, value) { byId(id).textContent = value; }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function replaceChildren(parent, children) {
    while (parent.firstChild) parent.removeChild(parent.firstChild);
    children.forEach(function (child) { parent.appendChild(child); });
  }
  function num(n) { return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'); }
  function rate(n) { return n === null || n === undefined ? '–' : (n >= 100 ? n.toFixed(0) : n.toFixed(1)); }
  function pct(r) { return r === null || r === undefined ? '–' : (r * 100).toFixed(1) + '%'; }
  function bytes(n) {
    if (n === null || n === undefined) return '–';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
  }
  function age(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    if (seconds < 60) return seconds.toFixed(seconds < 10 ? 1 : 0) + ' s';
    if (seconds < 3600) return (seconds / 60).toFixed(1) + ' min';
    return (seconds / 3600).toFixed(1) + ' h';
  }
  function badge(text, tone) { return el('span', 'badge ' + tone, text); }
  function row(cells) {
    var tr = el('tr');
    cells.forEach(function (c) { tr.appendChild(c instanceof Node ? wrapCell(c) : el('td', null, c)); });
    return tr;
  }
  function wrapCell(node) {
    if (node.tagName === 'TD') return node;
    var td = el('td');
    td.appendChild(node);
    return td;
  }

  ${tipAnchorText.toString()}

  function renderChain(chain) {
    var tip = chain.tip;
    setText('tip-height', tip ? num(tip.height) : 'not known yet');
    var hash = byId('tip-hash');
    hash.textContent = tip ? tip.indexBlockHash : '–';
    hash.title = tip && tip.blockHash ? 'block_hash ' + tip.blockHash : '';
    setText('tip-burn', tip ? num(tip.burnHeight) : '–');
    setText('tip-anchor', tip ? tipAnchorText(tip.burnHeight, tip.anchorBurnHeight) : '–');
    setText('tip-age', tip ? age(tip.ageSeconds) : '–');
    setText('finality', chain.finality ? 'Stacks ' + num(chain.finality.stacksHeight) + ' / burn ' + num(chain.finality.burnHeight) : 'not established yet');
    var poll = chain.lastPollError;
    setText('poll-error', poll ? poll.message + ' (' + age(poll.ageSeconds) + ' ago)' : 'none');
    byId('poll-error').className = poll ? 'error-text' : 'muted';
    var reorgs = chain.reorgs;
    setText('reorgs-summary', num(reorgs.total) + ' since start; ' + num(reorgs.purgedEntries) + ' suspect entries dropped');
    replaceChildren(byId('reorgs'), reorgs.recent.length === 0 ? [el('li', 'muted', 'none')] : reorgs.recent.map(function (r) {
      return el('li', null, age(r.ageSeconds) + ' ago: fork at ' + num(r.forkHeight) + ', tip ' + num(r.from.height) + ' → ' + num(r.to.height));
    }));
  }

  function renderTraffic(traffic, overall) {
    setText('requests-rate', rate(traffic.requestsPerSecond));
    setText('upstream-rate', rate(traffic.upstreamRequestsPerSecond));
    setText('hit-ratio', pct(overall.hitRatio));
    setText('traffic-totals', num(traffic.requests) + ' requests and ' + num(traffic.upstreamRequests) + ' upstream requests since start; rates over the last ' + traffic.rateWindowSeconds + ' s');
  }

  // What opened a breaker (or may yet): the failures in a row since the upstream last answered well.
  function recentFailures(failures) {
    var box = el('div', 'recent-failures');
    box.appendChild(el('div', 'muted', failures.length + (failures.length === 1 ? ' failure' : ' failures in a row') + ' since its last success, newest first:'));
    var list = el('ul');
    failures.forEach(function (f) {
      list.appendChild(el('li', null, f.kind + ' on ' + f.route + ', ' + age(f.ageSeconds) + ' ago: ' + f.message));
    });
    box.appendChild(list);
    return box;
  }

  // "push" or "polling: upgrade refused 404, next try in 2.0 min" (the push field of status-report.ts).
  function pushText(push, long) {
    if (push === null) return long ? 'not judged yet' : '–';
    if (push.mode === 'push') return long ? 'push (tip polled at the cross-check interval)' : 'push';
    var text = 'polling' + (long ? ' every poll interval' : '') + (push.reason ? ': ' + push.reason : '');
    return push.retryInSeconds === null ? text : text + ', next try in ' + age(push.retryInSeconds);
  }

  function renderUpstreams(upstreams) {
    replaceChildren(byId('upstreams'), upstreams.map(function (u) {
      var error = el('td', u.lastError ? 'error-text' : 'muted');
      error.textContent = u.lastError ? u.lastError.kind + ': ' + u.lastError.message + ' (' + u.lastError.route + ', ' + age(u.lastError.ageSeconds) + ' ago)' : 'none';
      if (u.recentFailures && u.recentFailures.length > 0) error.appendChild(recentFailures(u.recentFailures));
      var tr = row([
        el('span', 'mono', u.origin),
        badge(u.usable ? 'usable' : 'not used', u.usable ? 'ok' : 'bad'),
        badge(u.breaker, u.breaker === 'closed' ? 'ok' : u.breaker === 'open' ? 'bad' : 'warn'),
        num(u.tipHeight),
        u.lagBlocks === null ? '–' : num(u.lagBlocks) + ' blocks',
        num(u.inFlight) + ' / ' + num(u.queued),
        pushText(u.push, false),
        error,
      ]);
      tr.setAttribute('data-origin', u.origin);
      return tr;
    }));
  }

  function ratioRows(groups) {
    var names = Object.keys(groups);
    if (names.length === 0) return [row(['no requests yet'])];
    return names.map(function (name) {
      var g = groups[name];
      return row([name, pct(g.hitRatio), num(g.hit), num(g.stale), num(g.revalidated), num(g.miss), num(g.uncached)]);
    });
  }

  function tier(name, entries, used, bound, note) {
    var box = el('div');
    box.appendChild(el('div', 'tier-name', name));
    box.appendChild(el('div', null, num(entries) + ' entries, ' + bytes(used) + (bound ? ' of ' + bytes(bound) : '') + (note ? ' ' + note : '')));
    if (bound && used !== null) {
      var bar = el('div', 'bar');
      var fill = el('span');
      fill.style.width = Math.min(100, (used / bound) * 100).toFixed(1) + '%';
      bar.appendChild(fill);
      box.appendChild(bar);
    }
    return box;
  }

  function renderTiers(cache) {
    var children = [tier('Memory', cache.memory.entries, cache.memory.bytes, cache.memory.maxBytes, '')];
    var redis = cache.redis;
    if (redis === null) children.push(el('div', 'muted', 'Redis: not configured (memory only)'));
    else if (redis.error) children.push(el('div', 'error-text', 'Redis: ' + redis.error));
    else children.push(tier('Redis', redis.keys, redis.usedMemoryBytes, redis.maxBytes || null, redis.maxBytes ? '(maxmemory)' : '(no maxmemory set)'));
    replaceChildren(byId('tiers'), children);
  }

  function renderPurges(purges) {
    setText('purges-summary', num(purges.local) + ' asked here, ' + num(purges.fromPeers) + ' from peers since start');
    replaceChildren(byId('purges'), purges.recent.length === 0 ? [el('li', 'muted', 'none')] : purges.recent.map(function (p) {
      return el('li', null, age(p.ageSeconds) + ' ago: ' + p.kind + ' (' + p.origin + '), ' + num(p.removed.memory) + ' memory' + (p.removed.redis === null ? '' : ', ' + num(p.removed.redis) + ' Redis') + ' entries');
    }));
  }

  function renderLive(live, upstreams) {
    var items = [];
    function item(term, value) { items.push(el('dt', null, term)); items.push(el('dd', null, value)); }
    item('Push feed', live.pushFeed ? 'on' : 'off');
    if (live.pushFeed) {
      upstreams.forEach(function (u) {
        item(u.origin, pushText(u.push, true));
      });
    }
    item('WebSocket fan-out', live.fanout ? 'on' : 'off');
    if (live.fanoutClients) item('Fan-out clients', num(live.fanoutClients.rpc) + ' on /extended/v1/ws, ' + num(live.fanoutClients.socketIo) + ' on Socket.IO');
    replaceChildren(byId('live'), items);
  }

  function render(status) {
    renderChain(status.chain);
    renderTraffic(status.traffic, status.hitRatio.overall);
    renderUpstreams(status.upstreams);
    replaceChildren(byId('classes'), ratioRows(status.hitRatio.byClass));
    replaceChildren(byId('routes'), ratioRows(status.hitRatio.byRoute));
    renderTiers(status.cache);
    renderPurges(status.purges);
    renderLive(status.live, status.upstreams);
    setText('generated', 'as of ' + new Date(status.generatedAt).toLocaleTimeString());
    renderWorkers(status.workers);
  }

  // Worker mode only: the report is the workers' combined; say how many, and which did not answer.
  function renderWorkers(workers) {
    if (!workers) return;
    var missing = workers.filter(function (w) { return w.error !== null; });
    setText('workers', num(workers.length) + ' workers combined' + (missing.length === 0 ? '' : '; not answering: ' + missing.map(function (w) {
      return 'worker ' + w.id + ' (' + w.error + ')';
    }).join(', ')));
  }

  function connection(ok, text) {
    var node = byId('connection');
    node.className = 'badge ' + (ok ? 'ok' : 'bad');
    node.textContent = text;
  }

  function refresh() {
    var controller = new AbortController();
    var timer = setTimeout(function () { controller.abort(); }, TIMEOUT_MS);
    fetch('status.json', { cache: 'no-store', signal: controller.signal })
      .then(function (res) {
        if (!res.ok) throw new Error('status.json answered ' + res.status);
        return res.json();
      })
      .then(function (status) {
        render(status);
        connection(true, 'live');
      })
      .catch(function (error) {
        connection(false, 'not updating: ' + (error && error.message ? error.message : String(error)));
      })
      .then(function () {
        clearTimeout(timer);
        setTimeout(refresh, REFRESH_MS);
      });
  }

  refresh();
})();
`;
