// The message box: Enter sends, Shift+Enter starts a new line; while an
// answer is being written, Stop replaces Send (the box stays open for the
// next message). It is two lines high and its label is for screen
// readers: on a phone every line it takes is one the conversation loses.
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
      <label htmlFor={id} className="visually-hidden">
        Message
      </label>
      <div className="composer-row">
        <textarea
          id={id}
          rows={2}
          value={text}
          placeholder="Ask the assistant…"
          aria-describedby={hintId}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) submit(e);
          }}
        />
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
      <p id={hintId} className="small muted" role="status">
        {status === 'submitted' ? 'Sent; waiting for the assistant…' : status === 'streaming' ? 'The assistant is answering…' : 'Enter sends; Shift+Enter starts a new line.'}
      </p>
    </form>
  );
}
