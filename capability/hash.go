package capability

import "github.com/invoiced/invoiced/jsondoc"

// Hash is the effective-input hash approvals and confirmations bind to:
// the hex SHA-256 of the input's RFC 8785 canonical form, as Prepare puts
// it in Call.InputHash.
func Hash(input []byte) (string, error) { return jsondoc.Hash(input) }
