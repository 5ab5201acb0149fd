import { createHash } from 'node:crypto';

/**
 * The dashboard's style and script, served from its own origin (the pages'
 * CSP allows 'self' and nothing else): no framework, no build step. The script
 * only adds to what the pages do without it: live updates of the orders list
 * (without it, the list has a reload link).
 */

export const DASHBOARD_CSS = `:root{color-scheme:light dark;--bg:#eef1f5;--card:#fff;--fg:#141a22;--muted:#4f5967;--accent:#1554c0;--accent-fg:#fff;--ok:#0b6b37;--ok-bg:#e3f5ea;--warn:#9b2f12;--warn-bg:#fbe9e3;--border:#c9d0da;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#171d26;--fg:#e6ebf1;--muted:#a4aebb;--accent:#7aa7ff;--accent-fg:#0b1220;--ok:#5fd896;--ok-bg:#10291b;--warn:#ff9473;--warn-bg:#34160d;--border:#3a4555}}
*{box-sizing:border-box}[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--fg);line-height:1.45}
header{background:var(--card);border-bottom:1px solid var(--border)}
.bar{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;padding:.6rem 1rem}
.bar .shop{font-weight:700;margin-right:auto}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;margin:0;padding:0}
nav a[aria-current=page]{font-weight:700}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.35rem;margin:.25rem 0 1rem;overflow-wrap:anywhere}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
a{color:var(--accent)}
.card{background:var(--card);border:1px solid var(--border);border-radius:12px;padding:1rem;margin-bottom:1rem}
.narrow{max-width:26rem;margin:2rem auto}
form.filters{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.75rem;align-items:end}
label{display:block;font-size:.9rem;color:var(--muted);margin-bottom:.2rem}
input,select,button{font:inherit;font-size:.95rem;padding:.45rem .6rem;border:1px solid var(--border);border-radius:6px;background:var(--card);color:var(--fg);width:100%}
button{cursor:pointer;width:auto;background:var(--accent);color:var(--accent-fg);border-color:var(--accent);font-weight:600}
button.secondary{background:var(--card);color:var(--fg);border-color:var(--border)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.totals{display:flex;flex-wrap:wrap;gap:.5rem 2rem;margin:0}.totals div{min-width:9rem}.totals dt{color:var(--muted);font-size:.85rem}.totals dd{margin:0;font-weight:700;overflow-wrap:anywhere}
.table{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--border);vertical-align:top}
td.num,th.num{text-align:right}td.num{overflow-wrap:anywhere;min-width:7rem}
.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.9rem;overflow-wrap:anywhere;word-break:break-all}
.status{display:inline-block;padding:.1rem .45rem;border-radius:6px;font-size:.85rem;font-weight:600;background:var(--bg)}
.status.paid{background:var(--ok-bg);color:var(--ok)}
.status.underpaid,.status.overpaid,.status.paid_late,.status.expired,.status.refunded,.status.partially_refunded{background:var(--warn-bg);color:var(--warn)}
.notice{padding:.6rem .8rem;border-radius:8px;background:var(--ok-bg);color:var(--ok);font-weight:600}
.error{padding:.6rem .8rem;border-radius:8px;background:var(--warn-bg);color:var(--warn);font-weight:600}
.muted{color:var(--muted)}
.pager{display:flex;gap:1rem;margin-top:.75rem}
.actions{display:grid;gap:1rem;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr))}
dl.facts{display:grid;grid-template-columns:minmax(8rem,max-content) 1fr;gap:.35rem 1rem;margin:0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;min-width:0;overflow-wrap:anywhere}
.test-mode{margin:0;padding:.45rem 1rem;text-align:center;font-weight:700;color:#1d1600;background:#ffd23f}
@media (max-width:40rem){main{padding:.6rem}th,td{padding:.4rem .3rem}.hide-small{display:none}dl.facts{grid-template-columns:1fr}}
`;

/** Live updates: the list's region is fetched again when the server says something changed (at most once a second). */
export const DASHBOARD_JS = `(() => {
  const live = document.querySelector('[data-live]');
  if (live && 'EventSource' in window) {
    let timer;
    const refresh = async () => {
      timer = undefined;
      const url = new URL(location.href);
      url.searchParams.set('partial', '1');
      const answer = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      if (answer.ok) live.innerHTML = await answer.text();
    };
    const source = new EventSource(live.getAttribute('data-live'));
    source.addEventListener('change', () => { timer ??= setTimeout(refresh, 1000); });
    const status = document.getElementById('live-status');
    if (status) { status.hidden = false; source.addEventListener('error', () => { status.textContent = 'Live updates paused: reload the page.'; }); }
  }
})();
`;

/** Its digest, named in the asset's URL: a new version is a new URL, so browsers may keep each one forever. */
const version = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 12);

export const CSS_PATH = `/dashboard/assets/app-${version(DASHBOARD_CSS)}.css`;
export const JS_PATH = `/dashboard/assets/app-${version(DASHBOARD_JS)}.js`;
