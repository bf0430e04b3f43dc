// The chat page's script (web/static/chat.js is this, bundled: see
// ../build.mjs). The page (web/templates/chat.html) hands over the
// conversation, the session's CSRF token and the currency table in data
// attributes.
import './jitless.js';
import { createRoot } from 'react-dom/client';
import { App } from './App.jsx';
import { setReader } from './errors.js';
import { setExponents } from './money.js';

const root = document.getElementById('chat-root');
if (root) {
  const d = root.dataset;
  setExponents(JSON.parse(d.currencyExponents || '{}'));
  const admin = d.admin === 'true';
  setReader({ admin });
  // The page opens at the conversation's end (useFollow), not where the
  // browser last left it: restoring that would land mid-conversation.
  window.history.scrollRestoration = 'manual';
  createRoot(root).render(<App config={{ conversation: d.conversation, csrf: d.csrf, username: d.username, admin }} />);
}
