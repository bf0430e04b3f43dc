-- +goose Up
-- A credit note is issued against an approval or, under a standing
-- allowance (00054), by drawing it: exactly one of the two says what let
-- it through.
ALTER TABLE credit_notes ALTER COLUMN approval_id DROP NOT NULL;
ALTER TABLE credit_notes ADD COLUMN allowance_id uuid REFERENCES allowances (id);
ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_authorized CHECK ((approval_id IS NULL) <> (allowance_id IS NULL));

-- +goose Down
ALTER TABLE credit_notes DROP CONSTRAINT credit_notes_authorized;
ALTER TABLE credit_notes DROP COLUMN allowance_id;
ALTER TABLE credit_notes ALTER COLUMN approval_id SET NOT NULL;
