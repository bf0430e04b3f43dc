// The message box: Enter sends, Shift+Enter starts a new line; while an
// answer is being written, Stop replaces Send (the box stays open for the
// next message).
import { useId } from 'react';

// text is the conversation's: a refused message comes back to the box.
export function Composer({ text, setText, busy, status, onSend, onStop }) {
  const id = useId();
  const hintId = useId();
  const submit = (e) => {
    e.preventDefault();
    const t = text.trim();
    if (!t || busy) return;
    setText('');
    onSend(t);
  };
  return (
    <form className="composer" onSubmit={submit}>
      <label htmlFor={id}>Message</label>
      <textarea
        id={id}
        rows={3}
        value={text}
        aria-describedby={hintId}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) submit(e);
        }}
      />
      <div className="composer-bar">
        <p id={hintId} className="small muted" role="status">
          {status === 'submitted' ? 'Sent; waiting for the assistant…' : status === 'streaming' ? 'The assistant is answering…' : 'Enter sends; Shift+Enter starts a new line.'}
        </p>
        {busy ? (
          <button type="button" onClick={onStop}>
            Stop
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!text.trim()}>
            Send
          </button>
        )}
      </div>
    </form>
  );
}
