// Words for what the agent does: capability names become phrases, and an
// approval request a sentence ("Issue invoice for Globex Corporation —
// 16,237.50 USD"), as the inbox titles them.
import { display } from './money.js';

const tools = {
  'list-customers': ['Looking up customers', 'Looked up customers'],
  'get-customer': ['Reading a customer', 'Read a customer'],
  'create-customer': ['Creating a customer', 'Created a customer'],
  'update-customer': ['Changing a customer', 'Changed a customer'],
  'list-invoices': ['Looking up invoices', 'Looked up invoices'],
  'get-invoice': ['Reading an invoice', 'Read an invoice'],
  'create-draft-invoice': ['Drafting an invoice', 'Drafted an invoice'],
  'update-draft-invoice': ['Changing a draft invoice', 'Changed a draft invoice'],
  'void-invoice': ['Voiding an invoice', 'Voided an invoice'],
  'mark-invoice-paid': ['Marking an invoice paid', 'Marked an invoice paid'],
  'issue-invoice': ['Issuing an invoice', 'Issued an invoice'],
  'delete-invoice': ['Deleting a draft invoice', 'Deleted a draft invoice'],
  'show-invoice': ['Opening an invoice', 'Opened an invoice beside the chat'],
};

function plain(name) {
  return name.replace(/-/g, ' ');
}

// toolPhrase is [doing, done] for a tool.
export function toolPhrase(name) {
  return tools[name] || [`Running ${plain(name)}`, `Ran ${plain(name)}`];
}

const actions = {
  'issue-invoice': 'Issue invoice',
  'delete-invoice': 'Delete draft invoice',
};

const done = {
  'issue-invoice': 'the invoice was issued',
  'delete-invoice': 'the draft invoice was deleted',
};

// approvalDone says what using an approval did.
export function approvalDone(capability) {
  return done[capability] || 'it was done';
}

// approvalTitle names what a request would do, from GET /v1/approvals/{id}
// (or, before that arrives, from the data part alone).
export function approvalTitle(capability, approval) {
  let s = actions[capability] || plain(capability)[0].toUpperCase() + plain(capability).slice(1);
  const customer = approval && approval.snapshot && approval.snapshot.customer && approval.snapshot.customer.name;
  if (customer) s += ` for ${customer}`;
  if (approval && approval.currency) s += ` — ${display(approval.amount, approval.currency)}`;
  return s;
}
