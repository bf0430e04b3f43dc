// The conversation view: useChat over our /v1/chat as the README
// recommends (resume on mount, the last message only, stop through the
// stop route, automatic sends for confirmation answers and frontend
// tools), the messages, the composer and what went wrong.
import { useEffect, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { Message, hasContent } from './Message.jsx';
import { Problem } from './Problem.jsx';
import { Composer } from './Composer.jsx';
import { answerFirst, backInTheBox, explain, problemOf } from './errors.js';
import { useFollow } from './follow.js';

// The parts of a message's last step.
const lastStep = (m) => m.parts.slice(m.parts.findLastIndex((p) => p.type === 'step-start'));

// Resubmit once the browser has answered what the server asked for: a
// confirmation, or a frontend tool's output — not after the server's step
// limit, where going on is the user's call.
const sendAutomaticallyWhen = ({ messages }) =>
  lastAssistantMessageIsCompleteWithApprovalResponses({ messages }) ||
  (lastAssistantMessageIsCompleteWithToolCalls({ messages }) && lastStep(messages.at(-1)).some((p) => p.type === 'tool-show-invoice'));

// Whether message m waits for this page's answer: a confirmation, or an
// invoice to open (a frontend tool).
const awaitsAnswer = (m) =>
  m?.role === 'assistant' &&
  m.parts.some((p) => p.state === 'approval-requested' || (p.type === 'tool-show-invoice' && p.state === 'input-available'));

const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

export const continueText = 'The approval came through. Please go on.';

export function Conversation({ id, initialMessages, api, watcher, onOpenInvoice, onSent }) {
  const [local, setLocal] = useState(null);
  const [draft, setDraft] = useState('');
  const [announcement, setAnnouncement] = useState('');
  const transport = useMemo(
    () =>
      new DefaultChatTransport({
        api: '/v1/chat',
        headers: api.headers,
        credentials: 'same-origin',
        // The address names the conversation once the server has taken
        // a message (it answers 200 only after storing it): a refused
        // first message made no conversation, and /chat/{id} would be a
        // 404 on reload.
        fetch: async (input, init) => {
          const r = await fetch(input, init);
          if (r.ok && init?.method === 'POST' && window.location.pathname !== `/chat/${id}`) {
            window.history.replaceState(null, '', `/chat/${encodeURIComponent(id)}`);
          }
          return r;
        },
        // Only the new message: the server holds the rest.
        prepareSendMessagesRequest: ({ id, messages }) => ({ body: { id, message: messages.at(-1) } }),
      }),
    [api, id],
  );
  const showInvoice = (toolCallId, invoiceId) => {
    onOpenInvoice(invoiceId);
    addToolOutput({ tool: 'show-invoice', toolCallId, output: { shown: true } });
  };
  const failure = useRef(null);
  // An answer that failed before its first word (the model request
  // failed, the server restarted): the question is stored, unanswered,
  // and goes back to the box, so sending it again is one key away.
  const answerFailed = (messages, err) => {
    const i = messages.findLastIndex((m) => m.role === 'user');
    if (i < 0 || messages.slice(i + 1).some(hasContent)) return;
    const text = textOf(messages[i]);
    setDraft((d) => d || text);
    setLocal(backInTheBox(problemOf(err)));
  };
  const { messages, setMessages, sendMessage, addToolOutput, addToolApprovalResponse, status, error, clearError, stop, resumeStream } = useChat({
    id,
    messages: initialMessages,
    resume: true,
    transport,
    sendAutomaticallyWhen,
    // A resumed answer replays its calls, so this may see one it has
    // handled already: showing the invoice again is harmless.
    onToolCall: ({ toolCall }) => {
      if (toolCall.toolName === 'show-invoice') showInvoice(toolCall.toolCallId, toolCall.input.invoice_id);
    },
    // A refused send stored nothing (the server refuses before it
    // writes): the message leaves the list and goes back to the box.
    // Its sentence is kept here, not only in useChat's error: the resume
    // request made on mount may answer after the refusal, and its 204
    // sets the status back to ready, which clears that error.
    onError: (err) => {
      if (typeof err.statusCode !== 'number') {
        // The answer ended in an error chunk; onFinish, next, sees the
        // answer as it was left.
        if (!(err instanceof TypeError)) failure.current = err;
        return;
      }
      if (err.url !== '/v1/chat') return;
      setLocal(explain(problemOf(err)));
      setMessages((ms) => {
        const last = ms.at(-1);
        if (!last || last.role !== 'user') return ms;
        setDraft(textOf(last));
        return ms.slice(0, -1);
      });
    },
    onFinish: ({ message, messages, isError }) => {
      if (isError && failure.current) answerFailed(messages, failure.current);
      failure.current = null;
      const text = message && message.role === 'assistant' ? textOf(message) : '';
      if (text) setAnnouncement(`The assistant says: ${text}`);
      onSent();
    },
  });
  const viewRef = useRef(null);
  const endRef = useRef(null);
  const follow = useFollow(viewRef, endRef);
  const busy = status === 'submitted' || status === 'streaming';
  // A request that goes out (an automatic send after a confirmation or a
  // frontend tool, a run found on mount) makes an earlier refusal stale.
  useEffect(() => {
    if (busy) setLocal(null);
  }, [busy]);

  const reload = async () => {
    setLocal(null);
    try {
      const r = await api.get(`/v1/conversations/${encodeURIComponent(id)}`);
      setMessages(r.body.messages);
      clearError();
    } catch (err) {
      if (err.status === 404) {
        setMessages([]);
        clearError();
      } else setLocal(explain(problemOf(err)));
    }
  };

  // Stop on the server: the stream then ends by itself with the stored
  // answer, marked interrupted, so this page's copy stays the server's.
  // Nothing running there (204): only this page's request is left to end.
  const stopAnswer = async () => {
    follow();
    try {
      const r = await api.post(`/v1/chat/${encodeURIComponent(id)}/stop`);
      if (r.status === 204) await stop();
    } catch (err) {
      await stop();
      setLocal(explain(problemOf(err)));
    }
  };

  const send = (text) => {
    clearError();
    follow();
    if (awaitsAnswer(messages.at(-1))) {
      setDraft(text);
      setLocal(answerFirst);
      return;
    }
    setLocal(null);
    sendMessage({ text });
  };

  const ways = {
    reload,
    follow: () => {
      setLocal(null);
      clearError();
      follow();
      resumeStream();
    },
    stop: async () => {
      await stopAnswer();
      await reload();
    },
  };

  const shown = local || (error ? explain(problemOf(error)) : null);
  // The view grows with the conversation; the marker after the message
  // box is its end (useFollow).
  return (
    <div className="conversation-view" ref={viewRef}>
      {messages.length === 0 && !busy ? (
        <Intro />
      ) : (
        <ol className="messages" aria-label="Messages" aria-busy={busy}>
          {messages.map((m) => (
            <Message
              key={m.id}
              message={m}
              watcher={watcher}
              ready={!busy}
              onAnswer={(approvalId, approved, reason) => {
                follow();
                addToolApprovalResponse({ id: approvalId, approved, reason });
              }}
              onContinue={() => send(continueText)}
              onShowInvoice={showInvoice}
            />
          ))}
        </ol>
      )}
      <p className="visually-hidden" aria-live="polite">
        {announcement}
      </p>
      {shown && <Problem explained={shown} ways={ways} />}
      <Composer text={draft} setText={setDraft} busy={busy} status={status} onSend={send} onStop={stopAnswer} />
      <div ref={endRef} />
    </div>
  );
}

function Intro() {
  return (
    <div className="intro">
      <h2>Ask the assistant</h2>
      <p>
        It can find customers and invoices, draft and change invoices, and ask for an invoice to be issued. Issuing and
        deleting wait for an approver’s decision in the inbox; you will see the request here, and its answer as soon as
        it is made.
      </p>
      <p className="muted small">For example: “Which invoices are still drafts?” or “Draft an invoice for Globex for 3 days of consulting at 1,200 EUR.”</p>
    </div>
  );
}
