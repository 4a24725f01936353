// The public viewer (served as /l/assets/viewer.js, a module; CSP script-src 'self', nothing
// inline). It shows the document, measures reading (time per page while the tab is visible and
// focused) and reports it to the session's beacon URL with the session token from the page.
// Values come from data- attributes and are only ever set as text or properties, never as HTML.
const root = document.getElementById('viewer');
if (root) start(root);

function start(root) {
  const data = root.dataset;
  const beaconUrl = data.beacon;
  const token = data.token;
  const FLUSH_MS = 15000;
  let current = data.kind === 'download' ? 0 : 1;
  let since = performance.now();
  let ended = false;
  // page -> { views, ms } not yet reported; the server counted page 1's first view on opening.
  let pending = new Map();

  function active() {
    return document.visibilityState === 'visible' && document.hasFocus();
  }
  function account() {
    const now = performance.now();
    if (current > 0 && active()) {
      const entry = pending.get(current) || { page: current, views: 0, ms: 0 };
      entry.ms += Math.round(now - since);
      pending.set(current, entry);
    }
    since = now;
  }
  function show(page) {
    account();
    current = page;
    const entry = pending.get(page) || { page: page, views: 0, ms: 0 };
    entry.views += 1;
    pending.set(page, entry);
  }
  function flush(end) {
    if (!beaconUrl || ended) return;
    account();
    const pages = [];
    pending.forEach((entry) => {
      if (entry.views || entry.ms) pages.push({ page: entry.page, views: Math.min(entry.views, 100), ms: Math.min(entry.ms, 3600000) });
    });
    pending = new Map();
    if (!pages.length && !end) return;
    if (end) ended = true;
    const body = JSON.stringify(end ? { token: token, pages: pages, ended: true } : { token: token, pages: pages });
    fetch(beaconUrl, { method: 'POST', keepalive: true, credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: body }).catch(
      () => {},
    );
  }

  setInterval(() => flush(false), FLUSH_MS);
  document.addEventListener('visibilitychange', () => (document.visibilityState === 'hidden' ? flush(false) : account()));
  window.addEventListener('blur', account);
  window.addEventListener('focus', account);
  window.addEventListener('pagehide', () => flush(true));
  // Back from the back/forward cache: the session has ended, so open a new one.
  window.addEventListener('pageshow', (event) => {
    if (event.persisted) location.reload();
  });

  if (data.kind === 'pdf') renderPdf(root, data, show);
}

async function renderPdf(root, data, show) {
  const canvas = root.querySelector('[data-canvas]');
  const pager = root.querySelector('[data-pager]');
  const status = root.querySelector('[data-status]');
  const prev = root.querySelector('[data-prev]');
  const next = root.querySelector('[data-next]');
  const loading = root.querySelector('[data-loading]');
  const failed = root.querySelector('[data-error]');
  try {
    const pdfjs = await import('./pdf.min.mjs');
    pdfjs.GlobalWorkerOptions.workerSrc = new URL('./pdf.worker.min.mjs', import.meta.url).href;
    const doc = await pdfjs.getDocument({
      url: data.file,
      isEvalSupported: false,
      disableRange: true,
      standardFontDataUrl: new URL('./standard_fonts/', import.meta.url).href,
      cMapUrl: new URL('./cmaps/', import.meta.url).href,
      cMapPacked: true,
    }).promise;
    let page = 1;
    let task = null;
    const draw = async () => {
      if (task) task.cancel();
      const p = await doc.getPage(page);
      const width = Math.min(root.clientWidth - 32, 1000);
      const base = p.getViewport({ scale: 1 });
      const ratio = window.devicePixelRatio || 1;
      const viewport = p.getViewport({ scale: (width / base.width) * ratio });
      canvas.width = Math.floor(viewport.width);
      canvas.height = Math.floor(viewport.height);
      canvas.style.width = `${Math.floor(viewport.width / ratio)}px`;
      task = p.render({ canvas: canvas, viewport: viewport });
      try {
        await task.promise;
      } catch (error) {
        if (error?.name !== 'RenderingCancelledException') throw error;
      }
      status.textContent = `Page ${page} of ${doc.numPages}`;
      prev.disabled = page <= 1;
      next.disabled = page >= doc.numPages;
    };
    const go = (delta) => {
      const target = page + delta;
      if (target < 1 || target > doc.numPages) return;
      page = target;
      show(page);
      draw().catch(fail);
    };
    prev.addEventListener('click', () => go(-1));
    next.addEventListener('click', () => go(1));
    document.addEventListener('keydown', (event) => {
      if (event.key === 'ArrowRight' || event.key === 'PageDown') go(1);
      if (event.key === 'ArrowLeft' || event.key === 'PageUp') go(-1);
    });
    loading.hidden = true;
    pager.hidden = false;
    await draw();
  } catch (error) {
    fail(error);
  }
  function fail() {
    loading.hidden = true;
    failed.hidden = false;
  }
}
