// What went wrong, said once, with the ways on as buttons.
const labels = {
  reload: 'Reload from the server',
  follow: 'Follow the answer',
  stop: 'Stop the answer',
  new: 'Start a new conversation',
  signin: 'Sign in again',
  page: 'Reload the page',
};

export function Problem({ explained, ways }) {
  const go = (way) => {
    if (way === 'new') window.location.assign('/chat');
    else if (way === 'signin') window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
    else if (way === 'page') window.location.reload();
    else ways[way]();
  };
  return (
    <div className="error chat-problem" role="alert">
      <p>{explained.text}</p>
      {explained.ways.length > 0 && (
        <div className="actions">
          {explained.ways.map((w) => (
            <button type="button" key={w} onClick={() => go(w)}>
              {labels[w]}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
