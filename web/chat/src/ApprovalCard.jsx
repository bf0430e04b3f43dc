// A data-approval part: the approval request an agent's consequential
// call raised, its status kept live, and "Continue" once an approver has
// approved it (the agent then makes the call again, which now goes
// through).
import { useEffect, useId, useState } from 'react';
import { approvalDone, approvalTitle } from './describe.js';

function approvers(a) {
  const names = (a.decisions || []).filter((d) => d.decision === 'approve' && d.counts !== false).map((d) => d.approver.username);
  return names.length ? ` by ${names.join(' and ')}` : '';
}

function statusSentence(status, a, data) {
  switch (status) {
    case 'pending': {
      const need = (a && a.required_approvals) || data.required_approvals;
      const have = (a && a.approvals) || data.approvals || 0;
      return need > 1 ? `Waiting for an approver (${have} of ${need} approvals so far).` : 'Waiting for an approver.';
    }
    case 'approved':
      return `Approved${a ? approvers(a) : ''}. Continue to let the assistant finish.`;
    case 'consumed':
      return `Approved${a ? approvers(a) : ''}; ${approvalDone(data.capability)}.`;
    case 'denied': {
      const d = a && (a.decisions || []).find((x) => x.decision === 'deny');
      return d ? `Denied by ${d.approver.username}${d.reason ? `: “${d.reason}”` : '.'}` : 'Denied.';
    }
    case 'expired':
      return 'Expired before it was used; asking again makes a new request.';
    case 'cancelled':
      return 'Cancelled.';
    case 'superseded':
      return 'The invoice changed after this request; asking again makes a new one.';
    default:
      return status;
  }
}

// What the status badge says to a clerk (the inbox shows the statuses as
// they are).
const badges = { pending: 'waiting', consumed: 'done', superseded: 'outdated' };

export function ApprovalCard({ data, watcher, canContinue, onContinue }) {
  const [approval, setApproval] = useState(null);
  const [failed, setFailed] = useState(false);
  const headingId = useId();
  useEffect(
    () =>
      watcher.watch(data.approval_id, (a, err) => {
        if (a) setApproval(a);
        setFailed(!!err && !a);
      }),
    [data.approval_id, watcher],
  );
  const status = (approval && approval.status) || data.status;
  return (
    <section className={`approval-card approval-${status}`} aria-labelledby={headingId} data-approval-id={data.approval_id}>
      <h3 id={headingId}>{approvalTitle(data.capability, approval)}</h3>
      <p role="status" className="approval-status">
        <span className={`status status-${status}`}>{badges[status] || status}</span> {statusSentence(status, approval, data)}
      </p>
      {failed && <p className="muted small">The request’s status could not be read; it is shown as it was.</p>}
      <div className="actions">
        {status === 'approved' && (
          <button type="button" className="primary" onClick={onContinue} disabled={!canContinue}>
            Continue
          </button>
        )}
        <a className="small" href={`/approvals/${encodeURIComponent(data.approval_id)}`} target="_blank" rel="noopener">
          Open the request
        </a>
      </div>
    </section>
  );
}
