// Live approval requests for the cards in a conversation: one
// EventSource on /v1/approvals/events for the whole page, opened while a
// card watches; each change to a watched request re-reads it
// (GET /v1/approvals/{id}), and so does a resync (changes may have been
// missed while reconnecting). Where the stream cannot be opened the cards
// fall back to the long poll (GET /v1/approvals/{id}?wait=30s).

export function createApprovalWatcher(api) {
  const watchers = new Map(); // id → Set of callbacks
  let events = null;

  function read(id, wait) {
    const q = wait ? '?wait=30s' : '';
    return api.get(`/v1/approvals/${encodeURIComponent(id)}${q}`).then((r) => {
      (watchers.get(id) || []).forEach((fn) => fn(r.body, null));
      return r.body;
    }, (err) => {
      (watchers.get(id) || []).forEach((fn) => fn(null, err));
      throw err;
    });
  }

  async function poll(id) {
    while (watchers.has(id)) {
      try {
        const a = await read(id, true);
        if (!['pending', 'approved'].includes(a.status)) return;
      } catch {
        await new Promise((r) => setTimeout(r, 5000));
      }
    }
  }

  function open() {
    if (typeof EventSource === 'undefined') return false;
    events = new EventSource('/v1/approvals/events', { withCredentials: true });
    events.addEventListener('approval', (e) => {
      let change;
      try {
        change = JSON.parse(e.data);
      } catch {
        return;
      }
      if (watchers.has(change.id)) read(change.id).catch(() => {});
    });
    events.addEventListener('resync', () => watchers.forEach((_, id) => read(id).catch(() => {})));
    return true;
  }

  return {
    // watch calls fn(approval, error) with the request now and on each
    // change until the returned function is called.
    watch(id, fn) {
      const first = !watchers.has(id);
      if (first) watchers.set(id, new Set());
      watchers.get(id).add(fn);
      if (!events && !open()) poll(id);
      read(id).catch(() => {});
      return () => {
        const set = watchers.get(id);
        set.delete(fn);
        if (set.size === 0) watchers.delete(id);
        if (watchers.size === 0 && events) {
          events.close();
          events = null;
        }
      };
    },
  };
}
