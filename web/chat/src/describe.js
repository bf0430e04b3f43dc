// Words for what the agent does: capability names become phrases, a
// finished call a sentence with the facts its result carries ("Issued
// INV-2026-000002 to Acme GmbH — 481.95 EUR"), and an approval request a
// sentence ("Issue invoice for Globex Corporation — 16,237.50 USD"), as
// the inbox titles them.
import { display } from './money.js';

// [doing, done, asked]: "Drafting an invoice", "Drafted an invoice", and
// what a confirmation asks to do ("draft an invoice").
const tools = {
  'list-customers': ['Looking up customers', 'Looked up customers', 'look up customers'],
  'get-customer': ['Reading a customer', 'Read a customer', 'read a customer'],
  'create-customer': ['Creating a customer', 'Created a customer', 'create a customer'],
  'update-customer': ['Changing a customer', 'Changed a customer', 'change a customer'],
  'list-invoices': ['Looking up invoices', 'Looked up invoices', 'look up invoices'],
  'get-invoice': ['Reading an invoice', 'Read an invoice', 'read an invoice'],
  'create-draft-invoice': ['Drafting an invoice', 'Drafted an invoice', 'draft an invoice'],
  'update-draft-invoice': ['Changing a draft invoice', 'Changed a draft invoice', 'change a draft invoice'],
  'void-invoice': ['Voiding an invoice', 'Voided an invoice', 'void an invoice'],
  'mark-invoice-paid': ['Marking an invoice paid', 'Marked an invoice paid', 'mark an invoice paid'],
  'issue-invoice': ['Issuing an invoice', 'Issued an invoice', 'issue an invoice'],
  'delete-invoice': ['Deleting a draft invoice', 'Deleted a draft invoice', 'delete a draft invoice'],
  'show-invoice': ['Opening an invoice', 'Opened an invoice beside the chat', 'open an invoice'],
  'record-payment': ['Recording a payment', 'Recorded a payment', 'record a payment'],
  'reverse-payment': ['Reversing a payment', 'Reversed a payment', 'reverse a payment'],
  'list-payments': ['Looking up payments', 'Looked up payments', 'look up payments'],
  'issue-credit-note': ['Issuing a credit note', 'Issued a credit note', 'issue a credit note'],
  'get-credit-note': ['Reading a credit note', 'Read a credit note', 'read a credit note'],
  'list-credit-notes': ['Looking up credit notes', 'Looked up credit notes', 'look up credit notes'],
  'receivables-report': ['Reading what is owed', 'Read what is owed', 'read what is owed'],
};

function plain(name) {
  return name.replace(/-/g, ' ');
}

// toolPhrase is [doing, done, asked] for a tool.
export function toolPhrase(name) {
  return tools[name] || [`Running ${plain(name)}`, `Ran ${plain(name)}`, plain(name)];
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const invoiceHref = (id) => (typeof id === 'string' ? `/invoices/${encodeURIComponent(id)}` : undefined);
const amount = (v, currency) => (Number.isSafeInteger(v) && typeof currency === 'string' ? display(v, currency) : '');
const lines = (n) => (n === 1 ? '1 line' : `${n} lines`);

// customerIdOf is the customer a finished call's sentence names and its
// result gives only by id (a draft bills its customer as it is now; an
// issued invoice carries the name it billed): the page looks it up.
export function customerIdOf(name, output) {
  if (!isObject(output) || output.bill_to || typeof output.customer_id !== 'string') return null;
  return ['create-draft-invoice', 'update-draft-invoice', 'get-invoice', 'void-invoice', 'mark-invoice-paid', 'issue-invoice'].includes(name)
    ? output.customer_id
    : null;
}

// invoiceSentence says what a call did to the invoice it returned.
function invoiceSentence(name, inv, customer) {
  const who = (inv.bill_to && inv.bill_to.name) || customer || '';
  const forWho = who ? ` for ${who}` : '';
  const total = amount(inv.total, inv.currency);
  const count = Array.isArray(inv.lines) ? lines(inv.lines.length) : '';
  const facts = [count, total].filter(Boolean).join(', ');
  const number = typeof inv.number === 'string' ? inv.number : '';
  let text;
  switch (name) {
    case 'create-draft-invoice':
      text = `Drafted an invoice${forWho}${facts ? ` — ${facts}` : ''}`;
      break;
    case 'update-draft-invoice':
      text = `Changed the draft invoice${forWho}${facts ? ` — ${facts}` : ''}`;
      break;
    case 'issue-invoice':
      text = `Issued ${number || 'the invoice'}${who ? ` to ${who}` : ''}${total ? ` — ${total}` : ''}`;
      break;
    case 'void-invoice':
      text = `Voided ${number || 'the invoice'}${forWho}${total ? ` — ${total}` : ''}`;
      break;
    case 'mark-invoice-paid':
      text = `Marked ${number || 'the invoice'}${forWho} paid${total ? ` — ${total}` : ''}`;
      break;
    default:
      text = `Read ${number ? `invoice ${number}` : 'the draft invoice'}${forWho}${total ? ` — ${total}` : ''}`;
  }
  return { text, href: invoiceHref(inv.id) };
}

// doneSentence says what a finished call did, from its result: { text,
// href } where href is the page of the record it is about. customer is
// the name customerIdOf asked for, once known.
export function doneSentence(name, output, customer) {
  const done = toolPhrase(name)[1];
  if (!isObject(output)) return { text: done };
  if (Array.isArray(output.data)) return { text: `${done}: ${output.data.length} found${output.has_more ? ' (more exist)' : ''}` };
  switch (name) {
    case 'create-draft-invoice':
    case 'update-draft-invoice':
    case 'get-invoice':
    case 'void-invoice':
    case 'mark-invoice-paid':
    case 'issue-invoice':
      return invoiceSentence(name, output, customer);
    case 'create-customer':
      return { text: `Created the customer ${output.name}${output.currency ? ` (invoices in ${output.currency})` : ''}` };
    case 'update-customer':
      return { text: `Changed the customer ${output.name}` };
    case 'get-customer':
      return { text: `Read the customer ${output.name}` };
    case 'record-payment':
    case 'reverse-payment': {
      const on = output.invoice && output.invoice.number ? ` on ${output.invoice.number}` : '';
      const verb = name === 'record-payment' ? 'Recorded' : 'Reversed';
      return { text: `${verb} a payment of ${amount(output.amount, output.currency)}${on}`, href: invoiceHref(output.invoice_id) };
    }
    case 'issue-credit-note':
    case 'get-credit-note': {
      const verb = name === 'issue-credit-note' ? 'Issued' : 'Read';
      const to = output.bill_to && output.bill_to.name ? ` for ${output.bill_to.name}` : '';
      return {
        text: `${verb} credit note ${output.number} on ${output.invoice_number}${to} — ${amount(output.total, output.currency)}`,
        href: invoiceHref(output.invoice_id),
      };
    }
    case 'receivables-report': {
      const owed = (output.currencies || []).map((c) => amount(c.total, c.currency)).filter(Boolean);
      return { text: owed.length ? `${done}: ${owed.join(', ')}` : `${done}: nothing` };
    }
    default:
      return { text: done };
  }
}

const actions = {
  'issue-invoice': 'Issue invoice',
  'delete-invoice': 'Delete draft invoice',
  'issue-credit-note': 'Issue credit note',
};

const done = {
  'issue-invoice': 'the invoice was issued',
  'delete-invoice': 'the draft invoice was deleted',
  'issue-credit-note': 'the credit note was issued',
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
