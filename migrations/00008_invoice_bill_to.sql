-- +goose Up
-- An issued invoice freezes whom it bills: the customer's name and email
-- as they were at issue, so renaming a customer later changes drafts (and
-- makes their approvals stale) but never an issued invoice.
ALTER TABLE invoices ADD COLUMN bill_to jsonb;
UPDATE invoices i SET bill_to = jsonb_build_object('name', c.name, 'email', c.email)
FROM customers c
WHERE c.id = i.customer_id AND i.status <> 'draft' AND i.bill_to IS NULL;

-- The freeze now compares whole rows minus the columns an issued invoice
-- may still change (status, paid_at, voided_at, version, updated_at), so a
-- column added later is frozen without touching this function again.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoices_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is %: only drafts can be deleted', OLD.id, OLD.status
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status = 'draft' THEN
        RETURN NEW;
    END IF;
    IF (to_jsonb(NEW) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at'])
       IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at']) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'issued' AND NEW.status IN ('paid', 'void')) THEN
        RAISE EXCEPTION 'invoice % is %: it cannot become %', OLD.id, OLD.status, NEW.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF OLD.status <> 'issued' AND (NEW.paid_at IS DISTINCT FROM OLD.paid_at
                                   OR NEW.voided_at IS DISTINCT FROM OLD.voided_at) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoices_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is %: only drafts can be deleted', OLD.id, OLD.status
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status = 'draft' THEN
        RETURN NEW;
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id
       OR NEW.customer_id IS DISTINCT FROM OLD.customer_id
       OR NEW.number IS DISTINCT FROM OLD.number
       OR NEW.currency IS DISTINCT FROM OLD.currency
       OR NEW.due_date IS DISTINCT FROM OLD.due_date
       OR NEW.memo IS DISTINCT FROM OLD.memo
       OR NEW.subtotal IS DISTINCT FROM OLD.subtotal
       OR NEW.tax_total IS DISTINCT FROM OLD.tax_total
       OR NEW.total IS DISTINCT FROM OLD.total
       OR NEW.issued_at IS DISTINCT FROM OLD.issued_at
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'issued' AND NEW.status IN ('paid', 'void')) THEN
        RAISE EXCEPTION 'invoice % is %: it cannot become %', OLD.id, OLD.status, NEW.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF OLD.status <> 'issued' AND (NEW.paid_at IS DISTINCT FROM OLD.paid_at
                                   OR NEW.voided_at IS DISTINCT FROM OLD.voided_at) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
ALTER TABLE invoices DROP COLUMN bill_to;
