// The user's conversations, newest first (GET /v1/conversations), a page
// at a time, and the way to start a new one.
import { useEffect, useState } from 'react';
import { explain, problemOf } from './errors.js';

const pageSize = 20;

function ago(iso) {
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (!(s >= 0)) return '';
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function Conversations({ api, current, version }) {
  const [items, setItems] = useState(null);
  const [next, setNext] = useState(null);
  const [failed, setFailed] = useState(null);

  const load = async (cursor) => {
    try {
      const q = `?limit=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const r = await api.get(`/v1/conversations${q}`);
      setItems((old) => (cursor && old ? [...old, ...r.body.data] : r.body.data));
      setNext(r.body.has_more ? r.body.next_cursor : null);
      setFailed(null);
    } catch (err) {
      setFailed(explain(problemOf(err)).text);
    }
  };
  useEffect(() => {
    load(null);
  }, [version]);

  return (
    <nav className="conv-list" aria-labelledby="conv-h">
      <a className="button primary new-conv" href="/chat">
        New conversation
      </a>
      <h2 id="conv-h">Your conversations</h2>
      {failed && <p className="error small">{failed}</p>}
      {items === null && !failed && <p className="muted small">Loading…</p>}
      {items && items.length === 0 && <p className="empty small">None yet. What you ask here is kept, and listed here newest first.</p>}
      {items && items.length > 0 && (
        <ul>
          {items.map((c) => (
            <li key={c.id}>
              <a href={`/chat/${encodeURIComponent(c.id)}`} aria-current={c.id === current ? 'page' : undefined}>
                <span className="conv-title">{c.title || 'Untitled conversation'}</span>
                <time dateTime={c.updated_at} className="small muted">
                  {ago(c.updated_at)}
                </time>
              </a>
            </li>
          ))}
        </ul>
      )}
      {next && (
        <button type="button" onClick={() => load(next)}>
          Show older
        </button>
      )}
    </nav>
  );
}
