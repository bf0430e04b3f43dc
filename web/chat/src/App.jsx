// The chat page: the conversation list, the conversation and, when the
// agent shows one, an invoice beside it.
import { useEffect, useMemo, useReducer, useState } from 'react';
import { generateId } from 'ai';
import { createApi } from './api.js';
import { createApprovalWatcher } from './approvals.js';
import { Conversation } from './Conversation.jsx';
import { Conversations } from './Conversations.jsx';
import { InvoicePanel } from './InvoicePanel.jsx';
import { Problem } from './Problem.jsx';
import { explain, problemOf } from './errors.js';
import { ApiContext } from './Summary.jsx';

export function App({ config }) {
  const api = useMemo(() => createApi(config.csrf), [config.csrf]);
  const watcher = useMemo(() => createApprovalWatcher(api), [api]);
  // A new conversation gets its id here; the URL takes it on the first
  // message, so a reload from then on resumes it.
  const [id] = useState(() => config.conversation || generateId());
  const [initial, setInitial] = useState(config.conversation ? null : []);
  const [failed, setFailed] = useState(null);
  const [invoice, setInvoice] = useState(null);
  const [listVersion, bumpList] = useReducer((n) => n + 1, 0);

  const load = () => {
    setFailed(null);
    api.get(`/v1/conversations/${encodeURIComponent(id)}`).then(
      (r) => setInitial(r.body.messages),
      // Not found: a conversation still being opened, or another
      // user's, which this user cannot see; either way it starts empty.
      (err) => (err.status === 404 ? setInitial([]) : setFailed(explain(problemOf(err)))),
    );
  };
  useEffect(() => {
    if (initial === null) load();
  }, []);

  return (
    <ApiContext.Provider value={api}>
    <div className={`chat-layout${invoice ? ' with-invoice' : ''}`}>
      <Conversations api={api} current={id} version={listVersion} />
      <section className="conversation" aria-label="Conversation">
        {failed && <Problem explained={failed} ways={{ reload: load }} />}
        {initial === null && !failed && <p className="muted">Loading the conversation…</p>}
        {initial !== null && (
          <Conversation
            key={id}
            id={id}
            initialMessages={initial}
            api={api}
            watcher={watcher}
            onOpenInvoice={setInvoice}
            onSent={bumpList}
          />
        )}
      </section>
      {invoice && <InvoicePanel id={invoice} onClose={() => setInvoice(null)} />}
    </div>
    </ApiContext.Provider>
  );
}
