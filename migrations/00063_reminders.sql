-- +goose Up
-- Customer reminders (docs/reminders.md). The levels and whether the
-- reminders go out by themselves are an admin's data: one settings row,
-- versioned, and its levels, replaced whole. Automatic reminders start
-- off: turning them on is an admin's act.
CREATE TABLE reminder_settings (
    id               boolean PRIMARY KEY DEFAULT true CHECK (id),
    automatic        boolean NOT NULL DEFAULT false,
    -- No automatic reminder past this level; NULL: up to the last.
    stop_after_level int CHECK (stop_after_level >= 1),
    version          bigint NOT NULL,
    updated_at       timestamptz NOT NULL,
    -- NULL for the defaults this migration seeds.
    updated_by       uuid REFERENCES users (id)
);

-- Level n falls due days_past_due days after the invoice's due date;
-- wording holds a {subject, body} per language (en, de, fr), each a Go
-- text/template (reminders.Check validates them).
CREATE TABLE reminder_levels (
    level         int PRIMARY KEY CHECK (level BETWEEN 1 AND 10),
    days_past_due int NOT NULL UNIQUE CHECK (days_past_due BETWEEN 1 AND 3650),
    wording       jsonb NOT NULL
);

INSERT INTO reminder_settings (version, updated_at) VALUES (1, now());
-- +goose StatementBegin
INSERT INTO reminder_levels (level, days_past_due, wording) VALUES
(1, 7, $${
 "en": {"subject": "Reminder: invoice {{.Number}} from {{.Seller}}",
        "body": "Hello,\n\nour invoice {{.Number}} of {{.Date}} was due on {{.Due}}; {{.Balance}} is still open. Perhaps it was overlooked: please find it attached once more.\n\nIf you have paid in the meantime, please disregard this reminder.\n\nKind regards\n{{.Seller}}\n"},
 "de": {"subject": "Zahlungserinnerung: Rechnung {{.Number}} von {{.Seller}}",
        "body": "Guten Tag,\n\nunsere Rechnung {{.Number}} vom {{.Date}} war am {{.Due}} fällig; offen sind noch {{.Balance}}. Vielleicht ist sie Ihnen entgangen: Sie finden sie noch einmal im Anhang.\n\nSollten Sie inzwischen gezahlt haben, betrachten Sie diese Erinnerung bitte als gegenstandslos.\n\nMit freundlichen Grüßen\n{{.Seller}}\n"},
 "fr": {"subject": "Rappel : facture {{.Number}} de {{.Seller}}",
        "body": "Bonjour,\n\nnotre facture {{.Number}} du {{.Date}} était à régler le {{.Due}} ; {{.Balance}} restent dus. Elle vous a peut-être échappé : vous la trouverez de nouveau ci-jointe.\n\nSi vous avez réglé entre-temps, veuillez ne pas tenir compte de ce rappel.\n\nCordialement\n{{.Seller}}\n"}
}$$),
(2, 21, $${
 "en": {"subject": "Second reminder: invoice {{.Number}} from {{.Seller}}",
        "body": "Hello,\n\nour invoice {{.Number}} of {{.Date}} is now {{.DaysOverdue}} days past its due date ({{.Due}}); {{.Balance}} is still open. Please settle it within the next seven days.\n\nKind regards\n{{.Seller}}\n"},
 "de": {"subject": "Zweite Mahnung: Rechnung {{.Number}} von {{.Seller}}",
        "body": "Guten Tag,\n\nunsere Rechnung {{.Number}} vom {{.Date}} ist seit {{.DaysOverdue}} Tagen überfällig (fällig am {{.Due}}); offen sind noch {{.Balance}}. Bitte begleichen Sie den Betrag innerhalb der nächsten sieben Tage.\n\nMit freundlichen Grüßen\n{{.Seller}}\n"},
 "fr": {"subject": "Deuxième rappel : facture {{.Number}} de {{.Seller}}",
        "body": "Bonjour,\n\nnotre facture {{.Number}} du {{.Date}} est échue depuis {{.DaysOverdue}} jours (échéance le {{.Due}}) ; {{.Balance}} restent dus. Merci de la régler dans les sept jours.\n\nCordialement\n{{.Seller}}\n"}
}$$),
(3, 35, $${
 "en": {"subject": "Final reminder: invoice {{.Number}} from {{.Seller}}",
        "body": "Hello,\n\ndespite our reminders, {{.Balance}} of our invoice {{.Number}} of {{.Date}}, due on {{.Due}}, is still open. Please pay it now; otherwise we will have to take further steps.\n\nKind regards\n{{.Seller}}\n"},
 "de": {"subject": "Letzte Mahnung: Rechnung {{.Number}} von {{.Seller}}",
        "body": "Guten Tag,\n\ntrotz unserer Erinnerungen sind von unserer Rechnung {{.Number}} vom {{.Date}}, fällig am {{.Due}}, noch {{.Balance}} offen. Bitte zahlen Sie jetzt; andernfalls müssen wir weitere Schritte einleiten.\n\nMit freundlichen Grüßen\n{{.Seller}}\n"},
 "fr": {"subject": "Dernier rappel : facture {{.Number}} de {{.Seller}}",
        "body": "Bonjour,\n\nmalgré nos rappels, {{.Balance}} de notre facture {{.Number}} du {{.Date}}, échue le {{.Due}}, restent dus. Merci de la régler dès maintenant ; à défaut, nous devrons engager d'autres démarches.\n\nCordialement\n{{.Seller}}\n"}
}$$);
-- +goose StatementEnd

-- An invoice the customer disputes, and a customer on hold, get no
-- reminder, automatic or by hand, while the row exists.
CREATE TABLE invoice_disputes (
    invoice_id uuid PRIMARY KEY REFERENCES invoices (id),
    reason     text NOT NULL DEFAULT '',
    since      timestamptz NOT NULL,
    set_by     uuid NOT NULL REFERENCES users (id)
);
CREATE TABLE customer_holds (
    customer_id uuid PRIMARY KEY REFERENCES customers (id),
    reason      text NOT NULL DEFAULT '',
    since       timestamptz NOT NULL,
    set_by      uuid NOT NULL REFERENCES users (id)
);

-- A reminder is a sending of its invoice with the level it reminds at;
-- one per (invoice, level), whoever sends it and however many runs race
-- (the unique index, not a check before the insert). An automatic
-- reminder has no user behind it: requested_by NULL.
ALTER TABLE sendings ADD COLUMN reminder_level int CHECK (reminder_level >= 1);
ALTER TABLE sendings ADD CONSTRAINT sendings_reminder_of_invoice CHECK (reminder_level IS NULL OR invoice_id IS NOT NULL);
ALTER TABLE sendings ALTER COLUMN requested_by DROP NOT NULL;
CREATE UNIQUE INDEX sendings_one_reminder_per_level ON sendings (invoice_id, reminder_level) WHERE reminder_level IS NOT NULL;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM sendings WHERE reminder_level IS NOT NULL OR requested_by IS NULL) THEN
        RAISE EXCEPTION 'reminders were mailed (sendings with a reminder_level); going below migration 00063 would lose that record';
    END IF;
END;
$$;
-- +goose StatementEnd
DROP INDEX sendings_one_reminder_per_level;
ALTER TABLE sendings ALTER COLUMN requested_by SET NOT NULL;
ALTER TABLE sendings DROP CONSTRAINT sendings_reminder_of_invoice;
ALTER TABLE sendings DROP COLUMN reminder_level;
DROP TABLE customer_holds;
DROP TABLE invoice_disputes;
DROP TABLE reminder_levels;
DROP TABLE reminder_settings;
