// Kairos dashboard: a small single-page view over the /v1 API.
//
// Everything shown comes from the API (GET /v1/...), every action goes
// through it (with If-Match), and every value from the store reaches the
// page as text: elements are built with createElement / textContent /
// setAttribute, never innerHTML. No framework, no build step; the page's
// Content-Security-Policy allows only this file and app.css.
'use strict';

(() => {
  const state = { csrf: '', authRequired: false, timer: null, etag: '', job: null };
  const $ = (id) => document.getElementById(id);
  const SVG = 'http://www.w3.org/2000/svg';

  // ---- DOM helpers (text only) ---------------------------------------------

  function build(e, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  const el = (tag, attrs, ...kids) => build(document.createElement(tag), attrs, kids);
  const sv = (tag, attrs, ...kids) => build(document.createElementNS(SVG, tag), attrs, kids);

  function fmtTime(t) {
    if (!t) return '—';
    return String(t).replace('T', ' ').replace(/\.\d+(?=Z|[+-]\d\d:\d\d$)/, '');
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) return '—';
    if (ms < 1000) return `${Math.round(ms)}ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)}s`;
    return `${Math.floor(ms / 60000)}m${Math.round((ms % 60000) / 1000)}s`;
  }
  const hhmm = (d) => d.toISOString().slice(11, 16);

  function banner(text, ok) {
    const b = $('banner');
    b.textContent = text || '';
    b.hidden = !text;
    b.className = ok ? 'ok' : '';
  }

  function pill(text, cls) { return el('span', { class: `pill ${cls}` }, text); }

  // ---- The API -------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const e = body && body.error ? body.error : {};
      super(e.message || `HTTP ${status}`);
      this.status = status;
      this.code = e.code || '';
    }
  }

  async function api(method, path, opts = {}) {
    const headers = { Accept: 'application/json' };
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    if (opts.ifMatch) headers['If-Match'] = opts.ifMatch;
    if (method !== 'GET' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
    const res = await fetch(path, {
      method, headers, credentials: 'same-origin', cache: 'no-store',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (res.status === 401 && !opts.noLogin) {
      showLogin('Your session ended; log in again.');
      throw new ApiError(401, body);
    }
    if (!res.ok && !opts.allowError) throw new ApiError(res.status, body);
    return { status: res.status, body, etag: res.headers.get('ETag') };
  }

  const jobPath = (id) => `/v1/jobs/${encodeURIComponent(id)}`;
  const jobHref = (id) => `#/job/${encodeURIComponent(id)}`;

  async function allJobs() {
    const jobs = [];
    let token = '';
    for (let i = 0; i < 50; i++) {
      const p = new URLSearchParams({ page_size: '1000' });
      if (token) p.set('page_token', token);
      const r = (await api('GET', `/v1/jobs?${p}`)).body;
      jobs.push(...r.jobs);
      token = r.next_page_token || '';
      if (!token) break;
    }
    return jobs;
  }

  // The newest runs of a job (oldest first within), at most `n`, looking
  // back from `since` and further when there are none.
  async function latestRuns(id, n, since) {
    for (const back of [since, Date.now() - 30 * 86400e3, 0]) {
      let from = new Date(back).toISOString();
      let runs = [];
      for (let i = 0; i < 10; i++) {
        const p = new URLSearchParams({ limit: '1000', from });
        const r = (await api('GET', `${jobPath(id)}/runs?${p}`)).body;
        runs = runs.concat(r.runs).slice(-n);
        if (!r.more || r.runs.length === 0) break;
        const last = r.runs[r.runs.length - 1].nominal;
        from = new Date(Date.parse(last) + 1).toISOString();
      }
      if (runs.length > 0 || back === 0) return runs;
    }
    return [];
  }

  function jobState(j) {
    const s = j.status || {};
    if (s.state === 'cancelled') return 'cancelled';
    return s.paused ? 'paused' : 'active';
  }

  // ---- Login ---------------------------------------------------------------

  function showLogin(message) {
    clearInterval(state.timer);
    $('logout').hidden = true;
    const input = el('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'current-password', required: true });
    const form = el('form', { class: 'card login', id: 'login-form' },
      el('h1', {}, 'Log in to Kairos'),
      el('p', { class: 'muted' }, 'This server requires a token (one of its --auth-token-file).'),
      el('label', {}, 'Token', input),
      el('button', { type: 'submit', class: 'primary', id: 'login' }, 'Log in'),
      el('p', { id: 'login-error', role: 'alert' }, message || ''));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const res = await fetch('/ui/login', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: input.value }),
      });
      if (!res.ok) {
        let why = `HTTP ${res.status}`;
        try { why = (await res.json()).error.message; } catch (e) { /* keep the status */ }
        $('login-error').textContent = res.status === 401 ? 'Wrong token.' : `Login failed: ${why}.`;
        return;
      }
      const body = await res.json();
      state.csrf = body.csrf || '';
      $('logout').hidden = false;
      route();
    });
    $('main').replaceChildren(form);
    input.focus();
  }

  async function logout() {
    await api('POST', '/ui/logout', { noLogin: true, allowError: true });
    state.csrf = '';
    showLogin('Logged out.');
  }

  // ---- Overview ------------------------------------------------------------

  function stat(id, label, n) {
    return el('div', { class: 'stat' }, el('span', { class: 'n', id }, n), el('span', { class: 'muted' }, label));
  }

  function runsChart(minutes) {
    const W = 720, H = 180, L = 34, B = 20, T = 8;
    const n = minutes.length;
    const bw = (W - L) / Math.max(n, 1);
    let max = 1;
    for (const m of minutes) max = Math.max(max, m.succeeded + m.failed + m.retried);
    const y = (v) => (H - B) - (v / max) * (H - B - T);
    const s = sv('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'runs per minute, last hour', id: 'runs-chart' },
      sv('defs', {}, sv('pattern', { id: 'hatch', width: 4, height: 4, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
        sv('rect', { width: 4, height: 4, fill: '#f3c6c2' }), sv('line', { x1: 0, y1: 0, x2: 0, y2: 4, stroke: '#b3261e', 'stroke-width': 2 }))),
      sv('line', { class: 'axis', x1: L, y1: H - B, x2: W, y2: H - B }),
      sv('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B }),
      sv('text', { x: 2, y: T + 8 }, String(max)), sv('text', { x: 2, y: H - B }, '0'));
    minutes.forEach((m, i) => {
      const x = L + i * bw;
      const g = sv('g', {}, sv('title', {}, `${hhmm(new Date(m.start))} UTC: ${m.succeeded} succeeded, ${m.failed} failed, ${m.retried} retried`));
      let base = 0;
      for (const [k, attrs] of [['succeeded', { class: 'bar-succeeded' }], ['failed', { fill: 'url(#hatch)' }], ['retried', { class: 'bar-retried' }]]) {
        const v = m[k];
        if (!v) continue;
        g.append(sv('rect', Object.assign({ x: x + 1, width: Math.max(bw - 2, 1), y: y(base + v), height: y(base) - y(base + v) }, attrs)));
        base += v;
      }
      // An invisible full-height target so every minute has a tooltip.
      g.append(sv('rect', { x, width: bw, y: T, height: H - B - T, fill: 'transparent' }));
      s.append(g);
      if (i % 15 === 0 || i === n - 1)
        s.append(sv('text', { x: i === n - 1 ? W : x, y: H - 5, 'text-anchor': i === n - 1 ? 'end' : 'start' },
          i === n - 1 ? 'now' : `${hhmm(new Date(m.start))}`));
    });
    const tot = { succeeded: 0, failed: 0, retried: 0 };
    for (const m of minutes) for (const k of Object.keys(tot)) tot[k] += m[k];
    return [s,
      el('div', { class: 'legend' },
        el('span', {}, legendBox('bar-succeeded'), 'succeeded (solid)'),
        el('span', {}, legendBox(null, 'url(#hatch)'), 'failed (hatched)'),
        el('span', {}, legendBox('bar-retried'), 'retried (top)')),
      el('p', { id: 'runs-total' }, `Last hour: ${tot.succeeded} succeeded, ${tot.failed} failed, ${tot.retried} retried.`)];
  }

  function legendBox(cls, fill) {
    return sv('svg', { viewBox: '0 0 10 10' }, sv('rect', { width: 10, height: 10, class: cls, fill }));
  }

  function latenessCard(l) {
    const kids = [el('h2', {}, 'Firing lateness (last hour)'),
      el('div', { class: 'stats' }, stat('late-p50', 'p50', l.p50 || '—'), stat('late-p90', 'p90', l.p90 || '—'),
        stat('late-p99', 'p99', l.p99 || '—'), stat('late-max', 'max', l.max || '—'))];
    const W = 360, H = 90;
    const bs = l.buckets.filter((b) => b.count > 0);
    if (bs.length) {
      const max = Math.max(...bs.map((b) => b.count));
      const bw = W / bs.length;
      const s = sv('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'lateness histogram' });
      bs.forEach((b, i) => {
        const h = (b.count / max) * (H - 30);
        s.append(sv('g', {}, sv('title', {}, `≤ ${b.le || '∞'}: ${b.count}`),
          sv('rect', { class: 'bar-succeeded', x: i * bw + 2, y: H - 18 - h, width: bw - 4, height: h }),
          sv('text', { x: i * bw + 2, y: H - 4 }, `≤${b.le || '∞'}`),
          sv('text', { x: i * bw + 2, y: H - 20 - h }, String(b.count))));
      });
      kids.push(s);
    }
    kids.push(el('p', { class: 'muted' }, `${l.count} scheduled dispatches; a percentile is the upper bound of its histogram bucket.`));
    return kids;
  }

  function clusterCard(c, ready) {
    const rows = c.shards.map((s) => el('tr', {},
      el('td', {}, s.shard), el('td', {}, s.leader === null ? el('em', {}, 'none') : s.leader),
      el('td', {}, s.epoch === undefined ? '—' : s.epoch), el('td', {}, fmtTime(s.lease_expiry)),
      el('td', {}, s.expires_in || '—')));
    const n = c.node;
    return [el('h2', {}, 'Cluster'),
      el('p', { id: 'store-health' }, ready.ready ? pill('ready', 's-active') : pill('not ready', 's-cancelled'), ' ',
        ready.ready ? 'store open, clock sane, every shard led' : (ready.reason || ''),
        n.degraded ? ` — degraded: ${n.degraded_reason || ''}` : ''),
      el('p', { class: 'muted' }, `This node: ${n.id}; leads shards [${n.leads.join(', ')}]; clock ${n.clock_sane ? 'agrees with' : 'DISAGREES with'} the store's (${fmtTime(c.store_now)}).`),
      el('table', { id: 'shards' }, el('thead', {}, el('tr', {}, ['Shard', 'Leader', 'Epoch', 'Lease expiry', 'Expires in'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows))];
  }

  async function overviewPage() {
    const cards = {
      jobs: el('section', { class: 'card', id: 'ov-jobs' }, el('h2', {}, 'Jobs')),
      runs: el('section', { class: 'card wide', id: 'ov-runs' }, el('h2', {}, 'Runs per minute (last hour)')),
      late: el('section', { class: 'card', id: 'ov-late' }),
      workers: el('section', { class: 'card', id: 'ov-workers' }),
      cluster: el('section', { class: 'card wide', id: 'ov-cluster' }),
    };
    $('main').replaceChildren(el('h1', {}, 'Overview'), el('div', { class: 'grid' }, Object.values(cards)));
    const refresh = async () => {
      try {
        const [jobs, cluster, stats, ready] = await Promise.all([
          allJobs(), api('GET', '/v1/cluster'), api('GET', '/v1/stats'),
          api('GET', '/readyz', { allowError: true })]);
        const now = Date.parse(cluster.body.store_now);
        const count = { active: 0, paused: 0, cancelled: 0, due: 0 };
        for (const j of jobs) {
          const s = jobState(j);
          count[s]++;
          if (s === 'active' && j.status.next_due_at && Date.parse(j.status.next_due_at) <= now) count.due++;
        }
        cards.jobs.replaceChildren(el('h2', {}, 'Jobs'), el('div', { class: 'stats' },
          stat('count-active', 'active', count.active), stat('count-paused', 'paused', count.paused),
          stat('count-cancelled', 'cancelled', count.cancelled), stat('count-due', 'due now (backlog)', count.due)),
          el('p', {}, el('a', { href: '#/jobs' }, 'All jobs →')));
        cards.runs.replaceChildren(el('h2', {}, 'Runs per minute (last hour)'), ...runsChart(stats.body.minutes));
        cards.late.replaceChildren(...latenessCard(stats.body.lateness));
        const ws = stats.body.workers;
        cards.workers.replaceChildren(el('h2', {}, 'Workers (active in the last 5 minutes)'),
          el('p', {}, el('span', { class: 'n', id: 'count-workers' }, ws.length), ' seen'),
          el('ul', {}, ws.map((w) => el('li', {}, el('code', {}, w.id), ' ', el('span', { class: 'muted' }, fmtTime(w.last_seen))))));
        cards.cluster.replaceChildren(...clusterCard(cluster.body, ready.body || {}));
        $('refreshed').textContent = `updated ${new Date().toISOString().slice(11, 19)}Z`;
      } catch (e) {
        if (e.status !== 401) banner(`Refresh failed: ${e.message}`);
      }
    };
    await refresh();
    state.timer = setInterval(refresh, 5000);
  }

  // ---- Jobs list -----------------------------------------------------------

  async function fetchJobs(q, token) {
    const want = 25;
    const jobs = [];
    let next = token || '';
    for (let i = 0; i < 20; i++) {
      const p = new URLSearchParams();
      if (q.namespace) p.set('namespace', q.namespace);
      if (q.selector) p.set('selector', q.selector);
      if (q.state === 'active') { p.set('state', 'active'); p.set('paused', 'false'); }
      if (q.state === 'paused') { p.set('state', 'active'); p.set('paused', 'true'); }
      if (q.state === 'cancelled') p.set('state', 'cancelled');
      p.set('page_size', q.search ? '500' : String(want));
      if (next) p.set('page_token', next);
      const r = (await api('GET', `/v1/jobs?${p}`)).body;
      const needle = (q.search || '').toLowerCase();
      jobs.push(...r.jobs.filter((j) => !needle || j.id.toLowerCase().includes(needle)));
      next = r.next_page_token || '';
      if (!next || jobs.length >= want) break;
    }
    return { jobs, next };
  }

  async function jobsPage(params) {
    const q = {
      namespace: params.get('namespace') || '', selector: params.get('selector') || '',
      state: params.get('state') || '', search: params.get('search') || '',
      token: params.get('token') || '',
    };
    const input = (name, label, ph) => el('label', {}, label, el('input', { name, id: `f-${name}`, value: q[name], placeholder: ph }));
    const select = el('select', { name: 'state', id: 'f-state' },
      ['', 'active', 'paused', 'cancelled'].map((s) => el('option', { value: s, selected: q.state === s }, s || 'any')));
    const form = el('form', { class: 'filters', id: 'filters' },
      input('search', 'Id contains', 'nightly'), input('namespace', 'Namespace', 'default'),
      input('selector', 'Labels', 'team=data,tier=1'), el('label', {}, 'State', select),
      el('button', { type: 'submit', class: 'primary', id: 'apply' }, 'Apply'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
      location.hash = `#/jobs?${p}`;
    });
    const tbody = el('tbody', {});
    const pager = el('p', {});
    $('main').replaceChildren(el('h1', {}, 'Jobs'), form,
      el('div', { class: 'card' }, el('table', { class: 'jobs', id: 'jobs' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Id'), el('th', { class: 'hide-narrow' }, 'Namespace'),
          el('th', { class: 'hide-narrow' }, 'Labels'), el('th', {}, 'State'), el('th', { class: 'hide-narrow' }, 'Schedule'),
          el('th', {}, 'Next fire'), el('th', {}, 'Last outcome'))), tbody), pager));
    let page;
    try { page = await fetchJobs(q, q.token); } catch (e) { if (e.status !== 401) banner(e.message); return; }
    if (page.jobs.length === 0) tbody.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No jobs match.')));
    for (const j of page.jobs) {
      const s = jobState(j);
      const words = el('td', { class: 'hide-narrow' }, '…');
      const nextFire = el('td', {}, fmtTime(j.status.next_due_at));
      const last = el('td', {}, '…');
      tbody.append(el('tr', { 'data-id': j.id },
        el('td', { class: 'id' }, el('a', { href: jobHref(j.id) }, j.id)),
        el('td', { class: 'hide-narrow' }, j.namespace),
        el('td', { class: 'hide-narrow' }, Object.entries(j.labels || {}).map(([k, v]) => el('code', {}, `${k}=${v} `))),
        el('td', {}, pill(s, `s-${s}`)), words, nextFire, last));
      api('GET', `${jobPath(j.id)}/next?count=1`).then((r) => {
        words.textContent = r.body.description;
        if (r.body.fires.length && s === 'active') nextFire.textContent = fmtTime(r.body.fires[0].at);
        if (s !== 'active') nextFire.textContent = '—';
      }).catch(() => { words.textContent = '?'; });
      latestRuns(j.id, 20, Date.now() - 3600e3).then((runs) => {
        // The newest run that ended, else the newest one.
        const ended = runs.filter((x) => x.outcome);
        const r = ended.length ? ended[ended.length - 1] : runs[runs.length - 1];
        const o = r ? (r.outcome || r.state) : null;
        last.replaceChildren(o ? pill(o, `o-${o}`) : '—', r ? ` ${fmtTime(r.finished_at || r.due_at)}` : '');
      }).catch(() => { last.textContent = '?'; });
    }
    if (page.next) {
      const p = new URLSearchParams(params);
      p.set('token', page.next);
      pager.append(el('a', { href: `#/jobs?${p}`, id: 'next-page' }, 'Next page →'));
    }
    if (q.token) {
      const p = new URLSearchParams(params);
      p.delete('token');
      pager.prepend(el('a', { href: `#/jobs?${p}`, id: 'first-page' }, '← First page'), ' ');
    }
  }

  // ---- Job detail ----------------------------------------------------------

  const OUTCOMES = {
    fired: { shape: 'circle', label: 'fired' },
    late: { shape: 'triangle', label: 'late' },
    moved_dst: { shape: 'diamond', label: 'moved by DST' },
    coalesced: { shape: 'square', label: 'coalesced' },
    skipped_misfire: { shape: 'cross', label: 'skipped: misfire' },
    skipped_overlap: { shape: 'bar', label: 'skipped: overlap' },
    paused: { shape: 'ring', label: 'paused' },
    cancelled: { shape: 'x', label: 'cancelled' },
    manual: { shape: 'star', label: 'manual trigger' },
  };

  function shape(kind, x, y, r, cls) {
    const a = { class: `mark m-${cls}` };
    switch (kind) {
      case 'circle': return sv('circle', Object.assign(a, { cx: x, cy: y, r }));
      case 'ring': return sv('circle', Object.assign(a, { cx: x, cy: y, r, 'fill-opacity': 0.35 }));
      case 'square': return sv('rect', Object.assign(a, { x: x - r, y: y - r, width: 2 * r, height: 2 * r }));
      case 'triangle': return sv('path', Object.assign(a, { d: `M${x},${y - r}L${x + r},${y + r}L${x - r},${y + r}Z` }));
      case 'diamond': return sv('path', Object.assign(a, { d: `M${x},${y - r}L${x + r},${y}L${x},${y + r}L${x - r},${y}Z` }));
      case 'bar': return sv('rect', Object.assign(a, { x: x - r, y: y - r / 3, width: 2 * r, height: (2 * r) / 3 }));
      case 'star': return sv('path', Object.assign(a, { d: `M${x},${y - r}L${x + r / 3},${y - r / 3}L${x + r},${y}L${x + r / 3},${y + r / 3}L${x},${y + r}L${x - r / 3},${y + r / 3}L${x - r},${y}L${x - r / 3},${y - r / 3}Z` }));
      default: { // 'cross' is a plus; 'x' the same turned by 45 degrees
        const t = r / 3;
        const d = `M${x - t},${y - r}h${2 * t}v${r - t}h${r - t}v${2 * t}h${t - r}v${r - t}h${-2 * t}v${t - r}h${t - r}v${-2 * t}h${r - t}Z`;
        return sv('path', Object.assign(a, { d, transform: kind === 'x' ? `rotate(45 ${x} ${y})` : null }));
      }
    }
  }

  function describeRecord(o) {
    const info = OUTCOMES[o.outcome] || { label: o.outcome };
    const when = o.count > 1 ? `${fmtTime(o.nominal)} … ${fmtTime(o.through)} (${o.count} occurrences)` : fmtTime(o.nominal);
    const fallback = {
      fired: `ran on time (lateness ${o.lateness})`,
      late: `ran late, past the misfire threshold (lateness ${o.lateness})`,
      moved_dst: 'its local time did not exist (DST gap): fired at the transition',
      coalesced: `missed, folded into the run of ${fmtTime(o.run_nominal)} (misfire: run-once)`,
      skipped_misfire: `missed by ${o.lateness}, past the misfire threshold: skipped by the misfire policy`,
      skipped_overlap: 'the previous run was still going (overlap: skip)',
      paused: 'the job was paused then',
      cancelled: 'its run was withdrawn before a worker claimed it (cancel or reschedule)',
      manual: 'a manual trigger',
    };
    const why = o.detail || fallback[o.outcome] || '';
    return `${when}: ${info.label}${why ? ` — ${why}` : ''}`;
  }

  function timeline(occ, from, to) {
    const present = Object.keys(OUTCOMES).filter((k) => occ.some((o) => o.outcome === k));
    const W = 900, lane = 26, L = 130, top = 10;
    const H = top + Math.max(present.length, 1) * lane + 24;
    const x = (t) => L + ((Date.parse(t) - from) / (to - from)) * (W - L - 10);
    const detail = el('div', { class: 'detail-box', id: 'occ-detail', 'aria-live': 'polite' }, 'Click a mark for its reason.');
    const s = sv('svg', { viewBox: `0 0 ${W} ${H}`, id: 'timeline', role: 'img', 'aria-label': 'occurrence timeline' });
    present.forEach((k, i) => {
      const y = top + i * lane + lane / 2;
      s.append(sv('line', { class: 'axis', x1: L, y1: y, x2: W - 10, y2: y }), sv('text', { x: 2, y: y + 4 }, OUTCOMES[k].label));
    });
    for (const frac of [0, 0.5, 1]) {
      const t = new Date(from + frac * (to - from));
      s.append(sv('text', { x: L + frac * (W - L - 10), y: H - 6, 'text-anchor': ['start', 'middle', 'end'][frac * 2] },
        `${t.toISOString().slice(0, 16).replace('T', ' ')}Z`));
    }
    for (const o of occ) {
      const lanei = present.indexOf(o.outcome);
      if (lanei < 0) continue;
      const y = top + lanei * lane + lane / 2;
      const text = describeRecord(o);
      const g = sv('g', { tabindex: 0, class: 'occ', 'data-outcome': o.outcome }, sv('title', {}, text));
      if (o.count > 1) g.append(sv('line', { x1: Math.max(x(o.nominal), L), x2: Math.min(x(o.through), W - 10), y1: y, y2: y, stroke: '#1d232b', 'stroke-width': 3 }));
      g.append(shape(OUTCOMES[o.outcome].shape, Math.max(x(o.nominal), L), y, 6, o.outcome));
      const show = () => {
        for (const m of s.querySelectorAll('.selected')) m.classList.remove('selected');
        g.lastElementChild.classList.add('selected');
        detail.textContent = text;
      };
      g.addEventListener('click', show);
      g.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') show(); });
      s.append(g);
    }
    const legend = el('div', { class: 'legend' }, Object.entries(OUTCOMES).map(([k, v]) =>
      el('span', {}, sv('svg', { viewBox: '0 0 16 16' }, shape(v.shape, 8, 8, 6, k)), v.label)));
    return [s, legend, detail];
  }

  function specList(j) {
    const rows = [];
    const add = (k, v) => { if (v !== undefined && v !== null && v !== '') rows.push(el('dt', {}, k), el('dd', {}, typeof v === 'object' ? JSON.stringify(v) : String(v))); };
    const sc = j.schedule || {};
    add('namespace', j.namespace);
    add('labels', Object.entries(j.labels || {}).map(([k, v]) => `${k}=${v}`).join(', '));
    for (const k of ['cron', 'zone', 'dst_gap', 'dst_fold', 'at', 'every', 'start', 'end', 'jitter']) add(`schedule.${k}`, sc[k]);
    if (j.command) { add('command.argv', (j.command.argv || []).join(' ')); add('command.env', j.command.env); add('command.working_dir', j.command.working_dir); }
    if (j.http) { add('http', `${j.http.method || 'GET'} ${j.http.url}`); add('http.headers', j.http.headers); }
    for (const [k, v] of Object.entries(j.policy || {})) add(`policy.${k}`, v);
    return el('dl', { class: 'spec', id: 'spec' }, rows);
  }

  function runsTable(runs) {
    if (!runs.length) return el('p', { class: 'muted' }, 'No runs in this range.');
    const rows = [];
    for (const r of runs.slice().reverse()) {
      const o = r.outcome || r.state;
      const attempts = r.attempts || [];
      rows.push(el('tr', {},
        el('td', {}, fmtTime(r.nominal)), el('td', {}, r.kind), el('td', {}, pill(o, `o-${o}`)),
        el('td', {}, r.attempt), el('td', {}, r.lateness),
        el('td', {}, attempts.map((a) => el('div', {},
          `#${a.attempt} token ${a.token} on ${a.worker || '?'}: ${a.end}`,
          a.finished_at && a.claimed_at ? ` in ${fmtMs(Date.parse(a.finished_at) - Date.parse(a.claimed_at))}` : '',
          a.exit_code !== undefined && a.end !== 'running' ? ` (exit ${a.exit_code})` : '',
          a.output ? el('details', {}, el('summary', {}, 'output'), el('pre', {}, a.output)) : null))),
        el('td', {}, r.detail || '')));
    }
    return el('table', { id: 'runs' }, el('thead', {}, el('tr', {}, ['Nominal', 'Kind', 'Outcome', 'Attempt', 'Lateness', 'Attempts (token, worker, duration, output)', 'Detail'].map((h) => el('th', {}, h)))), el('tbody', {}, rows));
  }

  async function act(id, what) {
    const verbs = { pause: 'Pause', resume: 'Resume', trigger: 'Trigger a run of', cancel: 'Cancel' };
    const ok = await confirmDialog(`${verbs[what]} job “${id}”?${what === 'cancel' ? ' It will fire no more.' : ''}`);
    if (!ok) return;
    try {
      if (what === 'cancel') await api('DELETE', jobPath(id), { ifMatch: state.etag });
      else if (what === 'trigger') await api('POST', `${jobPath(id)}:trigger`, { body: {} });
      else await api('POST', `${jobPath(id)}:${what}`, { ifMatch: state.etag });
      banner(`${verbs[what].split(' ')[0]}: done.`, true);
    } catch (e) {
      if (e.status === 412) banner('Not done: the job was changed since this page was loaded (its generation moved past ' + state.etag + '). The page now shows the current job; check it and try again.');
      else if (e.status !== 401) banner(`Failed: ${e.message}`);
    }
    await jobPage(id, true);
  }

  function confirmDialog(text) {
    return new Promise((resolve) => {
      const d = $('confirm');
      $('confirm-text').textContent = text;
      d.returnValue = '';
      d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
      d.showModal();
    });
  }

  const RANGES = { '15m': 900e3, '1h': 3600e3, '6h': 6 * 3600e3, '24h': 86400e3, '7d': 7 * 86400e3 };

  async function jobPage(id, keepBanner) {
    if (!keepBanner) banner('');
    const params = new URLSearchParams((location.hash.split('?')[1]) || '');
    const range = RANGES[params.get('range')] ? params.get('range') : '24h';
    let job;
    try { job = await api('GET', jobPath(id)); } catch (e) {
      if (e.status !== 401) $('main').replaceChildren(el('h1', {}, id), el('p', {}, e.message));
      return;
    }
    const j = job.body;
    state.job = j;
    state.etag = job.etag;
    const s = jobState(j);
    const to = Date.now() + 60e3, from = to - RANGES[range];
    const [next, occ, runs] = await Promise.all([
      api('GET', `${jobPath(id)}/next?count=10`).then((r) => r.body).catch(() => ({ description: '?', fires: [], explain: [] })),
      api('GET', `${jobPath(id)}/occurrences?${new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: '1000' })}`).then((r) => r.body.occurrences),
      latestRuns(id, 20, from)]);
    const button = (what, label, cls) => el('button', { type: 'button', id: `act-${what}`, class: cls, onclick: () => act(id, what) }, label);
    const actions = el('div', { class: 'actions' },
      s === 'cancelled' ? null : (j.status.paused ? button('resume', 'Resume', 'primary') : button('pause', 'Pause')),
      s === 'cancelled' ? null : button('trigger', 'Trigger now'),
      s === 'cancelled' ? null : button('cancel', 'Cancel job', 'danger'),
      el('button', { type: 'button', id: 'reload', onclick: () => jobPage(id) }, 'Reload'));
    const rangeLinks = el('p', {}, 'Range: ', Object.keys(RANGES).map((r) => [r === range ? el('strong', {}, r) : el('a', { href: `${jobHref(id)}?range=${r}` }, r), ' ']));
    const fires = next.fires.length
      ? el('table', { id: 'next-fires' }, el('thead', {}, el('tr', {}, ['At (UTC)', 'Local', 'DST'].map((h) => el('th', {}, h)))),
        el('tbody', {}, next.fires.map((f) => el('tr', {}, el('td', {}, fmtTime(f.at)), el('td', {}, f.local),
          el('td', {}, f.note ? el('span', { class: 'dst' }, `⚠ ${f.note}`) : '')))))
      : el('p', { class: 'muted' }, 'No further fires.');
    const unusual = occ.filter((o) => o.outcome !== 'fired');
    $('main').replaceChildren(
      el('h1', { id: 'job-id' }, j.id),
      el('p', {}, pill(s, `s-${s}`), ` generation ${j.status.generation} · incarnation ${j.status.incarnation} · `, el('span', { id: 'job-words' }, next.description)),
      actions,
      el('div', { class: 'grid' },
        el('section', { class: 'card wide' }, el('h2', {}, 'Occurrence timeline'), rangeLinks, timeline(occ, from, to),
          el('h2', {}, 'Occurrences that did not simply fire'),
          unusual.length ? el('ul', { id: 'occ-list' }, unusual.map((o) => el('li', { 'data-outcome': o.outcome }, describeRecord(o))))
            : el('p', { class: 'muted', id: 'occ-list' }, 'None in this range.')),
        el('section', { class: 'card' }, el('h2', {}, 'Next 10 fires'), fires,
          next.explain.length ? el('ul', { class: 'muted' }, next.explain.map((l) => el('li', { class: l.startsWith('warning') ? 'dst' : '' }, l))) : null),
        el('section', { class: 'card' }, el('h2', {}, 'Spec'), specList(j),
          el('details', {}, el('summary', {}, 'JSON'), el('pre', {}, JSON.stringify(j, null, 2)))),
        el('section', { class: 'card wide' }, el('h2', {}, 'Runs (newest first)'), runsTable(runs))));
  }

  // ---- Routing -------------------------------------------------------------

  function route() {
    clearInterval(state.timer);
    $('refreshed').textContent = '';
    const h = location.hash || '#/';
    for (const a of document.querySelectorAll('.top nav a')) a.classList.remove('current');
    if (h.startsWith('#/job/')) {
      const id = decodeURIComponent(h.slice(6).split('?')[0]);
      return jobPage(id);
    }
    banner('');
    if (h.startsWith('#/jobs')) {
      $('nav-jobs').classList.add('current');
      return jobsPage(new URLSearchParams(h.split('?')[1] || ''));
    }
    $('nav-overview').classList.add('current');
    return overviewPage();
  }

  async function boot() {
    $('logout').addEventListener('click', logout);
    window.addEventListener('hashchange', () => { if (!$('login-form')) route(); });
    const res = await fetch('/ui/session', { credentials: 'same-origin', cache: 'no-store' });
    const s = await res.json();
    state.authRequired = s.auth_required;
    state.csrf = s.csrf || '';
    if (!s.authenticated) return showLogin('');
    $('logout').hidden = !s.auth_required;
    route();
  }

  document.addEventListener('DOMContentLoaded', boot);
})();
