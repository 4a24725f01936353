// The /demo/login page's script, served as /demo/assets/demo-login.js (CSP script-src 'self',
// nothing inline). Plain ES2017 for any browser; no build step. It draws the QR code by copying
// the SVG's shapes into new SVG elements (never by parsing markup into the page), listens on the
// stream, and falls back to asking the backend every 2 s when EventSource is missing or fails.
(() => {
  var root = document.getElementById('demo-login');
  if (!root) return;
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute('content') : '';
  var session = null,
    source = null,
    pollTimer = null,
    tickTimer = null,
    finished = true,
    completing = false;

  function $(id) {
    return document.getElementById(id);
  }
  function show(view) {
    var views = root.querySelectorAll('[data-view]');
    for (var i = 0; i < views.length; i++) views[i].hidden = views[i].getAttribute('data-view') !== view;
    root.setAttribute('data-state', view);
  }
  function post(path, body) {
    return fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify(body || {}),
    }).then((res) =>
      res
        .json()
        .catch(() => ({}))
        .then((data) => {
          if (!res.ok) throw new Error(data.error || `The server answered ${res.status}.`);
          return data;
        }),
    );
  }
  function stop() {
    finished = true;
    if (source) {
      source.close();
      source = null;
    }
    if (pollTimer) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
    if (tickTimer) {
      clearInterval(tickTimer);
      tickTimer = null;
    }
  }
  function fail(error) {
    stop();
    $('error-text').textContent = error?.message || 'Something went wrong.';
    show('error');
  }
  function transport(text) {
    $('transport').textContent = text;
  }

  function start() {
    stop();
    finished = false;
    completing = false;
    session = null;
    show('loading');
    post('/demo/login/api/start')
      .then((s) => {
        session = s;
        render(s);
        listen(s);
      })
      .catch(fail);
  }

  function render(s) {
    drawQr($('qr'), s.qrCodeSvg);
    $('code').textContent = s.loginCode;
    $('message').textContent = s.messageText;
    $('number').textContent = s.displayPhoneNumber;
    $('app-name').textContent = s.authAppName;
    var link = $('wa-link');
    link.href = s.waLink;
    link.textContent = s.waLink;
    $('wa-link-button').href = s.waLink;
    if (s.sandboxPhoneUrl) {
      $('sandbox-link').href = s.sandboxPhoneUrl;
      $('sandbox').hidden = false;
      $('chat-app').hidden = true;
    } else {
      $('sandbox').hidden = true;
      $('chat-app').hidden = false;
    }
    tick();
    tickTimer = setInterval(tick, 1000);
    show('pending');
  }

  function tick() {
    if (!session) return;
    var left = Math.max(0, Math.round((Date.parse(session.expiresAt) - Date.now()) / 1000));
    $('countdown').textContent = `${Math.floor(left / 60)}:${(`0${left % 60}`).slice(-2)}`;
    // The stream says "expired" itself; if it cannot, the backend will.
    if (left === 0) startPolling();
  }

  function listen(s) {
    if (typeof window.EventSource !== 'function') return startPolling();
    transport('Waiting for the push (Server-Sent Events)…');
    var url = `/v1/auth/chatapp/events/${encodeURIComponent(s.sessionId)}?token=${encodeURIComponent(s.subscribeToken)}`;
    var es = new EventSource(url);
    source = es;
    es.addEventListener('verified', () => {
      es.close();
      source = null;
      complete(true);
    });
    es.addEventListener('expired', () => {
      es.close();
      source = null;
      expired();
    });
    es.onerror = () => {
      if (finished || source !== es) return;
      if (es.readyState === EventSource.CLOSED) source = null;
      startPolling();
    };
  }

  function startPolling() {
    if (pollTimer || finished) return;
    transport('Checking every 2 seconds…');
    pollTimer = setInterval(() => {
      complete(false);
    }, 2000);
  }

  function complete(pushed) {
    if (completing || finished) return;
    completing = true;
    post('/demo/login/api/complete').then(
      (r) => {
        completing = false;
        if (finished) return;
        if (r.status === 'success') signedIn(r);
        else if (r.status === 'expired') expired();
        else if (pushed) startPolling();
      },
      (error) => {
        completing = false;
        if (!finished) fail(error);
      },
    );
  }

  function expired() {
    stop();
    show('expired');
  }

  // The other direction: a code sent to the person's number, typed here, checked by the backend.
  function codeError(text) {
    $('code-error').textContent = text || '';
    $('code-error').hidden = !text;
  }
  function startCode(phone) {
    stop();
    finished = false;
    completing = false;
    codeError('');
    $('phone-submit').disabled = true;
    post('/demo/login/api/start-code', { phone: phone })
      .then((s) => {
        session = s;
        $('code-phone').textContent = s.boundPhone;
        $('code-input').value = '';
        if (s.sandboxPhoneUrl) $('code-sandbox-link').href = s.sandboxPhoneUrl;
        $('code-sandbox').hidden = !s.sandboxPhoneUrl;
        show('code');
        listen(s);
        $('code-input').focus();
      })
      .catch((error) => {
        $('phone-submit').disabled = false;
        fail(error);
      })
      .then(() => {
        $('phone-submit').disabled = false;
      });
  }
  function checkCode(code) {
    $('code-submit').disabled = true;
    post('/demo/login/api/check-code', { code: code })
      .then(
        (r) => {
          if (r.status === 'verified') complete(true);
          else if (r.status === 'expired') expired();
          else codeError(r.error);
        },
        (error) => codeError(error.message),
      )
      .then(() => {
        $('code-submit').disabled = false;
      });
  }
  $('phone-form').addEventListener('submit', (event) => {
    event.preventDefault();
    startCode($('phone-input').value);
  });
  $('code-form').addEventListener('submit', (event) => {
    event.preventDefault();
    checkCode($('code-input').value.trim());
  });
  $('code-resend').addEventListener('click', () => {
    post('/demo/login/api/resend-code').then(
      () => codeError(''),
      (error) => codeError(error.message),
    );
  });
  $('code-back').addEventListener('click', start);

  function signedIn(r) {
    stop();
    $('user-phone').textContent = r.phone;
    $('user-name').textContent = r.name ? ` (${r.name})` : '';
    show('signed-in');
  }

  var SVG = 'http://www.w3.org/2000/svg';
  var ELEMENTS = { svg: true, g: true, path: true, rect: true };
  var ATTRIBUTES = {
    viewBox: true,
    width: true,
    height: true,
    d: true,
    x: true,
    y: true,
    fill: true,
    stroke: true,
    'stroke-width': true,
    'shape-rendering': true,
    transform: true,
  };
  function copy(node) {
    if (node.namespaceURI !== SVG || !ELEMENTS[node.localName]) return null;
    var out = document.createElementNS(SVG, node.localName);
    for (var i = 0; i < node.attributes.length; i++) {
      var a = node.attributes[i];
      if (!a.namespaceURI && ATTRIBUTES[a.name] && !/url\(|javascript:/i.test(a.value)) out.setAttribute(a.name, a.value);
    }
    for (var c = node.firstElementChild; c; c = c.nextElementSibling) {
      var child = copy(c);
      if (child) out.appendChild(child);
    }
    return out;
  }
  function drawQr(target, text) {
    target.textContent = '';
    var doc = new DOMParser().parseFromString(text || '', 'image/svg+xml');
    var svg = doc.documentElement ? copy(doc.documentElement) : null;
    if (!svg) return;
    svg.setAttribute('aria-hidden', 'true');
    target.appendChild(svg);
  }

  $('restart').addEventListener('click', start);
  $('retry').addEventListener('click', start);
  if (root.getAttribute('data-state') === 'loading') start();
})();
