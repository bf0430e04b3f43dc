// One message: its parts in order, and for an answer a quiet footer with
// when it was written; the model and the tokens it used are under
// Details. An answer with nothing to show (stopped or failed before its
// first word) is left out: the conversation says nothing empty.
import { isToolUIPart } from 'ai';
import { ApprovalCard } from './ApprovalCard.jsx';
import { Reasoning, TextPart, ToolPart } from './parts.jsx';

const count = new Intl.NumberFormat('en');

// shows says whether a part puts anything on the page.
const shows = (p) =>
  ((p.type === 'text' || p.type === 'reasoning') && (p.text || '').trim() !== '') || p.type === 'data-approval' || isToolUIPart(p);

export const hasContent = (message) => message.parts.some(shows);

function Footer({ metadata }) {
  if (!metadata) return null;
  const seen = [];
  if (metadata.createdAt) {
    const t = new Date(metadata.createdAt);
    if (!isNaN(t)) seen.push(t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
  }
  if (metadata.finishReason === 'interrupted') seen.push('stopped before the end');
  const details = [];
  if (metadata.model) details.push(metadata.model);
  const u = metadata.usage;
  if (u && (u.inputTokens !== undefined || u.outputTokens !== undefined)) {
    details.push(`${count.format(u.inputTokens || 0)} tokens in, ${count.format(u.outputTokens || 0)} out`);
  }
  if (!seen.length && !details.length) return null;
  return (
    <div className="msg-foot">
      {seen.length > 0 && <p className="usage">{seen.join(' · ')}</p>}
      {details.length > 0 && (
        <details className="usage-details">
          <summary>Details</summary>
          <p className="usage">{details.join(' · ')}</p>
        </details>
      )}
    </div>
  );
}

export function Message({ message, watcher, ready, onAnswer, onContinue, onShowInvoice }) {
  if (message.role === 'assistant' && !hasContent(message)) return null;
  const who = message.role === 'user' ? 'You' : 'Assistant';
  return (
    <li className={`msg msg-${message.role}`} data-message-id={message.id}>
      <p className="msg-who">{who}</p>
      {message.parts.map((part, i) => {
        const key = part.toolCallId || part.id || `${part.type}-${i}`;
        if (part.type === 'text') return <TextPart key={key} part={part} role={message.role} />;
        if (part.type === 'reasoning') return <Reasoning key={key} part={part} />;
        if (part.type === 'data-approval')
          return <ApprovalCard key={key} data={part.data} watcher={watcher} canContinue={ready} onContinue={onContinue} />;
        if (isToolUIPart(part)) return <ToolPart key={key} part={part} ready={ready} onAnswer={onAnswer} onShowInvoice={onShowInvoice} />;
        return null;
      })}
      {message.role === 'assistant' && <Footer metadata={message.metadata} />}
    </li>
  );
}
