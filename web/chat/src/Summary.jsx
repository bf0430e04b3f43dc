// A tool's input as a clerk reads it: names instead of ids (looked up
// through /v1), amounts in their currency, lines as a table. The raw
// input stays one click away in the tool's details.
import { createContext, useContext, useEffect, useState } from 'react';
import { display, grouped, priced, quantity } from './money.js';

export const ApiContext = createContext(null);

const cache = new Map();

// useRecord reads a /v1 record once per page (ids in tool inputs repeat);
// null until it arrives, or when it cannot be read.
export function useRecord(path) {
  const api = useContext(ApiContext);
  const [record, setRecord] = useState(() => (cache.get(path) || {}).value || null);
  useEffect(() => {
    if (!path || !api) return undefined;
    let live = true;
    if (!cache.has(path)) {
      const entry = { promise: api.get(path).then((r) => (entry.value = r.body), () => null) };
      cache.set(path, entry);
    }
    cache.get(path).promise.then((v) => live && setRecord(v));
    return () => {
      live = false;
    };
  }, [path, api]);
  return record;
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function CustomerName({ id }) {
  const c = useRecord(uuid.test(id) ? `/v1/customers/${id}` : null);
  return c ? c.name : <code>{id}</code>;
}

function InvoiceName({ id }) {
  const inv = useRecord(uuid.test(id) ? `/v1/invoices/${id}` : null);
  const cust = useRecord(inv && uuid.test(inv.customer_id) ? `/v1/customers/${inv.customer_id}` : null);
  if (!inv) return <code>{id}</code>;
  const what = inv.number ? `Invoice ${inv.number}` : 'Draft invoice';
  return `${what}${cust ? ` for ${cust.name}` : ''}, ${display(inv.total, inv.currency)}`;
}

function rate(bps) {
  return `${(bps / 100).toLocaleString('en', { maximumFractionDigits: 2 })} %`;
}

// Lines shows a call's lines and, once every line is complete and the
// currency known, each line's amount and the tax and total they come to,
// priced as the server prices them: what approving would make. Amounts
// are in the invoice's currency, which the total names.
function Lines({ lines, currency }) {
  const p = currency ? priced(lines) : null;
  const cell = (v) => grouped(v, currency);
  return (
    <div className="summary-lines">
      <table className="lines">
        <thead>
          <tr>
            <th scope="col">Description</th>
            <th scope="col" className="num">Qty</th>
            <th scope="col" className="num">Unit</th>
            <th scope="col" className="num">Tax</th>
            <th scope="col" className="num">Amount</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((l, i) => (
            <tr key={i}>
              <td>{l && l.description}</td>
              <td className="num">
                {quantity(l?.quantity)}
                {l && typeof l.unit === 'string' && l.unit ? ` ${l.unit}` : ''}
              </td>
              <td className="num">{l && Number.isInteger(l.unit_amount) && currency ? grouped(l.unit_amount, currency) : ''}</td>
              <td className="num">
                {l && Number.isInteger(l.tax_rate_bps) ? rate(l.tax_rate_bps) : ''}
                {l && typeof l.vat_category === 'string' && l.vat_category ? ` ${l.vat_category}` : ''}
              </td>
              <td className="num">{p ? cell(p.lines[i].amount) : ''}</td>
            </tr>
          ))}
        </tbody>
        {p && (
          <tfoot>
            <tr>
              <th scope="row" colSpan={4}>Subtotal</th>
              <td className="num">{cell(p.subtotal)}</td>
            </tr>
            <tr>
              <th scope="row" colSpan={4}>Tax</th>
              <td className="num">{cell(p.tax)}</td>
            </tr>
            <tr className="total">
              <th scope="row" colSpan={4}>Total</th>
              <td className="num">{display(p.total, currency)}</td>
            </tr>
          </tfoot>
        )}
      </table>
    </div>
  );
}

const labels = {
  customer_id: 'Customer',
  invoice_id: 'Invoice',
  name: 'Name',
  email: 'Email',
  currency: 'Currency',
  due_date: 'Due',
  memo: 'Memo',
  status: 'Status',
  number: 'Number',
  reason: 'Reason',
  address: 'Address',
  vat_id: 'VAT ID',
  tax_number: 'Tax number',
  language: 'Language',
  supply_date: 'Supplied on',
  service_period: 'Service period',
  payment_terms_days: 'Payment terms',
  purchase_order: 'Purchase order',
  buyer_reference: 'Buyer reference',
};

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// period is a service period as short as it stays exact, to fit a
// phone's line: "1–31 Dec 2026", "15 Nov – 14 Dec 2026"; dates that are
// not YYYY-MM-DD as they came.
function period(start, end) {
  const day = /^(\d{4})-(\d{2})-(\d{2})$/;
  const a = day.exec(start);
  const b = day.exec(end);
  if (!a || !b) return `${start} to ${end}`;
  const [, y1, m1, d1] = a;
  const [, y2, m2, d2] = b;
  const date = (d, m) => `${Number(d)} ${months[Number(m) - 1]}`;
  if (y1 !== y2) return `${date(d1, m1)} ${y1} – ${date(d2, m2)} ${y2}`;
  if (m1 !== m2) return `${date(d1, m1)} – ${date(d2, m2)} ${y1}`;
  return `${Number(d1)}–${date(d2, m2)} ${y1}`;
}

// plain is a structured input value as a sentence: an address on one
// line, a period from–to, terms in days; anything else as JSON.
function plain(k, v) {
  if (k === 'address' && v && typeof v === 'object') {
    const place = [v.postcode, v.city].filter(Boolean).join(' ');
    return [...(Array.isArray(v.lines) ? v.lines : []), place, v.subdivision, v.country].filter(Boolean).join(', ');
  }
  if (k === 'service_period' && v && typeof v === 'object') return period(v.start, v.end);
  if (k === 'payment_terms_days' && Number.isInteger(v)) return `${v} days`;
  return JSON.stringify(v);
}

export function InputSummary({ input }) {
  const customerPath = input && typeof input.customer_id === 'string' && uuid.test(input.customer_id) ? `/v1/customers/${input.customer_id}` : null;
  const customer = useRecord(customerPath);
  if (!input || typeof input !== 'object' || Array.isArray(input)) return null;
  const currency = input.currency || (customer && customer.currency);
  const rows = Object.entries(input).filter(([k]) => k !== 'lines');
  return (
    <div className="summary">
      {rows.length > 0 && (
        <dl>
          {rows.map(([k, v]) => (
            <div key={k}>
              <dt>{labels[k] || k.replace(/_/g, ' ')}</dt>
              <dd>
                {k === 'customer_id' && typeof v === 'string' ? (
                  <CustomerName id={v} />
                ) : k === 'invoice_id' && typeof v === 'string' ? (
                  <InvoiceName id={v} />
                ) : typeof v === 'string' ? (
                  v
                ) : (
                  plain(k, v)
                )}
              </dd>
            </div>
          ))}
        </dl>
      )}
      {Array.isArray(input.lines) && input.lines.length > 0 && <Lines lines={input.lines} currency={currency} />}
    </div>
  );
}
