// One message part each: text (Markdown), reasoning (collapsed), a tool
// call in whichever state it is, a confirmation to answer.
import { useId, useState } from 'react';
import { getToolName } from 'ai';
import { Markdown } from './Markdown.jsx';
import { customerIdOf, doneSentence, toolPhrase } from './describe.js';
import { InputSummary, useRecord } from './Summary.jsx';

function json(v) {
  return v === undefined ? '' : JSON.stringify(v, null, 2);
}

export function Reasoning({ part }) {
  return (
    <details className="reasoning" data-part="reasoning">
      <summary>{part.state === 'streaming' ? 'Thinking…' : 'How the assistant reasoned'}</summary>
      <p>{part.text}</p>
    </details>
  );
}

function Details({ part }) {
  return (
    <details className="tool-details">
      <summary>Details</summary>
      <p className="small muted">Input</p>
      <pre>{json(part.input)}</pre>
      {part.state === 'output-available' && (
        <>
          <p className="small muted">Result</p>
          <pre>{json(part.output)}</pre>
        </>
      )}
    </details>
  );
}

function Confirm({ part, onAnswer }) {
  const [reason, setReason] = useState('');
  const reasonId = useId();
  const name = getToolName(part);
  return (
    <div className="confirm" role="group" aria-label={`Confirm: ${toolPhrase(name)[0].toLowerCase()}`}>
      <p>
        <strong>The assistant asks to {toolPhrase(name)[2]}:</strong>
      </p>
      <InputSummary input={part.input} />
      <div className="confirm-answer">
        <div className="confirm-reason">
          <label htmlFor={reasonId} className="small">
            Reason for denying (optional)
          </label>
          <input id={reasonId} value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} />
        </div>
        <div className="actions">
          <button type="button" className="approve" onClick={() => onAnswer(part.approval.id, true)}>
            Approve
          </button>
          <button type="button" className="deny" onClick={() => onAnswer(part.approval.id, false, reason.trim() || undefined)}>
            Deny
          </button>
        </div>
      </div>
    </div>
  );
}

function toolLine(part, name) {
  const [doing] = toolPhrase(name);
  const err = part.output && part.output.error;
  switch (part.state) {
    case 'input-streaming':
      return { text: `${doing}…`, cls: 'running' };
    case 'input-available':
      return { text: `${doing}…`, cls: 'running' };
    case 'approval-requested':
      return { text: `${doing}: waiting for your answer`, cls: 'asking' };
    case 'approval-responded':
      return { text: part.approval && part.approval.approved ? `${doing}: you approved` : `${doing}: you denied`, cls: 'running' };
    case 'output-denied': {
      const why = part.approval && part.approval.reason;
      return { text: `${doing}: you denied it${why ? ` (“${why}”)` : ''}, so it was not done`, cls: 'denied' };
    }
    case 'output-error':
      return { text: `${doing} failed: ${part.errorText}`, cls: 'failed' };
    case 'output-available':
      if (err && String(err.code).startsWith('APPROVAL_')) return { text: `${doing}: needs an approver (see the request below)`, cls: 'asking' };
      if (err) return { text: `${doing} failed: ${err.message || err.code}`, cls: 'failed' };
      return { cls: 'done' };
    default:
      return { text: doing, cls: '' };
  }
}

// Done is a finished call's sentence, linked to the record it is about.
function Done({ text, href }) {
  return (
    <p className="tool-line">
      {href ? (
        <a href={href} target="_blank" rel="noopener">
          {text}
        </a>
      ) : (
        text
      )}
    </p>
  );
}

export function ToolPart({ part, ready, onAnswer, onShowInvoice }) {
  const name = getToolName(part);
  const line = toolLine(part, name);
  const customerId = line.cls === 'done' ? customerIdOf(name, part.output) : null;
  const customer = useRecord(customerId ? `/v1/customers/${encodeURIComponent(customerId)}` : null);
  // A show-invoice call the page never answered (it was closed before the
  // answer arrived) waits for the user to open the invoice.
  const unanswered = name === 'show-invoice' && part.state === 'input-available' && ready;
  return (
    <div className={`tool tool-${line.cls}`} data-part="tool" data-tool={name} data-state={part.state}>
      {line.cls === 'done' ? (
        <Done {...doneSentence(name, part.output, customer && customer.name)} />
      ) : (
        // A confirmation says itself what it waits for.
        part.state !== 'approval-requested' && <p className="tool-line">{line.text}</p>
      )}
      {unanswered && (
        <button type="button" onClick={() => onShowInvoice(part.toolCallId, part.input.invoice_id)}>
          Open the invoice
        </button>
      )}
      {part.state === 'input-streaming' && part.input !== undefined && (
        <div className="drafting" aria-label="What is being drafted">
          <InputSummary input={part.input} />
        </div>
      )}
      {part.state === 'approval-requested' && <Confirm part={part} onAnswer={onAnswer} />}
      {part.state !== 'input-streaming' && <Details part={part} />}
    </div>
  );
}

export function TextPart({ part, role }) {
  if (role === 'user') return <p className="user-text">{part.text}</p>;
  return <Markdown text={part.text} />;
}
