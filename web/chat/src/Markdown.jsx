// Model output is untrusted: it is rendered as Markdown with raw HTML
// shown as text (react-markdown without rehype-raw), links only to
// http(s) and mailto, and no images (the page's CSP would block another
// origin's, and an image is a way to send data out).
import ReactMarkdown from 'react-markdown';

const allowed = new Set(['http:', 'https:', 'mailto:']);

export function safeUrl(value) {
  try {
    const u = new URL(value, window.location.href);
    return allowed.has(u.protocol) ? u.href : '';
  } catch {
    return '';
  }
}

const components = {
  a: ({ href, children }) =>
    href ? (
      <a href={href} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    ) : (
      <span className="inert-link" title="Link removed: only web and mail links are shown">
        {children}
      </span>
    ),
  img: ({ alt }) => <span className="inert-link">{alt ? `[image: ${alt}]` : '[image]'}</span>,
};

export function Markdown({ text }) {
  return (
    <div className="md">
      <ReactMarkdown urlTransform={safeUrl} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
