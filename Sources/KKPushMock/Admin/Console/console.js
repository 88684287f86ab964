'use strict';
(function () {
  const TOKEN_KEY = 'kkpush-mock-admin-token';
  const $ = (id) => document.getElementById(id);
  let adminToken = sessionStorage.getItem(TOKEN_KEY) || '';
  let needsToken = false;
  let logFilterKey = null;
  let logNewest = 0;
  let historyToken = null;
  let ticking = false;
  let ticks = 0;

  // Builds an element; every child that is not a Node becomes a text node (never parsed as HTML).
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else if (k === 'data') for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
      else e.setAttribute(k, String(v));
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
    return e;
  }

  function message(text, kind) {
    const box = $('messages');
    const m = el('div', { class: 'message ' + (kind || '') }, text);
    box.prepend(m);
    while (box.children.length > 4) box.lastChild.remove();
    setTimeout(() => m.remove(), 8000);
  }

  function showAuth(text) {
    needsToken = true;
    $('auth').classList.remove('hidden');
    if (text) $('auth-message').textContent = text;
  }

  // One admin API call: JSON in and out, the admin token as a bearer token.
  async function api(method, path, body) {
    const headers = {};
    if (adminToken) headers['Authorization'] = 'Bearer ' + adminToken;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    let json = null;
    try { json = await response.json(); } catch (e) { json = null; }
    if (response.status === 401) {
      showAuth(adminToken
        ? 'The admin token entered is not this mock\u2019s. Enter the --admin-token (or KKPUSH_ADMIN_TOKEN) the mock was started with.'
        : 'This mock requires its admin token (--admin-token or KKPUSH_ADMIN_TOKEN). Enter it to use the console; it is kept in this tab only (sessionStorage).');
    }
    return { status: response.status, json };
  }

  function errorText(r) {
    const e = r.json && r.json.error;
    return e ? (e.message + (e.fix ? ' Fix: ' + e.fix : '')) : ('HTTP ' + r.status);
  }

  async function call(method, path, body, done) {
    try {
      const r = await api(method, path, body);
      if (r.status >= 200 && r.status < 300) {
        if (done) message(done, 'info');
        return r;
      }
      if (r.status !== 401) message(method + ' ' + path + ': ' + errorText(r));
      return null;
    } catch (e) {
      message(method + ' ' + path + ': ' + e);
      return null;
    }
  }

  const time = (ms) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  const shortToken = (t) => t.length > 16 ? t.slice(0, 12) + '\u2026' + t.slice(-4) : t;

  function tokenButton(token) {
    return el('button', { class: 'link', type: 'button', title: token, data: { token }, onclick: () => showHistory(token) }, shortToken(token));
  }

  // MARK: health and clock

  async function refreshHealth() {
    const r = await api('GET', '/health');
    if (r.status === 200 && r.json) {
      needsToken = false;
      $('auth').classList.add('hidden');
      $('health').textContent = 'up, ' + r.json.deliveries + ' deliveries';
      $('clock-now').textContent = time(r.json.now_ms);
      return true;
    }
    $('health').textContent = r.status === 401 ? 'admin token needed' : 'HTTP ' + r.status;
    return false;
  }

  // MARK: devices

  async function refreshDevices() {
    const r = await api('GET', '/devices');
    if (r.status !== 200 || !r.json) return;
    const body = $('devices-body');
    const list = $('device-tokens');
    body.replaceChildren();
    list.replaceChildren();
    for (const d of r.json.devices) {
      const gone = d.unregistered_at_ms != null;
      const state = gone ? (d.unregistered_reason || 'Unregistered') + ' since ' + time(d.unregistered_at_ms)
        : 'active, ' + (d.connectivity || 'online') + ', app ' + (d.app || 'foreground');
      const actions = el('td', {},
        el('button', { type: 'button', class: 'secondary', onclick: () => useDevice(d) }, 'Use'), ' ',
        el('button', { type: 'button', class: 'secondary', onclick: () => showHistory(d.token) }, 'History'), ' ');
      if (!gone) actions.append(el('button', { type: 'button', data: { unregister: d.token }, onclick: () => unregister(d.token) }, 'Unregister'));
      body.append(el('tr', { data: { token: d.token } },
        el('td', {}, tokenButton(d.token)), el('td', {}, d.environment), el('td', {}, d.topic || '(any)'),
        el('td', { class: gone ? 'state-unregistered' : '' }, state), actions));
      list.append(el('option', { value: d.token }));
    }
  }

  function useDevice(d) {
    $('send-token').value = d.token;
    $('send-environment').value = d.environment;
    if (d.topic) $('send-topic').value = d.topic;
    $('send-token').focus();
  }

  async function unregister(token) {
    if (await call('DELETE', '/devices/' + encodeURIComponent(token), undefined, 'Unregistered ' + shortToken(token) + ': pushes to it now get 410.')) refreshDevices();
  }

  // MARK: faults

  async function refreshFaults() {
    const r = await api('GET', '/faults');
    if (r.status !== 200 || !r.json) return;
    const body = $('faults-body');
    body.replaceChildren();
    for (const f of r.json.faults) {
      let detail = '';
      if (f.kind === 'respond') detail = f.status + ' ' + f.reason;
      else if (f.kind === 'delay') detail = f.delay_ms + ' ms';
      else if (f.kind === 'blackhole') detail = 'after ' + f.idle_ms + ' ms idle';
      else if (f.kind === 'goaway') detail = (f.reason || '') + ' after ' + (f.after_streams || 0) + ' streams';
      const scope = f.token ? 'token ' + shortToken(f.token) : f.topic ? 'topic ' + f.topic : 'every request';
      body.append(el('tr', { data: { fault: f.id } },
        el('td', {}, f.id), el('td', {}, f.kind), el('td', {}, detail), el('td', {}, scope),
        el('td', {}, f.count == null ? 'until removed' : f.count),
        el('td', {}, el('button', { type: 'button', class: 'secondary', onclick: () => removeFault(f.id) }, 'Remove'))));
    }
  }

  async function removeFault(id) {
    if (await call('DELETE', '/faults/' + encodeURIComponent(id), undefined, 'Fault ' + id + ' removed.')) refreshFaults();
  }

  async function addFault() {
    const kind = $('fault-kind').value;
    const fault = { kind };
    if (kind === 'respond') {
      fault.status = Number($('fault-status').value);
      if ($('fault-reason').value.trim()) fault.reason = $('fault-reason').value.trim();
    }
    if (kind === 'goaway' && $('fault-reason').value.trim()) fault.reason = $('fault-reason').value.trim();
    if (kind === 'delay') fault.delay_ms = Number($('fault-delay').value);
    if (kind === 'blackhole') fault.idle_ms = Number($('fault-delay').value);
    if ($('fault-count').value.trim()) fault.count = Number($('fault-count').value);
    if ($('fault-token').value.trim()) fault.token = $('fault-token').value.trim();
    else if ($('fault-topic').value.trim()) fault.topic = $('fault-topic').value.trim();
    if (await call('POST', '/faults', fault, 'Fault added: ' + kind + '.')) refreshFaults();
  }

  // MARK: send

  async function send() {
    const box = $('send-answer');
    const button = $('send-button');
    button.disabled = true;
    box.className = 'answer';
    box.replaceChildren(el('span', { class: 'muted' }, 'sending\u2026'));
    delete box.dataset.status;
    delete box.dataset.apnsId;
    try {
      const r = await api('POST', '/send', {
        environment: $('send-environment').value,
        token: $('send-token').value,
        topic: $('send-topic').value,
        push_type: $('send-push-type').value,
        priority: Number($('send-priority').value),
        collapse_id: $('send-collapse-id').value,
        payload: $('send-payload').value,
      });
      showAnswer(r);
      refreshLog();
      refreshDevices();
        refreshFaults();
    } catch (e) {
      box.className = 'answer failed';
      box.replaceChildren('The request failed: ' + e);
    } finally {
      button.disabled = false;
    }
  }

  function showAnswer(r) {
    const box = $('send-answer');
    const a = r.json || {};
    if (r.status !== 200) {
      box.className = 'answer failed';
      box.dataset.status = 'error';
      box.replaceChildren(el('div', { class: 'status' }, 'Not sent (admin API ' + r.status + ')'), el('div', {}, errorText(r)));
      return;
    }
    box.className = 'answer ' + a.status;
    box.dataset.status = a.http_status == null ? a.status : String(a.http_status);
    box.dataset.apnsId = a.apns_id || '';
    const head = a.status === 'accepted' ? a.http_status + ' accepted'
      : a.status === 'rejected' ? a.http_status + ' ' + a.reason
      : 'failed: ' + (a.reason || '');
    const dl = el('dl', {});
    const row = (k, v) => { if (v != null && v !== '') dl.append(el('dt', {}, k), el('dd', {}, v)); };
    row('environment', a.environment);
    row('apns-id', a.apns_id);
    row('apns-unique-id', a.apns_unique_id);
    row('timestamp', a.timestamp_ms != null ? time(a.timestamp_ms) : null);
    row('explanation', a.explanation);
    row('fix', a.fix);
    row('error', a.error);
    row('took', a.duration_ms + ' ms');
    box.replaceChildren(el('div', { class: 'status' }, head), dl);
  }

  // MARK: saved pushes

  async function refreshSaved() {
    const r = await api('GET', '/saved-pushes');
    if (r.status !== 200 || !r.json) return;
    const body = $('saved-body');
    body.replaceChildren();
    const list = r.json.saved_pushes;
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: '6' }, 'Nothing saved yet: fill in the form above, give it a name, Save the form.')));
    for (const p of list) {
      body.append(el('tr', { data: { saved: p.name } },
        el('td', {}, p.name), el('td', {}, p.topic), el('td', {}, p.push_type || 'alert'),
        el('td', {}, p.priority == null ? '' : p.priority), el('td', {}, el('pre', {}, p.payload)),
        el('td', {},
          el('button', { type: 'button', data: { replayDevice: p.name }, onclick: () => replay(p.name, false) }, 'Send to device'), ' ',
          el('button', { type: 'button', class: 'secondary', data: { replayChannel: p.name }, onclick: () => replay(p.name, true) }, 'Send to channel'), ' ',
          el('button', { type: 'button', class: 'secondary', onclick: () => removeSaved(p.name) }, 'Delete'))));
    }
    $('saved-count').textContent = '(' + list.length + ')';
  }

  async function savePush() {
    const push = {
      name: $('saved-name').value.trim(),
      topic: $('send-topic').value,
      push_type: $('send-push-type').value,
      priority: Number($('send-priority').value),
      payload: $('send-payload').value,
    };
    if ($('send-collapse-id').value) push.collapse_id = $('send-collapse-id').value;
    if (await call('POST', '/saved-pushes', push, 'Saved as ' + push.name + '.')) refreshSaved();
  }

  async function removeSaved(name) {
    if (await call('DELETE', '/saved-pushes/' + encodeURIComponent(name), undefined, 'Deleted ' + name + '.')) refreshSaved();
  }

  // Replays a saved push to the form's device token, or to the channel id typed beside the list.
  async function replay(name, toChannel) {
    const box = $('send-answer');
    box.className = 'answer';
    box.replaceChildren(el('span', { class: 'muted' }, 'sending ' + name + '\u2026'));
    delete box.dataset.status;
    delete box.dataset.apnsId;
    const body = { environment: $('send-environment').value };
    if (toChannel) body.channel_id = $('saved-channel').value.trim(); else body.token = $('send-token').value.trim();
    try {
      const r = await api('POST', '/saved-pushes/' + encodeURIComponent(name) + '/send', body);
      showAnswer(r);
      refreshLog();
    } catch (e) {
      box.className = 'answer failed';
      box.replaceChildren('The request failed: ' + e);
    }
  }

  // MARK: log

  function logQuery() {
    const p = new URLSearchParams({ limit: '200' });
    const add = (name, id) => { const v = $(id).value.trim(); if (v) p.set(name, v); };
    add('token', 'filter-token');
    add('apns_id', 'filter-apns-id');
    add('apns_unique_id', 'filter-apns-unique-id');
    add('topic', 'filter-topic');
    return p.toString();
  }

  function logRow(n, fresh) {
    return el('tr', { class: fresh ? 'new' : '', data: { sequence: n.sequence, token: n.token, apnsId: n.apns_id, topic: n.topic } },
      el('td', {}, n.sequence), el('td', {}, time(n.time)), el('td', {}, n.environment),
      el('td', {}, tokenButton(n.token)), el('td', {}, n.topic),
      el('td', {}, (n.push_type || '') + (n.channel_id ? ' (broadcast on ' + n.channel_id + ')' : '')),
      el('td', {}, n.apns_id), el('td', {}, n.apns_unique_id || ''),
      el('td', {}, timeline(n)),
      el('td', {}, el('pre', {}, n.payload), ...(n.warnings || []).map((w) => el('div', { class: 'warning' }, w))),
      el('td', {}, apnsLink(n.sequence)));
  }

  // A push's delivery state and its timeline (each state with its time and why), and the app's code it ran.
  function timeline(n) {
    const steps = (n.history || []).map((h) =>
      el('li', {}, time(h.time) + ' ' + h.state + (h.detail ? ': ' + h.detail : '')));
    const code = n.app_code
      ? el('div', { class: 'app-code' }, 'app (' + n.app_code.app_state + '): ' +
          ((n.app_code.runs || []).join(', ') || 'no code ran') + (n.app_code.on_open ? '; runs when opened' : ''))
      : null;
    return el('div', { class: 'delivery', data: { state: n.state || '' } },
      el('strong', {}, n.state || ''), el('ol', { class: 'timeline' }, ...steps), ...(code ? [code] : []));
  }

  // A delivery's payload as an Xcode Simulator .apns file (GET /deliveries/{sequence}/apns), fetched with the
  // admin token and saved through a temporary object URL (a plain link would carry no token).
  function apnsLink(sequence) {
    return el('a', { href: '/deliveries/' + sequence + '/apns', class: 'apns-link', download: 'delivery-' + sequence + '.apns', data: { apnsSequence: sequence },
      onclick: (event) => { event.preventDefault(); downloadApns(sequence); } }, 'Download .apns');
  }

  async function downloadApns(sequence) {
    const headers = {};
    if (adminToken) headers['Authorization'] = 'Bearer ' + adminToken;
    try {
      const response = await fetch('/deliveries/' + sequence + '/apns', { headers, cache: 'no-store' });
      const text = await response.text();
      if (response.status !== 200) {
        let json = null;
        try { json = JSON.parse(text); } catch (e) { json = null; }
        message('Download .apns: ' + errorText({ status: response.status, json }));
        return;
      }
      const warning = response.headers.get('x-kkpush-warning');
      if (warning) message(warning);
      document.body.dataset.lastApns = text;
      const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
      const a = el('a', { href: url, download: 'delivery-' + sequence + '.apns' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
      message('Saved delivery-' + sequence + '.apns: xcrun simctl push booted delivery-' + sequence + '.apns, or drop it on a Simulator.', 'info');
    } catch (e) {
      message('Download .apns: ' + e);
    }
  }

  async function refreshLog() {
    const query = logQuery();
    const r = await api('GET', '/log?' + query);
    if (r.status !== 200 || !r.json) return;
    const body = $('log-body');
    const list = r.json.notifications;
    const newest = list.length ? list[list.length - 1].sequence : 0;
    if (query !== logFilterKey || newest < logNewest) {
      logFilterKey = query;
      logNewest = 0;
      body.replaceChildren();
    }
    const fresh = list.filter((n) => n.sequence > logNewest);
    for (const row of body.querySelectorAll('tr.new')) row.classList.remove('new');
    for (const n of fresh) body.prepend(logRow(n, logNewest > 0));
    while (body.children.length > 200) body.lastChild.remove();
    if (fresh.length) logNewest = newest;
    $('log-count').textContent = '(' + body.children.length + ' shown' + (query !== 'limit=200' ? ', filtered' : '') + ')';
  }

  // MARK: channels

  async function refreshChannels() {
    const r = await api('GET', '/channels');
    if (r.status !== 200 || !r.json) return;
    const list = r.json.channels;
    const body = $('channels-body');
    body.replaceChildren();
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: '6' }, 'No channel yet (kkpush channel create, or POST /1/apps/<bundleId>/channels on a channel-management listener).')));
    for (const c of list) {
      const subscribers = el('td', {}, c.subscribers.length ? '' : 'none');
      for (const t of c.subscribers) subscribers.append(tokenButton(t), ' ');
      const stored = c.stored_message
        ? 'until ' + time(c.stored_message.expires_at_ms) + ' (' + c.stored_message.apns_request_id + ')'
        : '';
      body.append(el('tr', { data: { channelId: c.id, environment: c.environment, subscribers: c.subscribers.length } },
        el('td', {}, c.environment), el('td', {}, c.bundle_id), el('td', {}, el('code', {}, c.id)),
        el('td', {}, c.message_storage_policy === 1 ? '1 (most recent message stored)' : '0 (no message stored)'),
        subscribers, el('td', {}, stored)));
    }
    $('channels-count').textContent = '(' + list.length + ')';
  }

  // MARK: rejections

  let rejectionsNewest = 0;

  async function refreshRejections() {
    const r = await api('GET', '/rejections?limit=200');
    if (r.status !== 200 || !r.json) return;
    const list = r.json.rejections;
    const newest = list.length ? list[list.length - 1].sequence : 0;
    const body = $('rejections-body');
    if (newest < rejectionsNewest) { rejectionsNewest = 0; body.replaceChildren(); }
    const fresh = list.filter((x) => x.sequence > rejectionsNewest);
    for (const row of body.querySelectorAll('tr.new')) row.classList.remove('new');
    for (const x of fresh) {
      body.prepend(el('tr', { class: rejectionsNewest > 0 ? 'new' : '', data: { sequence: x.sequence, status: x.status, reason: x.reason, token: x.token || '' } },
        el('td', {}, x.sequence), el('td', {}, time(x.time)), el('td', {}, x.environment),
        el('td', {}, x.status), el('td', {}, x.reason), el('td', {}, x.token ? tokenButton(x.token) : ''),
        el('td', {}, x.topic || ''), el('td', {}, x.push_type || ''), el('td', {}, x.apns_id),
        el('td', {}, x.injected ? 'injected fault' : "the mock's checks")));
    }
    while (body.children.length > 200) body.lastChild.remove();
    if (fresh.length) rejectionsNewest = newest;
    $('rejections-count').textContent = '(' + body.children.length + ' shown)';
  }

  async function showHistory(token) {
    historyToken = token;
    const r = await api('GET', '/devices/' + encodeURIComponent(token) + '/notifications?limit=200');
    if (r.status !== 200 || !r.json) { if (r.status !== 401) message('History: ' + errorText(r)); return; }
    $('history').classList.remove('hidden');
    $('history-token').textContent = token;
    const body = $('history-body');
    body.replaceChildren();
    const list = r.json.notifications.slice().reverse();
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: '6' }, 'No notification delivered to this token yet.')));
    for (const n of list) {
      body.append(el('tr', { data: { apnsId: n.apns_id } }, el('td', {}, n.sequence), el('td', {}, time(n.time)),
        el('td', {}, n.environment), el('td', {}, n.topic), el('td', {}, n.apns_id), el('td', {}, el('pre', {}, n.payload)),
        el('td', {}, apnsLink(n.sequence))));
    }
  }

  // MARK: wiring

  async function tick() {
    if (ticking) return;
    ticking = true;
    try {
      if (await refreshHealth()) {
        await refreshLog();
        await refreshRejections();
        if (ticks % 3 === 0) { await refreshDevices(); await refreshFaults(); await refreshChannels(); await refreshSaved(); }
        if (historyToken && ticks % 3 === 0) await showHistory(historyToken);
        ticks += 1;
      }
    } catch (e) {
      $('health').textContent = 'unreachable (' + e + ')';
    } finally {
      ticking = false;
    }
  }

  function refreshAll() { ticks = 0; tick(); }

  document.addEventListener('DOMContentLoaded', () => {
    $('auth-token').value = '';
    $('auth-save').addEventListener('click', () => {
      adminToken = $('auth-token').value.trim();
      $('auth-token').value = '';
      if (adminToken) sessionStorage.setItem(TOKEN_KEY, adminToken); else sessionStorage.removeItem(TOKEN_KEY);
      refreshAll();
    });
    $('auth-forget').addEventListener('click', () => {
      adminToken = '';
      sessionStorage.removeItem(TOKEN_KEY);
      refreshAll();
    });
    $('send-button').addEventListener('click', send);
    $('saved-save').addEventListener('click', savePush);
    $('mint-button').addEventListener('click', async () => {
      const r = await call('POST', '/devices', { environment: $('mint-environment').value, topic: $('mint-topic').value.trim() });
      if (r && r.json) { message('Minted ' + r.json.token + ' (' + r.json.environment + ').', 'info'); useDevice(r.json); refreshDevices(); }
    });
    $('register-button').addEventListener('click', async () => {
      const body = { token: $('register-token').value.trim(), environment: $('register-environment').value };
      if ($('register-topic').value.trim()) body.topic = $('register-topic').value.trim();
      if (await call('POST', '/devices', body, 'Registered.')) { $('register-token').value = ''; refreshDevices(); }
    });
    $('fault-add').addEventListener('click', addFault);
    $('fault-clear').addEventListener('click', async () => { if (await call('DELETE', '/faults', undefined, 'All faults removed.')) refreshFaults(); });
    $('clock-advance').addEventListener('click', async () => {
      const r = await call('POST', '/clock', { advance_seconds: Number($('clock-seconds').value) });
      if (r && r.json) $('clock-now').textContent = time(r.json.now_ms);
    });
    for (const id of ['filter-token', 'filter-apns-id', 'filter-apns-unique-id', 'filter-topic']) $(id).addEventListener('input', () => refreshLog());
    $('filter-clear').addEventListener('click', () => {
      for (const id of ['filter-token', 'filter-apns-id', 'filter-apns-unique-id', 'filter-topic']) $(id).value = '';
      refreshLog();
    });
    $('history-close').addEventListener('click', () => { historyToken = null; $('history').classList.add('hidden'); });
    tick();
    setInterval(tick, 1000);
  });
})();
