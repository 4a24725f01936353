// The hosted OpenID Connect sign-in page's script, served as /login/oidc/assets/oidc-sign-in.js
// (CSP script-src 'self', nothing inline). Plain ES2017, no build step. It follows the session's
// event stream (falling back to asking every 2 s), completes the request once the sign-in is
// verified and sends the browser back to the app; or sends a code to a number and checks it.
(() => {
  var root = document.getElementById('oidc-sign-in');
  if (!root) return;
  var base = root.getAttribute('data-base');
  var requestId = root.getAttribute('data-request');
  var source = null,
    pollTimer = null,
    completing = false,
    finished = false;

  function $(id) {
    return document.getElementById(id);
  }
  function show(view) {
    var views = root.querySelectorAll('[data-view]');
    for (var i = 0; i < views.length; i++) views[i].hidden = views[i].getAttribute('data-view') !== view;
    root.setAttribute('data-state', view);
  }
  function error(text) {
    $('error-text').textContent = text || '';
    $('error-text').hidden = !text;
  }
  function post(path, body) {
    body = body || {};
    body.request = requestId;
    return fetch(`${base}/${path}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((res) =>
      res
        .json()
        .catch(() => ({}))
        .then((data) => {
          if (!res.ok) {
            var failure = new Error(data.detail || `The server answered ${res.status}.`);
            failure.status = res.status;
            throw failure;
          }
          return data;
        }),
    );
  }
  function stop() {
    if (source) {
      source.close();
      source = null;
    }
    if (pollTimer) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
  }
  function listen(sessionId, token) {
    stop();
    if (typeof window.EventSource !== 'function') return startPolling();
    var es = new EventSource(`/v1/auth/chatapp/events/${encodeURIComponent(sessionId)}?token=${encodeURIComponent(token)}`);
    source = es;
    es.addEventListener('verified', () => {
      stop();
      complete();
    });
    es.addEventListener('expired', () => {
      stop();
      show('expired');
    });
    es.onerror = () => {
      if (finished || source !== es) return;
      if (es.readyState === EventSource.CLOSED) source = null;
      startPolling();
    };
  }
  function startPolling() {
    if (pollTimer || finished) return;
    $('transport').textContent = 'Checking every 2 seconds…';
    pollTimer = setInterval(complete, 2000);
  }
  function answered(r) {
    if (r.status === 'success') {
      finished = true;
      stop();
      show('done');
      window.location.assign(r.redirect);
    } else if (r.status === 'expired') {
      stop();
      show('expired');
    }
  }
  function complete() {
    if (completing || finished) return;
    completing = true;
    post('complete').then(
      (r) => {
        completing = false;
        answered(r);
      },
      (failure) => {
        completing = false;
        stop();
        error(failure.message);
      },
    );
  }

  $('phone-form').addEventListener('submit', (event) => {
    event.preventDefault();
    error('');
    $('phone-submit').disabled = true;
    post('start-code', { phone: $('phone-input').value }).then(
      (s) => {
        $('code-phone').textContent = s.boundPhone;
        show('code');
        listen(s.sessionId, s.subscribeToken);
        $('code-input').focus();
      },
      (failure) => {
        $('phone-submit').disabled = false;
        error(failure.message);
      },
    );
  });
  $('code-form').addEventListener('submit', (event) => {
    event.preventDefault();
    error('');
    $('code-submit').disabled = true;
    post('check-code', { code: $('code-input').value }).then(
      (r) => {
        $('code-submit').disabled = false;
        answered(r);
      },
      (failure) => {
        $('code-submit').disabled = false;
        if (failure.status === 409) complete();
        else error(failure.message);
      },
    );
  });
  $('code-resend').addEventListener('click', () => {
    error('');
    post('resend-code').then(
      () => error('A new code was sent.'),
      (failure) => error(failure.message),
    );
  });
  // A new message-mode session is a new authorization request: the same URL again.
  var again = () => window.location.reload();
  $('restart').addEventListener('click', again);
  $('restart-message').addEventListener('click', again);

  listen(root.getAttribute('data-session'), root.getAttribute('data-subscribe-token'));
  $('transport').textContent = 'Waiting for your message (live)…';
})();
