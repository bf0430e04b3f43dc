// What went wrong, as a sentence a clerk can act on, and the ways on that
// the page offers: reload the conversation from the server, follow or
// stop an answer that is running, start a new conversation, sign in again.
import { ProblemError } from './api.js';

// An admin is told which settings a refusal names; a clerk, whom to ask.
let admin = false;

export function setReader(reader) {
  admin = Boolean(reader && reader.admin);
}

// problemOf reads the error useChat or our own requests report: a
// problem+json answer (ProblemError, or the transport's APICallError
// carrying the body), a stream's error chunk (its text), or a network
// failure.
export function problemOf(err) {
  if (err instanceof ProblemError) return { status: err.status, ...err.problem };
  if (err && typeof err.statusCode === 'number') {
    let body = {};
    try {
      body = JSON.parse(err.responseBody || '{}') || {};
    } catch {
      body = {};
    }
    return { status: err.statusCode, ...body };
  }
  if (err instanceof TypeError) return { status: 0, network: true };
  return { status: -1, detail: err ? String(err.message || err) : '' };
}

function sentence(s) {
  s = (s || '').trim();
  if (!s) return '';
  s = s[0].toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : s + '.';
}

// explain returns { text, ways } for a problem. ways name the buttons:
// 'reload' (from the server), 'follow', 'stop', 'new', 'signin', 'page'.
// fieldSentence says a refused field in the clerk's words: the text they
// typed is "your message", not messages.parts.text.
function fieldSentence(e) {
  return /parts\.text$/.test(e.field) ? sentence(`your message ${e.message}`) : sentence(`the ${e.field} ${e.message}`);
}

export function explain(p) {
  // A field's refusal says more than the summary ("The request has
  // invalid fields").
  const fields = (p.errors || []).map(fieldSentence).join(' ');
  const ownText = (p.errors || []).some((e) => /parts\.text$/.test(e.field));
  const detail = fields || sentence(p.detail);
  switch (true) {
    case p.network:
      return { text: 'The connection to the server was lost. Reload the conversation from the server to see how far the answer got.', ways: ['reload'] };
    case p.status === 401:
      return { text: 'Your session has ended. Sign in again to go on; the conversation is kept.', ways: ['signin'] };
    case p.status === 403 && /CSRF/i.test(p.detail || ''):
      return { text: 'This page no longer matches your session. Reload the page to go on.', ways: ['page'] };
    case p.status === 403:
      return { text: detail || 'You may not do this.', ways: [] };
    case p.code === 'CONVERSATION_BUSY':
      return { text: 'An answer is still being written in this conversation, perhaps in another tab. Follow it here, or stop it.', ways: ['follow', 'stop'] };
    case p.code === 'TRANSCRIPT_MISMATCH':
      return { text: 'This page’s copy of the conversation differs from the server’s (it changed in another tab, or an answer was cut short). Reload it from the server, then send again.', ways: ['reload'] };
    case p.status === 409:
      return { text: detail || 'The server refused this because something changed meanwhile.', ways: ['reload'] };
    case p.status === 413:
      return { text: `The message is too large to send. ${detail} Shorten it, or start a new conversation.`, ways: ['new'] };
    case p.status === 422 && ownText:
      return { text: `${detail} It is back in the box below: shorten it, or send it in parts.`, ways: [] };
    case p.status === 422:
      return { text: detail || 'The server could not accept this message.', ways: ['reload', 'new'] };
    case p.code === 'MODEL_NOT_CONFIGURED' && admin:
      return { text: `The assistant is not set up on this server. ${detail} The inbox and the invoices work meanwhile.`, ways: [] };
    case p.code === 'MODEL_NOT_CONFIGURED':
      return { text: 'The assistant is not set up on this server yet. Ask an administrator to set it up; the inbox and the invoices work meanwhile.', ways: [] };
    case p.status === 503:
      return { text: `The service is unavailable right now. ${detail} Try again in a moment.`, ways: ['reload'] };
    case p.status >= 500:
      return { text: `Something went wrong on the server${p.request_id ? ` (request ${p.request_id})` : ''}. Reload the conversation from the server and try again.`, ways: ['reload'] };
    default:
      return { text: detail || 'Something went wrong. Reload the conversation from the server to go on.', ways: ['reload'] };
  }
}

// answerFirst is said instead of sending while the last answer waits for
// this page (a confirmation, an invoice to open): the server would refuse
// a new message until then.
export const answerFirst = {
  text: 'The assistant is waiting for your answer above. Answer it first; your message is back in the box below.',
  ways: [],
};

// backInTheBox is said when an answer failed before its first word: the
// server's sentence, and where the question went.
export function backInTheBox(p) {
  const e = explain(p);
  return { text: `${e.text} Your message is back in the box below.`, ways: e.ways };
}
