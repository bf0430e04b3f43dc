// The invoice the show-invoice tool asked for, beside the chat: the
// invoice page's own article (server-rendered, so amounts read as on every
// other page), fetched with the session.
import { useEffect, useRef, useState } from 'react';

export function InvoicePanel({ id, onClose }) {
  const body = useRef(null);
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    setState({ loading: true });
    fetch(`/invoices/${encodeURIComponent(id)}`, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then((r) => {
        if (!r.ok || r.redirected) throw new Error(r.status === 404 ? 'missing' : 'failed');
        return r.text();
      })
      .then((html) => {
        const article = new DOMParser().parseFromString(html, 'text/html').querySelector('article.invoice');
        if (!article) throw new Error('failed');
        // The page's h1 ("Invoice INV-… issued") becomes the panel's
        // heading, its status a badge under it.
        const h = article.querySelector('h1');
        const badge = h && h.querySelector('.status');
        const title = h ? h.firstChild.textContent.trim() : 'Invoice';
        if (h) h.replaceWith(...(badge ? [badge] : []));
        // The article's own sections sit under the panel's heading.
        article.querySelectorAll('h2').forEach((h2) => {
          const h3 = document.createElement('h3');
          h3.replaceChildren(...h2.childNodes);
          h3.id = h2.id;
          h2.replaceWith(h3);
        });
        if (!live) return;
        body.current.replaceChildren(document.importNode(article, true));
        setState({ title });
      })
      .catch((err) => live && setState({ failed: err.message }));
    return () => {
      live = false;
    };
  }, [id]);
  return (
    <aside className="invoice-panel" aria-labelledby="invoice-panel-h">
      <div className="panel-head">
        <h2 id="invoice-panel-h">{state.title || 'Invoice'}</h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <p className="visually-hidden" aria-live="polite">
        {state.title ? `${state.title} is shown beside the chat.` : ''}
      </p>
      {state.loading && <p className="muted">Loading the invoice…</p>}
      {state.failed && (
        <p className="error">{state.failed === 'missing' ? 'There is no such invoice.' : 'The invoice could not be loaded.'}</p>
      )}
      <div ref={body} />
      <p className="small">
        <a href={`/invoices/${encodeURIComponent(id)}`} target="_blank" rel="noopener">
          Open the invoice’s page
        </a>
      </p>
    </aside>
  );
}
