// One message: its parts in order, and for an answer a quiet footer with
// the model, the tokens it used and when.
import { isToolUIPart } from 'ai';
import { ApprovalCard } from './ApprovalCard.jsx';
import { Reasoning, TextPart, ToolPart } from './parts.jsx';

const count = new Intl.NumberFormat('en');

function Footer({ metadata }) {
  if (!metadata) return null;
  const bits = [];
  if (metadata.model) bits.push(metadata.model);
  const u = metadata.usage;
  if (u && (u.inputTokens !== undefined || u.outputTokens !== undefined)) {
    bits.push(`${count.format(u.inputTokens || 0)} tokens in, ${count.format(u.outputTokens || 0)} out`);
  }
  if (metadata.createdAt) {
    const t = new Date(metadata.createdAt);
    if (!isNaN(t)) bits.push(t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
  }
  if (metadata.finishReason === 'interrupted') bits.push('stopped before the end');
  if (!bits.length) return null;
  return <p className="usage">{bits.join(' · ')}</p>;
}

export function Message({ message, watcher, ready, onAnswer, onContinue, onShowInvoice }) {
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
