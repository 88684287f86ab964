import KKPushHTTP
import NIOHTTP1

/// The mock's web console: one page (`GET /`), its script (`GET /console.js`) and style sheet
/// (`GET /console.css`), all served by the admin API itself: no CDN, nothing external, works offline.
///
/// The page shows the devices of both environments (mint, register, unregister), the delivery log live
/// (polled every second; filters by token, apns-id, apns-unique-id and topic), one token's history, the
/// faults (add, list, remove), the mock's clock, and a "send a test push" form (`POST /send`).
///
/// Safety: every value shown (payloads are user data) is put in the page with `textContent` and DOM
/// calls, never parsed as HTML; the `Content-Security-Policy` allows scripts, styles and requests from the
/// admin API's own origin only (no inline script, no `eval`), and no framing. The admin token, when the
/// mock has one, is typed into the page, kept in `sessionStorage` (never in a URL) and sent as
/// `Authorization: Bearer`.
enum MockConsole {
    /// One static file.
    struct File: Sendable {
        var contentType: String
        var body: String

        func response() -> HTTPResponse {
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: contentType)
            headers.add(name: "content-security-policy", value: MockConsole.contentSecurityPolicy)
            headers.add(name: "x-content-type-options", value: "nosniff")
            headers.add(name: "referrer-policy", value: "no-referrer")
            headers.add(name: "x-frame-options", value: "DENY")
            headers.add(name: "cache-control", value: "no-store")
            return HTTPResponse(status: .ok, headers: headers, body: Array(body.utf8))
        }
    }

    /// Scripts, styles, images and requests from the admin API's own origin only; no inline script, no
    /// plugins, no framing, forms post nowhere.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The console's files by path.
    static let files: [String: File] = [
        "/": File(contentType: "text/html; charset=utf-8", body: html),
        "/console.js": File(contentType: "text/javascript; charset=utf-8", body: script),
        "/console.css": File(contentType: "text/css; charset=utf-8", body: style),
    ]

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>kkpush mock APNs console</title>
        <link rel="stylesheet" href="/console.css">
        <script src="/console.js" defer></script>
        </head>
        <body>
        <header>
          <h1>kkpush mock APNs</h1>
          <span id="health" class="muted">connecting…</span>
          <span class="spacer"></span>
          <span>Mock clock: <strong id="clock-now">–</strong></span>
          <input id="clock-seconds" type="number" value="3600" step="1" aria-label="seconds to advance">
          <button id="clock-advance" type="button">Advance clock (s)</button>
        </header>

        <section id="auth" class="card hidden">
          <h2>Admin token</h2>
          <p id="auth-message">This mock requires its admin token (--admin-token or KKPUSH_ADMIN_TOKEN). Enter it to use the console; it is kept in this tab only (sessionStorage).</p>
          <input id="auth-token" type="password" autocomplete="off" placeholder="admin token" aria-label="admin token">
          <button id="auth-save" type="button">Use token</button>
          <button id="auth-forget" type="button" class="secondary">Forget</button>
        </section>

        <div id="messages" role="status" aria-live="polite"></div>

        <main>
        <section class="card" id="send">
          <h2>Send a test push</h2>
          <p class="muted">Sent through kkpush's own client (the code of <code>kkpush send</code>) to this mock's own listener, without pre-flight or retries, so you see the mock's answer as APNs would give it.</p>
          <div class="grid">
            <label>Environment <select id="send-environment"><option>sandbox</option><option>production</option></select></label>
            <label>Device token <input id="send-token" list="device-tokens" autocomplete="off" spellcheck="false"></label>
            <label>Topic <input id="send-topic" value="nl.kantinekoning.app" spellcheck="false"></label>
            <label>Push type <select id="send-push-type"><option>alert</option><option>background</option><option>voip</option><option>location</option><option>complication</option><option>fileprovider</option><option>mdm</option><option>liveactivity</option><option>pushtotalk</option></select></label>
            <label>Priority <select id="send-priority"><option>10</option><option>5</option><option>1</option></select></label>
            <label>Collapse id <input id="send-collapse-id" spellcheck="false"></label>
          </div>
          <label class="wide">Payload (JSON)<textarea id="send-payload" rows="5" spellcheck="false">{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Je bardienst begint om 19:00"},"sound":"default"}}</textarea></label>
          <button id="send-button" type="button">Send</button>
          <div id="send-answer" class="answer hidden" aria-live="polite"></div>
          <datalist id="device-tokens"></datalist>
        </section>

        <section class="card" id="devices">
          <h2>Devices</h2>
          <div class="row">
            <strong>Mint</strong>
            <select id="mint-environment" aria-label="environment"><option>sandbox</option><option>production</option></select>
            <input id="mint-topic" value="nl.kantinekoning.app" aria-label="topic" spellcheck="false">
            <button id="mint-button" type="button">Mint device</button>
          </div>
          <div class="row">
            <strong>Register</strong>
            <input id="register-token" placeholder="hex device token" aria-label="token to register" spellcheck="false">
            <select id="register-environment" aria-label="environment"><option>sandbox</option><option>production</option></select>
            <input id="register-topic" placeholder="topic (optional)" aria-label="topic" spellcheck="false">
            <button id="register-button" type="button">Register token</button>
          </div>
          <table>
            <thead><tr><th>Token</th><th>Environment</th><th>Topic</th><th>State</th><th></th></tr></thead>
            <tbody id="devices-body"></tbody>
          </table>
        </section>

        <section class="card" id="faults">
          <h2>Faults</h2>
          <div class="row">
            <label>Kind <select id="fault-kind">
              <option value="respond">respond with status + reason</option>
              <option value="delay">delay the answer</option>
              <option value="close">close the connection</option>
              <option value="goaway">GOAWAY</option>
              <option value="reset">reset the connection</option>
              <option value="stall">stall (never answer)</option>
            </select></label>
            <label>Status <input id="fault-status" type="number" value="500" title="the answer's status (respond)"></label>
            <label>Reason <input id="fault-reason" value="InternalServerError" title="the answer's reason (respond, goaway)" spellcheck="false"></label>
            <label>Delay (ms) <input id="fault-delay" type="number" value="1000" title="delay in milliseconds (delay)"></label>
            <label>Times <input id="fault-count" type="number" value="1" min="1" title="how many requests it applies to (empty: until removed)"></label>
            <label>Only this token <input id="fault-token" placeholder="(any)" spellcheck="false"></label>
            <label>Only this topic <input id="fault-topic" placeholder="(any)" spellcheck="false"></label>
            <button id="fault-add" type="button">Add fault</button>
            <button id="fault-clear" type="button" class="secondary">Remove all</button>
          </div>
          <table>
            <thead><tr><th>Id</th><th>Kind</th><th>Detail</th><th>Scope</th><th>Remaining</th><th></th></tr></thead>
            <tbody id="faults-body"></tbody>
          </table>
        </section>

        <section class="card hidden" id="history">
          <h2>History of <code id="history-token"></code> <button id="history-close" type="button" class="secondary">Close</button></h2>
          <table>
            <thead><tr><th>#</th><th>Time</th><th>Env</th><th>Topic</th><th>apns-id</th><th>Payload</th></tr></thead>
            <tbody id="history-body"></tbody>
          </table>
        </section>

        <section class="card" id="log">
          <h2>Delivery log <span id="log-count" class="muted"></span></h2>
          <div class="row">
            <input id="filter-token" placeholder="token" aria-label="filter by token" spellcheck="false">
            <input id="filter-apns-id" placeholder="apns-id" aria-label="filter by apns-id" spellcheck="false">
            <input id="filter-apns-unique-id" placeholder="apns-unique-id" aria-label="filter by apns-unique-id" spellcheck="false">
            <input id="filter-topic" placeholder="topic" aria-label="filter by topic" spellcheck="false">
            <button id="filter-clear" type="button" class="secondary">Clear filters</button>
          </div>
          <table>
            <thead><tr><th>#</th><th>Time</th><th>Env</th><th>Token</th><th>Topic</th><th>Type</th><th>apns-id</th><th>apns-unique-id</th><th>Payload</th></tr></thead>
            <tbody id="log-body"></tbody>
          </table>
        </section>
        </main>
        </body>
        </html>

        """#

    static let style = #"""
        :root { --bg: #f4f5f7; --card: #fff; --ink: #1d2330; --muted: #6b7280; --accent: #b4261a; --ok: #1f7a3a; --warn: #9a3412; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--ink); }
        header { display: flex; gap: 12px; align-items: center; padding: 10px 16px; background: #1d2330; color: #fff; flex-wrap: wrap; }
        header h1 { font-size: 18px; margin: 0; }
        header .muted { color: #c9ced8; }
        .spacer { flex: 1; }
        main { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 12px; padding: 12px 16px; }
        .card { background: var(--card); border-radius: 6px; padding: 10px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.12); overflow: auto; }
        #log, #history { grid-column: 1 / -1; }
        #auth { margin: 12px 16px 0; border-left: 4px solid var(--accent); }
        h2 { font-size: 16px; margin: 4px 0 8px; }
        .hidden { display: none; }
        .muted { color: var(--muted); }
        .grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 6px 10px; }
        label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
        label.wide { margin: 6px 0; }
        .row { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; margin: 6px 0; }
        input, select, textarea, button { font: inherit; padding: 4px 6px; border: 1px solid #c5cad3; border-radius: 4px; color: var(--ink); }
        textarea { font-family: ui-monospace, monospace; font-size: 12px; width: 100%; }
        input[type=number] { width: 90px; }
        button { background: #2f4a7a; color: #fff; border-color: #2f4a7a; cursor: pointer; }
        button.secondary { background: #fff; color: #2f4a7a; }
        button.link { background: none; border: none; color: #2f4a7a; padding: 0; text-decoration: underline; font-family: ui-monospace, monospace; font-size: 12px; }
        table { border-collapse: collapse; width: 100%; margin-top: 6px; }
        th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
        td { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: break-word; }
        .row label { font-size: 11px; }
        .row button { align-self: flex-end; }
        td pre { margin: 0; white-space: pre-wrap; max-width: 420px; overflow-wrap: anywhere; }
        .answer { margin-top: 8px; padding: 8px; border-radius: 4px; border-left: 4px solid var(--ok); background: #eef7f0; }
        .answer.rejected, .answer.failed { border-color: var(--accent); background: #fbeeee; }
        .answer .status { font-weight: 600; font-size: 15px; }
        .answer dt { font-weight: 600; margin-top: 4px; }
        .answer dd { margin: 0 0 0 12px; }
        #messages { margin: 8px 16px 0; }
        .message { padding: 6px 10px; border-radius: 4px; background: #fbeeee; border-left: 4px solid var(--accent); margin-bottom: 4px; }
        .message.info { background: #eef2fb; border-color: #2f4a7a; }
        .state-unregistered { color: var(--accent); }
        tr.new td { background: #fff8d6; }

        """#

    static let script = #"""
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
              const state = gone ? (d.unregistered_reason || 'Unregistered') + ' since ' + time(d.unregistered_at_ms) : 'active';
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
              el('td', {}, tokenButton(n.token)), el('td', {}, n.topic), el('td', {}, n.push_type || ''),
              el('td', {}, n.apns_id), el('td', {}, n.apns_unique_id || ''),
              el('td', {}, el('pre', {}, n.payload)));
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
                el('td', {}, n.environment), el('td', {}, n.topic), el('td', {}, n.apns_id), el('td', {}, el('pre', {}, n.payload))));
            }
          }

          // MARK: wiring

          async function tick() {
            if (ticking) return;
            ticking = true;
            try {
              if (await refreshHealth()) {
                await refreshLog();
                if (ticks % 3 === 0) { await refreshDevices(); await refreshFaults(); }
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

        """#
}
