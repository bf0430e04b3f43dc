// Where the window stands in a conversation: at its end, the newest
// message just above the message box, for as long as the reader lets it.
// The page scrolls as a whole (the message box is sticky at the bottom of
// the window), so the end is a marker after the box; the conversation
// growing (an answer being written, a card filling in, an invoice's name
// read) or the window changing size keeps the marker in view. Scrolling
// up stops that; scrolling back to the end, sending, answering a question
// or stopping starts it again.
import { useCallback, useLayoutEffect, useRef } from 'react';

// slack is how near the end counts as at it (px): a line or two of text,
// so a reader nudging the page by a few pixels is not left behind.
const slack = 48;

export function useFollow(view, end) {
  const following = useRef(true);
  const lastY = useRef(0);
  const toEnd = useCallback(() => {
    if (!end.current) return;
    end.current.scrollIntoView({ block: 'end', inline: 'nearest' });
    lastY.current = window.scrollY;
  }, [end]);
  const follow = useCallback(() => {
    following.current = true;
    toEnd();
  }, [toEnd]);

  useLayoutEffect(() => {
    const atEnd = () => end.current && end.current.getBoundingClientRect().bottom <= window.innerHeight + slack;
    // Only the reader moves the page up: growth below the window, or
    // this hook's own scrolling, never does.
    const onScroll = () => {
      const y = window.scrollY;
      if (y < lastY.current) following.current = atEnd();
      else if (atEnd()) following.current = true;
      lastY.current = y;
    };
    const keep = () => following.current && toEnd();
    const grown = new ResizeObserver(keep);
    grown.observe(view.current);
    window.addEventListener('scroll', onScroll, { passive: true });
    window.addEventListener('resize', keep);
    follow();
    return () => {
      grown.disconnect();
      window.removeEventListener('scroll', onScroll);
      window.removeEventListener('resize', keep);
    };
  }, [view, end, toEnd, follow]);

  return follow;
}
