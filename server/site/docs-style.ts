// The stylesheet of the docs pages (served at /docs/assets/docs.css), in the look of the demo pages.
export const DOCS_CSS = `
:root{color-scheme:light;--ink:#1d2329;--muted:#5b6670;--line:#d9dee3;--accent:#0b7a53;--bg:#f6f7f8}
*{box-sizing:border-box}
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);margin:0}
a{color:var(--accent)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
code{background:#eef1f3;border-radius:4px;padding:.05rem .3rem}
pre{background:#1d2329;color:#eef1f3;border-radius:8px;padding:.9rem 1rem;overflow-x:auto;line-height:1.45}
pre code{background:none;padding:0;color:inherit}
.docs-nav{display:flex;gap:1.1rem;align-items:center;flex-wrap:wrap;padding:.6rem 1.25rem;background:#fff;border-bottom:1px solid var(--line)}
.docs-nav a{text-decoration:none;color:var(--ink)}
.docs-nav a[aria-current=page]{color:var(--accent);font-weight:600}
.docs-nav .brand{font-weight:700;letter-spacing:.02em;margin-right:.5rem}
.docs-bar{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;padding:.45rem 1.25rem;font-size:.9rem;background:#eef5f1;border-bottom:1px solid var(--line)}
.docs-bar span:first-child{font-weight:600}
main.wide{max-width:72rem;margin:2rem auto;padding:0 1.25rem}
main.guide{max-width:52rem;margin:2rem auto;padding:0 1.25rem}
h1{font-size:1.6rem;margin:0 0 .75rem}
.lead{font-size:1.05rem;color:var(--muted);max-width:50rem}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:1rem;margin:1.5rem 0}
.card{background:#fff;border:1px solid var(--line);border-radius:12px;padding:1.25rem;margin:0 0 1rem}
.grid .card{margin:0}
.card h2{font-size:1.15rem;margin:0 0 .5rem}
.card h2 a{text-decoration:none}
.links{list-style:none;padding:0;margin:.75rem 0 0}
.links li{margin:.2rem 0}
.muted,.crumbs{color:var(--muted)}
.crumbs{font-size:.9rem}
article h2{margin-top:2rem;border-top:1px solid var(--line);padding-top:1rem}
article table{border-collapse:collapse}
article td,article th{border:1px solid var(--line);padding:.3rem .6rem;text-align:left}
`;
